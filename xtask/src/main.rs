//! `cargo xtask` — Forge's developer tasks: one flat dispatch; each verb's arguments parsed by clap (`forge_course::args`), `--help` per verb.
//!
//! Instructors: `verify`, `fault`, `mutants`, `bench-verify`, `grade`, `bench-grade`. Learners: `learn`, `predict`, `check`,
//! `hint`, `progress`, `watch`.
//! The learners' verbs and `grade`/`bench-grade` live in the course library (`crates/course`, `forge_course`);
//! the model verbs (`model`, `eval`, the model part of `bench`) in `model.rs`. This file only parses arguments
//! and dispatches; it holds no course logic.

mod circles;
mod code_map;
mod layers;
mod llama_tools;
mod model;
mod mutants;
#[cfg(test)]
mod source_rules;
mod verify;
mod verify_bench;

use std::process::ExitCode;

use forge_course::args::Args;
use forge_course::{check, grade, learn, progress, watch};

const USAGE: &str = "\
usage: cargo xtask <verb> [options]        (cargo xtask <verb> --help: that verb's options)

instructors
  verify [STAGE…] [--json] [--no-cache] [--jobs N] [--timeout SECS]
                         prove every stage's fault contract, write evidence/verification.json
  fault STAGE            swap the fault in (scratch copy), run the target test, show the diagnosis
                         (--instructor --room: one screen per key press, for a projector)
  mutants [STAGE…]       run cargo-mutants on each stage's src/ (when installed), record the figures
                         in evidence/mutants/, fail on a surviving mutant stage.toml does not explain
  grade DIR [--stages LIST] [--jobs N] [--out DIR] [--timeout SECS]
                         re-check a class's hand-ins (one learn/ folder or zip per learner), each
                         build and test in a bubblewrap box; write grades.json, grades.md, charts
  bench-grade [--learners N] [--jobs N] [--stages LIST]
                         time grade on a synthetic class (default 30 learners × 7 stages),
                         write evidence/bench/grade.json
  circles                list import circles between the modules of every crate (none is the rule)
  layers                 check that no lower crate depends on a higher one (stages <- course <- language <- tools
                         <- evidence <- runtime <- model, decoding <- llama <- server <- runner)
  code-map               check ARCHITECTURE.md's code map: one line per source file, each the
                         first sentence of the file's //! line
  bench-verify [--runs N] [--skip-cold]
                         time verify cached / warm --no-cache / cold, write evidence/bench-verify.json

learners
  learn STAGE [--scratch] [--force]
                         create learn/NN-name/: the faulty source (or, with --scratch, todo!() bodies),
                         the stage tests and a transfer-test skeleton, in the learn/ workspace
  predict STAGE <A-D>    commit your prediction (once, before the first check); tells you why
  check [STAGE]          run your copy's tests, prove your transfer test catches the fault, record
                         progress, write learn/verification.json; a pass reveals the reference repair
  hint STAGE [LEVEL] [--lang en|zh-CN]
                         print the next graded hint (one level at a time)
  watch [STAGE]          re-check on every save; keys: h hint, l list, r re-run, q quit, a-d predict;
                         moves on to the next stage when one passes
  progress [--reset]     list the seven stages with your status

model (crates/model and crates/llama, see `cargo xtask model`)
  model fetch|inspect|list …, eval …
  bench …                bench-verify, then the model benchmark with these arguments
                         (builds llama-tools first and measures llama-bench in the same run)
  llama-tools [--force] [--jobs N] [--print-dir]
                         build llama-server + llama-bench into target/llama-tools/, linked against
                         the runner's compiled llama.cpp (cached in ~/.cache/forge, skipped when present)

common options
  --root DIR             course root (default: this workspace)
  --scratch-dir DIR      scratch workspace for solution and fault copies and their target dir
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
        "verify" => verify::cmd_verify(Args::parse(&verify::VERIFY, rest)?),
        "fault" => verify::cmd_fault(Args::parse(&verify::FAULT, rest)?),
        "bench-verify" => {
            verify_bench::cmd_bench_verify(Args::parse(&verify_bench::BENCH_VERIFY, rest)?)
        }
        "learn" => learn::cmd_learn(Args::parse(&learn::LEARN, rest)?),
        "predict" => progress::cmd_predict(Args::parse(&progress::PREDICT, rest)?),
        "check" => check::cmd_check(Args::parse(&check::CHECK, rest)?),
        "hint" => progress::cmd_hint(Args::parse(&progress::HINT, rest)?),
        "progress" => progress::cmd_progress(Args::parse(&progress::PROGRESS, rest)?),
        "watch" => watch::cmd_watch(Args::parse(&watch::WATCH, rest)?),
        "grade" => grade::cmd_grade(Args::parse(&grade::GRADE, rest)?),
        "bench-grade" => {
            grade::bench::cmd_bench_grade(Args::parse(&grade::bench::BENCH_GRADE, rest)?)
        }
        "mutants" => mutants::cmd_mutants(Args::parse(&mutants::MUTANTS, rest)?),
        "circles" => circles::cmd_circles(Args::parse(&circles::CIRCLES, rest)?),
        "layers" => layers::cmd_layers(Args::parse(&layers::LAYERS_VERB, rest)?),
        "code-map" => code_map::cmd_code_map(Args::parse(&code_map::CODE_MAP, rest)?),
        // The model verbs: crates/model (fetch, inspect) and crates/llama (bench, eval), via xtask/src/model.rs.
        "model" => model::run(&rest).map(|()| ExitCode::SUCCESS),
        "llama-tools" => {
            let args = Args::parse(&llama_tools::LLAMA_TOOLS, rest)?;
            let root = args.path("root").unwrap_or_else(workspace_root);
            llama_tools::cmd_llama_tools(&root, args).map(|()| ExitCode::SUCCESS)
        }
        "eval" => model::eval(&rest).map(|()| ExitCode::SUCCESS),
        // `bench` = the verify benchmark (defaults), then the model benchmark with the given args.
        "bench" if rest.iter().any(|a| a == "--help" || a == "-h") => {
            println!(
                "cargo xtask bench [ARGS…]: `bench-verify`, then the model benchmark with ARGS:\n"
            );
            model::bench_help().map(|()| ExitCode::SUCCESS)
        }
        "bench" => {
            let code = verify_bench::cmd_bench_verify(Args::parse(
                &verify_bench::BENCH_VERIFY,
                Vec::new(),
            )?)?;
            model::bench(&rest)?;
            Ok(code)
        }
        other => anyhow::bail!("unknown verb `{other}`\n\n{USAGE}"),
    }
}
