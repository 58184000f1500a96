//! `run_with_retry`: try again only when trying again can help.

/// Lets the retry loop ask an error whether another attempt could succeed.
pub trait Retryable {
    fn is_transient(&self) -> bool;
}

/// The course's two failure classes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The service was busy or unreachable; the same call may work later.
    #[error("transient tool error: {0}")]
    Transient(String),
    /// The call can never work as made (permission denied, bad input).
    #[error("permanent tool error: {0}")]
    Permanent(String),
}

impl Retryable for ToolError {
    fn is_transient(&self) -> bool {
        matches!(self, Self::Transient(_))
    }
}

/// A success and how many attempts it took (1 = first try).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryResult<T> {
    pub value: T,
    pub attempts: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RetryError<E> {
    #[error("max_attempts must be at least 1, got {max_attempts}")]
    InvalidBudget { max_attempts: u32 },
    /// Surfaced at once: retrying cannot change a permanent failure.
    #[error("gave up after {attempts} attempt(s): {error}")]
    Permanent { error: E, attempts: u32 },
    /// Every attempt failed transiently; this is the last failure seen.
    #[error("retry budget exhausted after {attempts} attempt(s): {last}")]
    Exhausted { last: E, attempts: u32 },
}

/// Calls `operation(attempt)` (attempt counts from 1) until it succeeds, fails
/// permanently, or `max_attempts` transient failures have been seen.
pub fn run_with_retry<T, E: Retryable>(
    max_attempts: u32,
    mut operation: impl FnMut(u32) -> Result<T, E>,
) -> Result<RetryResult<T>, RetryError<E>> {
    if max_attempts < 1 {
        return Err(RetryError::InvalidBudget { max_attempts });
    }
    let mut attempt = 1;
    loop {
        match operation(attempt) {
            Ok(value) => {
                return Ok(RetryResult {
                    value,
                    attempts: attempt,
                });
            }
            Err(error) if !error.is_transient() => {
                return Err(RetryError::Permanent {
                    error,
                    attempts: attempt,
                });
            }
            Err(last) if attempt >= max_attempts => {
                return Err(RetryError::Exhausted {
                    last,
                    attempts: attempt,
                });
            }
            Err(_) => attempt += 1,
        }
    }
}
