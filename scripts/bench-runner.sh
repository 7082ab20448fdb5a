#!/usr/bin/env bash
# Process-tier start-up benchmark: `runner --insecure start --detach` to gateway-ready (five runs) and
# the idle resident memory of the runner and both guests. Reported in docs/benchmarks.md ("Runner").
#
#   ./scripts/bench-runner.sh            (builds the release binaries first)
set -euo pipefail
cd "$(dirname "$0")/.."
echo "==> building release binaries" >&2
cargo build --release -p runner -p shell-daemon >&2
bin="$PWD/target/release"
dir=$(mktemp -d)
trap '"$bin/runner" --config "$dir/runner.toml" stop >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
printf '[users.alice]\n' > "$dir/runner.toml"
# A model endpoint that is never called: start-up does not talk to the model.
printf '[provider]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key_env = ""\n' > "$dir/agent.toml"
cd "$dir"
for i in 1 2 3 4 5; do
  start=$(date +%s%N)
  "$bin/runner" --insecure start --detach >/dev/null
  end=$(date +%s%N)
  echo "start -> ready: $(( (end - start) / 1000000 )) ms"
  if [ "$i" -lt 5 ]; then "$bin/runner" stop >/dev/null; fi
done
sleep 3
for role in runner oxydra-vm shell-vm; do
  pid=$(python3 -c "import json,sys; m=json.load(open('workspaces/alice/ipc/runner.json')); print(m['pid'] if sys.argv[1]=='runner' else m['children'][sys.argv[1]]['pid'])" "$role")
  echo "idle RSS $role: $(awk '/VmRSS/ {print $2, $3}' "/proc/$pid/status")"
done
