//! The stage's three core tests: a transient failure is retried within the budget,
//! a permanent failure is not retried, the budget is a hard limit. Edge cases live
//! in errors.rs, the transfer scenario in transfer.rs.

use pretty_assertions::assert_eq;
use retry_policy::{RetryError, RetryResult, ToolError, run_with_retry};

#[test]
fn transient_failure_is_retried_with_a_bound() {
    let mut calls = 0;

    let result = run_with_retry(3, |attempt| {
        calls += 1;
        if attempt < 3 {
            Err(ToolError::Transient("busy".to_owned()))
        } else {
            Ok("ok")
        }
    });

    assert_eq!(
        result,
        Ok(RetryResult {
            value: "ok",
            attempts: 3
        })
    );
    assert_eq!(calls, 3);
}

#[test]
fn permanent_error_is_not_retried() {
    let mut calls = 0;

    let outcome = run_with_retry(3, |_attempt| {
        calls += 1;
        Err::<(), _>(ToolError::Permanent("permission denied".to_owned()))
    });

    assert_eq!(
        calls, 1,
        "a permanent error must not be retried: the operation ran more than once"
    );
    assert_eq!(
        outcome,
        Err(RetryError::Permanent {
            error: ToolError::Permanent("permission denied".to_owned()),
            attempts: 1
        })
    );
}

#[test]
fn retry_budget_is_enforced() {
    let mut calls = 0;

    let outcome = run_with_retry(2, |_attempt| {
        calls += 1;
        Err::<(), _>(ToolError::Transient("busy".to_owned()))
    });

    assert_eq!(calls, 2);
    assert_eq!(
        outcome,
        Err(RetryError::Exhausted {
            last: ToolError::Transient("busy".to_owned()),
            attempts: 2
        })
    );
}
