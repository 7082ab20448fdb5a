#!/usr/bin/env bash
# Builds the container tier's guest images (oxydra-vm, shell-vm) from this checkout, with no base
# image and nothing pulled: release binaries, their shared libraries and a static busybox, each
# image `FROM scratch` (docs/guidebook/images.md). Idempotent: an image whose build context did
# not change is left alone. Extra arguments go to `runner images build` (e.g. --force,
# --busybox PATH); image names and tags come from runner.toml's [container] table.
set -euo pipefail
cd "$(dirname "$0")/.."

busybox=/bin/busybox
for ((i = 1; i <= $#; i++)); do
  case "${!i}" in
    --busybox) j=$((i + 1)); busybox="${!j:-}" ;;
    --busybox=*) busybox="${!i#--busybox=}" ;;
  esac
done

. scripts/lib/host.sh
# The shell image's /bin/sh and core utilities come from Debian's statically linked busybox.
if [ "$busybox" = /bin/busybox ]; then
  ensure_static_busybox
fi
ensure_docker_engine || { echo "error: the guest images need a running Docker engine" >&2; exit 1; }

build_release

echo "==> runner images build --bin-dir target/release $*"
target/release/runner images build --bin-dir target/release "$@"
