#!/usr/bin/env bash
# The main job, in one command: build Oxydra, provision a user, start their agent and open the
# terminal chat client on it.
#
#   OPENAI_API_KEY=sk-... ./scripts/run.sh [user]      (default user: alice)
#
# The agent runs in the container tier (Docker containers with role-differentiated mounts; the
# images are built locally from scratch, nothing is pulled) when a Docker engine answers, else in
# the process tier (host processes confined with Landlock). The choice is written to runner.toml on
# the first run. The model is set in ./agent.toml [provider] (written on the first run from
# agent.toml.example): OpenAI by default; OpenRouter, Ollama or Anthropic examples are in README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
user="${1:-alice}"

. scripts/lib/host.sh
build_release
bin="$PWD/target/release"
if [ ! -f runner.toml ]; then
  if ensure_docker_engine; then
    tier=container
  else
    tier=process
    echo "==> no Docker engine answers: using the process tier (Landlock-confined host processes)"
  fi
  echo "==> first run: writing runner.toml ($tier tier) and agent.toml, provisioning ./workspaces/$user"
  "$bin/runner" --user "$user" init --tier "$tier"
fi
tier=$(sed -n 's/^tier *= *"\([a-z]*\)".*/\1/p' runner.toml | head -n 1)
tier="${tier:-container}"

flags=()
if [ "$tier" = container ]; then
  echo "==> building the guest images (only what changed)"
  ./scripts/build-guest-images.sh
else
  flags=(--insecure)
fi

echo "==> starting $user's agent ($tier tier)"
if ! out=$("$bin/runner" "${flags[@]}" --user "$user" start --detach 2>&1); then
  case "$out" in
    *"already running"*) echo "$user's agent is already running" ;;
    *) echo "$out" >&2; exit 1 ;;
  esac
else
  echo "$out"
fi

echo "==> opening the chat (/help for commands, /quit to leave; the agent keeps running:"
echo "    stop it with: $bin/runner --user $user stop)"
exec "$bin/runner" --user "$user" --tui
