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
use crate::cargo::{Launcher, TestOutcome};
use crate::course::{self, Course, Lang, Stage};
use crate::judge;
use crate::learn;
use crate::learner::{self, copy_dir, learn_dir, progress_path};
use crate::progress::{self, Progress};
use crate::report::RunReport;
use crate::scratch;

pub mod judgement;
mod record;
mod reveal;

use judgement::{JudgeSetup, Judgement};

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
    let state_path = progress_path(course);
    let mut progress = progress_for_check(course, stage, lang)?;
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
    if !learn_dir(course).join("Cargo.toml").is_file() {
        learn::write_workspace(course)?;
    }
    let judged = judgement::judge(&JudgeSetup {
        course,
        stage,
        contract: &contract,
        learner_src: files_below(&dir, "src")?,
        transfer: transfer_source.clone(),
        course_tests: &course_tests,
        judge_dir: judge_dir(course, stage),
        target_dir: scratch::learn_target_dir(course),
        source_label: course.relative(&dir).into_owned(),
        timeout,
        jobs: parallelism(),
        build: Launcher::default(),
        run: Launcher::default(),
    })?;
    let Judgement {
        outcome,
        run,
        reference_run,
        fault_run,
        tree,
        targets,
        refusal,
        warnings,
    } = judged;
    write_warnings(out, &warnings, &shown_copy, lang)?;

    // Per-test report, then what to do next.
    write_tests(out, &run, outcome, &shown_copy, lang)?;
    let rel = course.relative(&dir).into_owned();
    write_transfer_news(out, outcome, &rel, refusal.as_ref(), lang)?;

    let checks = record_check(&mut progress, stage, outcome);
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

/// The progress a check records into. A check needs the learner's copy and a committed prediction: without
/// them an error says which command comes first.
fn progress_for_check(course: &Course, stage: &Stage, lang: Lang) -> anyhow::Result<Progress> {
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
    let progress = Progress::open(course)?;
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
    Ok(progress)
}

/// Records one check of `stage` in the progress (its count, time, result, and the first pass's time);
/// returns how many checks the stage has had.
fn record_check(progress: &mut Progress, stage: &Stage, outcome: LearnerOutcome) -> u32 {
    let now = progress::now();
    let entry = progress.stages.entry(stage.id.clone()).or_default();
    entry.checks += 1;
    entry.last_check_at = Some(now.clone());
    entry.last_result = Some(outcome.as_str().to_owned());
    let first_pass = outcome == LearnerOutcome::Passed && entry.passed_at.is_none();
    if first_pass {
        entry.passed_at = Some(now);
    }
    entry.checks
}

/// The learner package's compiler warnings, the first eight of them.
fn write_warnings(
    out: &mut dyn Write,
    warnings: &[String],
    shown_copy: &str,
    lang: Lang,
) -> anyhow::Result<()> {
    if !warnings.is_empty() {
        let shown = warnings.len().min(8);
        match lang {
            Lang::En => writeln!(out, "\n{} compiler warning(s):", warnings.len())?,
            Lang::ZhCn => writeln!(out, "\n{} 条编译警告：", warnings.len())?,
        }
        for warning in &warnings[..shown] {
            for line in judge::relocate(warning, shown_copy).trim_end().lines() {
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

    Ok(())
}

/// The per-test report: build errors, one line per test, and the first failure's output (the stage's own
/// tests first: a failing transfer skeleton is not the news).
fn write_tests(
    out: &mut dyn Write,
    run: &RunReport,
    outcome: LearnerOutcome,
    shown_copy: &str,
    lang: Lang,
) -> anyhow::Result<()> {
    if !run.build_ok {
        let errors = judge::relocate(&run.build_errors.join("\n"), shown_copy);
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
        let output = judge::relocate(first.output.as_deref().unwrap_or_default(), shown_copy);
        for line in output.lines().take(30) {
            writeln!(out, "  | {line}")?;
        }
    }
    Ok(())
}

/// What to do next about the transfer test, for the outcomes that concern it (nothing for the others).
fn write_transfer_news(
    out: &mut dyn Write,
    outcome: LearnerOutcome,
    rel: &str,
    refusal: Option<&judge::TransferRefusal>,
    lang: Lang,
) -> anyhow::Result<()> {
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
            refusal.map(ToString::to_string).unwrap_or_default()
        )?,
        (LearnerOutcome::TransferRefused, Lang::ZhCn) => writeln!(
            out,
            "\n测试全部通过，但你的迁移测试被拒绝：{}",
            refusal
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
    Ok(())
}

fn parallelism() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

/// The one scratch crate every variant is judged in (built into learn/target, so dependencies are
/// shared with the learner's own builds).
pub fn judge_dir(course: &Course, stage: &Stage) -> PathBuf {
    course.scratch.join("learner-judge").join(&stage.id)
}

/// `tests/*.rs` of a stage or copy (transfer.rs aside), by relative path.
pub fn test_files(dir: &std::path::Path) -> anyhow::Result<BTreeMap<String, String>> {
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
pub fn files_below(dir: &std::path::Path, sub: &str) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for (rel, _) in course::hash_tree(&dir.join(sub))? {
        out.push((format!("{sub}/{rel}"), fs::read(dir.join(sub).join(&rel))?));
    }
    Ok(out)
}
