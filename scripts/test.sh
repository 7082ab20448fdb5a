#!/usr/bin/env bash
# The one test command (README.md, .ci/run): everything a fresh clone needs, then every test.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "==> cargo test --workspace"
cargo test --workspace --all-targets
cargo test --workspace --doc
