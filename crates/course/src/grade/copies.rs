//! Copies made visible: for each stage, what each learner wrote — the tokens their `src/` adds to the file
//! handed out (the fault in place) plus their whole transfer test — with identifiers numbered by first use,
//! compared pair by pair and with the reference's own (its repair and its transfer test). Identical or
//! near-identical work (Jaccard similarity of token 4-grams) is flagged with the pair named; flagged, never
//! failed. Work too short to tell copying from the one obvious fix is not compared.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use serde::Serialize;

use super::tokens::{normalise, tokens};

/// Fewer normalised tokens than this and two learners may well write the same thing on their own.
pub const MIN_TOKENS: usize = 24;
/// Similarity from which a pair is flagged as near-identical.
pub const NEAR: f64 = 0.8;
const GRAM: usize = 4;

/// What one learner (or the reference) wrote for one stage, ready to compare.
#[derive(Debug, Clone)]
pub struct Work {
    pub who: String,
    normal: Vec<String>,
    grams: BTreeSet<u64>,
}

/// Two works flagged as copies.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CopyFlag {
    pub stage_id: String,
    /// `identical`, `near_identical` or `reference_copy`.
    pub kind: &'static str,
    pub learners: Vec<String>,
    pub similarity: f64,
}

/// The name the reference has in a pair.
pub const REFERENCE: &str = "reference";

impl Work {
    /// `src` against the file set handed out (`start`), plus the transfer test.
    pub fn new(
        who: &str,
        src: &[(String, Vec<u8>)],
        start: &BTreeMap<String, Vec<u8>>,
        transfer: &str,
    ) -> Work {
        let mut normal = Vec::new();
        for (path, bytes) in src {
            let mine = lex(bytes);
            let given = start.get(path).map(|b| lex(b)).unwrap_or_default();
            normal.extend(normalise_added(&given, &mine));
        }
        if let Some(t) = tokens(transfer) {
            normal.extend(normalise(&t));
        }
        let grams = normal
            .windows(GRAM)
            .map(|w| {
                let mut h = DefaultHasher::new();
                w.hash(&mut h);
                h.finish()
            })
            .collect();
        Work {
            who: who.to_owned(),
            normal,
            grams,
        }
    }

    fn comparable(&self) -> bool {
        self.normal.len() >= MIN_TOKENS
    }

    fn similarity(&self, other: &Work) -> f64 {
        if self.normal == other.normal {
            return 1.0;
        }
        let shared = self.grams.intersection(&other.grams).count();
        let all = self.grams.union(&other.grams).count();
        if all == 0 {
            0.0
        } else {
            shared as f64 / all as f64
        }
    }
}

fn lex(bytes: &[u8]) -> Vec<super::tokens::Token> {
    tokens(&String::from_utf8_lossy(bytes)).unwrap_or_default()
}

/// The learner's tokens that the handed-out file does not have, in order, then normalised.
fn normalise_added(given: &[super::tokens::Token], mine: &[super::tokens::Token]) -> Vec<String> {
    let old: Vec<&str> = given.iter().map(|t| t.text.as_str()).collect();
    let new: Vec<&str> = mine.iter().map(|t| t.text.as_str()).collect();
    let diff = similar::capture_diff_slices(similar::Algorithm::Myers, &old, &new);
    let mut added = Vec::new();
    for op in diff {
        if let similar::DiffOp::Insert {
            new_index, new_len, ..
        }
        | similar::DiffOp::Replace {
            new_index, new_len, ..
        } = op
        {
            added.extend_from_slice(&mine[new_index..new_index + new_len]);
        }
    }
    normalise(&added)
}

/// Every flagged pair of one stage: learners with each other, and each learner with the reference.
pub fn flag(stage_id: &str, works: &[Work], reference: &Work) -> Vec<CopyFlag> {
    let mut flags = Vec::new();
    for (i, a) in works.iter().enumerate() {
        if !a.comparable() {
            continue;
        }
        if reference.comparable() {
            let s = a.similarity(reference);
            if s >= NEAR {
                flags.push(CopyFlag {
                    stage_id: stage_id.to_owned(),
                    kind: "reference_copy",
                    learners: vec![a.who.clone(), REFERENCE.to_owned()],
                    similarity: round(s),
                });
            }
        }
        for b in works[i + 1..].iter().filter(|b| b.comparable()) {
            let s = a.similarity(b);
            if s >= NEAR {
                flags.push(CopyFlag {
                    stage_id: stage_id.to_owned(),
                    kind: if s >= 1.0 {
                        "identical"
                    } else {
                        "near_identical"
                    },
                    learners: vec![a.who.clone(), b.who.clone()],
                    similarity: round(s),
                });
            }
        }
    }
    flags
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: &str = "pub fn add(a: i64, b: i64) -> i64 {\n    a - b\n}\n";
    const TRANSFER: &str = "use holds::add;\n#[test]\nfn sums_negatives() {\n    assert_eq!(add(-4, 10), 6);\n    assert_eq!(add(7, 0), 7);\n}\n";

    fn work(who: &str, src: &str, transfer: &str) -> Work {
        let start = BTreeMap::from([("src/calc.rs".to_owned(), START.as_bytes().to_vec())]);
        Work::new(
            who,
            &[("src/calc.rs".into(), src.as_bytes().to_vec())],
            &start,
            transfer,
        )
    }

    #[test]
    fn a_renamed_reformatted_copy_is_flagged_and_own_work_is_not() {
        let fixed = START.replace("a - b", "a + b");
        let a = work("ann", &fixed, TRANSFER);
        let renamed = TRANSFER
            .replace("sums_negatives", "my_test")
            .replace("\n    ", " ");
        let b = work("bob", &fixed, &renamed);
        let own = work(
            "cy",
            &fixed,
            "use holds::add;\n#[test]\nfn zero_is_neutral() {\n    for x in [3, -9, 120] {\n        assert_eq!(add(x, 0), x, \"{x}\");\n    }\n}\n",
        );
        let reference = work(REFERENCE, START, "");
        let flags = flag("01", &[a, b, own], &reference);
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert_eq!(flags[0].learners, ["ann", "bob"]);
        assert_eq!(flags[0].kind, "identical");
    }

    #[test]
    fn a_copy_with_one_number_changed_is_near_identical_and_the_reference_copy_is_named() {
        let fixed = START.replace("a - b", "a + b");
        let long = "use holds::add;\n#[test]\nfn cases() {\n    assert_eq!(add(-4, 10), 6);\n    assert_eq!(add(7, 0), 7);\n    \
                    assert_eq!(add(0, 0), 0);\n    assert_eq!(add(-1, -1), -2);\n    assert_eq!(add(50, 50), 100);\n}\n";
        let a = work("ann", &fixed, long);
        let b = work(
            "bob",
            &fixed,
            &long.replace("cases", "mine").replacen("50", "60", 1),
        );
        let reference = work(REFERENCE, &fixed, long);
        let flags = flag("01", &[a, b], &reference);
        let pair = flags.iter().find(|f| f.learners == ["ann", "bob"]).unwrap();
        assert_eq!(pair.kind, "near_identical");
        assert!(pair.similarity >= NEAR && pair.similarity < 1.0, "{pair:?}");
        let copied = flags
            .iter()
            .find(|f| f.learners == ["ann", REFERENCE])
            .unwrap();
        assert_eq!((copied.kind, copied.similarity), ("reference_copy", 1.0));
    }

    #[test]
    fn the_one_obvious_fix_alone_is_too_short_to_compare() {
        let fixed = START.replace("a - b", "a + b");
        let a = work("ann", &fixed, "");
        let b = work("bob", &fixed, "");
        assert!(flag("01", &[a, b], &work(REFERENCE, &fixed, "")).is_empty());
    }
}
