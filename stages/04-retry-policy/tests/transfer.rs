//! Transfer challenge: the same retry loop, unchanged, publishing a music track
//! through a service that is busy at first. Runs on the solution only.

use pretty_assertions::assert_eq;
use retry_policy::{RetryError, RetryResult, Retryable, ToolError, run_with_retry};

#[test]
fn publishing_succeeds_on_the_third_attempt() {
    let mut calls = 0;

    let result = run_with_retry(3, |attempt| {
        calls += 1;
        if attempt < 3 {
            Err(ToolError::Transient("publishing service busy".to_owned()))
        } else {
            Ok("published")
        }
    });

    assert_eq!(
        result,
        Ok(RetryResult {
            value: "published",
            attempts: 3
        })
    );
    assert_eq!(calls, 3, "the budget of three attempts was overspent");
}

#[test]
fn missing_rights_stop_publishing_even_after_a_busy_attempt() {
    let mut calls = 0;

    let outcome = run_with_retry(5, |attempt| {
        calls += 1;
        if attempt == 1 {
            Err::<&str, _>(ToolError::Transient("publishing service busy".to_owned()))
        } else {
            Err(ToolError::Permanent(
                "label has not cleared the sample rights".to_owned(),
            ))
        }
    });

    assert_eq!(
        outcome,
        Err(RetryError::Permanent {
            error: ToolError::Permanent("label has not cleared the sample rights".to_owned()),
            attempts: 2,
        })
    );
    assert_eq!(calls, 2);
}

/// A publisher's own error type: the loop needs only the `Retryable` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PublishError {
    RateLimited { retry_after_secs: u32 },
    UnsupportedFormat(&'static str),
}

impl Retryable for PublishError {
    fn is_transient(&self) -> bool {
        matches!(self, Self::RateLimited { .. })
    }
}

#[test]
fn a_publisher_error_type_plugs_into_the_same_loop() {
    let rate_limited = run_with_retry(2, |attempt| {
        if attempt == 1 {
            Err(PublishError::RateLimited {
                retry_after_secs: 30,
            })
        } else {
            Ok("published")
        }
    });
    let wrong_format = run_with_retry(3, |_attempt| {
        Err::<&str, _>(PublishError::UnsupportedFormat("wma"))
    });

    assert_eq!(
        rate_limited,
        Ok(RetryResult {
            value: "published",
            attempts: 2
        })
    );
    assert_eq!(
        wrong_format,
        Err(RetryError::Permanent {
            error: PublishError::UnsupportedFormat("wma"),
            attempts: 1
        })
    );
}
