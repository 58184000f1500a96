//! Stage 06 — stop conditions: one explicit decision from external facts.
//!
//! This crate only decides. It never runs tools, never reads model output and
//! never judges whether an answer is right: `verified` comes from outside.

mod stopping;

pub use stopping::{StopConfigError, StopController, StopDecision, StopFacts, StopReason};
