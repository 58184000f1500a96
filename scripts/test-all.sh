#!/usr/bin/env bash
# Runs every Forge test from a bare machine: installs what is missing, fetches the
# model, builds once (dev profile; llama.cpp is optimised through a profile override),
# then runs the workspace tests, the fault-contract verification and the browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# Each step prints the clock time it starts at, so a CI log shows where the minutes go.
step() { printf '\n==> [%s] %s\n' "$(date +%T)" "$*"; }

source scripts/lib.sh
# bubblewrap: the box `cargo xtask grade` runs learners' code in (xtask/tests/grade_class.rs)
ensure_apt cmake clang libclang-dev ninja-build chromium bubblewrap
# llama.cpp in the runner is built for this machine's CPU (see scripts/lib.sh).
export_ggml_cpu_features
# No incremental caches: this command builds every unit once, where they only cost disk — 1.6 GB of a fresh clone's
# 5.7 GB target/ (stop 55), and a CI machine once ran out of space mid-build. start.sh exports the same value:
# cargo fingerprints it, so the two share one build (a different value recompiles every workspace crate).
export CARGO_INCREMENTAL=0

# One cargo invocation builds everything the steps below run, with one feature set: every crate, test, example
# and xtask. `cargo test`, `cargo xtask` and the runner then reuse every unit of it (xtask's and the runner's
# feature pins keep their own resolutions inside it; crates/runner/tests/build_sharing.rs checks all three).
# Style is part of the build: an unformatted tree fails before anything compiles (seconds; rustfmt.toml).
step "cargo fmt --all -- --check"
cargo fmt --all -- --check

# Lints are part of the build too: every warning clippy raises fails the command (`-D warnings`). Clippy checks in
# cargo's check mode, whose units the build below does not reuse; llama.cpp's build script it runs is shared.
step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo build --workspace --all-targets (llama.cpp included: compiled once)"
cargo build --workspace --all-targets

# The model download is network-bound and the tools' compile CPU-bound: side by side they cost the longer of the
# two (the fetch runs the xtask binary the build above made; a second `cargo xtask` would wait on cargo's lock).
step "fetching the default model (skipped when already verified), in the background of the next step"
target/debug/xtask model fetch > target/model-fetch.log 2>&1 &
model_fetch=$!

# Links the tools against the llama.cpp the build above compiled: llama.cpp is compiled once.
step "llama-server and llama-bench for the server-backend tests and the benchmark (cached)"
cargo xtask llama-tools

step "waiting for the model fetch"
fetch_status=0
wait "$model_fetch" || fetch_status=$?
cat target/model-fetch.log
[ "$fetch_status" -eq 0 ] || { echo "model fetch failed (exit $fetch_status)"; exit "$fetch_status"; }

export FORGE_REQUIRE_MODEL=1

step "cargo test --workspace"
cargo test --workspace --no-fail-fast

step "smoke evaluation: a table task and a Chinese task guided, 1 seed, 0.5B, beside the grammar-only policy (fails on a scoring or runtime error, not on a low score)"
# The eval example `cargo test --workspace` just built, run as is: `cargo xtask eval` (= `cargo run
# --example eval`) resolves the example's own feature set and would recompile forge-llama first (~2 min).
# Two shapes no guided real-model test runs; AgentEval Mini's guided and free runs with the real model are tests
# (crates/llama/tests/real_model.rs and llama_server.rs; free runs of a table task too).
target/debug/examples/eval --tasks clinic_wait_times,hospital_satisfaction_zh --modes guided \
  --temps 0 --seeds 1 --out target/eval-smoke --fresh --require-scoring --fail-on runtime_error

step "cargo xtask verify (fault contracts of all seven stages)"
cargo xtask verify

step "browser tests"
bash tests/ui/run.sh
step "done"
