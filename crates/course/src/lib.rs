//! Forge's course: the stages on disk, the learner's loop (`learn`, `predict`, `check`, `hint`, `watch`,
//! `progress`) and the judgement `check` and the instructor's `grade` share.
//!
//! `cargo xtask` parses the verb and dispatches here; nothing in this crate depends on xtask. Each verb's
//! command line is an [`args::Verb`], parsed into [`args::Args`] — the one parser xtask's own verbs use too,
//! so it lives here, with the cargo driver ([`cargo`]) that `check`, `grade` and xtask's `verify` share. The
//! course depends on no other Forge crate: it drives the stage crates through cargo, never links them.

pub mod args;
pub mod cargo;
pub mod check;
pub mod course;
pub mod grade;
mod guide;
mod judge;
pub mod learn;
pub mod learner;
pub mod progress;
pub mod report;
pub mod scratch;
mod skeleton;
pub mod test_runs;
pub mod watch;
