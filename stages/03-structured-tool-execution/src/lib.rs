//! Stage 03 — structured tool execution: check the argument contract, then call.
//!
//! This crate is a structural gate. It never retries, keeps no loop state and
//! knows nothing about what a handler does.

mod execution;

pub use execution::{ContractError, ExecutionResult, ToolContract, execute_tool};
