//! Stage 05 — idempotent actions: one side effect per operation slot.
//!
//! This crate deduplicates. It never retries, never chooses tools and keeps
//! its entries in memory only, for the life of one registry.

mod idempotency;

pub use idempotency::{IdempotencyError, IdempotencyRegistry};
