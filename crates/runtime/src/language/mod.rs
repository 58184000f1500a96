//! The one place that reads language: the vocabulary per language as data (`lexicon.json` for rules,
//! answer slots, column focus and verdicts; `tables.json` for summary rows, missing cells and table
//! layouts; `units.json` for unit names and symbols), and the
//! matchers every reader uses.

pub mod lexicon;
pub mod tables;
pub mod units;
