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
ensure_apt cmake clang libclang-dev chromium
# llama.cpp in the runner is built for this machine's CPU (see scripts/lib.sh).
export_ggml_cpu_features

# One cargo invocation builds everything the steps below run, with one feature set: every crate, test, example
# and xtask. `cargo test`, `cargo xtask` and the runner then reuse every unit of it (xtask's and the runner's
# feature pins keep their own resolutions inside it; crates/runner/tests/build_sharing.rs checks all three).
step "cargo build --workspace --all-targets (llama.cpp included: compiled once)"
cargo build --workspace --all-targets

step "fetching the default model (skipped when already verified)"
cargo xtask model fetch

# Links the tools against the llama.cpp the build above compiled: llama.cpp is compiled once.
step "llama-server and llama-bench for the server-backend tests and the benchmark (cached)"
cargo xtask llama-tools

export FORGE_REQUIRE_MODEL=1

step "cargo test --workspace"
cargo test --workspace --no-fail-fast

step "smoke evaluation: 3 tasks guided + 1 task free, 1 seed, 0.5B, beside the grammar-only policy (fails on a scoring or runtime error, not on a low score)"
# The eval example `cargo test --workspace` just built, run as is: `cargo xtask eval` (= `cargo run
# --example eval`) resolves the example's own feature set and would recompile forge-llama first (~2 min).
target/debug/examples/eval --tasks agent_eval_mini,clinic_wait_times,hospital_satisfaction_zh --modes guided \
  --temps 0 --seeds 1 --out target/eval-smoke --fresh --require-scoring --fail-on runtime_error
target/debug/examples/eval --tasks agent_eval_mini --modes free \
  --temps 0 --seeds 1 --out target/eval-smoke-free --fresh --require-scoring --fail-on runtime_error

step "cargo xtask verify (fault contracts of all seven stages)"
cargo xtask verify

step "browser tests"
bash tests/ui/run.sh
step "done"
