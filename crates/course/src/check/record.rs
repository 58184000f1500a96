//! What a learner's check records: the stage's report (outcome, both runs, the transfer test's two verdicts)
//! and `learn/verification.json`, validated against the schema.

use std::collections::BTreeMap;
use std::fs;
use std::time::{Duration, Instant, SystemTime};

use crate::cargo::TestOutcome;
use crate::course::{self, Course, Stage};
use crate::learner::learn_dir;
use crate::report::{
    self, Expectation, Mode, Observation, RunOptions, RunReport, Runs, StageReport, Verification,
};
use crate::scratch;

use super::*;

// Eight arguments: the stage, and the judgement's parts `check` has already taken apart to print them (the tree,
// the targets, the outcome and the three runs); a struct would only be `Judgement` rebuilt.
#[allow(clippy::too_many_arguments)]
pub(super) fn stage_report(
    course: &Course,
    stage: &Stage,
    tree: &BTreeMap<String, String>,
    targets: &[String],
    outcome: LearnerOutcome,
    run: RunReport,
    reference_run: Option<RunReport>,
    fault_run: Option<RunReport>,
) -> anyhow::Result<StageReport> {
    let dir = judge_dir(course, stage);
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
        LearnerOutcome::TransferRefused => {
            "every test passes, but the transfer test was refused before it ran".to_owned()
        }
        LearnerOutcome::TransferFailsOnReference => {
            "every test passes, but the transfer test fails on the reference solution".to_owned()
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
            solution: reference_run,
            fault: fault_run,
            learner: Some(run),
        },
        evidence_dir: None,
    })
}

/// `learn/verification.json`: same schema, mode `learner`, the latest entry per checked stage.
pub(super) fn write_learner_verification(
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
    crate::report::check_against_schema(&verification)?;
    scratch::write_if_changed(
        &path,
        (serde_json::to_string_pretty(&verification)? + "\n").as_bytes(),
    )?;
    Ok(())
}
