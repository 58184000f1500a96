//! The claims gate: a final answer that passed the evidence gate is accepted only when what it *says*
//! agrees with what it *cites* — every number it states is grounded in a cited observation (a printed
//! rounding is fine), a number it states for a row is that row's value, and its verdict agrees with the
//! task's rule check.
//!
//! The rule's truth comes from a boolean calculator observation when the task declares a rule check,
//! otherwise from rules the cited knowledge states as `key: number` facts (see `rules`); when neither
//! gives a truth, the verdict is left unchecked rather than checked against a guess. This module
//! reads; it never changes the answer, and it runs for every policy (scripted ones included).

use serde_json::{Value, json};

use crate::answer::{self, Verdict};
use crate::decision::FinalDecision;
use crate::grounding::GroundedValues;
use crate::observe::{Ledger, ObservationRecord};
use crate::rules;
use crate::task::Task;

/// Why the gate refused a final answer: a stable code and a message the model can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRejection {
    pub code: &'static str,
    pub message: String,
}

/// What the gate checked on an accepted answer (for the trace).
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimsChecked {
    pub numbers: Vec<String>,
    /// The verdict the answer states, when the task has one to check.
    pub verdict: Option<bool>,
    /// Where the rule's truth came from (`obs-calculator-3`), when known.
    pub rule_source: Option<String>,
}

impl ClaimsChecked {
    pub fn to_json(&self) -> Value {
        json!({ "numbers": self.numbers, "verdict": self.verdict, "rule_source": self.rule_source })
    }
}

/// The rule's truth and a sentence saying where it comes from.
struct RuleTruth {
    holds: bool,
    source_id: String,
    because: String,
}

/// Checks `final_decision` (already through the evidence gate) against the observations it cites.
pub fn check(task: &Task, ledger: &Ledger, final_decision: &FinalDecision) -> Result<ClaimsChecked, ClaimRejection> {
    let cited: Vec<&ObservationRecord> = final_decision.evidence_ids.iter().filter_map(|id| ledger.get(id)).collect();
    let texts = [task.text(), task.file.answer_template.as_str()];
    let grounded = GroundedValues::collect(cited.iter().copied(), &texts);

    // Digits inside row labels and observation ids are names, not claims.
    let ids: Vec<String> = ledger.records().map(|r| r.id.clone()).collect();
    let masked: Vec<&str> = grounded.labels.iter().map(String::as_str).chain(ids.iter().map(String::as_str)).collect();
    let mentions = answer::numbers_outside(&final_decision.answer, &masked);
    let ungrounded: Vec<&str> = mentions.iter().filter(|m| !grounded.grounds(m)).map(|m| m.printed.as_str()).collect();
    if !ungrounded.is_empty() {
        return Err(ClaimRejection {
            code: "ungrounded_number",
            message: format!(
                "the answer states {}, which no cited observation ({}) contains; state only numbers from the cited observations",
                ungrounded.join(", "),
                final_decision.evidence_ids.join(", ")
            ),
        });
    }
    // A grounded number can still be the wrong row's: "Site C with Pass Rate 70" where 70 is the
    // rule's minimum and Site C's value is 67. A number written right after a row label is that row's.
    let labels: Vec<&str> = grounded.labels.iter().map(String::as_str).collect();
    let columns: Vec<&str> = grounded.columns.iter().map(String::as_str).collect();
    for (label, mention) in answer::row_claims(&final_decision.answer, &labels, &masked, &columns) {
        let Some((_, own)) = grounded.row_values.iter().find(|(l, _)| l == labels[label]) else { continue };
        if !own.is_empty() && !own.iter().any(|v| mention.stands_for(*v)) {
            let mut shown: Vec<String> = own.iter().map(|v| crate::numbers::canonical(*v)).collect();
            shown.dedup();
            return Err(ClaimRejection {
                code: "misattributed_number",
                message: format!(
                    "the answer gives {} {}, but the cited observations ({}) show {} = {}; state each row's own value",
                    labels[label],
                    mention.printed,
                    final_decision.evidence_ids.join(", "),
                    labels[label],
                    shown.join(" / ")
                ),
            });
        }
    }
    let numbers = mentions.iter().map(|m| m.printed.clone()).collect();

    let Some(truth) = rule_truth(task, ledger, &cited) else {
        return Ok(ClaimsChecked { numbers, verdict: None, rule_source: None });
    };
    let phrases = task.verdict_phrases();
    let (met, not_met) = (quoted(&phrases.met), quoted(&phrases.not_met));
    let expected_words = if truth.holds { &met } else { &not_met };
    let stated = match answer::verdict_of(&final_decision.answer, &phrases) {
        Verdict::Met => true,
        Verdict::NotMet => false,
        Verdict::Both => {
            return Err(ClaimRejection {
                code: "verdict_contradicts_evidence",
                message: format!(
                    "the answer states both verdicts; {} shows {}, so state only {expected_words}",
                    truth.source_id, truth.because
                ),
            });
        }
        Verdict::Neither if task.rule_check().is_some() => {
            return Err(ClaimRejection {
                code: "verdict_missing",
                message: format!("the answer states no verdict; {} shows {}, so say {expected_words}", truth.source_id, truth.because),
            });
        }
        Verdict::Neither => return Ok(ClaimsChecked { numbers, verdict: None, rule_source: Some(truth.source_id) }),
    };
    if stated != truth.holds {
        return Err(ClaimRejection {
            code: "verdict_contradicts_evidence",
            message: format!(
                "the answer says {}, but {} shows {}; say {expected_words}",
                if stated { &met } else { &not_met },
                truth.source_id,
                truth.because
            ),
        });
    }
    Ok(ClaimsChecked { numbers, verdict: Some(stated), rule_source: Some(truth.source_id) })
}

/// The verdict the evidence so far establishes (the declared rule check's boolean, or rules the knowledge
/// states as facts), before any answer cites it: what grounded decoding lets a final answer say.
pub fn established_verdict(task: &Task, ledger: &Ledger) -> Option<bool> {
    let successful: Vec<&ObservationRecord> = ledger.records().filter(|r| r.ok).collect();
    rule_truth(task, ledger, &successful).map(|truth| truth.holds)
}

fn quoted(phrases: &[String]) -> String {
    phrases.iter().map(|p| format!("\"{p}\"")).collect::<Vec<_>>().join(" / ")
}

/// The declared rule check's boolean, or the rules stated as facts in a cited knowledge observation.
fn rule_truth(task: &Task, ledger: &Ledger, cited: &[&ObservationRecord]) -> Option<RuleTruth> {
    if let Some(index) = task.rule_check() {
        let id = task.evidence(ledger.records()).get(index).cloned().flatten()?;
        let record = cited.iter().find(|r| r.id == id)?;
        let result = record.result.as_ref()?;
        let holds = result["value"].as_bool()?;
        let expression = result["expression"].as_str().unwrap_or("the rule check");
        return Some(RuleTruth {
            holds,
            source_id: id.clone(),
            because: format!("`{}` = {holds} (the rule {})", expression.trim(), if holds { "holds" } else { "does not hold" }),
        });
    }
    cited.iter().find_map(|record| {
        let verdict = rules::verdict(record.result.as_ref()?, task.text())?;
        Some(RuleTruth {
            holds: verdict.holds,
            source_id: record.id.clone(),
            because: format!("{} (the rule {})", verdict.explanation, if verdict.holds { "holds" } else { "does not hold" }),
        })
    })
}
