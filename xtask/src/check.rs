//! `cargo xtask check`: judge the learner's copy, record the attempt, and reveal what was earned.
//!
//! A check builds `learn/NN-name/` (warnings shown), runs every test target, then proves the
//! learner's transfer test catches the bug: a scratch copy of their crate with the original faulty
//! file back in place must make it fail. Only a stage that passes all of this is `passed`, and only
//! then are the reference repair, the repair principle and the design question printed.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use anyhow::bail;

use crate::args::{Args, Flag};
use crate::cargo::{self, BuildRequest, TestOutcome};
use crate::course::{self, Contract, Course, Lang, Stage};
use crate::guide::{Guide, Section};
use crate::learn::{self, copy_dir, learn_package};
use crate::progress::{self, Progress, learn_dir, progress_path};
use crate::report::{
    self, Expectation, Mode, Observation, RunOptions, RunReport, Runs, StageReport, Verification,
};
use crate::scratch;
use crate::verify;

pub const CHECK_FLAGS: &[Flag] = &[("timeout", true)];

/// How a learner's check ended (the `outcome` of a learner-mode verification.json stage).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LearnerOutcome {
    Passed,
    Failed,
    Unviable,
    Timeout,
    /// Every stage test passes, but `tests/transfer.rs` is still the skeleton.
    TransferMissing,
    /// Every test passes, and the transfer test passes on the original fault too.
    TransferNotCaught,
}

impl LearnerOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Unviable => "unviable",
            Self::Timeout => "timeout",
            Self::TransferMissing => "transfer_missing",
            Self::TransferNotCaught => "transfer_not_caught",
        }
    }
}

pub fn cmd_check(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(1, "cargo xtask check [STAGE]")?;
    let course = Course::open(&args)?;
    let progress = Progress::load(&progress_path(&course))?;
    let stage = match args.positional.first() {
        Some(selector) => course.stage(selector)?.clone(),
        None => current_stage(&course, &progress)?,
    };
    let lang = Lang::choose(&args)?;
    let timeout = Duration::from_secs(args.number("timeout")?.unwrap_or(60).max(1));
    let outcome = check(&course, &stage, lang, timeout, &mut std::io::stdout())?;
    Ok(if outcome == LearnerOutcome::Passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Without a STAGE: the lowest copy not yet passed, else the highest one.
pub fn current_stage(course: &Course, progress: &Progress) -> anyhow::Result<Stage> {
    let started: Vec<&Stage> = course
        .stages
        .iter()
        .filter(|s| learn::has_copy(course, s))
        .collect();
    let open = started.iter().find(|s| !progress.passed(s));
    match open.or(started.last()) {
        Some(stage) => Ok((*stage).clone()),
        None => bail!("no stage started yet; run `cargo xtask learn 01` first"),
    }
}

/// Runs one check of the learner's copy, prints what it found to `out`, records it.
pub fn check(
    course: &Course,
    stage: &Stage,
    lang: Lang,
    timeout: Duration,
    out: &mut dyn Write,
) -> anyhow::Result<LearnerOutcome> {
    let dir = copy_dir(course, stage);
    let n = stage.number();
    if !learn::has_copy(course, stage) {
        bail!(
            "{} does not exist yet; run `cargo xtask learn {n}` first",
            course.relative(&dir)
        );
    }
    let state_path = progress_path(course);
    let mut progress = Progress::load(&state_path)?;
    if progress
        .stage(stage)
        .and_then(|s| s.prediction.as_ref())
        .is_none()
    {
        bail!(
            "commit a prediction before the first check: read the question in {}/README.md and run \
             `cargo xtask predict {n} <A-D>`",
            course.relative(&dir)
        );
    }
    let validator = course::compile_schema("failure.schema.json")?;
    let contract = course::load_contract(stage, &validator).map_err(|p| anyhow::anyhow!("{p}"))?;
    let started_at = SystemTime::now();
    let clock = Instant::now();

    let tree = course::hash_tree(&dir)?;
    let targets = test_targets(&tree);
    writeln!(out, "checking {} …", course.relative(&dir))?;
    let package = learn_package(stage);
    let learn_manifest = learn_dir(course).join("Cargo.toml");
    if !learn_manifest.is_file() {
        learn::write_workspace(course)?;
    }
    let build = cargo::build_tests(
        &learn_manifest,
        &scratch::learn_target_dir(course),
        &[BuildRequest {
            package: package.clone(),
            targets: targets.clone(),
        }],
        None,
    )?;
    if let Some(warnings) = build.warnings.get(&package) {
        let shown = warnings.len().min(8);
        writeln!(out, "\n{} compiler warning(s):", warnings.len())?;
        for warning in &warnings[..shown] {
            for line in warning.trim_end().lines() {
                writeln!(out, "  {line}")?;
            }
        }
        if warnings.len() > shown {
            writeln!(out, "  … and {} more", warnings.len() - shown)?;
        }
    }
    let runs = verify::run_binaries(
        verify::binaries_for(&build, &package)
            .into_iter()
            .map(|b| (0usize, (), b))
            .collect(),
        parallelism(),
        timeout,
    )?;
    let run_refs: Vec<&cargo::BinaryRun> = runs.iter().map(|r| &r.2).collect();
    let run = verify::run_report(
        "learner",
        course.relative(&dir).into_owned(),
        &targets,
        &build,
        &package,
        &run_refs,
    );

    let transfer_path = dir.join("tests/transfer.rs");
    let transfer_source = fs::read_to_string(&transfer_path).unwrap_or_default();
    let transfer_written = transfer_source != learn::transfer_skeleton(stage, &stage.lib_name()?)
        && !course::test_fns_in_source(&transfer_source).is_empty();
    let stage_tests_pass = run.build_ok
        && !run.timed_out
        && run
            .tests
            .iter()
            .filter(|t| t.target != "transfer")
            .all(|t| t.outcome != TestOutcome::Failed);

    let mut fault_run = None;
    let outcome = if !run.build_ok {
        LearnerOutcome::Unviable
    } else if run.timed_out {
        LearnerOutcome::Timeout
    } else if stage_tests_pass && !transfer_written {
        LearnerOutcome::TransferMissing
    } else if run.failed > 0 || run.passed == 0 {
        LearnerOutcome::Failed
    } else {
        let proof = transfer_on_fault(course, stage, &contract, timeout)?;
        let caught = proof.build_ok && (proof.failed > 0 || proof.timed_out);
        fault_run = Some(proof);
        if caught {
            LearnerOutcome::Passed
        } else {
            LearnerOutcome::TransferNotCaught
        }
    };

    // Per-test report, then what to do next.
    if !run.build_ok {
        writeln!(
            out,
            "\nYour crate does not compile:\n{}",
            run.build_errors.join("\n")
        )?;
    }
    for test in &run.tests {
        let mark = match test.outcome {
            TestOutcome::Passed => "ok  ",
            TestOutcome::Failed => "FAIL",
            TestOutcome::Ignored => "skip",
        };
        writeln!(out, "  {mark} {}::{}", test.target, test.name)?;
    }
    // The stage's own tests first: a failing transfer skeleton is not the news.
    let first_failure = run
        .tests
        .iter()
        .filter(|t| t.outcome == TestOutcome::Failed)
        .min_by_key(|t| t.target == "transfer");
    if outcome == LearnerOutcome::Failed
        && let Some(first) = first_failure
    {
        writeln!(out, "\nfirst failure, {}::{}:", first.target, first.name)?;
        for line in first.output.as_deref().unwrap_or_default().lines().take(30) {
            writeln!(out, "  | {line}")?;
        }
    }
    let rel = course.relative(&dir).into_owned();
    match (outcome, lang) {
        (LearnerOutcome::TransferMissing, Lang::En) => writeln!(
            out,
            "\nEvery stage test passes. Next: write your transfer test in {rel}/tests/transfer.rs \
             (README.md, \"Transfer challenge\"); check runs it on your code and on the original fault."
        )?,
        (LearnerOutcome::TransferMissing, Lang::ZhCn) => writeln!(
            out,
            "\n阶段测试全部通过。下一步：在 {rel}/tests/transfer.rs 里写你的迁移测试（README.zh-CN.md 的“迁移挑战”）；\
             check 会在你的代码和原来的故障代码上各运行一次。"
        )?,
        (LearnerOutcome::TransferNotCaught, Lang::En) => writeln!(
            out,
            "\nEvery test passes, but your transfer test also passes on the original faulty code, so it \
             would not have caught the bug. Make it exercise the behaviour the fault breaks, on the new data."
        )?,
        (LearnerOutcome::TransferNotCaught, Lang::ZhCn) => writeln!(
            out,
            "\n测试全部通过，但你的迁移测试在原来的故障代码上也能通过，说明它抓不住这个缺陷。\
             让它在新数据上覆盖被故障破坏的那条行为。"
        )?,
        _ => {}
    }

    let now = progress::now();
    let entry = progress.stages.entry(stage.id.clone()).or_default();
    entry.checks += 1;
    entry.last_check_at = Some(now.clone());
    entry.last_result = Some(outcome.as_str().to_owned());
    let first_pass = outcome == LearnerOutcome::Passed && entry.passed_at.is_none();
    if first_pass {
        entry.passed_at = Some(now);
    }
    let checks = entry.checks;
    progress.save(&state_path)?;

    let report = stage_report(course, stage, &tree, &targets, outcome, run, fault_run)?;
    write_learner_verification(course, report, started_at, clock, timeout)?;

    if outcome == LearnerOutcome::Passed {
        reveal(course, stage, &contract, lang, out)?;
    } else {
        let mark = match lang {
            Lang::En => format!(
                "\nStage {n}: {} (check #{checks}). Stuck? `cargo xtask hint {n}`.",
                outcome.as_str()
            ),
            Lang::ZhCn => format!(
                "\n阶段 {n}：{}（第 {checks} 次检查）。卡住了？`cargo xtask hint {n}`。",
                outcome.as_str()
            ),
        };
        writeln!(out, "{mark}")?;
    }
    Ok(outcome)
}

fn parallelism() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

fn test_targets(tree: &BTreeMap<String, String>) -> Vec<String> {
    tree.keys()
        .filter_map(|k| k.strip_prefix("tests/").and_then(|f| f.strip_suffix(".rs")))
        .filter(|f| !f.contains('/'))
        .map(str::to_owned)
        .collect()
}

/// The learner's crate with the original faulty file back in place, in the scratch area; runs only
/// their transfer tests. Built into learn/target, so dependencies are shared with their own builds.
fn transfer_on_fault(
    course: &Course,
    stage: &Stage,
    contract: &Contract,
    timeout: Duration,
) -> anyhow::Result<RunReport> {
    let copy = fault_check_dir(course, stage);
    let package = format!("{}-fault-check", stage.package);
    let mut manifest: toml::Table = toml::from_str(&fs::read_to_string(
        copy_dir(course, stage).join("Cargo.toml"),
    )?)?;
    if let Some(p) = manifest.get_mut("package").and_then(|p| p.as_table_mut()) {
        p.insert("name".into(), package.clone().into());
    }
    manifest.insert("workspace".into(), toml::Value::Table(Default::default()));
    if let Some(profiles) = scratch::profiles_for_stages(course) {
        manifest.insert("profile".into(), profiles);
    }
    let fault = fs::read(stage.dir.join(&contract.fault_file))?;
    let overlay = [
        (contract.faulty_source_path.clone(), fault),
        (
            "Cargo.toml".to_owned(),
            format!(
                "# Generated by `cargo xtask check`: your crate with the original fault.\n{}",
                toml::to_string(&manifest)?
            )
            .into_bytes(),
        ),
    ];
    scratch::sync_dir(
        &copy_dir(course, stage),
        &copy,
        &[],
        &overlay,
        &["Cargo.lock"],
    )?;
    let lock = copy.join("Cargo.lock");
    let learn_lock = learn_dir(course).join("Cargo.lock");
    if !lock.exists() && learn_lock.is_file() {
        fs::copy(&learn_lock, &lock)?;
    }
    let targets = vec!["transfer".to_owned()];
    let build = cargo::build_tests(
        &copy.join("Cargo.toml"),
        &scratch::learn_target_dir(course),
        &[BuildRequest {
            package: package.clone(),
            targets: targets.clone(),
        }],
        None,
    )?;
    let runs = verify::run_binaries(
        verify::binaries_for(&build, &package)
            .into_iter()
            .map(|b| (0usize, (), b))
            .collect(),
        1,
        timeout,
    )?;
    let run_refs: Vec<&cargo::BinaryRun> = runs.iter().map(|r| &r.2).collect();
    Ok(verify::run_report(
        "fault",
        course.relative(&copy).into_owned(),
        &targets,
        &build,
        &package,
        &run_refs,
    ))
}

pub fn fault_check_dir(course: &Course, stage: &Stage) -> PathBuf {
    course.scratch.join("learner-fault").join(&stage.id)
}

fn stage_report(
    course: &Course,
    stage: &Stage,
    tree: &BTreeMap<String, String>,
    targets: &[String],
    outcome: LearnerOutcome,
    run: RunReport,
    fault_run: Option<RunReport>,
) -> anyhow::Result<StageReport> {
    let dir = copy_dir(course, stage);
    let mut expected_pass: Vec<String> = Vec::new();
    for target in targets {
        let source = fs::read_to_string(dir.join("tests").join(format!("{target}.rs")))?;
        expected_pass.extend(course::test_fns_in_source(&source));
    }
    expected_pass.sort();
    expected_pass.dedup();
    let mut files = BTreeMap::new();
    for (rel, hash) in tree {
        if rel.starts_with("src/") || rel.starts_with("tests/") || rel == "Cargo.toml" {
            files.insert(format!("learn/{}/{rel}", stage.id), hash.clone());
        }
    }
    let names = |o: TestOutcome| -> Vec<String> {
        run.tests
            .iter()
            .filter(|t| t.outcome == o)
            .map(|t| t.name.clone())
            .collect()
    };
    let caught_by: Vec<String> = fault_run
        .as_ref()
        .map(|f| {
            f.tests
                .iter()
                .filter(|t| t.outcome == TestOutcome::Failed)
                .map(|t| t.name.clone())
                .collect()
        })
        .unwrap_or_default();
    let detail = match outcome {
        LearnerOutcome::Passed => format!(
            "every test passes on your code, and your transfer test catches the original fault ({})",
            caught_by.join(", ")
        ),
        LearnerOutcome::Unviable => "your crate does not compile".to_owned(),
        LearnerOutcome::Timeout => "a test binary ran past the timeout".to_owned(),
        LearnerOutcome::TransferMissing => {
            "the stage tests pass; tests/transfer.rs is still the skeleton".to_owned()
        }
        LearnerOutcome::TransferNotCaught => {
            "every test passes, but the transfer test also passes on the original fault".to_owned()
        }
        LearnerOutcome::Failed => {
            format!("{} of {} tests fail", run.failed, run.failed + run.passed)
        }
    };
    Ok(StageReport {
        stage_id: stage.id.clone(),
        experiment_id: format!("single-agent-loop-{}", stage.id),
        fault_id: None,
        outcome: outcome.as_str().to_owned(),
        detail,
        expected: Expectation {
            fail: Vec::new(),
            pass: expected_pass,
            excerpt: None,
        },
        observed: Observation {
            failed: names(TestOutcome::Failed),
            passed: names(TestOutcome::Passed),
            excerpt_found: None,
        },
        cached: false,
        cached_from: None,
        cache_key: course::tree_hash(tree),
        duration_ms: run.run_ms + fault_run.as_ref().map_or(0, |f| f.run_ms),
        files,
        runs: Runs {
            solution: None,
            fault: fault_run,
            learner: Some(run),
        },
        evidence_dir: None,
    })
}

/// `learn/verification.json`: same schema, mode `learner`, the latest entry per checked stage.
fn write_learner_verification(
    course: &Course,
    report: StageReport,
    started_at: SystemTime,
    clock: Instant,
    timeout: Duration,
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
        .filter(|(k, _)| {
            k.contains('/')
                && !k.starts_with("target/")
                && !k.starts_with(".cargo/")
                && !k.starts_with("verification.json")
        })
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
            jobs: parallelism() as u32,
            timeout_s: timeout.as_secs(),
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
    verify::check_against_schema(&verification)?;
    scratch::write_if_changed(
        &path,
        (serde_json::to_string_pretty(&verification)? + "\n").as_bytes(),
    )?;
    Ok(())
}

/// What a pass earns: the reference repair as a diff, the repair principle, the transfer and design
/// questions, and the next stage.
pub fn reveal(
    course: &Course,
    stage: &Stage,
    contract: &Contract,
    lang: Lang,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let n = stage.number();
    let fault = fs::read_to_string(stage.dir.join(&contract.fault_file))?;
    let solution = fs::read_to_string(stage.dir.join(&contract.faulty_source_path))?;
    let reference = format!("stages/{}/{}", stage.id, contract.faulty_source_path);
    let faulty = format!("stages/{}/{}", stage.id, contract.fault_file);
    let diff = similar::TextDiff::from_lines(&fault, &solution)
        .unified_diff()
        .context_radius(2)
        .header(&faulty, &reference)
        .to_string();
    let mine = fs::read_to_string(copy_dir(course, stage).join(&contract.faulty_source_path))
        .unwrap_or_default();
    let guide = Guide::load(stage, lang)?;
    let design = guide
        .section(Section::DesignQuestion, lang)
        .unwrap_or_default();
    let after = Section::AfterItPasses.heading(lang);
    let next = course.stages.iter().skip_while(|s| s.id != stage.id).nth(1);
    match lang {
        Lang::En => {
            writeln!(out, "\nStage {n} passes.")?;
            writeln!(out, "\nThe reference repair ({faulty} → {reference}):")?;
        }
        Lang::ZhCn => {
            writeln!(out, "\n阶段 {n} 通过。")?;
            writeln!(out, "\n参考修复（{faulty} → {reference}）：")?;
        }
    }
    for line in diff.lines() {
        writeln!(out, "  {line}")?;
    }
    let same = mine == solution;
    match lang {
        Lang::En => {
            if same {
                writeln!(out, "Your file is now identical to the reference.")?;
            } else {
                writeln!(
                    out,
                    "Your version differs from the reference; compare them: diff {} {reference}",
                    course.relative(&copy_dir(course, stage).join(&contract.faulty_source_path))
                )?;
            }
            writeln!(out, "\nRepair principle: {}", contract.repair)?;
            writeln!(
                out,
                "\nYour transfer test catches the original fault. Compare it with the reference: \
                 stages/{}/tests/transfer.rs",
                stage.id
            )?;
            writeln!(out, "\nDesign question: {design}")?;
            writeln!(
                out,
                "(a strong answer, the diagnosis and the prediction's explanation: stages/{}/README.md, \"{after}\")",
                stage.id
            )?;
            match next {
                Some(next) => writeln!(out, "\nNext: cargo xtask learn {}", next.number())?,
                None => writeln!(
                    out,
                    "\nThat was the last stage. `cargo xtask progress` shows the course."
                )?,
            }
        }
        Lang::ZhCn => {
            if same {
                writeln!(out, "你的文件现在与参考实现完全一致。")?;
            } else {
                writeln!(
                    out,
                    "你的版本与参考实现不同，可以对比：diff {} {reference}",
                    course.relative(&copy_dir(course, stage).join(&contract.faulty_source_path))
                )?;
            }
            writeln!(out, "\n修复原则（failure.json）：{}", contract.repair)?;
            writeln!(
                out,
                "\n你的迁移测试能抓住原来的故障。可以和参考版本对比：stages/{}/tests/transfer.rs",
                stage.id
            )?;
            writeln!(out, "\n设计思考题：{design}")?;
            writeln!(
                out,
                "（参考答案、诊断过程和预测题解析见 stages/{}/README.zh-CN.md 的“{after}”）",
                stage.id
            )?;
            match next {
                Some(next) => writeln!(out, "\n下一步：cargo xtask learn {}", next.number())?,
                None => writeln!(
                    out,
                    "\n这是最后一个阶段。`cargo xtask progress` 查看全部进度。"
                )?,
            }
        }
    }
    Ok(())
}
