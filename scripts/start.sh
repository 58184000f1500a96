#!/usr/bin/env bash
# The main job: make sure the build dependencies and the default model are present,
# then start the runner service on 127.0.0.1:4890 (extra arguments go to `runner serve`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_apt cmake clang libclang-dev
export_ggml_cpu_features
# The test command's setting (scripts/test-all.sh says why): after it, the runner below builds nothing.
export CARGO_INCREMENTAL=0
cargo xtask model fetch
exec cargo run -p runner -- serve "$@"
