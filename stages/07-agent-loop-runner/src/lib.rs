//! Stage 07 — the agent loop runner: record, decide, and obey every stop.
//!
//! This crate composes stage 02 (observation state) and stage 06 (stop
//! control) into a bounded loop. The `step` callback is the action source and
//! `verify` is the acceptance source; the loop itself chooses nothing.

mod runner;

pub use runner::{LoopError, LoopResult, Step, run_agent, run_agent_with};
