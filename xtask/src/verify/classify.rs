//! The verdict on one stage: its contract and the two runs (solution, fault) classified like cargo-mutants —
//! the first matching rule wins, and every class says why in words.

use std::collections::BTreeSet;

use super::class;
use forge_course::cargo::{TestOutcome, TestResult};
use forge_course::course::Contract;
use forge_course::report::{Observation, RunReport};

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

/// The rules about the solution run and the contract, in order: the solution compiles, runs within the
/// timeout and passes every test (at least one), and the contract names exactly the tests of its fault-run
/// targets. `Ok` holds those names (`must_still_pass` and `target_test`), `Err` the class and its detail.
fn solution_and_contract(
    contract: &Contract,
    solution: &RunReport,
) -> Result<BTreeSet<String>, (&'static str, String)> {
    if !solution.build_ok {
        return Err((
            class::SOLUTION_FAILING,
            format!(
                "the solution does not compile:\n{}",
                solution.build_errors.join("\n")
            ),
        ));
    }
    if solution.timed_out {
        return Err((
            class::TIMEOUT,
            "a solution test binary ran past the timeout".to_owned(),
        ));
    }
    let all_targets: Vec<String> = solution.targets.clone();
    let solution_failed = names(&solution.tests, TestOutcome::Failed, &all_targets);
    if !solution_failed.is_empty() {
        return Err((
            class::SOLUTION_FAILING,
            format!("solution tests fail: {}", list(&solution_failed)),
        ));
    }
    if solution.passed == 0 {
        return Err((
            class::SOLUTION_FAILING,
            "the solution run found no passing tests".to_owned(),
        ));
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
        return Err((
            class::INVALID_CONTRACT,
            format!(
                "must_still_pass ∪ {{target_test}} does not match the tests in {:?}: listed but absent {}; present but unlisted {}",
                contract.fault_run_targets,
                list(&listed.difference(&present).cloned().collect()),
                list(&present.difference(&listed).cloned().collect()),
            ),
        ));
    }
    Ok(listed)
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

    let listed = match solution_and_contract(contract, solution) {
        Ok(listed) => listed,
        Err((class, detail)) => return verdict(class, detail),
    };
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
