//! Stage 01 — action selection: pick exactly one tool for a goal, or say why not.
//!
//! This crate only ranks and chooses. It never runs a tool, keeps no state and
//! does not decide when a loop stops.

mod actions;

pub use actions::{Action, SelectionError, ToolSpec, select_action};
