//! `cargo xtask verify` and `cargo xtask fault`: prove each stage's fault contract.
//!
//! Pipeline: load contracts → answer from the result cache where every input is unchanged → build
//! the solutions (in the course workspace) and the fault copies (one scratch workspace) at the same
//! time → run every test binary directly, in parallel → classify like cargo-mutants → write
//! evidence. It never writes into `stages/`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::args::{Args, Verb};
use crate::cargo::{
    self, BinaryRun, BuildOutcome, BuildRequest, TestBinary, TestOutcome, TestResult,
};
use crate::course::{self, Contract, ContractProblem, Course, Stage};
use crate::report::{
    self, Expectation, Mode, Observation, RunOptions, RunReport, Runs, StageReport, Verification,
};
use crate::scratch::{self, Variant};

pub const VERIFY: Verb = Verb {
    name: "verify",
    about: "Prove every stage's fault contract in scratch copies and write evidence/verification.json",
    positionals: "[STAGE…]",
    flags: &[
        ("json", None, "print the report as JSON"),
        ("no-cache", None, "run every stage again, ignoring results cached for unchanged sources"),
        ("jobs", Some("N"), "stages built and run at a time"),
        ("timeout", Some("SECS"), "seconds a test binary may run before it is stopped (default 60)"),
    ],
};
pub const FAULT: Verb = Verb {
    name: "fault",
    about: "Swap a stage's fault in (scratch copy), run its target test and show the failing output",
    positionals: "STAGE",
    flags: &[
        ("timeout", Some("SECS"), "seconds the test binary may run before it is stopped (default 60)"),
        ("show-repair", None, "also print the repair principle (with --instructor, or once the stage is passed)"),
        ("instructor", None, "print the diagnosis steps even before the stage is passed (demos)"),
    ],
};

/// Bump when the meaning of a cached result changes (classification rules, report shape).
const CACHE_SCHEMA: &str = "forge-xtask-verify-cache-v1";

/// Outcome classes (cargo-mutants style), in the order they are decided.
pub mod class {
    pub const HOLDS: &str = "holds";
    pub const INVALID_CONTRACT: &str = "invalid_contract";
    pub const SOLUTION_FAILING: &str = "solution_failing";
    pub const UNVIABLE: &str = "unviable";
    pub const TIMEOUT: &str = "timeout";
    pub const FAULT_NOT_CAUGHT: &str = "fault_not_caught";
    pub const COLLATERAL: &str = "collateral";
    pub const WRONG_FAILURE: &str = "wrong_failure";
}

#[derive(Debug, Clone)]
pub struct VerifyConfig {
    pub no_cache: bool,
    pub jobs: usize,
    pub timeout: Duration,
    pub show_progress: bool,
}

impl VerifyConfig {
    pub fn from_args(args: &Args) -> anyhow::Result<VerifyConfig> {
        let default_jobs = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        let jobs = args
            .number("jobs")?
            .map(|j| j as usize)
            .unwrap_or(default_jobs)
            .max(1);
        Ok(VerifyConfig {
            no_cache: args.flag("no-cache"),
            jobs,
            timeout: Duration::from_secs(args.number("timeout")?.unwrap_or(60).max(1)),
            show_progress: !args.flag("json"),
        })
    }
}

pub fn cmd_verify(args: Args) -> anyhow::Result<ExitCode> {
    let course = Course::open(&args)?;
    let stages = course.select(&args.positional)?;
    let config = VerifyConfig::from_args(&args)?;
    let verification = verify(&course, &stages, &config)?;
    check_against_schema(&verification)?;
    let path = course.evidence.join("verification.json");
    report::write_if_substance_changed(&path, &verification)?;
    if args.flag("json") {
        println!("{}", serde_json::to_string_pretty(&verification)?);
    } else {
        print_summary(&course, &verification);
        eprintln!("wrote {}", course.relative(&path));
    }
    Ok(if verification.all_contracts_hold {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Refuses to write a report that its own schema would reject.
pub fn check_against_schema(verification: &Verification) -> anyhow::Result<()> {
    let validator = course::compile_schema("verification.schema.json")?;
    let errors = course::schema_errors(&validator, &serde_json::to_value(verification)?);
    if !errors.is_empty() {
        bail!(
            "the report violates schemas/verification.schema.json:\n  {}",
            errors.join("\n  ")
        );
    }
    Ok(())
}

/// Everything known about one stage before running it.
struct Plan<'a> {
    stage: &'a Stage,
    contract: Result<Contract, ContractProblem>,
    files: BTreeMap<String, String>,
    cache_key: String,
    solution_targets: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct CacheEntry {
    key: String,
    produced_at: String,
    report: StageReport,
}

pub fn verify(
    course: &Course,
    stages: &[Stage],
    config: &VerifyConfig,
) -> anyhow::Result<Verification> {
    let started_at = SystemTime::now();
    let clock = Instant::now();
    let toolchain = report::toolchain()?;
    let validator = course::compile_schema("failure.schema.json")?;
    let common_key = common_cache_inputs(course, &toolchain)?;

    let progress = progress_bar(stages.len() as u64, config.show_progress);
    progress.set_message("hashing inputs");
    let mut plans = Vec::new();
    for stage in stages {
        plans.push(plan_stage(course, stage, &validator, &common_key)?);
    }

    // Answer from the cache where every input is unchanged.
    let cache_dir = course.evidence.join("cache");
    let mut reports: BTreeMap<String, StageReport> = BTreeMap::new();
    for plan in &plans {
        if config.no_cache || plan.contract.is_err() {
            continue;
        }
        if let Some(entry) = read_cache(&cache_dir, &plan.stage.id)
            && entry.key == plan.cache_key
        {
            let mut cached = entry.report;
            cached.cached = true;
            cached.cached_from = Some(entry.produced_at);
            reports.insert(plan.stage.id.clone(), cached);
            progress.inc(1);
        }
    }
    for plan in &plans {
        if let Err(problem) = &plan.contract {
            let report = invalid_contract_report(course, plan, problem);
            write_stage_logs(course, plan, &report, "", "")?;
            reports.insert(plan.stage.id.clone(), report);
            progress.inc(1);
        }
    }

    let to_run: Vec<(&Plan, &Contract)> = plans
        .iter()
        .filter(|p| !reports.contains_key(&p.stage.id))
        .map(|p| {
            (
                p,
                p.contract
                    .as_ref()
                    .expect("invalid contracts were reported above"),
            )
        })
        .collect();
    if !to_run.is_empty() {
        let fresh = run_stages(course, &to_run, config, &progress)?;
        for (plan, report) in fresh {
            if report.outcome != class::TIMEOUT {
                let entry = CacheEntry {
                    key: plan.cache_key.clone(),
                    produced_at: report::rfc3339(started_at),
                    report: report.clone(),
                };
                scratch::write_if_changed(
                    &cache_dir.join(format!("{}.json", plan.stage.id)),
                    serde_json::to_string_pretty(&entry)?.as_bytes(),
                )?;
            }
            reports.insert(plan.stage.id.clone(), report);
        }
    }
    progress.finish_and_clear();

    let stages_out: Vec<StageReport> = stages
        .iter()
        .filter_map(|s| reports.remove(&s.id))
        .collect();
    let mut summary: BTreeMap<String, u32> = BTreeMap::new();
    for s in &stages_out {
        *summary.entry(s.outcome.clone()).or_default() += 1;
    }
    let stage_tree = course::hash_tree(&course.root.join("stages"))?;
    let lock = course.root.join("Cargo.lock");
    Ok(Verification {
        format_version: report::FORMAT_VERSION,
        mode: Mode::Reference,
        generator: format!("cargo xtask verify {}", env!("CARGO_PKG_VERSION")),
        toolchain,
        host: report::host(),
        started_at: report::rfc3339(started_at),
        finished_at: report::rfc3339(SystemTime::now()),
        duration_ms: clock.elapsed().as_millis() as u64,
        options: RunOptions {
            selected: stages.iter().map(|s| s.id.clone()).collect(),
            no_cache: config.no_cache,
            jobs: config.jobs as u32,
            timeout_s: config.timeout.as_secs(),
        },
        all_contracts_hold: !stages_out.is_empty()
            && stages_out.iter().all(|s| s.outcome == class::HOLDS),
        stages_tree_hash: course::tree_hash(&stage_tree),
        cargo_lock_blake3: lock
            .is_file()
            .then(|| course::hash_file(&lock))
            .transpose()?,
        summary,
        stages: stages_out,
    })
}

fn progress_bar(len: u64, visible: bool) -> ProgressBar {
    if !visible {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed}] stage {pos}/{len} {msg}")
            .expect("static template")
            .tick_chars("⠁⠂⠄⡀⢀⠠⠐⠈ "),
    );
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// Inputs shared by every stage's cache key: this xtask binary, the toolchain, the root manifest,
/// the lock file and the contract schema.
fn common_cache_inputs(course: &Course, toolchain: &report::Toolchain) -> anyhow::Result<String> {
    let mut hasher = blake3::Hasher::new();
    hasher.update(CACHE_SCHEMA.as_bytes());
    let exe = std::env::current_exe().context("locating the xtask binary")?;
    // The binary's size and mtime change with every rebuild of the xtask (hashing its ~100 MB
    // would cost more than the whole cached run should take).
    let meta = fs::metadata(&exe).with_context(|| format!("reading {}", exe.display()))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .unwrap_or_default();
    hasher.update(format!("{}|{}|{}", exe.display(), meta.len(), mtime.as_nanos()).as_bytes());
    hasher.update(
        format!(
            "{}|{}|{}|{}",
            toolchain.rustc, toolchain.rustc_commit, toolchain.host_triple, toolchain.cargo
        )
        .as_bytes(),
    );
    for path in [
        course.root.join("Cargo.toml"),
        course.root.join("Cargo.lock"),
        course::schema_path("failure.schema.json"),
    ] {
        hasher.update(path.to_string_lossy().as_bytes());
        if path.is_file() {
            hasher.update(course::hash_file(&path)?.as_bytes());
        }
    }
    Ok(hasher.finalize().to_hex().to_string())
}

fn plan_stage<'a>(
    course: &Course,
    stage: &'a Stage,
    validator: &jsonschema::Validator,
    common_key: &str,
) -> anyhow::Result<Plan<'a>> {
    let contract = course::load_contract(stage, validator);
    let tree = course::hash_tree(&stage.dir)?;
    // Stages this one depends on (by package name) are inputs too: 07 builds against 02 and 06.
    let manifest = fs::read_to_string(stage.dir.join("Cargo.toml"))?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(common_key.as_bytes());
    hasher.update(stage.id.as_bytes());
    hasher.update(course::tree_hash(&tree).as_bytes());
    for other in &course.stages {
        if other.id != stage.id && manifest.contains(&other.package) {
            hasher.update(other.id.as_bytes());
            hasher.update(course::tree_hash(&course::hash_tree(&other.dir)?).as_bytes());
        }
    }
    let mut files = BTreeMap::new();
    let prefix = format!("stages/{}/", stage.id);
    let mut involve = |rel: &str| {
        if let Some(hash) = tree.get(rel) {
            files.insert(format!("{prefix}{rel}"), hash.clone());
        }
    };
    involve("fixtures/failure.json");
    involve("Cargo.toml");
    if let Ok(c) = &contract {
        involve(&c.faulty_source_path);
        involve(&c.fault_file);
    }
    for rel in tree.keys().filter(|k| k.starts_with("tests/")) {
        involve(rel);
    }
    let mut solution_targets: Vec<String> = tree
        .keys()
        .filter_map(|k| k.strip_prefix("tests/").and_then(|f| f.strip_suffix(".rs")))
        .filter(|f| !f.contains('/'))
        .map(str::to_owned)
        .collect();
    solution_targets.sort();
    Ok(Plan {
        stage,
        contract,
        files,
        cache_key: hasher.finalize().to_hex().to_string(),
        solution_targets,
    })
}

fn read_cache(dir: &Path, stage_id: &str) -> Option<CacheEntry> {
    let text = fs::read_to_string(dir.join(format!("{stage_id}.json"))).ok()?;
    serde_json::from_str(&text).ok()
}

fn invalid_contract_report(course: &Course, plan: &Plan, problem: &ContractProblem) -> StageReport {
    StageReport {
        stage_id: plan.stage.id.clone(),
        experiment_id: format!("single-agent-loop-{}", plan.stage.id),
        fault_id: None,
        outcome: class::INVALID_CONTRACT.to_owned(),
        detail: problem.to_string(),
        expected: Expectation::default(),
        observed: Observation::default(),
        cached: false,
        cached_from: None,
        cache_key: plan.cache_key.clone(),
        duration_ms: 0,
        files: plan.files.clone(),
        runs: Runs::default(),
        evidence_dir: Some(evidence_dir_name(course, plan.stage)),
    }
}

fn evidence_dir_name(_course: &Course, stage: &Stage) -> String {
    format!("evidence/single-agent-loop/{}/", stage.id)
}

fn evidence_dir_path(course: &Course, stage: &Stage) -> PathBuf {
    course.evidence.join("single-agent-loop").join(&stage.id)
}

/// Builds and runs the solution and fault variants of `plans`, then classifies each stage.
fn run_stages<'p>(
    course: &Course,
    plans: &[(&'p Plan<'p>, &'p Contract)],
    config: &VerifyConfig,
    progress: &ProgressBar,
) -> anyhow::Result<Vec<(&'p Plan<'p>, StageReport)>> {
    progress.set_message("building solution and fault copies");
    let copies: Vec<(&Stage, &Contract)> = plans.iter().map(|(p, c)| (p.stage, *c)).collect();
    let workspace = scratch::prepare_scratch_workspace(course, &copies)?;
    let mut requests = Vec::new();
    for (plan, contract) in plans {
        requests.push(BuildRequest {
            package: scratch::copy_package(plan.stage, Variant::Solution),
            targets: plan.solution_targets.clone(),
        });
        requests.push(BuildRequest {
            package: scratch::copy_package(plan.stage, Variant::Fault),
            targets: contract.fault_run_targets.clone(),
        });
    }
    // One cargo invocation for all fourteen copies: one fingerprint check when nothing changed.
    let build = cargo::build_tests(
        &workspace.join("Cargo.toml"),
        &scratch::scratch_target_dir(course),
        &requests,
        Some(config.jobs),
    )?;

    // Run every test binary, `config.jobs` at a time.
    progress.set_message("running tests");
    let mut jobs: Vec<(usize, Variant, TestBinary)> = Vec::new();
    for (index, (plan, _)) in plans.iter().enumerate() {
        for variant in [Variant::Solution, Variant::Fault] {
            for binary in binaries_for(&build, &scratch::copy_package(plan.stage, variant)) {
                jobs.push((index, variant, binary));
            }
        }
    }
    let runs = run_binaries(jobs, config.jobs, config.timeout)?;

    let mut out = Vec::new();
    for (index, (plan, contract)) in plans.iter().enumerate() {
        let of = |variant: Variant| -> Vec<&BinaryRun> {
            runs.iter()
                .filter(|r| r.0 == index && r.1 == variant)
                .map(|r| &r.2)
                .collect()
        };
        let (solution_runs, fault_runs) = (of(Variant::Solution), of(Variant::Fault));
        let solution_package = scratch::copy_package(plan.stage, Variant::Solution);
        let fault_package = scratch::copy_package(plan.stage, Variant::Fault);
        let solution = run_report(
            "solution",
            course.relative(&plan.stage.dir).into_owned(),
            &plan.solution_targets,
            &build,
            &solution_package,
            &solution_runs,
        );
        let fault = run_report(
            "fault",
            course
                .relative(&scratch::copy_dir(course, plan.stage, Variant::Fault))
                .into_owned(),
            &contract.fault_run_targets,
            &build,
            &fault_package,
            &fault_runs,
        );
        let verdict = classify(contract, &solution, &fault);
        let report = StageReport {
            stage_id: plan.stage.id.clone(),
            experiment_id: contract.experiment_id.clone(),
            fault_id: Some(contract.fault_id.clone()),
            outcome: verdict.class.to_owned(),
            detail: verdict.detail,
            expected: Expectation {
                fail: vec![contract.target_test.clone()],
                pass: contract.must_still_pass.clone(),
                excerpt: Some(contract.expected_failure_excerpt.clone()),
            },
            observed: verdict.observed,
            cached: false,
            cached_from: None,
            cache_key: plan.cache_key.clone(),
            duration_ms: solution.run_ms + fault.run_ms,
            files: plan.files.clone(),
            runs: Runs {
                solution: Some(solution),
                fault: Some(fault),
                learner: None,
            },
            evidence_dir: Some(contract.evidence_dir.clone()),
        };
        write_stage_logs(
            course,
            plan,
            &report,
            &render_log(&build, &solution_package, &solution_runs),
            &render_log(&build, &fault_package, &fault_runs),
        )?;
        progress.inc(1);
        out.push((*plan, report));
    }
    Ok(out)
}

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
                    match cargo::run_test_binary_with(&binary, timeout, None, include_ignored) {
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

pub struct Verdict {
    pub class: &'static str,
    pub detail: String,
    pub observed: Observation,
}

fn names(tests: &[TestResult], outcome: TestOutcome, targets: &[String]) -> BTreeSet<String> {
    tests
        .iter()
        .filter(|t| t.outcome == outcome && targets.contains(&t.target))
        .map(|t| t.name.clone())
        .collect()
}

fn list(set: &BTreeSet<String>) -> String {
    if set.is_empty() {
        "(none)".to_owned()
    } else {
        set.iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Decides a stage's class from its contract and the two runs (first matching rule wins).
pub fn classify(contract: &Contract, solution: &RunReport, fault: &RunReport) -> Verdict {
    let fault_failed = names(
        &fault.tests,
        TestOutcome::Failed,
        &contract.fault_run_targets,
    );
    let fault_passed = names(
        &fault.tests,
        TestOutcome::Passed,
        &contract.fault_run_targets,
    );
    let target_output = fault
        .tests
        .iter()
        .find(|t| t.name == contract.target_test)
        .and_then(|t| t.output.clone());
    let excerpt_found = target_output
        .as_deref()
        .map(|o| o.contains(&contract.expected_failure_excerpt));
    let observed = Observation {
        failed: fault_failed.iter().cloned().collect(),
        passed: fault_passed.iter().cloned().collect(),
        excerpt_found: if fault.build_ok {
            Some(excerpt_found.unwrap_or(false))
        } else {
            None
        },
    };
    let verdict = |class: &'static str, detail: String| Verdict {
        class,
        detail,
        observed: observed.clone(),
    };

    if !solution.build_ok {
        return verdict(
            class::SOLUTION_FAILING,
            format!(
                "the solution does not compile:\n{}",
                solution.build_errors.join("\n")
            ),
        );
    }
    if solution.timed_out {
        return verdict(
            class::TIMEOUT,
            "a solution test binary ran past the timeout".to_owned(),
        );
    }
    let all_targets: Vec<String> = solution.targets.clone();
    let solution_failed = names(&solution.tests, TestOutcome::Failed, &all_targets);
    if !solution_failed.is_empty() {
        return verdict(
            class::SOLUTION_FAILING,
            format!("solution tests fail: {}", list(&solution_failed)),
        );
    }
    if solution.passed == 0 {
        return verdict(
            class::SOLUTION_FAILING,
            "the solution run found no passing tests".to_owned(),
        );
    }
    // The contract must name exactly the tests that exist in the fault-run targets.
    let present: BTreeSet<String> = solution
        .tests
        .iter()
        .filter(|t| contract.fault_run_targets.contains(&t.target))
        .map(|t| t.name.clone())
        .collect();
    let listed: BTreeSet<String> = contract
        .must_still_pass
        .iter()
        .cloned()
        .chain(std::iter::once(contract.target_test.clone()))
        .collect();
    if present != listed {
        return verdict(
            class::INVALID_CONTRACT,
            format!(
                "must_still_pass ∪ {{target_test}} does not match the tests in {:?}: listed but absent {}; present but unlisted {}",
                contract.fault_run_targets,
                list(&listed.difference(&present).cloned().collect()),
                list(&present.difference(&listed).cloned().collect()),
            ),
        );
    }
    if !fault.build_ok {
        return verdict(
            class::UNVIABLE,
            format!(
                "the fault does not compile:\n{}",
                fault.build_errors.join("\n")
            ),
        );
    }
    if fault.timed_out {
        return verdict(
            class::TIMEOUT,
            "a fault-run test binary ran past the timeout".to_owned(),
        );
    }
    // Tests the contract expects but the fault run never reported count as failed (the binary died).
    let mut failed = fault_failed.clone();
    failed.extend(
        listed
            .iter()
            .filter(|t| !fault_passed.contains(*t) && !fault_failed.contains(*t))
            .cloned(),
    );
    failed.extend(
        fault
            .tests
            .iter()
            .filter(|t| t.outcome == TestOutcome::Failed && t.name.starts_with('<'))
            .map(|t| t.name.clone()),
    );
    if !failed.contains(&contract.target_test) {
        return verdict(
            class::FAULT_NOT_CAUGHT,
            format!(
                "the target test `{}` passes with the fault in place",
                contract.target_test
            ),
        );
    }
    let others: BTreeSet<String> = failed
        .iter()
        .filter(|t| **t != contract.target_test)
        .cloned()
        .collect();
    if !others.is_empty() {
        return verdict(
            class::COLLATERAL,
            format!(
                "besides `{}`, these fail too: {}",
                contract.target_test,
                list(&others)
            ),
        );
    }
    if excerpt_found != Some(true) {
        return verdict(
            class::WRONG_FAILURE,
            format!(
                "`{}` fails, but its output lacks the excerpt {:?}; it said:\n{}",
                contract.target_test,
                contract.expected_failure_excerpt,
                target_output.unwrap_or_default()
            ),
        );
    }
    verdict(
        class::HOLDS,
        format!(
            "only `{}` fails, with the expected excerpt",
            contract.target_test
        ),
    )
}

/// The evidence log of one variant: per test target, its exit status, every test's result in name
/// order and each failure's output. Deterministic on purpose: no timings and no completion order
/// (libtest prints results as threads finish), so re-running an unchanged course rewrites nothing.
pub fn render_log(build: &BuildOutcome, package: &str, runs: &[&BinaryRun]) -> String {
    let mut log = String::new();
    if let Some(errors) = build.errors.get(package) {
        log.push_str("== build errors ==\n");
        for e in errors {
            log.push_str(e);
            log.push('\n');
        }
    }
    for run in runs {
        let exit = match run.exit_code {
            Some(code) => format!("exit {code}"),
            None => "killed by a signal".to_owned(),
        };
        let timed_out = if run.timed_out { ", TIMED OUT" } else { "" };
        log.push_str(&format!(
            "== test target `{}` ({exit}{timed_out}) ==\n",
            run.target
        ));
        let mut tests: Vec<&TestResult> = run.tests.iter().collect();
        tests.sort_by(|a, b| a.name.cmp(&b.name));
        for test in &tests {
            let status = match test.outcome {
                TestOutcome::Passed => "ok",
                TestOutcome::Failed => "FAILED",
                TestOutcome::Ignored => "ignored",
            };
            log.push_str(&format!("test {} ... {status}\n", test.name));
        }
        for test in tests.iter().filter(|t| t.outcome == TestOutcome::Failed) {
            log.push_str(&format!(
                "\n---- {} output ----\n{}\n",
                test.name,
                test.output.as_deref().unwrap_or("(no output captured)")
            ));
        }
        let count = |o: TestOutcome| tests.iter().filter(|t| t.outcome == o).count();
        log.push_str(&format!(
            "result: {} passed; {} failed; {} ignored\n",
            count(TestOutcome::Passed),
            count(TestOutcome::Failed),
            count(TestOutcome::Ignored)
        ));
        // A binary that died without reporting: its raw output is the only evidence there is.
        let reported_failure = tests.iter().any(|t| t.outcome == TestOutcome::Failed);
        if run.exit_code != Some(0) && !reported_failure {
            log.push_str(&format!("-- stdout --\n{}\n", run.stdout.trim_end()));
            if !run.stderr.trim().is_empty() {
                log.push_str(&format!("-- stderr --\n{}\n", run.stderr.trim_end()));
            }
        }
    }
    if runs.is_empty() && !build.errors.contains_key(package) && !build.success {
        log.push_str("== cargo stderr ==\n");
        log.push_str(&build.stderr);
    }
    log
}

fn write_stage_logs(
    course: &Course,
    plan: &Plan,
    report: &StageReport,
    solution_log: &str,
    fault_log: &str,
) -> anyhow::Result<()> {
    let dir = evidence_dir_path(course, plan.stage);
    scratch::write_if_changed(&dir.join("solution.log"), solution_log.as_bytes())?;
    scratch::write_if_changed(&dir.join("fault.log"), fault_log.as_bytes())?;
    let contract_json: serde_json::Value = fs::read_to_string(plan.stage.failure_json())
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    let summary = serde_json::json!({
        "stage_id": report.stage_id,
        "outcome": report.outcome,
        "detail": report.detail,
        "expected": report.expected,
        "observed": report.observed,
        "files": report.files,
        "contract": contract_json,
    });
    scratch::write_if_changed(
        &dir.join("contract.json"),
        (serde_json::to_string_pretty(&summary)? + "\n").as_bytes(),
    )?;
    Ok(())
}

fn print_summary(course: &Course, verification: &Verification) {
    for stage in &verification.stages {
        let mark = if stage.outcome == class::HOLDS {
            "ok "
        } else {
            "ERR"
        };
        let cached = if stage.cached { " (cached)" } else { "" };
        let timing = if stage.cached {
            String::new()
        } else {
            format!(" {} ms", stage.duration_ms)
        };
        println!(
            "{mark} {:<32} {}{cached}{timing}",
            stage.stage_id, stage.outcome
        );
    }
    let failing: Vec<&StageReport> = verification
        .stages
        .iter()
        .filter(|s| s.outcome != class::HOLDS)
        .collect();
    for stage in &failing {
        println!("\n✗ {} — {}", stage.stage_id, stage.outcome);
        let lines: Vec<&str> = stage.detail.lines().collect();
        for line in lines.iter().take(20) {
            println!("    {line}");
        }
        if lines.len() > 20 {
            println!("    … ({} more lines in the logs)", lines.len() - 20);
        }
        let fault_classes = [
            class::FAULT_NOT_CAUGHT,
            class::COLLATERAL,
            class::WRONG_FAILURE,
        ];
        if fault_classes.contains(&stage.outcome.as_str()) {
            let expected: BTreeSet<&String> = stage.expected.fail.iter().collect();
            let observed: BTreeSet<&String> = stage.observed.failed.iter().collect();
            println!("    expected to fail: {:?}", expected);
            println!("    observed failing: {:?}", observed);
            let missing: Vec<&&String> = expected.difference(&observed).collect();
            let extra: Vec<&&String> = observed.difference(&expected).collect();
            if !missing.is_empty() {
                println!("    - should fail but passed: {missing:?}");
            }
            if !extra.is_empty() {
                println!("    + failed but must pass:   {extra:?}");
            }
            if let (Some(excerpt), Some(found)) =
                (&stage.expected.excerpt, stage.observed.excerpt_found)
            {
                println!("    excerpt {excerpt:?} found: {found}");
            }
        }
        if let Some(dir) = &stage.evidence_dir {
            println!(
                "    logs: {}",
                course.relative(&course.evidence.join(dir.trim_start_matches("evidence/")))
            );
        }
    }
    let cached = verification.stages.iter().filter(|s| s.cached).count();
    println!(
        "\n{}/{} contracts hold ({} cached) in {:.2} s",
        verification.stages.len() - failing.len(),
        verification.stages.len(),
        cached,
        verification.duration_ms as f64 / 1000.0
    );
}

/// `cargo xtask fault STAGE`: the instructor's demo of one fault.
pub fn cmd_fault(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(1, "cargo xtask fault STAGE [--instructor]")?;
    let course = Course::open(&args)?;
    let selector = args
        .positional
        .first()
        .context("usage: cargo xtask fault STAGE [--instructor]")?;
    let stage = course.stage(selector)?;
    // An instructor verb: the diagnosis is an answer, earned by a pass (or asked for as instructor).
    let passed = crate::progress::Progress::load(&crate::learner::progress_path(&course))
        .map(|p| p.passed(stage))
        .unwrap_or(false);
    let reveal = args.flag("instructor") || passed;
    let validator = course::compile_schema("failure.schema.json")?;
    let contract = course::load_contract(stage, &validator).map_err(|p| anyhow::anyhow!("{p}"))?;
    let timeout = Duration::from_secs(args.number("timeout")?.unwrap_or(60).max(1));

    println!("stage {} — fault `{}`", stage.id, contract.fault_id);
    println!(
        "  swapping {} in for {} (scratch copy; stages/ untouched)",
        contract.fault_file, contract.faulty_source_path
    );
    let workspace = scratch::prepare_scratch_workspace(&course, &[(stage, &contract)])?;
    let package = scratch::copy_package(stage, Variant::Fault);
    let build = cargo::build_tests(
        &workspace.join("Cargo.toml"),
        &scratch::scratch_target_dir(&course),
        &[BuildRequest {
            package: package.clone(),
            targets: contract.fault_run_targets.clone(),
        }],
        None,
    )?;
    if let Some(errors) = build.errors.get(&package) {
        bail!(
            "the fault does not compile (unviable):\n{}",
            errors.join("\n")
        );
    }
    let binaries = binaries_for(&build, &package);
    if binaries.is_empty() {
        bail!(
            "cargo built no test binaries for {package}:\n{}",
            build.stderr
        );
    }
    println!(
        "  running `{}` with the fault in place\n",
        contract.target_test
    );
    let mut target_result = None;
    for binary in &binaries {
        let run = cargo::run_test_binary(binary, timeout, Some(&contract.target_test))?;
        if let Some(result) = run
            .tests
            .into_iter()
            .find(|t| t.name == contract.target_test)
        {
            target_result = Some(result);
        }
    }
    let Some(result) = target_result else {
        bail!(
            "`{}` was not found in targets {:?}",
            contract.target_test,
            contract.fault_run_targets
        );
    };
    let ok = result.outcome == TestOutcome::Failed
        && result
            .output
            .as_deref()
            .is_some_and(|o| o.contains(&contract.expected_failure_excerpt));
    match result.outcome {
        TestOutcome::Failed => {
            println!("test {} ... FAILED\n", result.name);
            for line in result.output.as_deref().unwrap_or_default().lines() {
                println!("  | {line}");
            }
        }
        other => println!(
            "test {} ... {other:?} — the fault was NOT caught",
            result.name
        ),
    }
    if reveal {
        println!("\ndiagnosis:");
        for (i, step) in contract.diagnosis.iter().enumerate() {
            println!("  {}. {step}", i + 1);
        }
        if args.flag("show-repair") {
            println!("\nrepair: {}", contract.repair);
        }
    } else {
        println!(
            "\n(the diagnosis is shown once stage {n} passes, or with --instructor; \
             `cargo xtask hint {n}` gives one step at a time)",
            n = stage.number()
        );
    }
    if ok {
        println!(
            "\nThe target test fails with the expected excerpt {:?}.",
            contract.expected_failure_excerpt
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "\nThe fault does not behave as its contract says; run `cargo xtask verify {}`.",
            stage.number()
        );
        Ok(ExitCode::FAILURE)
    }
}
