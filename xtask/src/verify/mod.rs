//! `cargo xtask verify` and `cargo xtask fault`: prove each stage's fault contract.
//!
//! Pipeline: load contracts → answer from the result cache where every input is unchanged → build
//! the solutions (in the course workspace) and the fault copies (one scratch workspace) at the same
//! time → run every test binary directly, in parallel → classify like cargo-mutants → write
//! evidence. It never writes into `stages/`. `classify` decides each stage's class; `fault` is the
//! instructor's demo of one fault.

mod classify;
mod fault;
mod room;

use classify::classify;
pub use fault::{FAULT, cmd_fault};

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use forge_course::args::{Args, Verb};
use forge_course::cargo::{
    self, BinaryRun, BuildOutcome, BuildRequest, TestBinary, TestOutcome, TestResult,
};
use forge_course::course::{self, Contract, ContractProblem, Course, Stage};
use forge_course::report::{
    self, Expectation, Mode, Observation, RunOptions, Runs, StageReport, Verification,
};
use forge_course::scratch::{self, Variant};
use forge_course::test_runs::{binaries_for, run_binaries, run_report};

pub const VERIFY: Verb = Verb {
    name: "verify",
    about: "Prove every stage's fault contract in scratch copies and write evidence/verification.json",
    positionals: "[STAGE…]",
    flags: &[
        ("json", None, "print the report as JSON"),
        (
            "no-cache",
            None,
            "run every stage again, ignoring results cached for unchanged sources",
        ),
        ("jobs", Some("N"), "stages built and run at a time"),
        (
            "timeout",
            Some("SECS"),
            "seconds a test binary may run before it is stopped (default 60)",
        ),
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
    report::check_against_schema(&verification)?;
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
