//! `cargo xtask` — Forge's developer tasks: one flat dispatch over hand-parsed arguments.
//!
//! Instructors: `verify`, `fault`, `bench-verify`. Learners: `learn`, `check`, `hint`, `progress`.
//! The model verbs (`model`, `eval`, the model part of `bench`) live in `model.rs`. This file only
//! parses arguments and dispatches; it holds no course logic.

mod args;
mod cargo;
mod course;
mod learn;
mod llama_tools;
mod model;
mod report;
mod scratch;
mod verify;
mod verify_bench;

use std::process::ExitCode;

use args::Args;

const USAGE: &str = "\
usage: cargo xtask <verb> [options]

instructors
  verify [STAGE…] [--json] [--no-cache] [--jobs N] [--timeout SECS]
                         prove every stage's fault contract, write evidence/verification.json
  fault STAGE            swap the fault in (scratch copy), run the target test, show the diagnosis
  bench-verify [--runs N] [--skip-cold]
                         time verify cached / warm --no-cache / cold, write evidence/bench-verify.json

learners
  learn STAGE [--force]  create learn/NN-name/, a crate holding the faulty source and the stage tests
  check [STAGE]          run your copy's tests, record progress, write learn/verification.json
  hint STAGE [LEVEL] [--lang en|zh-CN]
                         print the next graded hint (or LEVEL 1-3)
  progress [--reset]     list the seven stages with your status

model (crates/llama, see `cargo xtask model`)
  model fetch|inspect|list …, eval …
  bench …                bench-verify, then the model benchmark with these arguments
                         (builds llama-tools first and measures llama-bench in the same run)
  llama-tools [--force] [--jobs N] [--print-dir]
                         build llama-server + llama-bench from the llama-cpp-python sdist into
                         target/llama-tools/ (cached in ~/.cache/forge, skipped when present)

common options
  --root DIR             course root (default: this workspace)
  --scratch DIR          scratch workspace for solution and fault copies and their target dir
                         (default: ROOT/target/xtask-scratch)
  --evidence DIR         where verification.json goes (default: ROOT/evidence)
  --lang en|zh-CN        language of hints and titles (default from $LANG)

STAGE is `01`, `1`, `01-action-selection` or `action-selection`.
See docs/xtask.md.";

fn main() -> ExitCode {
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.is_empty() || matches!(argv[0].as_str(), "-h" | "--help" | "help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let verb = argv.remove(0);
    match dispatch(&verb, argv) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn dispatch(verb: &str, rest: Vec<String>) -> anyhow::Result<ExitCode> {
    match verb {
        "verify" => verify::cmd_verify(Args::parse(rest, verify::VERIFY_FLAGS)?),
        "fault" => verify::cmd_fault(Args::parse(rest, verify::FAULT_FLAGS)?),
        "bench-verify" => verify_bench::cmd_bench_verify(Args::parse(rest, verify_bench::FLAGS)?),
        "learn" => learn::cmd_learn(Args::parse(rest, learn::LEARN_FLAGS)?),
        "check" => learn::cmd_check(Args::parse(rest, learn::CHECK_FLAGS)?),
        "hint" => learn::cmd_hint(Args::parse(rest, learn::HINT_FLAGS)?),
        "progress" => learn::cmd_progress(Args::parse(rest, learn::PROGRESS_FLAGS)?),
        // The model verbs belong to crates/llama's helper (xtask/src/model.rs).
        "model" => model::run(&rest).map(|()| ExitCode::SUCCESS),
        "llama-tools" => {
            let args = Args::parse(rest, llama_tools::FLAGS)?;
            let root = args.path("root").unwrap_or_else(workspace_root);
            llama_tools::cmd_llama_tools(&root, args).map(|()| ExitCode::SUCCESS)
        }
        "eval" => model::eval(&rest).map(|()| ExitCode::SUCCESS),
        // `bench` = the verify benchmark (defaults), then the model benchmark with the given args.
        "bench" => {
            let code =
                verify_bench::cmd_bench_verify(Args::parse(Vec::new(), verify_bench::FLAGS)?)?;
            model::bench(&rest)?;
            Ok(code)
        }
        other => anyhow::bail!("unknown verb `{other}`\n\n{USAGE}"),
    }
}
