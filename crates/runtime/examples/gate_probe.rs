//! `gate_probe`: the claims gate probed without a model over a folder of task folders (see
//! `runtime::gate_probe`): the right answer and answers made wrong on purpose, and every wrong answer the gate
//! certifies, named.
//!
//! Usage: `cargo run -p forge-runtime --example gate_probe -- [--tasks-dir DIR] [--knowledge-dir DIR] [--verbose]`.
//! Exits 1 when the gate certified any wrong answer, 2 on bad input.

use std::path::PathBuf;
use std::process::ExitCode;

use runtime::gate_probe;

fn main() -> ExitCode {
    let mut tasks_dir = PathBuf::from("fixtures/tasks");
    let mut knowledge = PathBuf::from("knowledge");
    let mut verbose = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        // `--verbose` takes no value, so it may stand anywhere; the directories each take the next argument.
        match (a.as_str(), a.as_str() == "--verbose") {
            (_, true) => verbose = true,
            ("--tasks-dir" | "--knowledge-dir", _) => {
                let Some(v) = args.next() else {
                    eprintln!("{a} needs a directory after it");
                    return ExitCode::from(2);
                };
                match a.as_str() {
                    "--tasks-dir" => tasks_dir = v.into(),
                    _ => knowledge = v.into(),
                }
            }
            (other, _) => {
                eprintln!(
                    "unknown argument {other:?} (--tasks-dir DIR, --knowledge-dir DIR, --verbose)"
                );
                return ExitCode::from(2);
            }
        }
    }
    let tally = match gate_probe::probe_all(&tasks_dir, &knowledge, verbose) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: {e}", tasks_dir.display());
            return ExitCode::from(2);
        }
    };
    let [v, a, d, r] = tally.right;
    let [wv, wa, wd, wr] = tally.wrong;
    println!(
        "{} tasks probed ({} skipped, {} abstaining by design): right answers — verified {v}, abstained {a}, \
         disputed {d}, refused {r}; wrong answers ({}) — certified {wv}, abstained {wa}, disputed {wd}, refused {wr}",
        tally.tasks,
        tally.skipped.len(),
        tally.abstaining,
        wv + wa + wd + wr
    );
    for s in &tally.skipped {
        println!("  skipped {s}");
    }
    for c in &tally.certified_wrong {
        println!("  CERTIFIED WRONG {c}");
    }
    if tally.certified_wrong.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
