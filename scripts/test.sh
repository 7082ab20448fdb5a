#!/usr/bin/env bash
# The one test command (README.md, .ci/run): installs what a fresh clone's tests need, then runs
# every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib/host.sh

# tmux drives the real oxydra-tui binary in its end-to-end test.
if ! command -v tmux >/dev/null 2>&1; then
  echo "==> installing tmux (TUI end-to-end test)"
  apt_install tmux
fi
# The container-tier tests build guest images (static busybox, objcopy) and run them on the engine.
ensure_static_busybox
if ! command -v objcopy >/dev/null 2>&1; then
  echo "==> installing binutils (objcopy strips the guest binaries)"
  apt_install binutils
fi
ensure_docker_engine || echo "==> WARNING: no Docker engine: the container-tier tests will be SKIPPED"

echo "==> cargo test --workspace"
cargo test --workspace --all-targets
cargo test --workspace --doc
