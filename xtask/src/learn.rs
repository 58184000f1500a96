//! The learner loop (rustlings-like): `learn`, `check`, `hint`, `progress`.
//!
//! A learner works in `learn/NN-name/`, a standalone crate seeded with the faulty source; their
//! progress lives in `learn/progress.json`. This module never touches `stages/` and never shows a
//! solution: it copies the fault, runs the learner's tests and hands out graded hints.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::args::{Args, Flag};
use crate::cargo::{self, BuildRequest, TestOutcome};
use crate::course::{self, Course, Lang, Stage};
use crate::report::{
    self, Expectation, Mode, Observation, RunOptions, Runs, StageReport, Verification,
};
use crate::scratch;
use crate::verify;

pub const LEARN_FLAGS: &[Flag] = &[("force", false)];
pub const CHECK_FLAGS: &[Flag] = &[("timeout", true)];
pub const HINT_FLAGS: &[Flag] = &[];
pub const PROGRESS_FLAGS: &[Flag] = &[("reset", false)];

const PROGRESS_FORMAT: u32 = 1;

/// `learn/progress.json`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Progress {
    pub format_version: u32,
    pub stages: BTreeMap<String, StageProgress>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageProgress {
    pub started_at: Option<String>,
    pub checks: u32,
    pub last_check_at: Option<String>,
    /// `passed`, `failed`, `unviable` or `timeout`.
    pub last_result: Option<String>,
    pub passed_at: Option<String>,
    pub hints_shown: u32,
}

fn learn_dir(course: &Course) -> PathBuf {
    course.root.join("learn")
}

fn progress_path(course: &Course) -> PathBuf {
    learn_dir(course).join("progress.json")
}

impl Progress {
    /// Loads the state; a missing file is a fresh start, a damaged one is an error naming the fix.
    pub fn load(path: &Path) -> anyhow::Result<Progress> {
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Progress {
                    format_version: PROGRESS_FORMAT,
                    stages: BTreeMap::new(),
                });
            }
            Err(e) => bail!("cannot read {}: {e}", path.display()),
        };
        let corrupted = |why: String| {
            anyhow::anyhow!(
                "{} is not valid progress state ({why}).\nRun `cargo xtask progress --reset` to start the record over \
                 (your learn/NN-name crates are kept).",
                path.display()
            )
        };
        let progress: Progress =
            serde_json::from_str(&text).map_err(|e| corrupted(e.to_string()))?;
        if progress.format_version != PROGRESS_FORMAT {
            return Err(corrupted(format!(
                "format_version {} is not {PROGRESS_FORMAT}",
                progress.format_version
            )));
        }
        Ok(progress)
    }

    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(self)? + "\n";
        // Write then rename, so an interrupted save never leaves a half-written state file.
        let tmp = path.with_extension("json.tmp");
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))?;
        Ok(())
    }
}

pub fn cmd_learn(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(1, "cargo xtask learn STAGE [--force]")?;
    let course = Course::open(&args)?;
    let stage = course.stage(
        args.positional
            .first()
            .context("usage: cargo xtask learn STAGE")?,
    )?;
    let lang = Lang::choose(&args)?;
    let state_path = progress_path(&course);
    let mut progress = Progress::load(&state_path)?;
    let validator = course::compile_schema("failure.schema.json")?;
    let contract = course::load_contract(stage, &validator).map_err(|p| anyhow::anyhow!("{p}"))?;
    let dir = learn_dir(&course).join(&stage.id);
    if dir.join("Cargo.toml").exists() && !args.flag("force") {
        bail!(
            "{} already exists and may hold your work; edit it and run `cargo xtask check {}`, \
             or pass --force to start over from the faulty source (overwrites your edits)",
            course.relative(&dir),
            stage.number()
        );
    }
    // The crate: everything but faults/, with the faulty file in place of the solution.
    let fault = fs::read(stage.dir.join(&contract.fault_file))?;
    let manifest = scratch::standalone_manifest(&course, stage, None, true)?;
    let overlay = [
        (contract.faulty_source_path.clone(), fault),
        ("Cargo.toml".to_owned(), manifest.into_bytes()),
    ];
    scratch::sync_dir(&stage.dir, &dir, &["faults"], &overlay, &["Cargo.lock"])?;
    // `cargo test` run inside learn/NN-name shares one target dir with `cargo xtask check`.
    scratch::write_if_changed(
        &learn_dir(&course).join(".cargo/config.toml"),
        b"# Generated by `cargo xtask learn`: all learner crates share learn/target.\n[build]\ntarget-dir = \"target\"\n",
    )?;
    let entry = progress.stages.entry(stage.id.clone()).or_default();
    entry.started_at = Some(report::rfc3339(SystemTime::now()));
    entry.passed_at = None;
    entry.last_result = None;
    progress.save(&state_path)?;

    let meta = course::load_meta(stage).ok();
    let title = meta
        .as_ref()
        .map(|m| m.title.get(lang).to_owned())
        .unwrap_or_else(|| stage.id.clone());
    println!(
        "Created {} — stage {}: {title}",
        course.relative(&dir),
        stage.number()
    );
    println!(
        "  {} holds a deliberate defect; the tests in tests/ describe correct behaviour.",
        contract.faulty_source_path
    );
    if let Some(meta) = &meta {
        println!("\nPredict first: {}", meta.prediction.question.get(lang));
        for (i, option) in meta.prediction.options.get(lang).iter().enumerate() {
            println!("  {}) {option}", (b'A' + i as u8) as char);
        }
        println!("  (the stage README explains the answer)");
    }
    println!("\nNext:");
    println!(
        "  edit   {}/{}",
        course.relative(&dir),
        contract.faulty_source_path
    );
    println!("  run    cargo xtask check {}", stage.number());
    println!("  stuck? cargo xtask hint {}", stage.number());
    Ok(ExitCode::SUCCESS)
}

pub fn cmd_check(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(1, "cargo xtask check [STAGE]")?;
    let course = Course::open(&args)?;
    let state_path = progress_path(&course);
    let mut progress = Progress::load(&state_path)?;
    let stage = match args.positional.first() {
        Some(selector) => course.stage(selector)?.clone(),
        None => current_stage(&course, &progress)?,
    };
    let dir = learn_dir(&course).join(&stage.id);
    if !dir.join("Cargo.toml").is_file() {
        bail!(
            "{} does not exist yet; run `cargo xtask learn {}` first",
            course.relative(&dir),
            stage.number()
        );
    }
    let timeout = Duration::from_secs(args.number("timeout")?.unwrap_or(60).max(1));
    let started_at = SystemTime::now();
    let clock = Instant::now();

    let tree = course::hash_tree(&dir)?;
    let targets: Vec<String> = tree
        .keys()
        .filter_map(|k| k.strip_prefix("tests/").and_then(|f| f.strip_suffix(".rs")))
        .filter(|f| !f.contains('/'))
        .map(str::to_owned)
        .collect();
    println!("checking {} …", course.relative(&dir));
    let build = cargo::build_tests(
        &dir.join("Cargo.toml"),
        &scratch::learn_target_dir(&course),
        &[BuildRequest {
            package: stage.package.clone(),
            targets: targets.clone(),
        }],
        None,
    )?;
    let binaries = verify::binaries_for(&build, &stage.package);
    let work = binaries.into_iter().map(|b| (0usize, (), b)).collect();
    let jobs = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let runs = verify::run_binaries(work, jobs, timeout)?;
    let run_refs: Vec<&cargo::BinaryRun> = runs.iter().map(|r| &r.2).collect();
    let run = verify::run_report(
        "learner",
        course.relative(&dir).into_owned(),
        &targets,
        &build,
        &stage.package,
        &run_refs,
    );

    let outcome = if !run.build_ok {
        "unviable"
    } else if run.timed_out {
        "timeout"
    } else if run.failed == 0 && run.passed > 0 {
        "passed"
    } else {
        "failed"
    };
    // Report per test.
    if !run.build_ok {
        println!(
            "\nYour crate does not compile:\n{}",
            run.build_errors.join("\n")
        );
    }
    for test in &run.tests {
        let mark = match test.outcome {
            TestOutcome::Passed => "ok  ",
            TestOutcome::Failed => "FAIL",
            TestOutcome::Ignored => "skip",
        };
        println!("  {mark} {}::{}", test.target, test.name);
    }
    if let Some(first) = run.tests.iter().find(|t| t.outcome == TestOutcome::Failed) {
        println!("\nfirst failure, {}::{}:", first.target, first.name);
        for line in first.output.as_deref().unwrap_or_default().lines().take(30) {
            println!("  | {line}");
        }
    }

    let now = report::rfc3339(SystemTime::now());
    let entry = progress.stages.entry(stage.id.clone()).or_default();
    entry.checks += 1;
    entry.last_check_at = Some(now.clone());
    entry.last_result = Some(outcome.to_owned());
    if outcome == "passed" && entry.passed_at.is_none() {
        entry.passed_at = Some(now);
    }
    progress.save(&state_path)?;

    // learn/verification.json: same schema, mode `learner`, one entry per checked stage.
    let mut expected_pass: Vec<String> = Vec::new();
    for target in &targets {
        let source = fs::read_to_string(dir.join("tests").join(format!("{target}.rs")))?;
        expected_pass.extend(course::test_fns_in_source(&source));
    }
    expected_pass.sort();
    expected_pass.dedup();
    let mut files = BTreeMap::new();
    for (rel, hash) in &tree {
        if rel.starts_with("src/") || rel.starts_with("tests/") || rel == "Cargo.toml" {
            files.insert(format!("learn/{}/{rel}", stage.id), hash.clone());
        }
    }
    let report = StageReport {
        stage_id: stage.id.clone(),
        experiment_id: format!("single-agent-loop-{}", stage.id),
        fault_id: None,
        outcome: outcome.to_owned(),
        detail: match outcome {
            "passed" => "every test passes on your code".to_owned(),
            "unviable" => "your crate does not compile".to_owned(),
            "timeout" => "a test binary ran past the timeout".to_owned(),
            _ => format!("{} of {} tests fail", run.failed, run.failed + run.passed),
        },
        expected: Expectation {
            fail: Vec::new(),
            pass: expected_pass,
            excerpt: None,
        },
        observed: Observation {
            failed: run
                .tests
                .iter()
                .filter(|t| t.outcome == TestOutcome::Failed)
                .map(|t| t.name.clone())
                .collect(),
            passed: run
                .tests
                .iter()
                .filter(|t| t.outcome == TestOutcome::Passed)
                .map(|t| t.name.clone())
                .collect(),
            excerpt_found: None,
        },
        cached: false,
        cached_from: None,
        cache_key: course::tree_hash(&tree),
        duration_ms: run.run_ms,
        files,
        runs: Runs {
            solution: None,
            fault: None,
            learner: Some(run),
        },
        evidence_dir: None,
    };
    write_learner_verification(&course, report, started_at, clock)?;

    let checked = progress
        .stages
        .get(&stage.id)
        .map(|s| s.checks)
        .unwrap_or(0);
    if outcome == "passed" {
        println!(
            "\nStage {} passes. `cargo xtask progress` shows where you stand.",
            stage.number()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "\nStage {}: {outcome} (check #{checked}). Try `cargo xtask hint {}`.",
            stage.number(),
            stage.number()
        );
        Ok(ExitCode::FAILURE)
    }
}

/// Without a STAGE: the lowest learn/NN-name crate not yet passed, else the highest started one.
fn current_stage(course: &Course, progress: &Progress) -> anyhow::Result<Stage> {
    let started: Vec<&Stage> = course
        .stages
        .iter()
        .filter(|s| learn_dir(course).join(&s.id).join("Cargo.toml").is_file())
        .collect();
    let open = started.iter().find(|s| {
        progress
            .stages
            .get(&s.id)
            .and_then(|p| p.passed_at.as_ref())
            .is_none()
    });
    match open.or(started.last()) {
        Some(stage) => Ok((*stage).clone()),
        None => bail!("no stage started yet; run `cargo xtask learn 01` first"),
    }
}

fn write_learner_verification(
    course: &Course,
    report: StageReport,
    started_at: SystemTime,
    clock: Instant,
) -> anyhow::Result<()> {
    let path = learn_dir(course).join("verification.json");
    // Keep other stages' latest entries; an unreadable old file is simply replaced.
    let mut stages: Vec<StageReport> = fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<Verification>(&t).ok())
        .map(|v| v.stages)
        .unwrap_or_default();
    stages.retain(|s| s.stage_id != report.stage_id);
    stages.push(report);
    stages.sort_by(|a, b| a.stage_id.cmp(&b.stage_id));
    let mut summary = BTreeMap::new();
    for s in &stages {
        *summary.entry(s.outcome.clone()).or_default() += 1;
    }
    let learn_tree = course::hash_tree(&learn_dir(course))?
        .into_iter()
        .filter(|(k, _)| !k.starts_with("target/") && k.contains('/') && !k.starts_with(".cargo/"))
        .collect();
    let lock = course.root.join("Cargo.lock");
    let verification = Verification {
        format_version: report::FORMAT_VERSION,
        mode: Mode::Learner,
        generator: format!("cargo xtask check {}", env!("CARGO_PKG_VERSION")),
        toolchain: report::toolchain()?,
        host: report::host(),
        started_at: report::rfc3339(started_at),
        finished_at: report::rfc3339(SystemTime::now()),
        duration_ms: clock.elapsed().as_millis() as u64,
        options: RunOptions {
            selected: stages.iter().map(|s| s.stage_id.clone()).collect(),
            no_cache: true,
            jobs: std::thread::available_parallelism()
                .map(|n| n.get() as u32)
                .unwrap_or(1),
            timeout_s: 60,
        },
        all_contracts_hold: stages.iter().all(|s| s.outcome == "passed"),
        stages_tree_hash: course::tree_hash(&learn_tree),
        cargo_lock_blake3: lock
            .is_file()
            .then(|| course::hash_file(&lock))
            .transpose()?,
        summary,
        stages,
    };
    crate::verify::check_against_schema(&verification)?;
    scratch::write_if_changed(
        &path,
        (serde_json::to_string_pretty(&verification)? + "\n").as_bytes(),
    )?;
    Ok(())
}

pub fn cmd_hint(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(2, "cargo xtask hint STAGE [LEVEL]")?;
    let course = Course::open(&args)?;
    let stage = course.stage(
        args.positional
            .first()
            .context("usage: cargo xtask hint STAGE [LEVEL]")?,
    )?;
    let lang = Lang::choose(&args)?;
    let meta = course::load_meta(stage)?;
    let state_path = progress_path(&course);
    let mut progress = Progress::load(&state_path)?;
    let entry = progress.stages.entry(stage.id.clone()).or_default();
    let total = meta.hints.len() as u32;
    let level = match args.positional.get(1) {
        Some(level) => {
            let n: u32 = level
                .parse()
                .with_context(|| format!("hint level `{level}` is not a number (1-{total})"))?;
            if n == 0 || n > total {
                bail!(
                    "hint level {n} does not exist; stage {} has levels 1-{total}",
                    stage.number()
                );
            }
            n
        }
        None => (entry.hints_shown + 1).min(total),
    };
    entry.hints_shown = entry.hints_shown.max(level);
    let label = match lang {
        Lang::En => format!(
            "hint {level}/{total} for stage {} ({})",
            stage.number(),
            meta.title.get(lang)
        ),
        Lang::ZhCn => format!(
            "第 {level}/{total} 条提示 · 阶段 {}（{}）",
            stage.number(),
            meta.title.get(lang)
        ),
    };
    println!("{label}\n\n{}", meta.hints[(level - 1) as usize].get(lang));
    if level == total && args.positional.get(1).is_none() {
        match lang {
            Lang::En => println!("\n(that was the last hint)"),
            Lang::ZhCn => println!("\n（这是最后一条提示）"),
        }
    }
    progress.save(&state_path)?;
    Ok(ExitCode::SUCCESS)
}

pub fn cmd_progress(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(0, "cargo xtask progress [--reset]")?;
    let course = Course::open(&args)?;
    let state_path = progress_path(&course);
    if args.flag("reset") {
        match fs::remove_file(&state_path) {
            Ok(()) => println!(
                "removed {}; your learn/NN-name crates are kept",
                course.relative(&state_path)
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                println!("no progress recorded yet")
            }
            Err(e) => bail!("cannot remove {}: {e}", state_path.display()),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let lang = Lang::choose(&args)?;
    let progress = Progress::load(&state_path)?;
    let mut done = 0;
    for stage in &course.stages {
        let title = course::load_meta(stage)
            .map(|m| m.title.get(lang).to_owned())
            .unwrap_or_else(|_| stage.id.clone());
        let state = progress.stages.get(&stage.id);
        let has_crate = learn_dir(&course)
            .join(&stage.id)
            .join("Cargo.toml")
            .is_file();
        let status = match (state, has_crate) {
            (Some(s), _) if s.passed_at.is_some() => {
                done += 1;
                format!(
                    "done     (passed {})",
                    s.passed_at.as_deref().unwrap_or_default()
                )
            }
            (Some(s), true) if s.checks > 0 => format!(
                "started  ({} check{}, last: {})",
                s.checks,
                if s.checks == 1 { "" } else { "s" },
                s.last_result.as_deref().unwrap_or("?")
            ),
            (_, true) => "started  (not checked yet)".to_owned(),
            _ => "not started".to_owned(),
        };
        let hints = state.map(|s| s.hints_shown).unwrap_or(0);
        println!(
            "{}  {:<34} {status}  hints {hints}/3",
            stage.number(),
            title
        );
    }
    println!("\n{done}/{} stages done", course.stages.len());
    Ok(ExitCode::SUCCESS)
}
