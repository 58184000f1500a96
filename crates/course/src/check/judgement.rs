//! The judgement `check` and `grade` share: one judge crate per stage (the learner's `src/` and
//! `tests/transfer.rs` with the course's own tests and manifest), every test run with `--include-ignored`,
//! then the learner's transfer test on the same crate with the reference `src/` (must pass) and with the
//! faulty file (must fail). Where the crate lives, where it builds and how cargo and the test binaries are
//! started (directly for `check`, in a box for `grade`) are the caller's; the verdict is this file's.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use crate::cargo::{self, BuildRequest, Launcher, TestOutcome};
use crate::course::{self, Contract, Course, Stage};
use crate::judge::{self, TransferRefusal};
use crate::learn;
use crate::learner::{learn_dir, learn_package};
use crate::report::RunReport;
use crate::scratch;
use crate::test_runs;

use super::LearnerOutcome;

/// What one judgement needs: the learner's files, the course's tests, and where and how to build and run.
pub struct JudgeSetup<'a> {
    pub course: &'a Course,
    pub stage: &'a Stage,
    pub contract: &'a Contract,
    /// The learner's `src/` files (`src/…`, bytes): the only code of theirs that is compiled, with the transfer test.
    pub learner_src: Vec<(String, Vec<u8>)>,
    pub transfer: String,
    /// The course's `tests/*.rs` (transfer.rs aside), by relative path.
    pub course_tests: &'a BTreeMap<String, String>,
    pub judge_dir: PathBuf,
    pub target_dir: PathBuf,
    /// Where the learner's code came from, as the report names it.
    pub source_label: String,
    pub timeout: Duration,
    /// Test binaries run at a time.
    pub jobs: usize,
    pub build: Launcher,
    pub run: Launcher,
}

/// The verdict and the runs behind it.
pub struct Judgement {
    pub outcome: LearnerOutcome,
    pub run: RunReport,
    pub reference_run: Option<RunReport>,
    pub fault_run: Option<RunReport>,
    /// The judged tree (relative path → hash) and its test targets.
    pub tree: BTreeMap<String, String>,
    pub targets: Vec<String>,
    pub refusal: Option<TransferRefusal>,
    /// The learner package's compiler warnings.
    pub warnings: Vec<String>,
}

/// Judges one stage of one learner: the learner's crate first; the transfer test on the reference and the
/// fault only when every test passes on the learner's code and the transfer test is written and not refused.
pub fn judge(setup: &JudgeSetup) -> anyhow::Result<Judgement> {
    let stage = setup.stage;
    let transfer_written = setup.transfer != learn::transfer_skeleton(stage, &stage.lib_name()?)
        && !course::test_fns_in_source(&setup.transfer).is_empty();
    let reference_transfer = fs::read_to_string(stage.dir.join("tests/transfer.rs")).ok();
    let refusal = if transfer_written {
        judge::screen_transfer(&setup.transfer, reference_transfer.as_deref()).err()
    } else {
        None
    };
    let (tree, targets) = prepare_judge(setup, Variant::Learner)?;
    let (run, warnings) = learner_run(setup, &targets)?;
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
        let (outcome, on_reference, on_fault) = transfer_verdict(setup)?;
        reference_run = Some(on_reference);
        fault_run = on_fault;
        outcome
    };
    Ok(Judgement {
        outcome,
        run,
        reference_run,
        fault_run,
        tree,
        targets,
        refusal,
        warnings,
    })
}

/// The learner's crate built and every test run (`--include-ignored`); the package's compiler warnings.
fn learner_run(setup: &JudgeSetup, targets: &[String]) -> anyhow::Result<(RunReport, Vec<String>)> {
    let package = learn_package(setup.stage);
    let build = cargo::build_tests_with(
        &setup.judge_dir.join("Cargo.toml"),
        &setup.target_dir,
        &[BuildRequest {
            package: package.clone(),
            targets: targets.to_vec(),
        }],
        None,
        &setup.build,
    )?;
    let warnings = build.warnings.get(&package).cloned().unwrap_or_default();
    let runs = test_runs::run_binaries_in(
        test_runs::binaries_for(&build, &package)
            .into_iter()
            .map(|b| (0usize, (), b))
            .collect(),
        setup.jobs,
        setup.timeout,
        true,
        &setup.run,
    )?;
    let run_refs: Vec<&cargo::BinaryRun> = runs.iter().map(|r| &r.2).collect();
    let run = test_runs::run_report(
        "learner",
        setup.source_label.clone(),
        targets,
        &build,
        &package,
        &run_refs,
    );
    Ok((run, warnings))
}

/// The transfer test on the reference (it must pass) and then on the fault (it must fail): the same crate,
/// package, manifest and path; only the one source file differs.
fn transfer_verdict(
    setup: &JudgeSetup,
) -> anyhow::Result<(LearnerOutcome, RunReport, Option<RunReport>)> {
    let on_reference = transfer_on(setup, Variant::Reference)?;
    let holds = on_reference.build_ok
        && !on_reference.timed_out
        && on_reference.failed == 0
        && on_reference.passed > 0;
    if !holds {
        return Ok((LearnerOutcome::TransferFailsOnReference, on_reference, None));
    }
    let proof = transfer_on(setup, Variant::Fault)?;
    let caught = proof.build_ok && (proof.failed > 0 || proof.timed_out);
    let outcome = if caught {
        LearnerOutcome::Passed
    } else {
        LearnerOutcome::TransferNotCaught
    };
    Ok((outcome, on_reference, Some(proof)))
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

/// Writes the judge crate for `variant`: the course's manifest and tests, the learner's transfer
/// test, and the variant's `src/`. Returns the judged tree (relative path → hash) and its targets.
fn prepare_judge(
    setup: &JudgeSetup,
    variant: Variant,
) -> anyhow::Result<(BTreeMap<String, String>, Vec<String>)> {
    let JudgeSetup {
        course,
        stage,
        contract,
        course_tests,
        ..
    } = *setup;
    let transfer = setup.transfer.as_str();
    let judge = &setup.judge_dir;
    let manifest = scratch::standalone_manifest(course, stage, Some(&learn_package(stage)), true)?;
    let mut overlay: Vec<(String, Vec<u8>)> = vec![
        ("Cargo.toml".to_owned(), manifest.into_bytes()),
        ("tests/transfer.rs".to_owned(), transfer.as_bytes().to_vec()),
    ];
    for (rel, text) in course_tests {
        overlay.push((rel.clone(), text.clone().into_bytes()));
    }
    let mut sources = match variant {
        Variant::Learner => setup.learner_src.clone(),
        Variant::Reference | Variant::Fault => super::files_below(&stage.dir, "src")?,
    };
    if variant == Variant::Fault {
        let fault = fs::read(stage.dir.join(&contract.fault_file))?;
        sources.retain(|(rel, _)| *rel != contract.faulty_source_path);
        sources.push((contract.faulty_source_path.clone(), fault));
    }
    overlay.extend(sources);
    let mut skip: Vec<&str> = learn::WITHHELD.to_vec();
    skip.extend(["src", "tests"]);
    scratch::sync_dir(&stage.dir, judge, &skip, &overlay, &["Cargo.lock"])?;
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
    let mut tree = course::hash_tree(judge)?;
    tree.retain(|k, _| k.starts_with("src/") || k.starts_with("tests/") || k == "Cargo.toml");
    let targets = test_targets(&tree);
    Ok((tree, targets))
}

/// Runs only the learner's transfer tests (ignored ones too) on the reference or the fault.
fn transfer_on(setup: &JudgeSetup, variant: Variant) -> anyhow::Result<RunReport> {
    prepare_judge(setup, variant)?;
    let judge = &setup.judge_dir;
    let package = learn_package(setup.stage);
    let targets = vec!["transfer".to_owned()];
    let build = cargo::build_tests_with(
        &judge.join("Cargo.toml"),
        &setup.target_dir,
        &[BuildRequest {
            package: package.clone(),
            targets: targets.clone(),
        }],
        None,
        &setup.build,
    )?;
    let runs = test_runs::run_binaries_in(
        test_runs::binaries_for(&build, &package)
            .into_iter()
            .map(|b| (0usize, (), b))
            .collect(),
        1,
        setup.timeout,
        true,
        &setup.run,
    )?;
    let run_refs: Vec<&cargo::BinaryRun> = runs.iter().map(|r| &r.2).collect();
    let name = match variant {
        Variant::Learner => "learner",
        Variant::Reference => "solution",
        Variant::Fault => "fault",
    };
    Ok(test_runs::run_report(
        name,
        setup.course.relative(judge).into_owned(),
        &targets,
        &build,
        &package,
        &run_refs,
    ))
}

fn test_targets(tree: &BTreeMap<String, String>) -> Vec<String> {
    tree.keys()
        .filter_map(|k| k.strip_prefix("tests/").and_then(|f| f.strip_suffix(".rs")))
        .filter(|f| !f.contains('/'))
        .map(str::to_owned)
        .collect()
}
