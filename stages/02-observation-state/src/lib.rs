//! Stage 02 — observation state: an ordered, append-only record of what tools returned.
//!
//! This crate records and says whether the loop may go on. It never chooses an
//! action, never retries and never interprets a payload.

mod observations;

pub use observations::{LoopState, Observation, ObservationStatus, StateError};
