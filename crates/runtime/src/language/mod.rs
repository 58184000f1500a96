//! The one place that reads language: the vocabulary per language as data, and the matcher every
//! reader (rules, answer slots, column focus, verdicts) uses.

pub mod lexicon;
