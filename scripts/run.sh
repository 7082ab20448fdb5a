#!/usr/bin/env bash
# The main job, in one command: build Oxydra, provision a user, start their agent in the process tier
# (each guest confined with Landlock) and open the terminal chat client on it.
#
#   OPENAI_API_KEY=sk-... ./scripts/run.sh [user]      (default user: alice)
#
# The model is set in ./agent.toml [provider] (written on the first run from agent.toml.example):
# OpenAI by default; OpenRouter, Ollama or Anthropic examples are in README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
user="${1:-alice}"

echo "==> building runner, oxydra-vm, shell-vm and oxydra-tui (release)"
cargo build --release -p runner -p shell-daemon -p tui
bin="$PWD/target/release"

if [ ! -f runner.toml ]; then
  echo "==> first run: writing runner.toml and agent.toml, provisioning ./workspaces/$user"
  "$bin/runner" --user "$user" init
fi

echo "==> starting $user's agent"
if ! out=$("$bin/runner" --insecure --user "$user" start --detach 2>&1); then
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
