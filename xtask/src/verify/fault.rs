//! `cargo xtask fault STAGE`: the instructor's demo of one fault — swap it in (scratch copy), run only the
//! target test, show the failing output; the diagnosis only with `--instructor` or after a pass.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};

use forge_course::args::{Args, Verb};
use forge_course::cargo::{self, BuildRequest, TestOutcome, TestResult};
use forge_course::course::{self, Contract, Course, Stage};
use forge_course::scratch::{self, Variant};
use forge_course::test_runs::binaries_for;

pub const FAULT: Verb = Verb {
    name: "fault",
    about: "Swap a stage's fault in (scratch copy), run its target test and show the failing output",
    positionals: "STAGE",
    flags: &[
        (
            "timeout",
            Some("SECS"),
            "seconds the test binary may run before it is stopped (default 60)",
        ),
        (
            "show-repair",
            None,
            "also print the repair principle (with --instructor, or once the stage is passed)",
        ),
        (
            "instructor",
            None,
            "print the diagnosis steps even before the stage is passed (demos)",
        ),
        (
            "room",
            None,
            "project it in class: the failing output, then the contract, then each diagnosis step on a key press (with --instructor)",
        ),
    ],
};

/// Builds the stage's fault copy in a scratch workspace and runs its contract's target test there (a fault
/// that does not compile, builds no test binary or lacks the target test is an error).
fn run_target_with_fault(
    course: &Course,
    stage: &Stage,
    contract: &Contract,
    timeout: Duration,
) -> anyhow::Result<TestResult> {
    let workspace = scratch::prepare_scratch_workspace(course, &[(stage, contract)])?;
    let package = scratch::copy_package(stage, Variant::Fault);
    let build = cargo::build_tests(
        &workspace.join("Cargo.toml"),
        &scratch::scratch_target_dir(course),
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
    target_result.with_context(|| {
        format!(
            "`{}` was not found in targets {:?}",
            contract.target_test, contract.fault_run_targets
        )
    })
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
    let passed =
        forge_course::progress::Progress::load(&forge_course::learner::progress_path(&course))
            .map(|p| p.passed(stage))
            .unwrap_or(false);
    let reveal = args.flag("instructor") || passed;
    if args.flag("room") && !reveal {
        bail!(
            "--room shows the diagnosis: add --instructor (or pass stage {} first)",
            stage.number()
        );
    }
    let validator = course::compile_schema("failure.schema.json")?;
    let contract = course::load_contract(stage, &validator).map_err(|p| anyhow::anyhow!("{p}"))?;
    let timeout = Duration::from_secs(args.number("timeout")?.unwrap_or(60).max(1));

    println!("stage {} — fault `{}`", stage.id, contract.fault_id);
    println!(
        "  swapping {} in for {} (scratch copy; stages/ untouched)",
        contract.fault_file, contract.faulty_source_path
    );
    let result = run_target_with_fault(&course, stage, &contract, timeout)?;
    if args.flag("room") {
        let title = course::load_meta(stage)
            .map(|m| m.title.en)
            .unwrap_or_else(|_| stage.id.clone());
        super::room::present(
            &super::room::Screens {
                stage: stage.id.clone(),
                title,
                output: result.output.clone().unwrap_or_else(|| {
                    format!(
                        "test {} ... {:?} — the fault was NOT caught",
                        result.name, result.outcome
                    )
                }),
                show_repair: args.flag("show-repair"),
            },
            &contract,
            &mut std::io::stdout(),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
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
