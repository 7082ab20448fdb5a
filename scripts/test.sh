#!/usr/bin/env bash
# The one test command (README.md, .ci/run): installs what a fresh clone's tests need, then runs
# every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib/host.sh

# Run as root, the runner starts each test user's guests under an unprivileged uid of their own,
# which must be able to reach the guest binaries in target/: a checkout below a private directory
# (e.g. one made by mktemp -d, mode 0700) gets search (x) permission for others on the way down.
if [ "$(id -u)" = 0 ]; then
  dir="$PWD"
  while [ "$dir" != / ]; do
    if [ -z "$(find "$dir" -maxdepth 0 -perm -o+x)" ]; then
      echo "==> $dir: adding search permission for others (guest uids must reach target/)"
      chmod o+x "$dir"
    fi
    dir="$(dirname "$dir")"
  done
fi

# libsql's encryption feature (memory encryption at rest) is built with cmake.
ensure_cmake
# tmux drives the real oxydra-tui binary in its end-to-end test.
if ! command -v tmux >/dev/null 2>&1; then
  echo "==> installing tmux (TUI end-to-end test)"
  apt_install tmux
fi
# The web client's tests drive a real headless Chromium over its DevTools protocol.
if ! command -v chromium >/dev/null 2>&1; then
  echo "==> installing chromium (web client browser tests)"
  apt_install chromium
fi
# The container-tier tests build guest images (static busybox, objcopy) and run them on the engine.
ensure_static_busybox
if ! command -v objcopy >/dev/null 2>&1; then
  echo "==> installing binutils (objcopy strips the guest binaries)"
  apt_install binutils
fi
if ! command -v openssl >/dev/null 2>&1; then
  echo "==> installing openssl (the remote-memory tests mint sqld's JWTs with it)"
  apt_install openssl
fi
ensure_docker_engine || echo "==> WARNING: no Docker engine"
# The MCP tests drive the server with the official MCP Python SDK (PyPI `mcp`), in a venv under
# the target directory; its python is handed to the tests in OXYDRA_MCP_PYTHON.
mcp_venv="${CARGO_TARGET_DIR:-target}/mcp-venv"
if ! "$mcp_venv/bin/python" -c "import mcp.client.streamable_http" >/dev/null 2>&1; then
  echo "==> installing the MCP Python SDK into $mcp_venv (MCP client tests)"
  if ! python3 -m venv "$mcp_venv" >/dev/null 2>&1; then
    apt_install python3-venv
    python3 -m venv "$mcp_venv"
  fi
  "$mcp_venv/bin/pip" install --quiet "mcp==2.3.0"
fi
OXYDRA_MCP_PYTHON="$(cd "$mcp_venv" && pwd)/bin/python"
export OXYDRA_MCP_PYTHON

# Tests that need Docker, Landlock, tmux or sqld are #[ignore = "needs ..."] and call
# test_support::need(), which fails them when the machine lacks it. In CI (.ci/run sets
# OXYDRA_CI=1) they always run: a missing requirement fails the run. Elsewhere they run when the
# machine has everything; otherwise they show as "ignored" in cargo's summary and are listed below.
# Each probe asks the same thing as test_support::Need::available().
missing=()
docker info >/dev/null 2>&1 || missing+=(docker)
tmux -V >/dev/null 2>&1 || missing+=(tmux)
chromium --version >/dev/null 2>&1 || missing+=(chromium)
# Landlock: ask the kernel for its Landlock ABI (landlock_create_ruleset(NULL, 0,
# LANDLOCK_CREATE_RULESET_VERSION), syscall 444 on every architecture) through perl, which every
# Debian-like system has; without perl, the LSM list if securityfs shows it. Unknown counts as
# missing: the tests then show as ignored here rather than fail, and CI still runs them.
landlock_abi() {
  if command -v perl >/dev/null 2>&1; then
    perl -e 'exit(syscall(444, 0, 0, 1) >= 1 ? 0 : 1)'
  else
    [ -r /sys/kernel/security/lsm ] && grep -qw landlock /sys/kernel/security/lsm
  fi
}
landlock_abi || missing+=(landlock)
# sqld: $OXYDRA_SQLD, or ../shared/tools/sqld/sqld beside the repository (where CI puts it), or
# beside the local checkout this one was cloned from (`git clone . "$d/c"`), exported for the tests.
find_sqld() {
  if [ -n "${OXYDRA_SQLD:-}" ]; then
    [ -f "$OXYDRA_SQLD" ]
    return
  fi
  [ -f ../shared/tools/sqld/sqld ] && return
  local origin
  origin=$(git config --get remote.origin.url 2>/dev/null || true)
  if [ -d "$origin" ] && [ -f "$origin/../shared/tools/sqld/sqld" ]; then
    OXYDRA_SQLD="$(cd "$origin/../shared/tools/sqld" && pwd)/sqld"
    export OXYDRA_SQLD
    echo "==> sqld from beside the checkout this clone came from: $OXYDRA_SQLD"
    return
  fi
  return 1
}
find_sqld && command -v openssl >/dev/null 2>&1 || missing+=(sqld)
include=(--include-ignored)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "${OXYDRA_CI:-}" = 1 ]; then
    echo "==> CI: this machine lacks ${missing[*]}; the tests that need it will fail"
  else
    include=()
  fi
fi

echo "==> cargo test --workspace --tests ${include[*]}"
# `--tests` runs the targets that have tests: each crate's unit tests and its one integration
# binary (tests/all.rs). Bench and guest binaries without tests are `test = false` in their
# Cargo.toml (tests/tests/tidy.rs checks they stay test-free), so they are not linked as test
# executables; `--all-targets` would link them all regardless. The bench targets are built (not
# run) so they keep compiling.
cargo test --workspace --tests --no-fail-fast -- "${include[@]}"
cargo test --workspace --bench '*' --no-run
cargo test --workspace --doc
if [ "${#include[@]}" -eq 0 ]; then
  echo
  echo "==> SKIPPED: this machine lacks ${missing[*]}; the tests marked 'needs ...' above were"
  echo "    listed as ignored and did NOT run. Install what is missing, or run them in CI."
fi
