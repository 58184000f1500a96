//! The one place that reads language: vocabulary per language as data (`*.json` next to each module), parsed once.
//!
//! Code elsewhere asks a question ("is this cell a missing marker?", "is this row label a total?") and
//! never spells a word itself; adding a language means adding words to a data file, not code.

pub mod tables;
