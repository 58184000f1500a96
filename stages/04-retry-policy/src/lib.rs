//! Stage 04 — retry policy: bounded retries for transient failures only.
//!
//! This crate wraps one operation. It never chooses tools, keeps no loop state
//! and does not deduplicate side effects (that is stage 05).

mod retry;

pub use retry::{RetryError, RetryResult, Retryable, ToolError, run_with_retry};
