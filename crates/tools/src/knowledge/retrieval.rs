//! Retrieval: tokens and BM25 over sections, a section's own heading counted [`HEADING_WEIGHT`] times.
//!
//! Latin-script text is split into lower-cased words (stop words dropped, light plural folding);
//! CJK text has no spaces, so each run of CJK characters gives its characters and adjacent pairs
//! (unigrams + bigrams), which lets `发布规则` match `规则`. This is not an index: the handful of
//! small files a task allows is rescored on every call.

use std::collections::HashMap;

use forge_language::lexicon::{fold, is_cjk_script, is_function_word};

// BM25 parameters (the usual defaults).
const BM25_K1: f64 = 1.2;
const BM25_B: f64 = 0.75;
/// How many times a section's own heading words count: a heading says what the section is about.
pub(crate) const HEADING_WEIGHT: u32 = 3;

/// Term counts of one passage and its weighted length.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Terms {
    counts: HashMap<String, u32>,
    length: u32,
}

impl Terms {
    /// Term counts of `parts`, each `(text, weight)`: a word in a part of weight 3 counts 3 times.
    pub fn of(parts: &[(&str, u32)]) -> Self {
        let mut terms = Terms::default();
        for (text, weight) in parts {
            terms.add(text, *weight);
        }
        terms
    }

    fn add(&mut self, text: &str, weight: u32) {
        for token in tokenize(text) {
            *self.counts.entry(token).or_insert(0) += weight;
            self.length += weight;
        }
    }
}

/// Scores every passage against `query`; returns (index, score) for passages sharing at least one
/// query term, best first (ties keep the given order).
pub(crate) fn rank(passages: &[&Terms], query: &str) -> Vec<(usize, f64)> {
    if passages.is_empty() {
        return Vec::new();
    }
    let n = passages.len() as f64;
    let average_length = passages.iter().map(|t| f64::from(t.length)).sum::<f64>() / n;
    let mut query_terms = tokenize(query);
    query_terms.sort();
    query_terms.dedup();
    let idf: Vec<f64> = query_terms
        .iter()
        .map(|term| {
            let df = passages
                .iter()
                .filter(|t| t.counts.contains_key(term))
                .count() as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    let mut scored: Vec<(usize, f64)> = passages
        .iter()
        .enumerate()
        .map(|(index, terms)| {
            let length_norm =
                1.0 - BM25_B + BM25_B * f64::from(terms.length) / average_length.max(1.0);
            let score = query_terms
                .iter()
                .zip(&idf)
                .filter_map(|(term, idf)| {
                    let tf = f64::from(*terms.counts.get(term)?);
                    Some(idf * tf * (BM25_K1 + 1.0) / (tf + BM25_K1 * length_norm))
                })
                .sum::<f64>();
            (index, score)
        })
        .filter(|(_, score)| *score > 0.0)
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored
}

/// Tokens of `text`: lower-cased words (stop words dropped, plurals folded) and, for CJK runs,
/// character unigrams and bigrams.
pub(crate) fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut cjk_run: Vec<char> = Vec::new();
    let flush_word = |word: &mut String, tokens: &mut Vec<String>| {
        if !word.is_empty() {
            let folded = fold(word);
            if !is_function_word(&folded) {
                tokens.push(folded);
            }
            word.clear();
        }
    };
    let flush_cjk = |run: &mut Vec<char>, tokens: &mut Vec<String>| {
        tokens.extend(run.iter().map(char::to_string));
        tokens.extend(run.windows(2).map(|pair| pair.iter().collect::<String>()));
        run.clear();
    };
    for c in text.chars() {
        if is_cjk_script(c) {
            flush_word(&mut word, &mut tokens);
            cjk_run.push(c);
        } else {
            flush_cjk(&mut cjk_run, &mut tokens);
            if c.is_alphanumeric() {
                word.push(c);
            } else {
                flush_word(&mut word, &mut tokens);
            }
        }
    }
    flush_word(&mut word, &mut tokens);
    flush_cjk(&mut cjk_run, &mut tokens);
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plural_folding_keeps_short_and_latin_words() {
        assert_eq!(
            tokenize("Batches rules success status average"),
            ["batch", "rule", "success", "status", "average"]
        );
    }

    #[test]
    fn cjk_runs_give_unigrams_and_bigrams() {
        assert_eq!(
            tokenize("发布规则 v2"),
            ["发", "布", "规", "则", "发布", "布规", "规则", "v2"]
        );
        assert_eq!(
            tokenize("平均值Batch"),
            ["平", "均", "值", "平均", "均值", "batch"]
        );
    }

    #[test]
    fn headings_outweigh_bodies() {
        let heading = Terms::of(&[("Release rule", HEADING_WEIGHT), ("Some words here.", 1)]);
        let body = Terms::of(&[
            ("Notes", HEADING_WEIGHT),
            ("The release rule is elsewhere.", 1),
        ]);
        let ranked = rank(&[&body, &heading], "release rule");
        assert_eq!(ranked[0].0, 1, "{ranked:?}");
        assert!(rank(&[&body], "zebra").is_empty());
    }
}
