//! `cargo xtask bench-grade`: how long grading a class takes. Synthesises N learners × the course's stages
//! (every fifth learner leaves the fault in place; the others hand in the repair with a transfer test of their
//! own, the reference's renamed), grades them with `grade_class` exactly as `grade` would, and writes the
//! total time, the seed's share and the cost per submission to `evidence/bench/grade.json`. A measurement,
//! not a timed test.

use std::fs;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use serde_json::json;

use super::{Options, cores, grade_class};
use crate::args::{Args, Verb};
use crate::check::files_below;
use crate::course::{self, Course, Stage};

pub const BENCH_GRADE: Verb = Verb {
    name: "bench-grade",
    about: "Time `grade` on a synthetic class (N learners × every stage); write evidence/bench/grade.json",
    positionals: "",
    flags: &[
        ("learners", Some("N"), "synthetic learners (default 30)"),
        (
            "jobs",
            Some("N"),
            "learners graded at a time (default: the number of cores)",
        ),
        (
            "stages",
            Some("LIST"),
            "comma-separated stages (default: all)",
        ),
    ],
};

pub fn cmd_bench_grade(args: Args) -> anyhow::Result<ExitCode> {
    let course = Course::open(&args)?;
    let learners = args.number("learners")?.unwrap_or(30).max(1) as usize;
    let jobs = args
        .number("jobs")?
        .map(|n| n.max(1) as usize)
        .unwrap_or_else(cores);
    let selectors: Vec<String> = args
        .value("stages")
        .map(|s| s.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let stages = course.select(&selectors)?;
    let class = course.scratch.join("grade-bench/class");
    fs::remove_dir_all(&class).ok();
    for n in 0..learners {
        for stage in &stages {
            write_learner(&class.join(format!("learner{n:02}")), stage, n)?;
        }
    }
    let out = course.scratch.join("grade-bench/out");
    // A cold seed: the measured total includes compiling the dependencies, once.
    fs::remove_dir_all(course.scratch.join("grade/work")).ok();
    eprintln!(
        "grading {learners} synthetic learners × {} stages, {jobs} at a time…",
        stages.len()
    );
    let load_at_start = load_average();
    let grades = grade_class(
        &course,
        &Options {
            class,
            out,
            stages: stages.clone(),
            jobs,
            timeout: Duration::from_secs(30),
        },
    )?;
    let mut outcomes = std::collections::BTreeMap::<String, u32>::new();
    for stage in grades.learners.iter().flat_map(|l| &l.stages) {
        *outcomes.entry(stage.outcome.clone()).or_default() += 1;
    }
    let t = &grades.timing;
    let record = json!({
        "what": "cargo xtask bench-grade: grade_class on synthetic learners (every fifth leaves the fault in place), each build and test in the bubblewrap box; the seed (the dependencies, compiled once) starts cold",
        "learners": learners,
        "stages": stages.len(),
        "submissions": t.submissions,
        "jobs": jobs,
        "cores": cores(),
        "total_s": super::round3(t.total_ms as f64 / 1000.0),
        "seed_s": super::round3(t.seed_ms as f64 / 1000.0),
        "per_submission_ms": t.per_submission_ms,
        "outcomes": outcomes,
        "load_average_at_start": load_at_start,
        "load_average_at_end": load_average(),
        "copies_flagged": grades.copies.len(),
        "measured_at": grades.generated_at,
    });
    let path = course.evidence.join("bench/grade.json");
    fs::create_dir_all(path.parent().expect("has a parent"))?;
    fs::write(&path, serde_json::to_string_pretty(&record)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    println!("{}", serde_json::to_string_pretty(&record)?);
    println!("wrote {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// The 1-, 5- and 15-minute load averages (other work on the machine slows grading: the figures say how much
/// there was), `None` where procfs has none.
fn load_average() -> Option<[f64; 3]> {
    let text = fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}

/// One synthetic learner's stage: the reference `src/` (or, every fifth learner, the fault left in place) and
/// the reference transfer test renamed, so the judge runs it by behaviour instead of refusing a copy.
fn write_learner(dir: &std::path::Path, stage: &Stage, n: usize) -> anyhow::Result<()> {
    let validator = course::compile_schema("failure.schema.json")?;
    let contract = course::load_contract(stage, &validator).map_err(|p| anyhow::anyhow!("{p}"))?;
    let copy = dir.join("learn").join(&stage.id);
    for (rel, bytes) in files_below(&stage.dir, "src")? {
        let bytes = if n.is_multiple_of(5) && rel == contract.faulty_source_path {
            fs::read(stage.dir.join(&contract.fault_file))?
        } else {
            bytes
        };
        let path = copy.join(&rel);
        fs::create_dir_all(path.parent().expect("has a parent"))?;
        fs::write(path, bytes)?;
    }
    let transfer = fs::read_to_string(stage.dir.join("tests/transfer.rs"))?;
    let renamed = course::test_fns_in_source(&transfer)
        .iter()
        .fold(transfer.clone(), |text, name| {
            text.replace(&format!("fn {name}("), &format!("fn {name}_by_learner{n}("))
        });
    fs::create_dir_all(copy.join("tests"))?;
    fs::write(copy.join("tests/transfer.rs"), renamed)?;
    Ok(())
}
