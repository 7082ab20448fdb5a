#!/usr/bin/env bash
# Runner start-up benchmark: `runner start --detach` to gateway-ready (five runs) and the idle
# memory of the runner and both guests. Reported in docs/benchmarks.md ("Runner").
#
#   ./scripts/bench-runner.sh [process|container]     (default: process; builds release binaries,
#                                                       and for container the guest images, first)
set -euo pipefail
cd "$(dirname "$0")/.."
tier="${1:-process}"
case "$tier" in process|container) ;; *) echo "usage: $0 [process|container]" >&2; exit 2 ;; esac
if [ "$tier" = container ]; then
  echo "==> building release binaries and guest images" >&2
  ./scripts/build-guest-images.sh >&2
  flags=()
else
  . scripts/lib/host.sh
  build_release >&2
  flags=(--insecure)
fi
bin="$PWD/target/release"
dir=$(mktemp -d)
trap '"$bin/runner" --config "$dir/runner.toml" stop >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
printf 'tier = "%s"\n[users.alice]\n' "$tier" > "$dir/runner.toml"
# A model endpoint that is never called: start-up does not talk to the model.
printf '[provider]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key_env = ""\n' > "$dir/agent.toml"
cd "$dir"
for i in 1 2 3 4 5; do
  start=$(date +%s%N)
  "$bin/runner" "${flags[@]}" start --detach >/dev/null 2>&1
  end=$(date +%s%N)
  echo "$tier: start -> ready: $(( (end - start) / 1000000 )) ms"
  if [ "$i" -lt 5 ]; then
    start=$(date +%s%N)
    "$bin/runner" stop >/dev/null
    end=$(date +%s%N)
    echo "$tier: stop: $(( (end - start) / 1000000 )) ms"
  fi
done
sleep 3
rss() { awk '/VmRSS/ {print $2, $3}' "/proc/$1/status"; }
runner_pid=$(python3 -c "import json; print(json.load(open('workspaces/alice/.oxydra/runner.json'))['pid'])")
echo "idle RSS runner: $(rss "$runner_pid")"
for role in oxydra-vm shell-vm; do
  if [ "$tier" = container ]; then
    name=$(python3 -c "import json,sys; print(json.load(open('workspaces/alice/.oxydra/runner.json'))['children'][sys.argv[1]]['container'])" "$role")
    init=$(python3 -c "import json,sys; print(json.load(open('workspaces/alice/.oxydra/runner.json'))['children'][sys.argv[1]]['pid'])" "$role")
    guest=$(pgrep -P "$init" | head -n 1)
    echo "idle RSS $role (in $name): $(rss "$guest"); docker-init: $(rss "$init"); cgroup usage: $(docker stats --no-stream --format '{{.MemUsage}}' "$name")"
  else
    pid=$(python3 -c "import json,sys; print(json.load(open('workspaces/alice/.oxydra/runner.json'))['children'][sys.argv[1]]['pid'])" "$role")
    echo "idle RSS $role: $(rss "$pid")"
  fi
done
