//! Task success: the final answer checked against the ground truth — evidence in causal order, numbers by
//! value, words whole and negation-aware, the verdict — each check kept for the report.

use serde::{Deserialize, Serialize};

use crate::answer::{
    Verdict, VerdictPhrases, mentions_value, phrase_present, result_masks, verdict_of,
};
use crate::ledger::ObservationRecord;
use crate::numbers;

use super::*;

/// Whether the answer states `term`: a number by value, anything else as a phrase.
pub(super) fn term_present(answer: &str, term: &str, masks: &[&str]) -> bool {
    match number_term(term) {
        Some(value) => mentions_value(answer, value, masks),
        None => phrase_present(answer, term),
    }
}

/// One evidence item and the observation that satisfied it in causal order (`None`: none did).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceCheck {
    pub tool: String,
    pub observation: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumberCheck {
    pub value: f64,
    pub stated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TermCheck {
    pub term: String,
    /// Present and not negated (for `none`, present means the check failed).
    pub present: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictCheck {
    pub expected: bool,
    pub found: Verdict,
    pub ok: bool,
}

/// Why Task Success is what it is: every check, and the failed ones in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuccessChecks {
    pub final_accepted: bool,
    /// In causal order; matched greedily as a subsequence of the ledger.
    pub evidence: Vec<EvidenceCheck>,
    pub numbers: Vec<NumberCheck>,
    pub words: Vec<TermCheck>,
    /// v1 `contains_any` (empty for v2).
    pub any_of: Vec<TermCheck>,
    pub verdict: Option<VerdictCheck>,
    pub none: Vec<TermCheck>,
    /// One line per failed check; empty exactly when Task Success is true.
    pub failures: Vec<String>,
}

/// Strings whose digits are not claims: every observation id and the labels, keys and ids inside the
/// results (see [`crate::answer::result_masks`]; old-shape results are read in the current shape first).
pub fn answer_masks(observations: &[ObservationRecord]) -> Vec<String> {
    let mut out = Vec::new();
    for record in observations {
        out.push(record.id.clone());
        if let Some(result) = &record.result {
            out.extend(result_masks(&current_shape(result)));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Every Task Success check, with the reasons it fails.
pub fn success_checks(
    expected: &Expected,
    answer: Option<&str>,
    observations: &[ObservationRecord],
    phrases: &VerdictPhrases,
) -> SuccessChecks {
    let mut failures = Vec::new();
    let evidence = evidence_checks(expected, observations, &mut failures);
    let mut checks = SuccessChecks {
        final_accepted: answer.is_some(),
        evidence,
        numbers: Vec::new(),
        words: Vec::new(),
        any_of: Vec::new(),
        verdict: None,
        none: Vec::new(),
        failures: Vec::new(),
    };
    let Some(answer) = answer else {
        failures.insert(0, "no accepted final answer".into());
        checks.failures = failures;
        return checks;
    };
    let masks = answer_masks(observations);
    let masks: Vec<&str> = masks.iter().map(String::as_str).collect();
    let wanted = &expected.final_answer;
    for &value in &wanted.numbers {
        let stated = mentions_value(answer, value, &masks);
        if !stated {
            failures.push(format!(
                "the answer does not state {}",
                numbers::canonical(value)
            ));
        }
        checks.numbers.push(NumberCheck { value, stated });
    }
    for term in &wanted.words {
        let present = term_present(answer, term, &masks);
        if !present {
            failures.push(format!("the answer does not say {term:?}"));
        }
        checks.words.push(TermCheck {
            term: term.clone(),
            present,
        });
    }
    for term in &wanted.any_of {
        checks.any_of.push(TermCheck {
            term: term.clone(),
            present: term_present(answer, term, &masks),
        });
    }
    if !checks.any_of.is_empty() && !checks.any_of.iter().any(|c| c.present) {
        failures.push(format!("the answer says none of {:?}", wanted.any_of));
    }
    if let Some(truth) = wanted.verdict {
        let found = verdict_of(answer, phrases);
        let ok = found == if truth { Verdict::Met } else { Verdict::NotMet };
        if !ok {
            let want = if truth { "met" } else { "not met" };
            failures.push(format!(
                "the verdict should be {want}; the answer says {}",
                verdict_words(found)
            ));
        }
        checks.verdict = Some(VerdictCheck {
            expected: truth,
            found,
            ok,
        });
    }
    for term in &wanted.none {
        let present = term_present(answer, term, &masks);
        if present {
            failures.push(format!("the answer says {term:?}, which it must not"));
        }
        checks.none.push(TermCheck {
            term: term.clone(),
            present,
        });
    }
    checks.failures = failures;
    checks
}

/// Every expected evidence item matched by a distinct observation that uses no value only a later observation
/// established: causal order as data dependency (data → calculation → chart; a rule check by column
/// reference and the average it does not use, in either order). The first item left unmatched is a failure.
fn evidence_checks(
    expected: &Expected,
    observations: &[ObservationRecord],
    failures: &mut Vec<String>,
) -> Vec<EvidenceCheck> {
    let mut evidence: Vec<EvidenceCheck> = expected
        .evidence
        .iter()
        .map(|item| EvidenceCheck {
            tool: item.tool.clone(),
            observation: None,
        })
        .collect();
    let mut used: Vec<usize> = Vec::new();
    for (i, item) in expected.evidence.iter().enumerate() {
        let candidates: Vec<usize> = (0..observations.len())
            .filter(|k| !used.contains(k) && Expected::item_matches(item, &observations[*k]))
            .collect();
        match candidates
            .iter()
            .find(|&&k| guessed_value(observations, k).is_none())
        {
            Some(&k) => {
                evidence[i].observation = Some(observations[k].id.clone());
                used.push(k);
            }
            None => {
                let reason = match candidates
                    .first()
                    .and_then(|&k| guessed_value(observations, k))
                {
                    Some((value, id)) => format!(
                        "uses {} before {id} established it",
                        crate::numbers::canonical(value)
                    ),
                    None => "has no matching observation".to_owned(),
                };
                failures.push(format!("evidence {} ({}) {reason}", i + 1, item.tool));
                break;
            }
        }
    }
    evidence
}

pub(super) fn verdict_words(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Met => "met",
        Verdict::NotMet => "not met",
        Verdict::Both => "both met and not met",
        Verdict::Neither => "neither",
    }
}

/// Task Success alone (see [`success_checks`] for why).
pub fn task_success(
    expected: &Expected,
    answer: Option<&str>,
    observations: &[ObservationRecord],
    phrases: &VerdictPhrases,
) -> bool {
    success_checks(expected, answer, observations, phrases)
        .failures
        .is_empty()
}
