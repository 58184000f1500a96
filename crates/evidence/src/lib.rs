//! Forge's evidence layer: the task a run answers, the ledger of what tools returned, and what that evidence
//! supports — grounding, the claims gate, rules applied to cited data, a chart's consistency — with no loop,
//! policy or ground truth.
//!
//! [`task`] reads a task folder (text, answer template, required evidence); [`ledger`] records observations
//! (stage 02's ledger); [`grounding`] collects what observations establish; [`rules`] applies the rules
//! `forge_language` reads; [`claims`] checks a final answer against what it cites; [`chart_line`] checks a
//! chart's line against the calculator. It depends on `forge_language` and `forge_tools`, never on the runtime.

pub mod chart_line;
pub mod check_review;
pub mod claims;
pub mod columns;
pub mod grounding;
pub mod ledger;
pub mod rules;
pub mod task;
