//! One test per `RetryError` and `ToolError` variant (value and Display text), plus
//! budget edges: a zero budget, a budget of one, first-try success, attempt numbering.
//! Nothing here drives a permanent failure through the loop (stage.rs owns that).
//! Operations that keep failing count their calls and panic past the budget, so a loop that
//! loses its bound fails these tests instead of hanging them.

use pretty_assertions::assert_eq;
use retry_policy::{RetryError, RetryResult, Retryable, ToolError, run_with_retry};

#[test]
fn zero_budget_is_rejected_without_calling_the_operation() {
    let mut calls = 0;

    let outcome = run_with_retry(0, |_attempt| {
        calls += 1;
        Ok::<_, ToolError>("never")
    });

    assert_eq!(outcome, Err(RetryError::InvalidBudget { max_attempts: 0 }));
    assert_eq!(calls, 0);
    assert_eq!(
        outcome.unwrap_err().to_string(),
        "max_attempts must be at least 1, got 0"
    );
}

#[test]
fn exhausted_budget_reports_the_last_transient_error() {
    let mut calls = 0;
    let outcome = run_with_retry(3, |attempt| {
        calls += 1;
        assert!(calls <= 3, "the operation ran past its budget of 3");
        Err::<(), _>(ToolError::Transient(format!("busy on try {attempt}")))
    });

    let error = outcome.expect_err("every attempt failed");
    assert_eq!(
        error,
        RetryError::Exhausted {
            last: ToolError::Transient("busy on try 3".to_owned()),
            attempts: 3
        }
    );
    assert_eq!(
        error.to_string(),
        "retry budget exhausted after 3 attempt(s): transient tool error: busy on try 3"
    );
}

#[test]
fn permanent_error_display_names_attempts_and_cause() {
    let error = RetryError::Permanent {
        error: ToolError::Permanent("permission denied".to_owned()),
        attempts: 2,
    };

    assert_eq!(
        error.to_string(),
        "gave up after 2 attempt(s): permanent tool error: permission denied"
    );
}

#[test]
fn tool_errors_classify_themselves() {
    let transient = ToolError::Transient("503 service unavailable".to_owned());
    let permanent = ToolError::Permanent("403 forbidden".to_owned());

    assert!(transient.is_transient());
    assert!(!permanent.is_transient());
    assert_eq!(
        transient.to_string(),
        "transient tool error: 503 service unavailable"
    );
    assert_eq!(permanent.to_string(), "permanent tool error: 403 forbidden");
}

#[test]
fn retry_error_is_a_std_error() {
    let error: Box<dyn std::error::Error> = Box::new(RetryError::Exhausted {
        last: ToolError::Transient("busy".to_owned()),
        attempts: 1,
    });

    assert_eq!(
        error.to_string(),
        "retry budget exhausted after 1 attempt(s): transient tool error: busy"
    );
}

#[test]
fn budget_of_one_never_retries() {
    let mut calls = 0;

    let outcome = run_with_retry(1, |_attempt| {
        calls += 1;
        assert!(calls <= 1, "the operation ran past its budget of 1");
        Err::<(), _>(ToolError::Transient("busy".to_owned()))
    });

    assert_eq!(
        outcome,
        Err(RetryError::Exhausted {
            last: ToolError::Transient("busy".to_owned()),
            attempts: 1
        })
    );
    assert_eq!(calls, 1);
}

#[test]
fn first_try_success_takes_one_attempt() {
    let outcome = run_with_retry(5, |_attempt| Ok::<_, ToolError>(42));

    assert_eq!(
        outcome,
        Ok(RetryResult {
            value: 42,
            attempts: 1
        })
    );
}

#[test]
fn attempts_are_numbered_from_one_in_order() {
    let mut seen = Vec::new();

    let outcome = run_with_retry(4, |attempt| {
        seen.push(attempt);
        assert!(
            seen.len() <= 4,
            "the operation ran past its budget of 4: {seen:?}"
        );
        if attempt == 4 {
            Ok(attempt)
        } else {
            Err(ToolError::Transient("busy".to_owned()))
        }
    });

    assert_eq!(
        outcome,
        Ok(RetryResult {
            value: 4,
            attempts: 4
        })
    );
    assert_eq!(seen, vec![1, 2, 3, 4]);
}
