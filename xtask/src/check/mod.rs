//! `cargo xtask check`: judge the learner's copy, record the attempt, and reveal what was earned.
//!
//! A check builds one judge crate (`target/xtask-scratch/learner-judge/NN-name/`): the learner's
//! `src/` and `tests/transfer.rs` with the course's own tests and manifest — the copy's stage tests
//! are compared, never compiled. Every test runs, `#[ignore]`d ones included. Then the learner's
//! transfer test must pass on the same crate with the reference `src/` and fail with the one faulty
//! file swapped in: same package, manifest and path, so only behaviour tells the builds apart.
//! Only a stage that passes all of this is `passed`, and only then are the reference repair, the
//! repair principle and the design question printed.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use anyhow::bail;

use crate::args::{Args, Verb};
use crate::cargo::{self, BuildRequest, TestOutcome};
use crate::course::{self, Contract, Course, Lang, Stage};
use crate::judge;
use crate::learn;
use crate::learner::{self, copy_dir, learn_dir, learn_package, progress_path};
use crate::progress::{self, Progress};
use crate::report::RunReport;
use crate::scratch;
use crate::test_runs;

mod record;
mod reveal;

use record::{stage_report, write_learner_verification};
pub use reveal::{next_stage, reveal};

pub const CHECK: Verb = Verb {
    name: "check",
    about: "Run your copy's tests, prove your transfer test catches the fault, record progress",
    positionals: "[STAGE]",
    flags: &[(
        "timeout",
        Some("SECS"),
        "seconds a test binary may run before it is stopped (default 60)",
    )],
};

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
    /// The transfer test reads its build instead of calling the code, or is the reference's copied
    /// (reported as `transfer_not_caught`: it proves nothing about the fault).
    TransferRefused,
    /// The transfer test fails on the reference solution: it asserts something the correct code
    /// does not do (reported as `transfer_not_caught`).
    TransferFailsOnReference,
}

impl LearnerOutcome {
    /// The outcome in Chinese, for learner-facing lines (`as_str` stays the recorded name).
    pub fn zh_cn(self) -> &'static str {
        match self {
            Self::Passed => "通过",
            Self::Failed => "未通过",
            Self::Unviable => "无法编译",
            Self::Timeout => "超时",
            Self::TransferMissing => "缺少迁移测试",
            Self::TransferNotCaught | Self::TransferRefused | Self::TransferFailsOnReference => {
                "迁移测试没有抓住故障"
            }
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Unviable => "unviable",
            Self::Timeout => "timeout",
            Self::TransferMissing => "transfer_missing",
            Self::TransferNotCaught | Self::TransferRefused | Self::TransferFailsOnReference => {
                "transfer_not_caught"
            }
        }
    }
}

pub fn cmd_check(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(1, "cargo xtask check [STAGE]")?;
    let course = Course::open(&args)?;
    let progress = Progress::open(&course)?;
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
        .filter(|s| learner::has_copy(course, s))
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
    if !learner::has_copy(course, stage) {
        match lang {
            Lang::En => bail!(
                "{} does not exist yet; run `cargo xtask learn {n}` first",
                judge::from_cwd(&dir)
            ),
            Lang::ZhCn => bail!(
                "{} 还不存在；先运行 `cargo xtask learn {n}`",
                judge::from_cwd(&dir)
            ),
        }
    }
    let state_path = progress_path(course);
    let mut progress = Progress::open(course)?;
    if progress
        .stage(stage)
        .and_then(|s| s.prediction.as_ref())
        .is_none()
    {
        let shown = judge::from_cwd(&dir);
        match lang {
            Lang::En => bail!(
                "commit a prediction before the first check: read the question in {shown}/README.md and run \
                 `cargo xtask predict {n} <A-D>`"
            ),
            Lang::ZhCn => bail!(
                "第一次检查之前先提交预测：读 {shown}/README.zh-CN.md 里的问题，然后运行 \
                 `cargo xtask predict {n} <A-D>`"
            ),
        }
    }
    let validator = course::compile_schema("failure.schema.json")?;
    let contract = course::load_contract(stage, &validator).map_err(|p| anyhow::anyhow!("{p}"))?;
    let started_at = SystemTime::now();
    let clock = Instant::now();
    let shown_copy = judge::from_cwd(&dir);
    match lang {
        Lang::En => writeln!(out, "checking {shown_copy} …")?,
        Lang::ZhCn => writeln!(out, "正在检查 {shown_copy} …")?,
    }

    // The judge is the course's: the copy's stage and error tests are compared, never compiled.
    let course_tests = test_files(&stage.dir)?;
    let copy_tests = test_files(&dir)?;
    let edited = judge::edited_tests(&course_tests, &copy_tests);
    if !edited.is_empty() {
        let list = edited.join(", ");
        match lang {
            Lang::En => writeln!(
                out,
                "\nnote: {list} in your copy differ from the course's; the course's tests judge your code \
                 (edits there are ignored — only tests/transfer.rs is yours)."
            )?,
            Lang::ZhCn => writeln!(
                out,
                "\n注意：你副本里的 {list} 与课程的不同；评判你代码的是课程自己的测试（那里的修改会被忽略——只有 tests/transfer.rs 归你）。"
            )?,
        }
    }
    let transfer_source = fs::read_to_string(dir.join("tests/transfer.rs")).unwrap_or_default();
    let transfer_written = transfer_source != learn::transfer_skeleton(stage, &stage.lib_name()?)
        && !course::test_fns_in_source(&transfer_source).is_empty();
    let reference_transfer = fs::read_to_string(stage.dir.join("tests/transfer.rs")).ok();
    let refusal = if transfer_written {
        judge::screen_transfer(&transfer_source, reference_transfer.as_deref()).err()
    } else {
        None
    };

    let package = learn_package(stage);
    let (tree, targets) = prepare_judge(
        course,
        stage,
        &contract,
        Variant::Learner,
        &course_tests,
        &transfer_source,
    )?;
    let judge_manifest = judge_dir(course, stage).join("Cargo.toml");
    if !learn_dir(course).join("Cargo.toml").is_file() {
        learn::write_workspace(course)?;
    }
    let build = cargo::build_tests(
        &judge_manifest,
        &scratch::learn_target_dir(course),
        &[BuildRequest {
            package: package.clone(),
            targets: targets.clone(),
        }],
        None,
    )?;
    if let Some(warnings) = build.warnings.get(&package) {
        let shown = warnings.len().min(8);
        match lang {
            Lang::En => writeln!(out, "\n{} compiler warning(s):", warnings.len())?,
            Lang::ZhCn => writeln!(out, "\n{} 条编译警告：", warnings.len())?,
        }
        for warning in &warnings[..shown] {
            for line in judge::relocate(warning, &shown_copy).trim_end().lines() {
                writeln!(out, "  {line}")?;
            }
        }
        if warnings.len() > shown {
            match lang {
                Lang::En => writeln!(out, "  … and {} more", warnings.len() - shown)?,
                Lang::ZhCn => writeln!(out, "  …… 还有 {} 条", warnings.len() - shown)?,
            }
        }
    }
    let runs = test_runs::run_binaries_with(
        test_runs::binaries_for(&build, &package)
            .into_iter()
            .map(|b| (0usize, (), b))
            .collect(),
        parallelism(),
        timeout,
        true,
    )?;
    let run_refs: Vec<&cargo::BinaryRun> = runs.iter().map(|r| &r.2).collect();
    let run = test_runs::run_report(
        "learner",
        course.relative(&dir).into_owned(),
        &targets,
        &build,
        &package,
        &run_refs,
    );

    let stage_tests_pass = run.build_ok
        && !run.timed_out
        && run
            .tests
            .iter()
            .filter(|t| t.target != "transfer")
            .all(|t| t.outcome != TestOutcome::Failed);

    let mut fault_run = None;
    let mut reference_run = None;
    let outcome = if !run.build_ok {
        LearnerOutcome::Unviable
    } else if run.timed_out {
        LearnerOutcome::Timeout
    } else if stage_tests_pass && !transfer_written {
        LearnerOutcome::TransferMissing
    } else if run.failed > 0 || run.passed == 0 {
        LearnerOutcome::Failed
    } else if refusal.is_some() {
        LearnerOutcome::TransferRefused
    } else {
        // The same crate, package, manifest and path; only the one source file differs.
        let on_reference = transfer_on(
            course,
            stage,
            &contract,
            Variant::Reference,
            &course_tests,
            &transfer_source,
            timeout,
        )?;
        let holds = on_reference.build_ok
            && !on_reference.timed_out
            && on_reference.failed == 0
            && on_reference.passed > 0;
        reference_run = Some(on_reference);
        if !holds {
            LearnerOutcome::TransferFailsOnReference
        } else {
            let proof = transfer_on(
                course,
                stage,
                &contract,
                Variant::Fault,
                &course_tests,
                &transfer_source,
                timeout,
            )?;
            let caught = proof.build_ok && (proof.failed > 0 || proof.timed_out);
            fault_run = Some(proof);
            if caught {
                LearnerOutcome::Passed
            } else {
                LearnerOutcome::TransferNotCaught
            }
        }
    };

    // Per-test report, then what to do next.
    if !run.build_ok {
        let errors = judge::relocate(&run.build_errors.join("\n"), &shown_copy);
        match lang {
            Lang::En => writeln!(out, "\nYour crate does not compile:\n{errors}")?,
            Lang::ZhCn => writeln!(out, "\n你的 crate 编译不通过：\n{errors}")?,
        }
    }
    for test in &run.tests {
        let mark = match (test.outcome, lang) {
            (TestOutcome::Passed, Lang::En) => "ok  ",
            (TestOutcome::Failed, Lang::En) => "FAIL",
            (TestOutcome::Ignored, Lang::En) => "skip",
            (TestOutcome::Passed, Lang::ZhCn) => "通过",
            (TestOutcome::Failed, Lang::ZhCn) => "失败",
            (TestOutcome::Ignored, Lang::ZhCn) => "跳过",
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
        match lang {
            Lang::En => writeln!(out, "\nfirst failure, {}::{}:", first.target, first.name)?,
            Lang::ZhCn => writeln!(out, "\n第一个失败，{}::{}：", first.target, first.name)?,
        }
        let output = judge::relocate(first.output.as_deref().unwrap_or_default(), &shown_copy);
        for line in output.lines().take(30) {
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
        (LearnerOutcome::TransferRefused, Lang::En) => writeln!(
            out,
            "\nEvery test passes, but your transfer test is refused: {}",
            refusal
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default()
        )?,
        (LearnerOutcome::TransferRefused, Lang::ZhCn) => writeln!(
            out,
            "\n测试全部通过，但你的迁移测试被拒绝：{}",
            refusal
                .as_ref()
                .map(judge::TransferRefusal::zh_cn)
                .unwrap_or_default()
        )?,
        (LearnerOutcome::TransferFailsOnReference, Lang::En) => writeln!(
            out,
            "\nEvery test passes on your code, but your transfer test fails on the reference solution, \
             so what it asserts is not the stage's rule. Make it pass on correct code and fail only on the bug."
        )?,
        (LearnerOutcome::TransferFailsOnReference, Lang::ZhCn) => writeln!(
            out,
            "\n你的代码通过了全部测试，但你的迁移测试在参考实现上失败了，说明它断言的不是本阶段的规则。\
             让它在正确代码上通过、只在缺陷上失败。"
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

    let report = stage_report(
        course,
        stage,
        &tree,
        &targets,
        outcome,
        run,
        reference_run,
        fault_run,
    )?;
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
                outcome.zh_cn()
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

/// Which source the judge crate is built from. Its package, manifest, tests and path are the same
/// for all three, so a transfer test can tell them apart only by the behaviour of the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// The learner's `src/`.
    Learner,
    /// The stage's reference `src/`.
    Reference,
    /// The reference `src/` with the one faulty file swapped in.
    Fault,
}

/// The one scratch crate every variant is judged in (built into learn/target, so dependencies are
/// shared with the learner's own builds).
pub fn judge_dir(course: &Course, stage: &Stage) -> PathBuf {
    course.scratch.join("learner-judge").join(&stage.id)
}

/// `tests/*.rs` of a stage or copy (transfer.rs aside), by relative path.
fn test_files(dir: &std::path::Path) -> anyhow::Result<BTreeMap<String, String>> {
    let mut files = BTreeMap::new();
    let Ok(entries) = fs::read_dir(dir.join("tests")) else {
        return Ok(files);
    };
    for entry in entries {
        let path = entry?.path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if path.is_file() && name.ends_with(".rs") && name != "transfer.rs" {
            files.insert(format!("tests/{name}"), fs::read_to_string(&path)?);
        }
    }
    Ok(files)
}

/// Every file below `dir/sub`, keyed `sub/…`.
fn files_below(dir: &std::path::Path, sub: &str) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for (rel, _) in course::hash_tree(&dir.join(sub))? {
        out.push((format!("{sub}/{rel}"), fs::read(dir.join(sub).join(&rel))?));
    }
    Ok(out)
}

/// Writes the judge crate for `variant`: the course's manifest and tests, the learner's transfer
/// test, and the variant's `src/`. Returns the judged tree (relative path → hash) and its targets.
fn prepare_judge(
    course: &Course,
    stage: &Stage,
    contract: &Contract,
    variant: Variant,
    course_tests: &BTreeMap<String, String>,
    transfer: &str,
) -> anyhow::Result<(BTreeMap<String, String>, Vec<String>)> {
    let judge = judge_dir(course, stage);
    let manifest = scratch::standalone_manifest(course, stage, Some(&learn_package(stage)), true)?;
    let mut overlay: Vec<(String, Vec<u8>)> = vec![
        ("Cargo.toml".to_owned(), manifest.into_bytes()),
        ("tests/transfer.rs".to_owned(), transfer.as_bytes().to_vec()),
    ];
    for (rel, text) in course_tests {
        overlay.push((rel.clone(), text.clone().into_bytes()));
    }
    let source_from = match variant {
        Variant::Learner => copy_dir(course, stage),
        Variant::Reference | Variant::Fault => stage.dir.clone(),
    };
    let mut sources = files_below(&source_from, "src")?;
    if variant == Variant::Fault {
        let fault = fs::read(stage.dir.join(&contract.fault_file))?;
        sources.retain(|(rel, _)| *rel != contract.faulty_source_path);
        sources.push((contract.faulty_source_path.clone(), fault));
    }
    overlay.extend(sources);
    let mut skip: Vec<&str> = learn::WITHHELD.to_vec();
    skip.extend(["src", "tests"]);
    scratch::sync_dir(&stage.dir, &judge, &skip, &overlay, &["Cargo.lock"])?;
    let lock = judge.join("Cargo.lock");
    let learn_lock = learn_dir(course).join("Cargo.lock");
    let root_lock = course.root.join("Cargo.lock");
    if !lock.exists() {
        if learn_lock.is_file() {
            fs::copy(&learn_lock, &lock)?;
        } else if root_lock.is_file() {
            fs::copy(&root_lock, &lock)?;
        }
    }
    let mut tree = course::hash_tree(&judge)?;
    tree.retain(|k, _| k.starts_with("src/") || k.starts_with("tests/") || k == "Cargo.toml");
    let targets = test_targets(&tree);
    Ok((tree, targets))
}

/// Runs only the learner's transfer tests (ignored ones too) on the reference or the fault.
fn transfer_on(
    course: &Course,
    stage: &Stage,
    contract: &Contract,
    variant: Variant,
    course_tests: &BTreeMap<String, String>,
    transfer: &str,
    timeout: Duration,
) -> anyhow::Result<RunReport> {
    prepare_judge(course, stage, contract, variant, course_tests, transfer)?;
    let judge = judge_dir(course, stage);
    let package = learn_package(stage);
    let targets = vec!["transfer".to_owned()];
    let build = cargo::build_tests(
        &judge.join("Cargo.toml"),
        &scratch::learn_target_dir(course),
        &[BuildRequest {
            package: package.clone(),
            targets: targets.clone(),
        }],
        None,
    )?;
    let runs = test_runs::run_binaries_with(
        test_runs::binaries_for(&build, &package)
            .into_iter()
            .map(|b| (0usize, (), b))
            .collect(),
        1,
        timeout,
        true,
    )?;
    let run_refs: Vec<&cargo::BinaryRun> = runs.iter().map(|r| &r.2).collect();
    let name = match variant {
        Variant::Learner => "learner",
        Variant::Reference => "solution",
        Variant::Fault => "fault",
    };
    Ok(test_runs::run_report(
        name,
        course.relative(&judge).into_owned(),
        &targets,
        &build,
        &package,
        &run_refs,
    ))
}
