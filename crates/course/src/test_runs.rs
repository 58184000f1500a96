//! Test runs shared by `verify` and `check`: the test binaries a build produced for one package, run in
//! parallel with a timeout, and the report of a run (every test's outcome, counts, timings, output tails).

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use crate::cargo::{self, BinaryRun, BuildOutcome, Launcher, TestBinary, TestOutcome, TestResult};
use crate::report::RunReport;

pub fn binaries_for(build: &BuildOutcome, package: &str) -> Vec<TestBinary> {
    build
        .binaries
        .iter()
        .filter(|b| b.package == package)
        .cloned()
        .collect()
}

/// Runs binaries on `jobs` worker threads; results keep the caller's tag.
pub fn run_binaries<T: Send + Clone>(
    work: Vec<(usize, T, TestBinary)>,
    jobs: usize,
    timeout: Duration,
) -> anyhow::Result<Vec<(usize, T, BinaryRun)>> {
    run_binaries_with(work, jobs, timeout, false)
}

/// [`run_binaries`], optionally with `--include-ignored` (the learner's judge).
pub fn run_binaries_with<T: Send + Clone>(
    work: Vec<(usize, T, TestBinary)>,
    jobs: usize,
    timeout: Duration,
    include_ignored: bool,
) -> anyhow::Result<Vec<(usize, T, BinaryRun)>> {
    run_binaries_in(work, jobs, timeout, include_ignored, &Launcher::default())
}

/// [`run_binaries_with`], each binary started by `launcher` (a box, for `grade`).
pub fn run_binaries_in<T: Send + Clone>(
    work: Vec<(usize, T, TestBinary)>,
    jobs: usize,
    timeout: Duration,
    include_ignored: bool,
    launcher: &Launcher,
) -> anyhow::Result<Vec<(usize, T, BinaryRun)>> {
    let queue = Mutex::new(work.into_iter().collect::<std::collections::VecDeque<_>>());
    let results = Mutex::new(Vec::new());
    let first_error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| {
                loop {
                    let Some((index, tag, binary)) = queue.lock().expect("queue").pop_front()
                    else {
                        break;
                    };
                    match cargo::run_test_binary_in(
                        &binary,
                        timeout,
                        None,
                        include_ignored,
                        launcher,
                    ) {
                        Ok(run) => results.lock().expect("results").push((index, tag, run)),
                        Err(e) => {
                            first_error.lock().expect("error").get_or_insert(e);
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().expect("error") {
        return Err(e);
    }
    let mut results = results.into_inner().expect("results");
    results.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.2.target.cmp(&b.2.target)));
    Ok(results)
}

pub fn run_report(
    variant: &str,
    source_dir: String,
    targets: &[String],
    build: &BuildOutcome,
    package: &str,
    runs: &[&BinaryRun],
) -> RunReport {
    let build_errors = build.errors.get(package).cloned().unwrap_or_default();
    let built: BTreeSet<&str> = build
        .binaries
        .iter()
        .filter(|b| b.package == package)
        .map(|b| b.target.as_str())
        .collect();
    let build_ok = build_errors.is_empty() && targets.iter().all(|t| built.contains(t.as_str()));
    let mut build_errors = build_errors;
    if !build_ok && build_errors.is_empty() {
        // cargo failed before compiling (bad manifest, resolution…): its stderr is the reason.
        build_errors.push(build.stderr.trim().to_owned());
    }
    let mut tests: Vec<TestResult> = runs.iter().flat_map(|r| r.tests.iter().cloned()).collect();
    // libtest reports in completion order; the report keeps one stable order.
    tests.sort_by(|a, b| a.target.cmp(&b.target).then_with(|| a.name.cmp(&b.name)));
    // A binary that died (abort, signal) without reporting: count it as a failing pseudo-test.
    for run in runs {
        let reported_failure = run.tests.iter().any(|t| t.outcome == TestOutcome::Failed);
        if run.exit_code != Some(0) && !reported_failure && !run.timed_out {
            tests.push(TestResult {
                name: format!("<{} exited with {:?}>", run.target, run.exit_code),
                target: run.target.clone(),
                outcome: TestOutcome::Failed,
                output: Some(tail(&format!("{}\n{}", run.stdout, run.stderr), 4000)),
            });
        }
    }
    let count = |o: TestOutcome| tests.iter().filter(|t| t.outcome == o).count() as u32;
    RunReport {
        variant: variant.to_owned(),
        source_dir,
        targets: targets.to_vec(),
        build_ok,
        build_errors,
        build_ms: build.duration.as_millis() as u64,
        run_ms: runs.iter().map(|r| r.duration.as_millis() as u64).sum(),
        timed_out: runs.iter().any(|r| r.timed_out),
        passed: count(TestOutcome::Passed),
        failed: count(TestOutcome::Failed),
        ignored: count(TestOutcome::Ignored),
        tests,
    }
}

fn tail(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.len() <= max {
        return text.to_owned();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}
