#!/usr/bin/env bash
# The one test command (README.md, .ci/run): installs what a fresh clone's tests need, then runs
# every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

# tmux drives the real oxydra-tui binary in its end-to-end test.
if ! command -v tmux >/dev/null 2>&1; then
  echo "==> installing tmux (TUI end-to-end test)"
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq tmux >/dev/null
fi

# Debian's static busybox gives the shell-vm guest image its /bin/sh (crates/runner/tests/images.rs).
if [ ! -x /bin/busybox ]; then
  echo "==> installing busybox-static (shell-vm guest image test)"
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq busybox-static >/dev/null
fi

echo "==> cargo test --workspace"
cargo test --workspace --all-targets
cargo test --workspace --doc
