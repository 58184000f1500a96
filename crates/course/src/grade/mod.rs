//! `cargo xtask grade DIR`: re-check a class's hand-ins with `check`'s own judgement, each learner's build
//! and tests in a box, and write `grades.json`, `grades.md` and the charts.
//!
//! Dependencies are compiled once: the reference is judged first in the same box layout (the seed), and each
//! learner's target dir starts as hard links to the seed's files (read-only to the learner's box uid), so a
//! learner's build compiles only their own crate. Learners are graded in parallel, one box uid per worker.

pub mod bench;
mod charts;
mod copies;
mod report;
mod sandbox;
mod screen;
mod submission;
mod tokens;

use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, bail};

use crate::args::{Args, Verb};
use crate::cargo::TestOutcome;
use crate::check::judgement::{self, JudgeSetup, Judgement};
use crate::check::{LearnerOutcome, files_below, test_files};
use crate::course::{self, Contract, Course, Stage};
use copies::Work;
use report::{BoxReport, Grades, LearnerGrades, StageGrade, StageInfo, Timing};
use sandbox::{BoxSpec, Limits, Mode, Toolchain};
use submission::Learner;

pub use report::round3;

pub const GRADE: Verb = Verb {
    name: "grade",
    about: "Re-check a class's hand-ins (one folder or zip of learn/ per learner) in a box; write grades.json, grades.md and charts",
    positionals: "DIR",
    flags: &[
        (
            "stages",
            Some("LIST"),
            "comma-separated stages to grade (default: all)",
        ),
        (
            "jobs",
            Some("N"),
            "learners graded at a time (default: the number of cores)",
        ),
        (
            "out",
            Some("DIR"),
            "where grades.json, grades.md and the charts go (default: DIR/_grades)",
        ),
        (
            "timeout",
            Some("SECS"),
            "seconds a test binary may run before the box stops it (default 30)",
        ),
    ],
};

/// What one grading run needs.
pub struct Options {
    pub class: PathBuf,
    pub out: PathBuf,
    pub stages: Vec<Stage>,
    pub jobs: usize,
    pub timeout: Duration,
}

/// The first uid a box runs as when grading as root (one per worker, the seed's just below).
const BOX_UID: u32 = 61_000;

pub fn cmd_grade(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(1, "cargo xtask grade DIR")?;
    let course = Course::open(&args)?;
    let class =
        course::absolute(Path::new(args.positional.first().context(
            "usage: cargo xtask grade DIR [--stages 01,02] [--jobs N] [--out DIR]",
        )?))?;
    let selectors: Vec<String> = args
        .value("stages")
        .map(|s| s.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let options = Options {
        out: args
            .path("out")
            .map(|p| course::absolute(&p))
            .transpose()?
            .unwrap_or_else(|| class.join("_grades")),
        class,
        stages: course.select(&selectors)?,
        jobs: args
            .number("jobs")?
            .map(|n| n.max(1) as usize)
            .unwrap_or_else(cores),
        timeout: Duration::from_secs(args.number("timeout")?.unwrap_or(30).max(1)),
    };
    let grades = grade_class(&course, &options)?;
    print_summary(&grades, &options.out);
    Ok(ExitCode::SUCCESS)
}

pub fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

fn print_summary(grades: &Grades, out: &Path) {
    for learner in &grades.learners {
        let cells: Vec<String> = learner
            .stages
            .iter()
            .map(|s| format!("{} {}", &s.stage_id[..2], s.outcome))
            .collect();
        println!("{:<16} {}", learner.name, cells.join("  "));
    }
    for flag in &grades.copies {
        println!(
            "copy flagged: stage {} {} — {}",
            flag.stage_id,
            flag.kind,
            flag.learners.join(" & ")
        );
    }
    println!(
        "\n{} submission(s) in {:.1} s ({} ms each after the {:.1} s seed); wrote {}",
        grades.timing.submissions,
        grades.timing.total_ms as f64 / 1000.0,
        grades.timing.per_submission_ms.unwrap_or(0),
        grades.timing.seed_ms as f64 / 1000.0,
        out.join("grades.json").display()
    );
}

/// The course facts a stage's grading needs, loaded once.
struct StageKit {
    stage: Stage,
    contract: Contract,
    course_tests: BTreeMap<String, String>,
    reference_src: Vec<(String, Vec<u8>)>,
    reference_transfer: String,
    /// The files handed out: the reference `src/` with the fault in place.
    handed_out: BTreeMap<String, Vec<u8>>,
}

fn stage_kit(stage: &Stage, validator: &jsonschema::Validator) -> anyhow::Result<StageKit> {
    let contract = course::load_contract(stage, validator).map_err(|p| anyhow::anyhow!("{p}"))?;
    let reference_src = files_below(&stage.dir, "src")?;
    let mut handed_out: BTreeMap<String, Vec<u8>> = reference_src.iter().cloned().collect();
    handed_out.insert(
        contract.faulty_source_path.clone(),
        fs::read(stage.dir.join(&contract.fault_file))?,
    );
    Ok(StageKit {
        stage: stage.clone(),
        course_tests: test_files(&stage.dir)?,
        reference_transfer: fs::read_to_string(stage.dir.join("tests/transfer.rs"))
            .unwrap_or_default(),
        reference_src,
        handed_out,
        contract,
    })
}

/// Grades every learner of `options.class` on `options.stages`; writes the outputs into `options.out`.
pub fn grade_class(course: &Course, options: &Options) -> anyhow::Result<Grades> {
    let started = Instant::now();
    let toolchain = Toolchain::locate()?;
    let learners = submission::read_class(&options.class, &options.stages)?;
    let validator = course::compile_schema("failure.schema.json")?;
    let kits: Vec<StageKit> = options
        .stages
        .iter()
        .map(|s| stage_kit(s, &validator))
        .collect::<anyhow::Result<_>>()?;
    let work = course.scratch.join("grade/work");
    fs::create_dir_all(&work)?;
    let seed_clock = Instant::now();
    seed(course, &toolchain, &kits, &work, options.timeout)?;
    let seed_ms = seed_clock.elapsed().as_millis() as u64;

    let grading = Instant::now();
    let graded = grade_all(course, &toolchain, &kits, &learners, &work, options)?;
    let submissions = graded
        .iter()
        .flat_map(|l| &l.stages)
        .filter(|s| s.outcome != "not_submitted")
        .count() as u32;
    let grading_ms = grading.elapsed().as_millis() as u64;

    let flags = kits
        .iter()
        .flat_map(|kit| copy_flags(kit, &learners))
        .collect();
    let stages: Vec<StageInfo> = kits.iter().map(|k| stage_info(&k.stage)).collect();
    let summary = report::summarise(&stages, &graded);
    let charts = charts::draw(&summary, &options.out)?;
    let grades = Grades {
        format_version: 1,
        generator: format!("cargo xtask grade ({})", env!("CARGO_PKG_VERSION")),
        generated_at: crate::report::rfc3339(SystemTime::now()),
        class: options
            .class
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        sandbox: box_report(options),
        stages,
        learners: graded,
        copies: flags,
        summary,
        charts,
        timing: Timing {
            total_ms: started.elapsed().as_millis() as u64,
            seed_ms,
            submissions,
            per_submission_ms: (submissions > 0).then(|| grading_ms / u64::from(submissions)),
            jobs: options.jobs as u32,
        },
    };
    report::write(&grades, &options.out)?;
    Ok(grades)
}

/// Every learner, `options.jobs` at a time: worker `w` boxes its learners as uid `BOX_UID + w`.
fn grade_all(
    course: &Course,
    toolchain: &Toolchain,
    kits: &[StageKit],
    learners: &[Learner],
    work: &Path,
    options: &Options,
) -> anyhow::Result<Vec<LearnerGrades>> {
    let queue = Mutex::new((0..learners.len()).collect::<VecDeque<usize>>());
    let results: Mutex<Vec<(usize, LearnerGrades)>> = Mutex::new(Vec::new());
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for worker in 0..options.jobs.min(learners.len()).max(1) {
            let (queue, results, failure) = (&queue, &results, &failure);
            scope.spawn(move || {
                while let Some(index) = queue.lock().expect("queue").pop_front() {
                    let uid = BOX_UID + worker as u32;
                    let dir = work.join(format!("L{index:03}"));
                    let learner = &learners[index];
                    match grade_learner(
                        course,
                        toolchain,
                        kits,
                        learner,
                        &dir,
                        uid,
                        options.timeout,
                    ) {
                        Ok(grades) => results.lock().expect("results").push((index, grades)),
                        Err(e) => {
                            failure.lock().expect("failure").get_or_insert(e);
                        }
                    }
                    // The learner's own units are not needed again: only the grades are kept.
                    fs::remove_dir_all(dir.join("target")).ok();
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().expect("failure") {
        return Err(e);
    }
    let mut graded = results.into_inner().expect("results");
    graded.sort_by_key(|(i, _)| *i);
    Ok(graded.into_iter().map(|(_, g)| g).collect())
}

fn box_report(options: &Options) -> BoxReport {
    let limits = Limits::tests(options.timeout.as_secs());
    BoxReport {
        mechanism: format!(
            "bubblewrap + setrlimit{}",
            if sandbox::grading_as_root() {
                ", a uid per worker"
            } else {
                ""
            }
        ),
        network: false,
        test_timeout_s: options.timeout.as_secs(),
        cpu_s: limits.cpu_secs,
        memory_bytes: limits.memory_bytes,
        processes: limits.processes,
        file_bytes: limits.file_bytes,
        tmp_bytes: limits.tmp_bytes,
    }
}

fn stage_info(stage: &Stage) -> StageInfo {
    let meta = course::load_meta(stage).ok();
    let title = |lang: course::Lang| {
        meta.as_ref()
            .map(|m| m.title.get(lang).to_owned())
            .unwrap_or_else(|| stage.id.clone())
    };
    StageInfo {
        id: stage.id.clone(),
        title_en: title(course::Lang::En),
        title_zh: title(course::Lang::ZhCn),
    }
}

/// The seed: the reference judged as if it were a learner, in the same box layout, so every dependency unit
/// a learner's build needs is compiled once. A reference that does not pass in the box stops grading.
fn seed(
    course: &Course,
    toolchain: &Toolchain,
    kits: &[StageKit],
    work: &Path,
    timeout: Duration,
) -> anyhow::Result<()> {
    let dir = work.join("seed");
    let uid = BOX_UID - 1;
    fs::create_dir_all(dir.join("target"))?;
    for kit in kits {
        let judged = judge_in_box(
            course,
            toolchain,
            kit,
            &kit.reference_src,
            &kit.reference_transfer,
            &dir,
            uid,
            timeout,
        )?;
        // The reference's own transfer test is refused as a copy of itself: every test passing is the proof.
        let every_test_passes =
            judged.run.build_ok && judged.run.failed == 0 && judged.run.passed > 0;
        let holds = judged.outcome == LearnerOutcome::Passed
            || (every_test_passes
                && judged.refusal == Some(crate::judge::TransferRefusal::CopiedReference));
        if !holds {
            bail!(
                "the course's reference does not pass stage {} inside the box ({}): {}",
                kit.stage.id,
                judged.outcome.as_str(),
                judged
                    .run
                    .build_errors
                    .first()
                    .cloned()
                    .unwrap_or_else(|| format!("{:?}", judged.run.tests))
            );
        }
    }
    Ok(())
}

/// Judges one stage's files with `check`'s judgement, the build and the tests each in a box.
// Eight arguments, each a different input of one box: the course, the toolchain, the stage's kit, the learner's
// sources and transfer test, the scratch directory, the worker's uid and the time limit.
#[allow(clippy::too_many_arguments)]
fn judge_in_box(
    course: &Course,
    toolchain: &Toolchain,
    kit: &StageKit,
    src: &[(String, Vec<u8>)],
    transfer: &str,
    dir: &Path,
    uid: u32,
    timeout: Duration,
) -> anyhow::Result<Judgement> {
    let judge_dir = dir.join(&kit.stage.id);
    fs::create_dir_all(&judge_dir)?;
    let lock = judge_dir.join("Cargo.lock");
    if !lock.exists() {
        // The seed's pruned lock when there is one (cargo then has nothing to rewrite), else the course's;
        // writable by the box's uid either way.
        let seed_lock = dir
            .parent()
            .map(|w| w.join("seed").join(&kit.stage.id).join("Cargo.lock"))
            .filter(|l| l.is_file());
        let from = seed_lock.unwrap_or_else(|| course.root.join("Cargo.lock"));
        if from.is_file() {
            fs::copy(&from, &lock)?;
        }
    }
    own(dir, uid)?;
    let stages_dir = course.root.join("stages");
    let build = BoxSpec {
        toolchain,
        scratch: dir,
        course: Some((&course.root, &stages_dir)),
        uid: Some(uid),
        limits: Limits::build(),
    };
    let run = BoxSpec {
        limits: Limits::tests(timeout.as_secs()),
        course: None,
        ..build
    };
    judgement::judge(&JudgeSetup {
        course,
        stage: &kit.stage,
        contract: &kit.contract,
        learner_src: src.to_vec(),
        transfer: transfer.to_owned(),
        course_tests: &kit.course_tests,
        judge_dir,
        target_dir: dir.join("target"),
        source_label: dir.display().to_string(),
        timeout,
        // A learner's test binaries side by side: one that loops costs the time limit once, not per binary.
        jobs: 3,
        build: build.launcher(Mode::Build),
        run: run.launcher(Mode::Run),
    })
}

/// Gives the box's uid the scratch directory, its `target/` directories and the lock files; files hard-linked
/// from the seed stay the seed's, so a learner's box can read them and never change them.
fn own(dir: &Path, uid: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::{PermissionsExt, lchown};
    if !sandbox::grading_as_root() {
        return Ok(());
    }
    lchown(dir, Some(uid), Some(uid))?;
    for entry in fs::read_dir(dir)?.flatten() {
        let path = entry.path();
        let lock = path.join("Cargo.lock");
        if lock.is_file() {
            fs::set_permissions(&lock, fs::Permissions::from_mode(0o666))?;
        }
        if entry.file_name() == "target" {
            // The seed's box owns its own files; a learner's box only the directories (the files are the seed's).
            own_dirs(&path, uid, uid == BOX_UID - 1)?;
        } else if path.is_dir() {
            lchown(&path, Some(uid), Some(uid))?;
        }
    }
    Ok(())
}

fn own_dirs(dir: &Path, uid: u32, files_too: bool) -> anyhow::Result<()> {
    std::os::unix::fs::lchown(dir, Some(uid), Some(uid))?;
    for entry in fs::read_dir(dir)?.flatten() {
        if entry.file_type()?.is_dir() {
            own_dirs(&entry.path(), uid, files_too)?;
        } else if files_too {
            std::os::unix::fs::lchown(entry.path(), Some(uid), Some(uid))?;
        }
    }
    Ok(())
}

/// The file-name prefixes of units a learner's build writes itself, so they are not linked from the seed:
/// the judge crates' own units (cargo names them the same for every learner) and, as they share their library
/// names, the course's stage crates a later stage depends on (tiny; rebuilt in the learner's target dir).
fn own_units(course: &Course, kits: &[StageKit]) -> anyhow::Result<Vec<String>> {
    let mut prefixes = Vec::new();
    for stage in &course.stages {
        let lib = stage.lib_name()?;
        prefixes.push(format!("{}-", stage.package));
        prefixes.push(format!("{lib}-"));
        prefixes.push(format!("lib{lib}-"));
        prefixes.push(format!("lib{lib}."));
    }
    for kit in kits {
        for test in kit
            .course_tests
            .keys()
            .chain([&"tests/transfer.rs".to_owned()])
        {
            let target = test.trim_start_matches("tests/").trim_end_matches(".rs");
            prefixes.push(format!("{target}-"));
        }
    }
    prefixes.sort();
    prefixes.dedup();
    Ok(prefixes)
}

/// A learner's target dir: the seed's directories re-created, its dependency files hard-linked (cargo's lock,
/// rustc's cache and the judge crates' own units left out: the learner's cargo writes those).
fn seed_target(seed: &Path, to: &Path, own_units: &[String]) -> anyhow::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(seed)?.flatten() {
        let name = entry.file_name();
        let text = name.to_string_lossy();
        if name == ".cargo-lock"
            || name == ".rustc_info.json"
            || own_units.iter().any(|p| text.starts_with(p.as_str()))
        {
            continue;
        }
        let (from, dest) = (entry.path(), to.join(&name));
        if entry.file_type()?.is_dir() {
            seed_target(&from, &dest, own_units)?;
        } else if entry.file_type()?.is_file() {
            fs::hard_link(&from, &dest)
                .with_context(|| format!("linking {} to {}", from.display(), dest.display()))?;
        }
    }
    Ok(())
}

fn grade_learner(
    course: &Course,
    toolchain: &Toolchain,
    kits: &[StageKit],
    learner: &Learner,
    dir: &Path,
    uid: u32,
    timeout: Duration,
) -> anyhow::Result<LearnerGrades> {
    if dir.exists() {
        fs::remove_dir_all(dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    let seed = dir.parent().expect("below work").join("seed/target");
    seed_target(&seed, &dir.join("target"), &own_units(course, kits)?)?;
    let mut stages = Vec::new();
    for kit in kits {
        let clock = Instant::now();
        let Some(files) = learner.stages.get(&kit.stage.id) else {
            stages.push(StageGrade {
                stage_id: kit.stage.id.clone(),
                outcome: "not_submitted".into(),
                reason: format!("no {}/ in the hand-in", kit.stage.id),
                failing_tests: Vec::new(),
                passed_tests: 0,
                ms: 0,
                minutes_to_first_pass: None,
            });
            continue;
        };
        let findings = screen::screen(&files.src);
        let transfer = files.transfer.clone().unwrap_or_default();
        let judged = judge_in_box(
            course, toolchain, kit, &files.src, &transfer, dir, uid, timeout,
        )?;
        let (outcome, reason) = verdict(&judged, &findings, timeout);
        let minutes = if outcome == "passed" {
            minutes_to_first_pass(learner, &kit.stage.id)
        } else {
            None
        };
        stages.push(StageGrade {
            stage_id: kit.stage.id.clone(),
            outcome: outcome.to_owned(),
            reason,
            failing_tests: judged
                .run
                .tests
                .iter()
                .filter(|t| t.outcome == TestOutcome::Failed)
                .map(|t| format!("{}::{}", t.target, t.name))
                .collect(),
            passed_tests: judged.run.passed,
            ms: clock.elapsed().as_millis() as u64,
            minutes_to_first_pass: minutes,
        });
    }
    Ok(LearnerGrades {
        name: learner.name.clone(),
        source: learner.source.to_owned(),
        notes: learner.notes.clone(),
        stages,
    })
}

/// What the box saw a run run into, from its output and how its binaries ended (bwrap passes on a signal
/// as 128 + its number: SIGXCPU 24, SIGXFSZ 25): the process, memory, disk or CPU limit.
fn limit_hit(judged: &Judgement) -> Option<&'static str> {
    let outputs = [
        Some(&judged.run),
        judged.reference_run.as_ref(),
        judged.fault_run.as_ref(),
    ];
    let text: String = outputs
        .iter()
        .flatten()
        .flat_map(|r| r.tests.iter())
        .map(|t| format!("{}\n{}", t.name, t.output.as_deref().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join("\n");
    if text.contains("Resource temporarily unavailable") || text.contains("Cannot fork") {
        Some("hit the box's limit on processes")
    } else if text.contains("memory allocation of") || text.contains("Cannot allocate memory") {
        Some("hit the box's memory limit")
    } else if text.contains("No space left on device")
        || text.contains("File too large")
        || text.contains("exited with Some(153)")
    {
        Some("hit the box's disk limit")
    } else if text.contains("exited with Some(152)") {
        Some("was stopped by the box's CPU-time limit")
    } else {
        None
    }
}

/// The grade and its reason: the box's findings first (refused), then `check`'s outcome in words.
fn verdict(
    judged: &Judgement,
    findings: &[screen::Finding],
    timeout: Duration,
) -> (&'static str, String) {
    let in_box = if judged.run.timed_out {
        Some(format!(
            "ran past the {} s time limit; the box stopped it",
            timeout.as_secs()
        ))
    } else {
        limit_hit(judged).map(str::to_owned)
    };
    if !findings.is_empty() {
        let named: Vec<String> = findings.iter().take(3).map(ToString::to_string).collect();
        let what = match &in_box {
            Some(happened) => format!("; in the box it {happened}"),
            None => format!(
                "; in the box it was {}",
                judged.outcome.as_str().replace('_', " ")
            ),
        };
        return (
            "refused",
            format!("a stage's code does no I/O: {}{what}", named.join(", ")),
        );
    }
    if let Some(happened) = in_box {
        return ("refused", format!("it {happened}"));
    }
    in_words(judged)
}

/// `check`'s outcome as a grade, with its reason.
fn in_words(judged: &Judgement) -> (&'static str, String) {
    let run = &judged.run;
    match judged.outcome {
        LearnerOutcome::Passed => (
            "passed",
            format!(
                "{} test(s) pass, and the transfer test passes on the reference and fails on the fault",
                run.passed
            ),
        ),
        LearnerOutcome::Failed => (
            "failed",
            format!("{} test(s) fail; first {}", run.failed, first_failure(run)),
        ),
        LearnerOutcome::Unviable => (
            "unviable",
            format!(
                "does not compile: {}",
                run.build_errors
                    .first()
                    .and_then(|e| e.lines().next())
                    .unwrap_or("cargo failed")
            ),
        ),
        LearnerOutcome::Timeout => ("refused", "ran past the time limit".into()),
        LearnerOutcome::TransferMissing => (
            "transfer_missing",
            "every stage test passes; tests/transfer.rs is missing or still the skeleton".into(),
        ),
        LearnerOutcome::TransferNotCaught => (
            "transfer_not_caught",
            "the transfer test passes on the faulty code too, so it would not catch the bug".into(),
        ),
        LearnerOutcome::TransferRefused => (
            "transfer_not_caught",
            judged
                .refusal
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
        ),
        LearnerOutcome::TransferFailsOnReference => (
            "transfer_not_caught",
            "the transfer test fails on the reference solution: it asserts something correct code does not do"
                .into(),
        ),
    }
}

/// The first failing test (the stage's own before the transfer test) and the first line of its message.
fn first_failure(run: &crate::report::RunReport) -> String {
    run.tests
        .iter()
        .filter(|t| t.outcome == TestOutcome::Failed)
        .min_by_key(|t| t.target == "transfer")
        .map(|t| {
            let line = t
                .output
                .as_deref()
                .unwrap_or_default()
                .lines()
                .find(|l| !l.trim().is_empty() && !l.starts_with("thread '"))
                .unwrap_or_default()
                .trim()
                .to_owned();
            format!("{}::{}: {line}", t.target, t.name)
        })
        .unwrap_or_default()
}

/// Minutes from `started_at` to `passed_at` in the learner's own progress log, when it has both.
fn minutes_to_first_pass(learner: &Learner, stage_id: &str) -> Option<f64> {
    let entry = learner.progress.as_ref()?.get("stages")?.get(stage_id)?;
    let time = |key: &str| {
        entry
            .get(key)
            .and_then(|v| v.as_str())
            .and_then(|s| humantime::parse_rfc3339_weak(s).ok())
    };
    let minutes = time("passed_at")?
        .duration_since(time("started_at")?)
        .ok()?
        .as_secs_f64()
        / 60.0;
    Some(round3(minutes))
}

fn copy_flags(kit: &StageKit, learners: &[Learner]) -> Vec<copies::CopyFlag> {
    let works: Vec<Work> = learners
        .iter()
        .filter_map(|l| {
            let files = l.stages.get(&kit.stage.id)?;
            Some(Work::new(
                &l.name,
                &files.src,
                &kit.handed_out,
                files.transfer.as_deref().unwrap_or_default(),
            ))
        })
        .collect();
    let reference = Work::new(
        copies::REFERENCE,
        &kit.reference_src,
        &kit.handed_out,
        &kit.reference_transfer,
    );
    copies::flag(&kit.stage.id, &works, &reference)
}
