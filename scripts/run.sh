#!/usr/bin/env bash
# The main job, in one command: build Oxydra, provision a user, start their agent and open the
# terminal chat client on it.
#
#   OPENAI_API_KEY=sk-... ./scripts/run.sh [--process] [user]      (default user: alice)
#
# The agent runs in the container tier (Docker containers with role-differentiated mounts; the
# images are built locally from scratch, nothing is pulled). Without a Docker engine the process
# tier (host processes confined with Landlock) is used only when you choose it: --process, or "y"
# to the question asked on a terminal. The first run writes runner.toml with that tier; switch by
# editing `tier` there (or `tier` in [users.NAME] for one user). A user not yet in runner.toml is
# added (`runner --user NAME init`), in the process tier with --process, else the file's. The
# model is set in ./agent.toml [provider]: yours when you wrote it first (from agent.toml.example
# or with `runner init`'s questions), else written on the first run from agent.toml.example
# (OpenAI); OpenRouter, Ollama or Anthropic examples are in README.md. Before the build, the key
# it names is checked with the provider, as Docker is. After editing agent.toml, re-run this
# script: an agent started with other settings is restarted.
set -euo pipefail
cd "$(dirname "$0")/.."
process=no
if [ "${1:-}" = --process ]; then
  process=yes
  shift
fi
user="${1:-alice}"

. scripts/lib/host.sh
# Before the build: a missing or refused key, like a missing engine, is said in seconds.
check_provider_key "$user" || exit 1
# The user's tier: theirs in runner.toml; for a user not yet there, --process or the file's default.
tier=$(user_tier "$user")
if [ -n "$tier" ]; then
  # Refused before anything changes: no workspace, no build.
  if [ "$process" = yes ] && [ "$tier" = container ]; then
    echo "error: runner.toml runs $user in the container tier; to use the process tier set tier = \"process\" in [users.$user] there" >&2
    exit 1
  fi
elif [ -f runner.toml ]; then
  # Added below: in the process tier with --process, else in the file's default tier.
  tier=default
elif ! tier=$(choose_first_tier "$user" "$process"); then
  # Before the build: a missing engine is a question for the user, not a 10-minute surprise.
  exit 1
fi
build_release
bin="$PWD/target/release"
# runner init's "next:" steps are the ones this script takes itself: not repeated. No questions
# (stdin is not the terminal): the key was checked above, for agent.toml's provider or the example's.
if [ ! -f runner.toml ]; then
  echo "==> first run: writing runner.toml ($tier tier), provisioning ./workspaces/$user"
  "$bin/runner" --user "$user" init --tier "$tier" </dev/null | sed '/^next/,$d'
elif [ -n "$(user_tier "$user")" ]; then
  :
elif ! out=$("$bin/runner" --user "$user" init $([ "$process" = yes ] && echo --tier process) \
    </dev/null 2>&1); then
  case "$out" in
    *"already exists in"*) ;;
    *) echo "$out" >&2; exit 1 ;;
  esac
else
  echo "$out" | sed '/^next/,$d; s/^/==> /'
fi
tier=$(user_tier "$user")

flags=()
if [ "$tier" = container ]; then
  echo "==> building the guest images (only what changed)"
  if ! ./scripts/build-guest-images.sh; then
    echo "==> no container images without a Docker engine: start Docker and re-run, or set" >&2
    echo "    tier = \"process\" in [users.$user] of runner.toml and re-run with --process" >&2
    exit 1
  fi
else
  echo "==> process tier (runner.toml: tier = \"process\"): host processes confined by Landlock;"
  echo "    to use Docker containers instead, set tier = \"container\" there (in [users.$user] for $user alone)"
  flags=(--insecure)
fi

echo "==> starting $user's agent ($tier tier)"
# Ctrl+C reaches the runner (same process group), which stops what it started, or, when the agent
# was ready first, keeps it and says so; either way it exits with 130. Its report goes straight to
# stdout: not through $(...) or a trap here, since bash can hand a SIGINT that lands around those to
# a subshell or end this script while the runner goes on (it once reported 130 for an agent left
# running). Whatever bash does, the runner's own words reach the user. Only its errors are kept.
errors=$(mktemp)
set +e
"$bin/runner" "${flags[@]}" --user "$user" start --detach 2>"$errors"
status=$?
set -e
if [ "$status" != 0 ] && [ "$status" != 130 ] && grep -q "already running" "$errors"; then
  rm -f "$errors"
  echo "$user's agent is already running (settings unchanged)"
else
  cat "$errors" >&2
  rm -f "$errors"
  case "$status" in
    0) ;;
    130) exit 130 ;;
    *) exit 1 ;;
  esac
fi

echo "==> opening the chat (/help for commands, /quit to leave; the agent keeps running:"
echo "    stop it with: $bin/runner --user $user stop)"
exec "$bin/runner" --user "$user" --tui
