//! Forge's language layer: the vocabulary per language as data and the readers of text built on it — numbers,
//! units, answers, answer templates and rules — with no tool, observation or loop.
//!
//! The vocabulary is data: `lexicon.json` for rules, answer slots, column focus and verdicts; `tables.json` for
//! summary rows, missing cells and table layouts; `units/units.json` for unit names and symbols. [`lexicon`],
//! [`tables`] and [`units::names`] hold the matchers every reader uses. The readers: [`numbers`] (number forms),
//! [`units`] (what a unit text means, converting a limit), [`answer`] (numbers, rows and verdicts in a final
//! answer), [`template`] (an answer template's parts) and [`rules`] (a rule read from a fact key or a sentence).
//! Applying a rule to data is `forge_evidence::rules`. Nothing here depends on a higher crate (see
//! ARCHITECTURE.md, "Layers").

pub mod answer;
pub mod lexicon;
pub mod numbers;
pub mod precision;
pub mod rules;
pub mod tables;
pub mod template;
pub mod units;
