#!/usr/bin/env bash
# `runner start --detach` -> ready for two builds, interleaved (one before, one after, ...), both
# tiers, one user, each build with its own workspace root and its own guest images (tag
# bench-before / bench-after). Run as root to measure what a root runner does (guest uids,
# ownership). Reported in docs/benchmarks.md ("Separate owners").
#
#   sudo ./scripts/bench-start-compare.sh BEFORE_BIN_DIR AFTER_BIN_DIR [RUNS]
#
# Each BIN_DIR holds runner, oxydra-vm and shell-vm, in a directory every guest uid can reach.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BEFORE_BIN_DIR AFTER_BIN_DIR [RUNS]" >&2; exit 2; }
declare -A bin=([before]="$1" [after]="$2")
runs="${3:-6}"
work=$(mktemp -d)
chmod 755 "$work"
trap 'for v in before after; do for t in process container; do (cd "$work/$v/$t" && "${bin[$v]}/runner" stop >/dev/null 2>&1); done; done; rm -rf "$work"' EXIT
for v in before after; do
  for tier in process container; do
    d="$work/$v/$tier"
    mkdir -p "$d"
    chmod 755 "$work/$v" "$d"
    printf 'tier = "%s"\n[container]\noxydra_vm_image = "oxydra-vm:bench-%s"\nshell_vm_image = "oxydra-shell-vm:bench-%s"\n[users.alice]\n' \
      "$tier" "$v" "$v" > "$d/runner.toml"
    # A model endpoint that is never called: start-up does not talk to the model.
    printf '[provider]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key_env = ""\n' > "$d/agent.toml"
  done
  (cd "$work/$v/container" && "${bin[$v]}/runner" images build --bin-dir "${bin[$v]}" >/dev/null) \
    || { echo "images of $v did not build" >&2; exit 1; }
done
for tier in process container; do
  flags=()
  [ "$tier" = process ] && flags=(--insecure)
  for i in $(seq 1 "$runs"); do
    for v in before after; do
      cd "$work/$v/$tier"
      start=$(date +%s%N)
      "${bin[$v]}/runner" "${flags[@]}" start --detach >/dev/null || echo "$tier $v: start failed" >&2
      end=$(date +%s%N)
      echo "$tier $v run $i: start -> ready $(( (end - start) / 1000000 )) ms"
      "${bin[$v]}/runner" stop >/dev/null
    done
  done
done
