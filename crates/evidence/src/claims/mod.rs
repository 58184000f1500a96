//! The claims gate: a final answer that passed the evidence gate is accepted only when what it *says*
//! agrees with what it *cites* — every number it states is grounded in a cited observation of the data,
//! a number it states for a row is that row's value, each template slot holds what its name claims (the
//! aggregate of the column the task names, the label or value of that column's extreme row), all its
//! verdict choices agree with each other and with the rule the knowledge states.
//!
//! What the gate cannot check it does not guess: such a claim is accepted as *unverified*, named with
//! its reason, and the run's [`Verification`] says `partial` or `unverified` (an abstention, counted
//! apart from correct and wrong answers). The rule's truth comes from the runtime's own reading of the
//! cited knowledge (`rules`); a rule check the model computed without a rule the runtime could read is
//! the model's own comparison and leaves the verdict unverified. This module reads; it never changes
//! the answer, and it runs for every policy (scripted ones included).

pub mod slots;
pub use forge_language::template;

use serde::Serialize;
use serde_json::Value;

use crate::check_review;
use crate::columns::{self, ColumnData, Focus, UnreadColumn};
use crate::grounding::GroundedValues;
use crate::ledger::{Ledger, ObservationRecord};
use crate::rules;
use crate::task::Task;
use forge_language::answer::{self, Verdict, VerdictPhrases};
use forge_language::lexicon::{self, End};
use slots::SlotClaim;
use template::{Fill, Part};

/// A final answer and the observation ids it cites: what the gate checks (the decision contract's `final`
/// branch, `runtime::decision::FinalDecision`, is this type).
#[derive(Debug, Clone, PartialEq)]
pub struct FinalDecision {
    pub answer: String,
    /// The template's slots as the policy gave them (name, text; template order) when it gave the answer slot
    /// by slot and the runtime wrote `answer` from them; empty when the answer was written whole.
    pub slots: Vec<(String, String)>,
    /// What the policy said its rule check came out as, when it gave the answer slot by slot under a template
    /// with a choice (`"rule check"`, before the verdict words, which the guided grammar writes from it by the
    /// task's phrases); `None` otherwise. A record of the model's decision, not a claim: the gate checks the
    /// verdict words against the rule.
    pub rule_check: Option<bool>,
    pub evidence_ids: Vec<String>,
}

/// Why the gate refused a final answer: a stable code and a message the model can act on.
///
/// A dispute names every disagreement the answer holds, not only the first: `message` lists them all (so one
/// repair can fix them all), `disputes` holds one claim per disagreement with the template part it concerns,
/// and `checked` the answer's other claims as the gate found them — so an answer accepted as disputed marks
/// exactly the parts in dispute in the text a user reads.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimRejection {
    pub code: RejectionCode,
    pub message: String,
    /// One `disputed` claim per disagreement (empty for a fault of form).
    pub disputes: Vec<ClaimCheck>,
    /// The answer's claims the gate checked besides the disputed ones (empty for a fault of form).
    pub checked: Vec<ClaimCheck>,
    /// For a disputed verdict: where the model's own rule check parts from the rule, limit by limit
    /// ([`check_review`]), joined — what the re-opened rule check step is told; empty when nothing is named.
    pub rule_check_note: String,
}

impl ClaimRejection {
    /// Whether the answer disagrees with the runtime's check rather than breaking the answer's form.
    pub fn is_dispute(&self) -> bool {
        self.code.is_dispute()
    }
}

/// How much of an accepted answer the runtime verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerificationStatus {
    /// Every claim checked against the data.
    Verified,
    /// Some claims checked, some not (each named with its reason): an abstention.
    Partial,
    /// No claim could be checked: an abstention.
    Unverified,
    /// The answer disagreed with the runtime's own check through every repair: accepted as an abstention
    /// with the disagreement named, neither the model's claim certified nor the runtime's put in its place.
    Disputed,
}

impl VerificationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Verified => "verified",
            Self::Partial => "partial",
            Self::Unverified => "unverified",
            Self::Disputed => "disputed",
        }
    }
}

/// What the gate made of one claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStatus {
    /// Checked against the data and the rule the runtime read: it agrees.
    Verified,
    /// Not checkable (no rule read, a quantity the tools cannot compute, units that cannot be compared): named
    /// with its reason.
    Unverified,
    /// Checked, and it disagrees with the runtime's check through every repair.
    Disputed,
}

/// What sort of claim one part of an answer makes, which decides how the gate checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    /// A statistic of a column (`<average wait>`).
    Aggregate,
    /// The row at an end of a column (`<longest-wait clinic>`).
    ExtremeLabel,
    /// The value at an end of a column (`<longest wait>`).
    ExtremeValue,
    /// The row at a rank other than an end (`<second-lowest school>`).
    RankedLabel,
    /// The value at such a rank.
    RankedValue,
    /// Every row at an end (a tie, or top-N).
    EndList,
    /// A value of the row the answer names beside it.
    OwnValue,
    /// A row the rule or task leaves out.
    ExcludedRow,
    /// A row named without a rank.
    Row,
    /// A quantity the runtime cannot compute (named with the reason).
    Unsupported,
    /// A part the runtime has no check for (free text).
    Open,
    /// A ratio the knowledge defines (all of one column over all of another).
    DefinedRatio,
    /// The verdict of the rule.
    Verdict,
    /// The answer's form against its template.
    Template,
    /// A disagreement with the runtime's check, held to through every repair.
    Dispute,
}

impl ClaimKind {
    /// Every kind, in the order the API schema lists them (`schemas/openapi.json`, checked by a test).
    pub const ALL: [ClaimKind; 15] = [
        Self::Aggregate,
        Self::ExtremeLabel,
        Self::ExtremeValue,
        Self::RankedLabel,
        Self::RankedValue,
        Self::EndList,
        Self::OwnValue,
        Self::ExcludedRow,
        Self::Row,
        Self::Unsupported,
        Self::Open,
        Self::DefinedRatio,
        Self::Verdict,
        Self::Template,
        Self::Dispute,
    ];
}

/// Why the gate refused a final answer. The first five are disputes: the answer is well formed and grounded
/// but disagrees with the runtime's own check; the rest are faults of form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectionCode {
    WrongQuantity,
    WrongRow,
    TieNotStated,
    MisattributedNumber,
    VerdictContradictsEvidence,
    UngroundedNumber,
    VerdictMissing,
    VerdictsDisagree,
    SlotTypeMismatch,
}

impl RejectionCode {
    /// The code as it appears in the trace and in repair notes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WrongQuantity => "wrong_quantity",
            Self::WrongRow => "wrong_row",
            Self::TieNotStated => "tie_not_stated",
            Self::MisattributedNumber => "misattributed_number",
            Self::VerdictContradictsEvidence => "verdict_contradicts_evidence",
            Self::UngroundedNumber => "ungrounded_number",
            Self::VerdictMissing => "verdict_missing",
            Self::VerdictsDisagree => "verdicts_disagree",
            Self::SlotTypeMismatch => "slot_type_mismatch",
        }
    }

    /// Whether the answer disagrees with the runtime's check rather than breaking the answer's form. Naming
    /// one row of a tie at an end is a dispute too: the runtime's check finds no single row there.
    pub fn is_dispute(self) -> bool {
        matches!(
            self,
            Self::WrongQuantity
                | Self::WrongRow
                | Self::TieNotStated
                | Self::MisattributedNumber
                | Self::VerdictContradictsEvidence
        )
    }
}

/// One claim of an answer and what the gate made of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaimCheck {
    /// The template part (`<average wait>`, `<met / not met>`), or `answer` for a whole-answer claim.
    pub part: String,
    /// What sort of claim the part makes (serialised in snake case: `aggregate`, `extreme_label`, …).
    pub kind: ClaimKind,
    /// What the answer put there.
    pub stated: String,
    pub status: ClaimStatus,
    /// How it was verified, or why it could not be.
    pub detail: String,
}

/// What the gate checked on an accepted answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verification {
    pub status: VerificationStatus,
    pub claims: Vec<ClaimCheck>,
    /// Every number the answer states (all grounded).
    pub numbers: Vec<String>,
    /// The verdict the answer states, when it states one.
    pub verdict: Option<bool>,
    /// Where the rule's truth came from (`obs-knowledge_search-1`), when known.
    pub rule_source: Option<String>,
}

impl Verification {
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
    /// The claims the runtime could not verify (or disputes), as `part: reason` lines.
    pub fn unverified(&self) -> Vec<String> {
        self.claims
            .iter()
            .filter(|c| c.status != ClaimStatus::Verified)
            .map(|c| format!("{}: {}", c.part, c.detail))
            .collect()
    }
}

/// The rule's truth, and how the runtime knows it.
enum Truth {
    /// The runtime read the rule in the cited knowledge and applied it to the data.
    Rule {
        holds: bool,
        source_id: String,
        because: String,
        /// Where the model's own rule check parts from the rule, limit by limit ([`check_review`]): what a
        /// disputed verdict's repair note names; empty when it names nothing.
        check_note: String,
    },
    /// Only the model's own rule check (a boolean calculator result) says it; no rule was read.
    ModelCheck {
        source_id: String,
        expression: String,
        /// The rule clauses the runtime could not read, by name with the reason.
        uncertain: Vec<String>,
    },
    /// Nothing says it; the clauses that hold a comparison the runtime could not place.
    Unknown { uncertain: Vec<String> },
    /// The rule was read, but a limit's unit cannot be compared with its column's (`5 kg` against a
    /// column in km, `€` against `$`, an unknown unit): the numbers are never compared raw.
    UnitsDiffer { conflicts: Vec<String> },
}

/// The verification of an answer accepted as an abstention after the gate disputed it through every repair:
/// each disagreement is a `disputed` claim on its template part (named with its code), beside the claims the
/// gate could check. A rejection without parts (built by hand) is one dispute about the whole answer.
pub fn disputed(rejection: ClaimRejection) -> Verification {
    let mut claims = rejection.checked;
    if rejection.disputes.is_empty() {
        claims.push(dispute_claim("answer", rejection.code, rejection.message));
    } else {
        claims.extend(rejection.disputes);
    }
    Verification {
        status: VerificationStatus::Disputed,
        claims,
        numbers: Vec::new(),
        verdict: None,
        rule_source: None,
    }
}

fn dispute_claim(part: &str, code: RejectionCode, detail: String) -> ClaimCheck {
    ClaimCheck {
        part: part.into(),
        kind: ClaimKind::Dispute,
        stated: code.as_str().into(),
        status: ClaimStatus::Disputed,
        detail,
    }
}

fn reject(code: RejectionCode, message: String) -> ClaimRejection {
    ClaimRejection {
        code,
        message,
        disputes: Vec::new(),
        checked: Vec::new(),
        rule_check_note: String::new(),
    }
}

/// The disagreements found in one answer, each on its part, collected so that all are named at once.
#[derive(Default)]
struct Disputes(Vec<(String, ClaimRejection)>);

impl Disputes {
    fn add(&mut self, part: impl Into<String>, rejection: ClaimRejection) {
        self.0.push((part.into(), rejection));
    }

    /// `Ok(checked)` when nothing is in dispute; else one rejection naming every disagreement (the first's
    /// code), with the claims checked beside them.
    fn settle(self, checked: Vec<ClaimCheck>) -> Result<Vec<ClaimCheck>, ClaimRejection> {
        let Some(code) = self.0.first().map(|(_, r)| r.code) else {
            return Ok(checked);
        };
        let message = if self.0.len() == 1 {
            self.0[0].1.message.clone()
        } else {
            let each: Vec<String> = self
                .0
                .iter()
                .enumerate()
                .map(|(i, (part, r))| format!("({}) {part}: {}", i + 1, r.message))
                .collect();
            format!(
                "the answer disagrees with the runtime's check in {} places: {}",
                self.0.len(),
                each.join("; ")
            )
        };
        let rule_check_note = self
            .0
            .iter()
            .map(|(_, r)| r.rule_check_note.clone())
            .find(|note| !note.is_empty())
            .unwrap_or_default();
        let disputes = self
            .0
            .into_iter()
            .map(|(part, r)| dispute_claim(&part, r.code, r.message))
            .collect();
        Err(ClaimRejection {
            code,
            message,
            disputes,
            checked,
            rule_check_note,
        })
    }
}

/// Checks `final_decision` (already through the evidence gate) against the observations it cites.
pub fn check(
    task: &Task,
    ledger: &Ledger,
    final_decision: &FinalDecision,
) -> Result<Verification, ClaimRejection> {
    let cited: Vec<&ObservationRecord> = final_decision
        .evidence_ids
        .iter()
        .filter_map(|id| ledger.get(id))
        .collect();
    let texts = [task.text(), task.file.answer_template.as_str()];
    let grounded = GroundedValues::collect(cited.iter().copied(), &texts);

    // Disagreements with the runtime's check are collected, so that one rejection names them all.
    let mut disputes = Disputes::default();
    let task_words = template_text_with_numbers(&task.file.answer_template);
    let numbers = check_numbers(
        ledger,
        final_decision,
        &grounded,
        &task_words,
        &mut disputes,
    )?;
    let truth = rule_truth(task, ledger, &cited);
    let phrases = task.verdict_phrases();
    let plan = Plan::new(task, &cited);
    let mut claims = Vec::new();
    let stated_verdicts = check_parts(task, &plan, final_decision, &mut claims, &mut disputes)?;

    let stated = agreed_verdict(&stated_verdicts)?;
    let (met, not_met) = (quoted(&phrases.met), quoted(&phrases.not_met));
    if stated.is_none()
        && task.rule_check().is_some()
        && let Truth::Rule { source_id, .. } = &truth
    {
        return Err(reject(
            RejectionCode::VerdictMissing,
            format!(
                "the answer states no verdict; check the rule {source_id} states against the data and choose the template's option for it"
            ),
        ));
    }
    let mut rule_source = None;
    for (part, polarity) in &stated_verdicts {
        match verdict_check(part, *polarity, &truth, (&met, &not_met), &mut rule_source) {
            Ok(check) => claims.push(check),
            Err(dispute) if dispute.is_dispute() => disputes.add(part.clone(), dispute),
            Err(fault) => return Err(fault),
        }
    }

    let claims = disputes.settle(claims)?;
    let verified_count = claims
        .iter()
        .filter(|c| c.status == ClaimStatus::Verified)
        .count();
    let status = if verified_count == claims.len() {
        VerificationStatus::Verified
    } else if verified_count > 0 {
        VerificationStatus::Partial
    } else {
        VerificationStatus::Unverified
    };
    Ok(Verification {
        status,
        claims,
        numbers,
        verdict: stated,
        rule_source,
    })
}

/// The answer read back against its template: each slot's claim goes to `claims` (or its disagreement to
/// `disputes`) and each verdict choice's polarity is returned, in template order; an answer that strays from
/// its template is one unverified claim, its verdict read from the whole text.
fn check_parts(
    task: &Task,
    plan: &Plan<'_>,
    final_decision: &FinalDecision,
    claims: &mut Vec<ClaimCheck>,
    disputes: &mut Disputes,
) -> Result<Vec<(String, Option<bool>)>, ClaimRejection> {
    let phrases = task.verdict_phrases();
    let mut stated_verdicts: Vec<(String, Option<bool>)> = Vec::new();

    let parts = template::parse(&task.file.answer_template);
    let has_parts = parts.iter().any(|p| !matches!(p, Part::Text(_)));
    match template::read_back(&parts, &final_decision.answer) {
        Some(fills) if has_parts => {
            let mut last_row: Option<(ColumnData, String)> = None;
            let mut after_slots = texts_after_slots(&parts).into_iter();
            for fill in fills {
                match fill {
                    Fill::Slot { name, text } => {
                        let after = after_slots.next().unwrap_or_default();
                        match plan.check_slot(
                            &name,
                            &text,
                            &after,
                            &final_decision.answer,
                            &mut last_row,
                        ) {
                            Ok(claim) => claims.push(claim),
                            Err(dispute) if dispute.is_dispute() => {
                                disputes.add(format!("<{name}>"), dispute);
                            }
                            Err(fault) => return Err(fault),
                        }
                    }
                    Fill::Choice { options, chosen } => {
                        let polarity = option_polarity(&options, chosen, &phrases);
                        if polarity.is_some()
                            || options
                                .iter()
                                .any(|o| answer::verdict_of(o, &phrases) != Verdict::Neither)
                        {
                            stated_verdicts.push((format!("<{}>", options.join(" / ")), polarity));
                        }
                        let _ = &options[chosen];
                    }
                }
            }
        }
        Some(_) => {}
        None => {
            claims.push(ClaimCheck {
                part: "answer".into(),
                kind: ClaimKind::Template,
                stated: final_decision.answer.clone(),
                status: ClaimStatus::Unverified,
                detail: "the answer does not follow the task's template, so its slots cannot be read back and checked".into(),
            });
            let whole = match answer::verdict_of(&final_decision.answer, &phrases) {
                Verdict::Met => Some(Some(true)),
                Verdict::NotMet => Some(Some(false)),
                Verdict::Both => {
                    return Err(reject(
                        RejectionCode::VerdictsDisagree,
                        "the answer states both verdicts; state one".into(),
                    ));
                }
                Verdict::Neither => None,
            };
            if let Some(p) = whole {
                stated_verdicts.push(("verdict".into(), p));
            }
        }
    }
    Ok(stated_verdicts)
}

/// The template's fixed text pieces that hold a number ("，11月服务考核" in "…是<最低门店>，11月服务考核<达标 /
/// 未达标>。"): the task's own words, which the model did not write, so their numbers claim nothing.
fn template_text_with_numbers(answer_template: &str) -> Vec<String> {
    template::parse(answer_template)
        .into_iter()
        .filter_map(|part| match part {
            Part::Text(text) if text.chars().any(char::is_numeric) => Some(text),
            _ => None,
        })
        .collect()
}

/// The answer's numbers, each grounded in the cited observations and, when written right after a row label,
/// that row's own value; returns them as printed. Digits inside row labels, observation ids and the
/// template's own text (`task_words`) are names or the task's words, not claims.
fn check_numbers(
    ledger: &Ledger,
    final_decision: &FinalDecision,
    grounded: &GroundedValues,
    task_words: &[String],
    disputes: &mut Disputes,
) -> Result<Vec<String>, ClaimRejection> {
    let ids: Vec<String> = ledger.records().map(|r| r.id.clone()).collect();
    let masked: Vec<&str> = grounded
        .labels
        .iter()
        .map(String::as_str)
        .chain(ids.iter().map(String::as_str))
        .chain(task_words.iter().map(String::as_str))
        .collect();
    let mentions = answer::numbers_outside(&final_decision.answer, &masked);
    let ungrounded: Vec<&str> = mentions
        .iter()
        .filter(|m| !grounded.grounds(m))
        .map(|m| m.printed.as_str())
        .collect();
    if !ungrounded.is_empty() {
        return Err(reject(
            RejectionCode::UngroundedNumber,
            format!(
                "the answer states {}, which no cited observation of the data ({}) contains; state only numbers from the cited observations",
                ungrounded.join(", "),
                final_decision.evidence_ids.join(", ")
            ),
        ));
    }
    // A grounded number can still be the wrong row's: "Site C with Pass Rate 70" where 70 is the
    // rule's minimum and Site C's value is 67. A number written right after a row label is that row's.
    let labels: Vec<&str> = grounded.labels.iter().map(String::as_str).collect();
    let columns: Vec<&str> = grounded.columns.iter().map(String::as_str).collect();
    for (label, mention) in answer::row_claims(&final_decision.answer, &labels, &masked, &columns) {
        let Some((_, own)) = grounded.row_values.iter().find(|(l, _)| l == labels[label]) else {
            continue;
        };
        if !own.is_empty() && !own.iter().any(|v| mention.stands_for(*v)) {
            disputes.add(
                "answer",
                reject(
                    RejectionCode::MisattributedNumber,
                    format!(
                        "the answer gives {} {}, which is not {}'s value in the cited observations ({}); state each row's own value",
                        labels[label],
                        mention.printed,
                        labels[label],
                        final_decision.evidence_ids.join(", "),
                    ),
                ),
            );
        }
    }
    Ok(mentions.iter().map(|m| m.printed.clone()).collect())
}

/// The verdict all of an answer's verdict choices state (`None` when none states one), or
/// `verdicts_disagree` when they differ.
fn agreed_verdict(
    stated_verdicts: &[(String, Option<bool>)],
) -> Result<Option<bool>, ClaimRejection> {
    let known: Vec<bool> = stated_verdicts.iter().filter_map(|(_, p)| *p).collect();
    if known.iter().any(|p| *p != known[0]) {
        let said: Vec<String> = stated_verdicts
            .iter()
            .map(|(part, p)| format!("{part} says {}", polarity_word(*p)))
            .collect();
        return Err(reject(
            RejectionCode::VerdictsDisagree,
            format!(
                "the answer's verdict choices disagree ({}); choose options that say the same",
                said.join(", ")
            ),
        ));
    }
    Ok(known.first().copied())
}

/// The rejection of verdict words `stated` that the rule `source_id` does not confirm: the check that failed
/// is named, limit by limit, where the model's own rule check parts from the rule (`check_note`); never the
/// value or row the runtime computed.
fn verdict_dispute(stated: &str, source_id: &str, check_note: &str) -> ClaimRejection {
    let how = if check_note.is_empty() {
        "compare each limit of that rule with the data again"
    } else {
        check_note
    };
    let mut rejection = reject(
        RejectionCode::VerdictContradictsEvidence,
        format!(
            "the answer says {stated}, which the runtime's own check of the rule {source_id} states, over the cited data, does not confirm; {how}"
        ),
    );
    rejection.rule_check_note = check_note.to_owned();
    rejection
}

/// One stated verdict checked against what the runtime read of the rule: verified, unverified with the
/// reason, or `verdict_contradicts_evidence`; a rule's source goes into `rule_source`.
fn verdict_check(
    part: &str,
    polarity: Option<bool>,
    truth: &Truth,
    (met, not_met): (&str, &str),
    rule_source: &mut Option<String>,
) -> Result<ClaimCheck, ClaimRejection> {
    let stated_text = polarity_word(polarity).to_owned();
    Ok(match (truth, polarity) {
        (_, None) => unverified(
            part,
            ClaimKind::Verdict,
            &stated_text,
            "the runtime cannot tell which verdict this option states",
        ),
        (
            Truth::Rule {
                holds,
                source_id,
                because,
                check_note,
            },
            Some(p),
        ) => {
            *rule_source = Some(source_id.clone());
            if p != *holds {
                return Err(verdict_dispute(
                    if p { met } else { not_met },
                    source_id,
                    check_note,
                ));
            }
            verified(
                part,
                ClaimKind::Verdict,
                &stated_text,
                format!("{source_id}: {because}"),
            )
        }
        (
            Truth::ModelCheck {
                source_id,
                expression,
                uncertain,
            },
            Some(_),
        ) => {
            let why = if uncertain.is_empty() {
                format!(
                    "the verdict rests on the model's own comparison `{expression}` ({source_id}); the runtime read no rule in the cited knowledge to check it against"
                )
            } else {
                format!(
                    "the verdict rests on the model's own comparison `{expression}` ({source_id}); the runtime could not read the rule in the cited knowledge, so it checks none of it: {}",
                    uncertain.join("; ")
                )
            };
            unverified(part, ClaimKind::Verdict, &stated_text, &why)
        }
        (Truth::UnitsDiffer { conflicts }, Some(_)) => unverified(
            part,
            ClaimKind::Verdict,
            &stated_text,
            &format!(
                "the runtime does not compare numbers in different units: {}",
                conflicts.join("; ")
            ),
        ),
        (Truth::Unknown { uncertain }, Some(_)) => {
            let why = if uncertain.is_empty() {
                "the cited knowledge states no rule the runtime could read, so no verdict can be verified".to_owned()
            } else {
                format!(
                    "the runtime could not read the rule, so it checks none of it: {}",
                    uncertain.join("; ")
                )
            };
            unverified(part, ClaimKind::Verdict, &stated_text, &why)
        }
    })
}

/// The answer as the user reads it: after each claim the gate could not verify, the language's mark
/// (`[unverified]`, `【未核实】`), so an answer the gate disputed through every repair is marked after each
/// disputed part; an answer that does not follow the template, or a claim about the whole `answer`, is marked
/// at its end. A verified answer is returned as it is.
pub fn marked_answer(task: &Task, answer: &str, verification: &Verification) -> String {
    let unverified: Vec<&ClaimCheck> = verification
        .claims
        .iter()
        .filter(|c| c.status != ClaimStatus::Verified)
        .collect();
    if unverified.is_empty() {
        return answer.to_owned();
    }
    let marker = lexicon::unverified_marker(&task.file.answer_template);
    let parts = template::parse(&task.file.answer_template);
    let Some(spans) = template::read_back_spans(&parts, answer) else {
        return format!("{}{marker}", answer.trim_end());
    };
    let mut left: Vec<&str> = unverified.iter().map(|c| c.part.as_str()).collect();
    let mut ends: Vec<usize> = Vec::new();
    for (fill, span) in spans {
        let part = match fill {
            Fill::Slot { name, .. } => format!("<{name}>"),
            Fill::Choice { options, .. } => format!("<{}>", options.join(" / ")),
        };
        if let Some(i) = left.iter().position(|p| *p == part) {
            left.remove(i);
            ends.push(span.end);
        }
    }
    let mut out = answer.to_owned();
    for end in ends.into_iter().rev() {
        out.insert_str(end, marker);
    }
    if !left.is_empty() {
        // A claim about the whole answer ("answer": not in the template's shape).
        out = format!("{}{marker}", out.trim_end());
    }
    out
}

fn verified(part: &str, kind: ClaimKind, stated: &str, detail: String) -> ClaimCheck {
    ClaimCheck {
        part: part.to_owned(),
        kind,
        stated: stated.to_owned(),
        status: ClaimStatus::Verified,
        detail,
    }
}

fn unverified(part: &str, kind: ClaimKind, stated: &str, detail: &str) -> ClaimCheck {
    ClaimCheck {
        part: part.to_owned(),
        kind,
        stated: stated.to_owned(),
        status: ClaimStatus::Unverified,
        detail: detail.to_owned(),
    }
}

/// How a claim detail names an aggregate over one column: `mean([Wait]) over 6 rows`.
/// The template's fixed text right after each slot (empty where another slot or a choice follows), in slot
/// order: where a template states the unit of the slot's number ("<average wait> minutes").
fn texts_after_slots(parts: &[Part]) -> Vec<String> {
    parts
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p, Part::Slot(_)))
        .map(|(i, _)| match parts.get(i + 1) {
            Some(Part::Text(text)) => text.clone(),
            _ => String::new(),
        })
        .collect()
}

fn aggregate_over(aggregate: &lexicon::Aggregate, column: &ColumnData) -> String {
    format!(
        "{}([{}]) over {} rows",
        aggregate.function(),
        column.name,
        column.values.len()
    )
}

fn polarity_word(p: Option<bool>) -> &'static str {
    match p {
        Some(true) => "met",
        Some(false) => "not met",
        None => "unclear",
    }
}

/// Which verdict option `chosen` of a choice states: by the task's verdict phrases, else by negation
/// (of "may / may not", the option that adds a negation is the unmet one); `None` when neither tells.
pub fn option_polarity(
    options: &[String],
    chosen: usize,
    phrases: &VerdictPhrases,
) -> Option<bool> {
    let option = &options[chosen];
    match answer::verdict_of(option, phrases) {
        Verdict::Met => return Some(true),
        Verdict::NotMet => return Some(false),
        _ => {}
    }
    let negated = |text: &str| {
        let lex = lexicon::lexicon();
        lexicon::contains_any(text, lex.negations.iter().chain(&lex.universal_negations))
            || lexicon::contains_any(text, &lex.option_negations)
    };
    let others: Vec<&String> = options
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != chosen)
        .map(|(_, o)| o)
        .collect();
    match (
        negated(option),
        others.iter().all(|o| negated(o)),
        others.iter().any(|o| negated(o)),
    ) {
        (true, false, _) if others.len() == 1 => Some(false),
        (false, _, true) if others.len() == 1 => Some(true),
        _ => None,
    }
}

fn quoted(phrases: &[String]) -> String {
    phrases
        .iter()
        .map(|p| format!("\"{p}\""))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// The rule the cited knowledge states, applied to its data; else the model's own rule check; else unknown.
fn rule_truth(task: &Task, ledger: &Ledger, cited: &[&ObservationRecord]) -> Truth {
    for record in cited {
        let Some(result) = record.result.as_ref() else {
            continue;
        };
        if let Some(verdict) = rules::verdict(result, task.text()) {
            let check_note = model_rule_check(task, ledger, cited)
                .map(|(id, expression)| {
                    let found = check_review::differences(result, task.text(), &expression);
                    if found.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "your rule check {id} (`{expression}`): {}",
                            found.join("; ")
                        )
                    }
                })
                .unwrap_or_default();
            return Truth::Rule {
                check_note,
                holds: verdict.holds,
                source_id: record.id.clone(),
                because: format!(
                    "{} (the rule {})",
                    verdict.explanation,
                    if verdict.holds {
                        "holds"
                    } else {
                        "does not hold"
                    }
                ),
            };
        }
    }
    // A rule that cannot be checked on its table (another period; a row without a value) is unread by name,
    // like any rule the reader cannot type.
    let unreadable: Vec<String> = cited
        .iter()
        .filter_map(|r| r.result.as_ref())
        .flat_map(|r| rules::unreadable_rules(r, task.text()))
        .collect();
    if !unreadable.is_empty() {
        return match model_rule_check(task, ledger, cited) {
            Some((source_id, expression)) => Truth::ModelCheck {
                source_id,
                expression,
                uncertain: unreadable,
            },
            None => Truth::Unknown {
                uncertain: unreadable,
            },
        };
    }
    let conflicts: Vec<String> = cited
        .iter()
        .filter_map(|r| r.result.as_ref())
        .flat_map(|r| rules::unit_conflicts(r, task.text()))
        .collect();
    if !conflicts.is_empty() {
        return Truth::UnitsDiffer { conflicts };
    }
    // A rule read whole whose column is not clear (its words name several columns, or none) is unread by
    // name too: "no rule" would tell the user the knowledge states none.
    let uncertain: Vec<String> = cited
        .iter()
        .filter_map(|r| r.result.as_ref())
        .flat_map(|r| {
            let reading = rules::reading(r);
            let unplaced = reading.rules.iter().map(|rule| {
                format!(
                    "\"{}\" (which column of the cited data it limits is not clear)",
                    rule.key
                )
            });
            reading
                .uncertain
                .clone()
                .into_iter()
                .chain(unplaced)
                .collect::<Vec<_>>()
        })
        .collect();
    if let Some((source_id, expression)) = model_rule_check(task, ledger, cited) {
        return Truth::ModelCheck {
            source_id,
            expression,
            uncertain,
        };
    }
    Truth::Unknown { uncertain }
}

/// The model's own rule check among the cited records: the boolean calculator result the task's rule-check
/// step holds, by id with its expression.
fn model_rule_check(
    task: &Task,
    ledger: &Ledger,
    cited: &[&ObservationRecord],
) -> Option<(String, String)> {
    let index = task.rule_check()?;
    let id = task.evidence(ledger.records()).get(index).cloned()??;
    let result = cited.iter().find(|r| r.id == id)?.result.as_ref()?;
    result["value"].as_bool()?;
    let expression = result["expression"]
        .as_str()
        .unwrap_or("the rule check")
        .trim()
        .to_owned();
    Some((id, expression))
}

/// The answer plan: the observed columns and the texts that say which one each slot is about.
pub struct Plan<'t> {
    columns: Vec<ColumnData>,
    /// The columns of numbers the cited tables could not read: a slot naming one claims nothing checkable.
    unread: Vec<UnreadColumn>,
    /// The task's step hints (calculator steps first) and its text: where a slot naming no column looks.
    texts: Vec<&'t str>,
    /// Rules the cited knowledge states (an "either end" slot takes the end a per-row rule limits).
    each_row_lower_limit: Option<bool>,
    /// The numeric results of computations among the records (results with an `expression`).
    computed: Vec<f64>,
    /// Ratios of column totals the cited knowledge defines ("the overall rate is all A divided by all B").
    definitions: Vec<rules::clause::Definition>,
    /// The cited tables' text columns: a slot naming a value only some rows hold claims something of those rows.
    categories: Vec<rules::Category>,
}

impl<'t> Plan<'t> {
    pub fn new(task: &'t Task, records: &[&ObservationRecord]) -> Plan<'t> {
        let columns = columns::columns_in(records.iter().copied());
        let unread = columns::unread_in(records.iter().copied());
        let mut texts: Vec<&str> = task
            .required_evidence()
            .iter()
            .filter(|e| e.tool == "calculator")
            .map(|e| e.hint.as_str())
            .collect();
        texts.push(task.text());
        let each_row_lower_limit = records
            .iter()
            .filter_map(|r| r.result.as_ref())
            .flat_map(rules::rules_in)
            .find(|r| r.measure == rules::Measure::EachRow)
            .map(|r| r.comparison.is_lower_limit());
        let computed = records
            .iter()
            .filter(|r| r.ok)
            .filter_map(|r| r.result.as_ref())
            .filter(|result| result["expression"].is_string())
            .filter_map(|result| result["value"].as_f64())
            .collect();
        let definitions = records
            .iter()
            .filter_map(|r| r.result.as_ref())
            .flat_map(rules::definitions_in)
            .collect();
        let categories = records
            .iter()
            .filter_map(|r| r.result.as_ref())
            .flat_map(|result| rules::stated(result).categories)
            .collect();
        Plan {
            columns,
            unread,
            texts,
            each_row_lower_limit,
            computed,
            definitions,
            categories,
        }
    }

    fn focus(&self, name: &str) -> Focus<'_> {
        let mut texts = vec![name];
        texts.extend(self.texts.iter().copied());
        columns::focus(&self.columns, &texts)
    }

    /// The unread column a slot's words (then the hints and the task, as [`Self::focus`] reads them) name at
    /// least as well as any readable column.
    fn names_unread(&self, name: &str) -> Option<&UnreadColumn> {
        let mut texts = vec![name];
        texts.extend(self.texts.iter().copied());
        columns::names_unread(&self.columns, &self.unread, &texts)
    }

    fn resolve_end(&self, end: End) -> Option<End> {
        match end {
            End::Either => self
                .each_row_lower_limit
                .map(|lower| if lower { End::Lowest } else { End::Highest }),
            other => Some(other),
        }
    }

    /// The value of a ratio the knowledge defines, when the slot names it (every word of the defined name):
    /// the printed forms it may take (scaled as the definition says, else as a fraction or per 100).
    fn defined_ratio(&self, name: &str) -> Option<(&rules::clause::Definition, Vec<f64>)> {
        let words = lexicon::content_words(name);
        let def = self
            .definitions
            .iter()
            .find(|d| d.name.iter().all(|w| words.contains(w)))?;
        let total = |column: &str| -> Option<f64> {
            let c = self.columns.iter().find(|c| c.name == column)?;
            c.missing.is_empty().then(|| c.values.iter().sum())
        };
        let (top, bottom) = (total(&def.numerator)?, total(&def.denominator)?);
        if bottom == 0.0 {
            return None;
        }
        let ratio = top / bottom;
        let values = match def.per {
            Some(per) => vec![ratio * per],
            None => vec![ratio, ratio * 100.0],
        };
        Some((def, values))
    }

    /// A slot naming a defined ratio holds its value, computed by a cited calculator call.
    fn check_defined_ratio(
        &self,
        name: &str,
        fill: &str,
    ) -> Option<Result<ClaimCheck, ClaimRejection>> {
        let (def, values) = self.defined_ratio(name)?;
        let part = format!("<{name}>");
        let describe = format!(
            "sum([{}]) / sum([{}]){}",
            def.numerator,
            def.denominator,
            def.per
                .map(|p| format!(" * {}", forge_language::numbers::canonical(p)))
                .unwrap_or_default()
        );
        let Some(mention) = forge_language::numbers::scan(fill).into_iter().next() else {
            return Some(Err(reject(
                RejectionCode::SlotTypeMismatch,
                format!(
                    "{part} claims {describe}, a number, but the answer puts \"{fill}\" there; write the number"
                ),
            )));
        };
        let Some(value) = values.iter().copied().find(|v| mention.stands_for(*v)) else {
            return Some(Err(reject(
                RejectionCode::WrongQuantity,
                format!(
                    "{part} states {}, which is not {describe} as the knowledge defines it; compute that with the calculator",
                    mention.printed,
                ),
            )));
        };
        if !self.computed.iter().any(|x| mention.stands_for(*x)) {
            return Some(Err(reject(
                RejectionCode::WrongQuantity,
                format!(
                    "{part} states {}, which is {describe}, but no cited calculator result computed it; compute it with the calculator and cite it",
                    mention.printed
                ),
            )));
        }
        Some(Ok(verified(
            &part,
            ClaimKind::DefinedRatio,
            fill,
            format!(
                "{describe} = {} (as the knowledge defines it)",
                forge_language::numbers::canonical(value)
            ),
        )))
    }

    /// Why a slot over a column claims nothing the observed rows can check, if so: its words name a column
    /// the knowledge tool could not read, or pick some of the rows, or a footnote leaves one of its column's
    /// rows out.
    fn unverifiable_over_rows(
        &self,
        name: &str,
        claim: &SlotClaim,
        focus: &Focus<'_>,
    ) -> Option<String> {
        if let Some(column) = self.names_unread(name) {
            return Some(format!(
                "its words name [{}], a column of numbers the knowledge tool could not read ({}), so no value of it can be checked",
                column.name, column.reason
            ));
        }
        if *claim != SlotClaim::ExcludedRow
            && let Some(picked) = slots::rows_picked(name, &self.columns, &self.categories)
        {
            return Some(format!(
                "its words claim something of only some of the rows ({picked}), which rows the runtime does not type, so no value over the rows is a check of it"
            ));
        }
        focus.candidates().into_iter().find_map(|c| {
            c.noted_out.first().map(|out| {
                format!(
                    "in [{}], {out}: whether that row counts, the runtime does not type, so no value over the rows is a check of it",
                    c.name
                )
            })
        })
    }

    /// Checks one filled slot.
    fn check_slot(
        &self,
        name: &str,
        fill: &str,
        after: &str,
        answer_text: &str,
        last_row: &mut Option<(ColumnData, String)>,
    ) -> Result<ClaimCheck, ClaimRejection> {
        let part = format!("<{name}>");
        let classified = slots::classify(name, &self.columns);
        // A slot that ranks rows ("<lowest-pass-rate centre>") names a row or its value, never the defined
        // ratio its words share ("the overall pass rate").
        let ranks_rows = matches!(
            classified,
            SlotClaim::ExtremeLabel(_)
                | SlotClaim::ExtremeValue(_)
                | SlotClaim::RankedLabel(..)
                | SlotClaim::RankedValue(..)
                | SlotClaim::EndList(..)
        );
        if !ranks_rows && let Some(checked) = self.check_defined_ratio(name, fill) {
            return checked;
        }
        let claim = match classified {
            // A slot that is a column's own name, where that name starts with an aggregate word ("Average
            // queue time (s)", one per row), and no row named before it to belong to: it claims that
            // aggregate of the column (the rows' average queue times, averaged), as `<average wait>` would.
            SlotClaim::OwnValue if last_row.is_none() => {
                match lexicon::aggregates_in(name).first() {
                    Some(aggregate) => SlotClaim::Aggregate(*aggregate),
                    None => SlotClaim::OwnValue,
                }
            }
            other => other,
        };
        let number = forge_language::numbers::scan(fill).into_iter().next();
        let focus = self.focus(name);
        let kind = match claim {
            SlotClaim::Aggregate(_) => ClaimKind::Aggregate,
            SlotClaim::ExtremeLabel(_) => ClaimKind::ExtremeLabel,
            SlotClaim::ExtremeValue(_) => ClaimKind::ExtremeValue,
            SlotClaim::RankedLabel(..) => ClaimKind::RankedLabel,
            SlotClaim::RankedValue(..) => ClaimKind::RankedValue,
            SlotClaim::EndList(..) => ClaimKind::EndList,
            SlotClaim::OwnValue => ClaimKind::OwnValue,
            SlotClaim::ExcludedRow => ClaimKind::ExcludedRow,
            SlotClaim::Row => ClaimKind::Row,
            SlotClaim::Unsupported(_) => ClaimKind::Unsupported,
            SlotClaim::Open => ClaimKind::Open,
        };
        let over_a_column = !matches!(
            claim,
            SlotClaim::OwnValue | SlotClaim::Row | SlotClaim::Unsupported(_) | SlotClaim::Open
        );
        if over_a_column && let Some(why) = self.unverifiable_over_rows(name, &claim, &focus) {
            return Ok(unverified(&part, kind, fill, &why));
        }
        let slot = Slot {
            part: &part,
            kind,
            fill,
            after,
            number,
        };
        match claim {
            SlotClaim::Aggregate(aggregate) => {
                self.check_aggregate_slot(&slot, &aggregate, &focus, answer_text)
            }
            SlotClaim::ExtremeLabel(end)
            | SlotClaim::ExtremeValue(end)
            | SlotClaim::RankedLabel(end, _)
            | SlotClaim::RankedValue(end, _) => {
                self.check_ranked_slot(&slot, &claim, end, &focus, answer_text, last_row)
            }
            SlotClaim::EndList(end, n) => self.check_end_list_slot(&slot, end, n, &focus),
            SlotClaim::OwnValue => check_own_value_slot(&slot, last_row),
            SlotClaim::ExcludedRow => check_excluded_row_slot(&slot, &focus),
            SlotClaim::Row => self.check_row_slot(&slot, last_row),
            SlotClaim::Unsupported(quantity) => Ok(unverified(
                &part,
                kind,
                fill,
                &format!(
                    "the runtime does not check a {quantity}, so this value cannot be verified"
                ),
            )),
            SlotClaim::Open => Ok(unverified(
                &part,
                kind,
                fill,
                "the slot's name does not say what it claims, so only its grounding was checked",
            )),
        }
    }

    /// The aggregate slot's value over the one column its words name: computed by a cited calculator call,
    /// written with the column's scale, and saying so when rows without a value were left out.
    fn one_column_aggregate(
        &self,
        slot: &Slot<'_>,
        mention: &forge_language::numbers::NumberMention,
        aggregate: &lexicon::Aggregate,
        (c, v, conversion): (&ColumnData, f64, Option<&str>),
        answer_text: &str,
    ) -> Result<ClaimCheck, ClaimRejection> {
        let (part, kind, fill) = (slot.part, slot.kind, slot.fill);
        if let Some(scale) = unstated_scale(c, slot) {
            return Ok(unverified(
                part,
                kind,
                fill,
                &format!(
                    "[{}] counts in a scale ({scale}), and {} written without it reads as that many; state the value with its scale",
                    c.name, mention.printed
                ),
            ));
        }
        // The value must also be what a cited calculator call computed: a cell that happens to
        // equal the mean is not the mean computed.
        if !self.computed.iter().any(|x| mention.stands_for(*x)) {
            return Err(reject(
                RejectionCode::WrongQuantity,
                format!(
                    "{part} states {}, which no cited calculator result computed; compute the {} of [{}] with the calculator and cite it",
                    mention.printed,
                    aggregate.function(),
                    c.name
                ),
            ));
        }
        if !c.missing.is_empty()
            && !lexicon::contains_any(answer_text, &lexicon::lexicon().excluded_rows)
        {
            return Ok(unverified(
                part,
                kind,
                fill,
                &format!(
                    "{} = {} leaves out {} (no value), and the answer does not say a row was excluded",
                    aggregate_over(aggregate, c),
                    forge_language::numbers::canonical(v),
                    c.missing.join(", ")
                ),
            ));
        }
        let mut detail = match conversion {
            Some(conversion) => format!("{} = {conversion}", aggregate_over(aggregate, c)),
            None => format!(
                "{} = {}",
                aggregate_over(aggregate, c),
                forge_language::numbers::canonical(v)
            ),
        };
        if !c.missing.is_empty() {
            detail.push_str(&format!(
                "; rows without a value left out: {}",
                c.missing.join(", ")
            ));
        }
        Ok(verified(part, kind, fill, detail))
    }

    /// An aggregate slot: the value must be that aggregate of the one column the slot's words name, computed by
    /// a cited calculator call (a column with rows left out needs the answer to say so).
    fn check_aggregate_slot(
        &self,
        slot: &Slot<'_>,
        aggregate: &lexicon::Aggregate,
        focus: &Focus<'_>,
        answer_text: &str,
    ) -> Result<ClaimCheck, ClaimRejection> {
        let (part, kind, fill) = (slot.part, slot.kind, slot.fill);
        let mention = slot.need_number(&format!("the {} of a column", aggregate.function()))?;
        let candidates = focus.candidates();
        if candidates.is_empty() {
            return Ok(unverified(
                part,
                kind,
                fill,
                "no observed column fits this slot, so its value cannot be checked",
            ));
        }
        if *aggregate == lexicon::Aggregate::Sum && candidates.iter().all(|c| c.is_share()) {
            return Ok(unverified(
                part,
                kind,
                fill,
                &format!(
                    "its words ask for a total of [{}], a column of shares (each row's share of its own base), which adds up to no quantity, so its value cannot be checked",
                    candidates[0].name
                ),
            ));
        }
        // Each candidate's aggregate in the unit the answer writes the number in ("<average wait> minutes" over
        // a column in seconds: the mean in minutes), or why the two units cannot be compared.
        let mut in_unit: Vec<(&ColumnData, f64, Option<String>)> = Vec::new();
        for c in &candidates {
            let Some(v) = aggregate.apply(&c.values) else {
                continue;
            };
            match slot.in_stated_unit(c, aggregate, v) {
                Ok((v, conversion)) => in_unit.push((*c, v, conversion)),
                Err(why) if candidates.len() == 1 => {
                    return Ok(unverified(part, kind, fill, &why));
                }
                Err(_) => {}
            }
        }
        let converted = in_unit
            .iter()
            .any(|(_, _, conversion)| conversion.is_some());
        let matching: Vec<&(&ColumnData, f64, Option<String>)> = in_unit
            .iter()
            .filter(|(_, v, _)| mention.stands_for(*v))
            .collect();
        match (candidates.len(), matching.as_slice()) {
            (1, [(c, v, conversion)]) => self.one_column_aggregate(
                slot,
                &mention,
                aggregate,
                (c, *v, conversion.as_deref()),
                answer_text,
            ),
            (_, []) => {
                let columns: Vec<String> =
                    candidates.iter().map(|c| format!("[{}]", c.name)).collect();
                // The unit the number is written in, when it is not the column's: the repair names both units,
                // never the converted value.
                let unit_note = match (converted, slot.stated_unit()) {
                    (true, Some((written, _))) => format!(
                        " in {written}, the unit written after it ({} is in {})",
                        columns.join(" or "),
                        candidates
                            .iter()
                            .filter_map(|c| c.unit.clone())
                            .collect::<Vec<_>>()
                            .join(" / ")
                    ),
                    _ => String::new(),
                };
                Err(reject(
                    RejectionCode::WrongQuantity,
                    format!(
                        "{part} states {}, which is not the {} of {}{unit_note} (the column the slot's words name); compute it with the calculator over that column{} and state its result",
                        mention.printed,
                        aggregate.function(),
                        columns.join(" or "),
                        if unit_note.is_empty() {
                            ""
                        } else {
                            ", converted to that unit,"
                        }
                    ),
                ))
            }
            (_, [(c, _, _), ..]) => Ok(unverified(
                part,
                kind,
                fill,
                &format!(
                    "the task's words fit several columns ({}); the answer's value is {}, but which column was meant is not certain",
                    candidates
                        .iter()
                        .map(|c| format!("[{}]", c.name))
                        .collect::<Vec<_>>()
                        .join(", "),
                    aggregate_over(aggregate, c)
                ),
            )),
        }
    }

    /// A slot naming the row (or its value) at an end or a rank from it: checked against the one column the
    /// slot's words name; the row is kept for a later `<its value>` slot.
    fn check_ranked_slot(
        &self,
        slot: &Slot<'_>,
        claim: &SlotClaim,
        end: End,
        focus: &Focus<'_>,
        answer_text: &str,
        last_row: &mut Option<(ColumnData, String)>,
    ) -> Result<ClaimCheck, ClaimRejection> {
        let (part, kind, fill) = (slot.part, slot.kind, slot.fill);
        let Some(end) = self.resolve_end(end) else {
            return Ok(unverified(
                part,
                kind,
                fill,
                "the slot names an end (\"worst\", \"best\") but no rule says which end is worse",
            ));
        };
        let rank = match *claim {
            SlotClaim::RankedLabel(_, r) | SlotClaim::RankedValue(_, r) => r,
            _ => 1,
        };
        let c = match one_column(slot, focus, "the row") {
            Ok(c) => c,
            Err(unverified) => return Ok(unverified),
        };
        let at = Rank { end, rank };
        let Some((labels, value)) = c.ranked(end, rank) else {
            return Ok(unverified(
                part,
                kind,
                fill,
                &format!(
                    "[{}] has no row of its own at the {} (too few rows, or a tie from a better rank)",
                    c.name,
                    at.words()
                ),
            ));
        };
        *last_row = Some(((*c).clone(), labels[0].to_owned()));
        if matches!(
            claim,
            SlotClaim::ExtremeValue(_) | SlotClaim::RankedValue(..)
        ) {
            let mention = slot.need_number(&format!("the value of the {} row", at.words()))?;
            if !mention.stands_for(value) {
                return Err(reject(
                    RejectionCode::WrongQuantity,
                    format!(
                        "{part} states {}, which is not the value of the {} row of [{}]; compare the rows of that column again",
                        mention.printed,
                        at.words(),
                        c.name,
                    ),
                ));
            }
            return Ok(verified(
                part,
                kind,
                fill,
                format!(
                    "the {} row of [{}] is {} = {}",
                    at.words(),
                    c.name,
                    labels.join(", "),
                    forge_language::numbers::canonical(value)
                ),
            ));
        }
        check_ranked_label(slot, answer_text, c, at, &labels, value)
    }

    /// A slot naming the first `n` rows from an end: exactly those rows of the one column the slot names.
    fn check_end_list_slot(
        &self,
        slot: &Slot<'_>,
        end: End,
        n: u32,
        focus: &Focus<'_>,
    ) -> Result<ClaimCheck, ClaimRejection> {
        let (part, kind, fill) = (slot.part, slot.kind, slot.fill);
        let c = match one_column(slot, focus, "the rows") {
            Ok(c) => c,
            Err(unverified) => return Ok(unverified),
        };
        let Some(rows) = self.resolve_end(end).and_then(|e| c.first_from(e, n)) else {
            return Ok(unverified(
                part,
                kind,
                fill,
                &format!(
                    "[{}] has no {n} rows of its own at that end (a tie at the last place, too few rows, or no end a rule decides)",
                    c.name
                ),
            ));
        };
        let named: Vec<&str> = c
            .labels
            .iter()
            .map(String::as_str)
            .filter(|l| !lexicon::find(fill, l).is_empty())
            .collect();
        let mut want = rows.clone();
        want.sort_unstable();
        let mut got = named.clone();
        got.sort_unstable();
        if want == got {
            return Ok(verified(
                part,
                kind,
                fill,
                format!(
                    "the {n} rows at that end of [{}]: {}",
                    c.name,
                    rows.join(", ")
                ),
            ));
        }
        Err(reject(
            RejectionCode::WrongRow,
            format!(
                "{part} names {}, which are not the {n} rows at that end of [{}]; compare the rows of that column again",
                if named.is_empty() {
                    format!("\"{fill}\"")
                } else {
                    named.join(", ")
                },
                c.name,
            ),
        ))
    }

    /// A slot naming a row by its label: it must be an observed row's; which row its words mean is not read.
    fn check_row_slot(
        &self,
        slot: &Slot<'_>,
        last_row: &mut Option<(ColumnData, String)>,
    ) -> Result<ClaimCheck, ClaimRejection> {
        let (part, kind, fill) = (slot.part, slot.kind, slot.fill);
        let row = self.columns.iter().find_map(|c| {
            c.labels
                .iter()
                .chain(&c.missing)
                .find(|l| l.eq_ignore_ascii_case(fill.trim()))
                .map(|l| (c, l.clone()))
        });
        let Some((c, label)) = row else {
            return Err(reject(
                RejectionCode::SlotTypeMismatch,
                format!(
                    "{part} names the rows, but \"{fill}\" is not an observed row's label; write one of the row labels"
                ),
            ));
        };
        *last_row = Some((c.clone(), label));
        Ok(unverified(
            part,
            kind,
            fill,
            "the slot names a row, but which row its words mean is not read (no end word the runtime knows)",
        ))
    }
}

/// The longest start of `text`, before any clause punctuation, that reads as a unit the vocabulary knows
/// (" minutes; longest: …" → `minutes`, "分钟，响应…" → `分钟`), as written and as read.
fn leading_unit(text: &str) -> Option<(String, forge_language::units::Unit)> {
    let text = text.trim_start();
    let end = text
        .find([',', ';', ':', '.', '，', '；', '：', '。', '(', '（'])
        .unwrap_or(text.len());
    let head = &text[..end];
    let mut ends: Vec<usize> = head
        .char_indices()
        .map(|(i, _)| i)
        .skip(1)
        .chain([head.len()])
        .collect();
    ends.reverse();
    ends.into_iter().find_map(|at| {
        let candidate = head[..at].trim_end();
        // A unit ends a word: `min` is no unit inside "minutes and …" once "minutes" is not read.
        let at_boundary = head[at..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric() || lexicon::is_cjk(c));
        (at_boundary && !candidate.is_empty())
            .then(|| forge_language::units::read(candidate).map(|u| (candidate.to_owned(), u)))
            .flatten()
    })
}

/// The scale a column counts in (`k` for `12.4k` cells, `万` for `（万人次）`) when the slot's number is written
/// without it: `12.1` where the column means 12.1 thousand, which a reader takes as 12.1. `None` when the
/// column has no scale or the slot writes it (`12.1k`, `12.1 thousand`).
fn unstated_scale(column: &ColumnData, slot: &Slot<'_>) -> Option<String> {
    let unit = column.unit.as_deref()?;
    let scale = forge_language::units::read(unit)
        .filter(|u| u.dimension == forge_language::units::SCALE)?;
    let end = slot.number.as_ref()?.end;
    let after = slot.fill[end..].trim_start();
    let written = after
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '.' | '，' | '；' | '。'))
        .next()
        .and_then(forge_language::units::read);
    match written {
        Some(w) if w.dimension == scale.dimension && w.scale == scale.scale => None,
        _ => Some(unit.to_owned()),
    }
}

/// One template slot being checked: its name as written (`<name>`), the kind of claim, the answer's text
/// there and the first number in it.
struct Slot<'a> {
    part: &'a str,
    kind: ClaimKind,
    fill: &'a str,
    /// The template's fixed text right after the slot.
    after: &'a str,
    number: Option<forge_language::numbers::NumberMention>,
}

impl Slot<'_> {
    /// The unit the answer states the slot's number in, as written and as read: the words right after the
    /// number in the fill, else the template's fixed text right after the slot. `None` when neither starts
    /// with a unit the vocabulary knows.
    fn stated_unit(&self) -> Option<(String, forge_language::units::Unit)> {
        let end = self.number.as_ref()?.end;
        let in_fill = self.fill[end..].trim_start();
        leading_unit(if in_fill.is_empty() {
            self.after
        } else {
            in_fill
        })
    }

    /// Column `c`'s aggregate `v` in the unit this slot states its number in, with the conversion made
    /// (`293 s = 4.8833 min`): `v` itself when the slot or the column states no unit, or the same one, or a
    /// scale (read apart, [`unstated_scale`]); `Err` naming both units when they measure different things,
    /// or a total of an offset unit (a sum of temperatures) would need converting.
    fn in_stated_unit(
        &self,
        c: &ColumnData,
        aggregate: &lexicon::Aggregate,
        v: f64,
    ) -> Result<(f64, Option<String>), String> {
        use forge_language::units;
        let (Some((written, stated)), Some(column_unit)) = (self.stated_unit(), c.unit.as_deref())
        else {
            return Ok((v, None));
        };
        let Some(column) = units::read(column_unit) else {
            return Ok((v, None));
        };
        // "2.5 hours of unplanned downtime a week" over `h/week`, "104千瓦时" over `千瓦时/百公里`: a rate's
        // quantity written before the words that say what it is per, not another unit.
        let rate_of_stated = column
            .dimension
            .strip_prefix(stated.dimension.as_str())
            .is_some_and(|rest| rest.starts_with('/'));
        if stated.symbol == column.symbol
            || stated.dimension == units::SCALE
            || column.dimension == units::SCALE
            || rate_of_stated
        {
            return Ok((v, None));
        }
        if stated.dimension != column.dimension {
            return Err(format!(
                "its number is written in \"{written}\" ({}), and [{}] is in {column_unit} ({}): they measure different things",
                stated.dimension, c.name, column.dimension
            ));
        }
        if *aggregate == lexicon::Aggregate::Sum && (stated.offset != 0.0 || column.offset != 0.0) {
            return Err(format!(
                "its number is written in \"{written}\" and [{}] is in {column_unit}: a total of a unit with an offset (a temperature) does not convert",
                c.name
            ));
        }
        let converted =
            units::convert(v, column_unit, &stated.symbol).map_err(|e| e.to_string())?;
        Ok((
            converted,
            Some(format!(
                "{} {column_unit} = {} {}",
                forge_language::numbers::canonical(v),
                forge_language::numbers::canonical(converted),
                stated.symbol
            )),
        ))
    }

    /// The slot's number, or `slot_type_mismatch` when the answer put none there.
    fn need_number(
        &self,
        what: &str,
    ) -> Result<forge_language::numbers::NumberMention, ClaimRejection> {
        let (part, fill) = (self.part, self.fill);
        self.number.clone().ok_or_else(|| {
            reject(RejectionCode::SlotTypeMismatch, format!("{part} claims {what}, a number, but the answer puts \"{fill}\" there; write the number"))
        })
    }
}

/// An `<its value>` slot: the value of the row an earlier slot named.
fn check_own_value_slot(
    slot: &Slot<'_>,
    last_row: &Option<(ColumnData, String)>,
) -> Result<ClaimCheck, ClaimRejection> {
    let (part, kind, fill) = (slot.part, slot.kind, slot.fill);
    let Some((c, label)) = last_row.as_ref() else {
        return Ok(unverified(
            part,
            kind,
            fill,
            "no earlier slot named the row this value belongs to",
        ));
    };
    let Some(value) = c.value_of(label) else {
        return Ok(unverified(
            part,
            kind,
            fill,
            &format!("{label} has no value in [{}]", c.name),
        ));
    };
    let mention = slot.need_number("a row's value")?;
    if !mention.stands_for(value) {
        return Err(reject(
            RejectionCode::WrongQuantity,
            format!(
                "{part} states {}, which is not {label}'s value in [{}]; state that row's own value",
                mention.printed, c.name,
            ),
        ));
    }
    Ok(verified(
        part,
        kind,
        fill,
        format!(
            "{label}'s [{}] = {}",
            c.name,
            forge_language::numbers::canonical(value)
        ),
    ))
}

/// The one observed column a slot's focus is on, or the slot's claim left unverified because the task's words
/// fit no single column (`what`: what could then not be checked).
fn one_column<'f>(
    slot: &Slot<'_>,
    focus: &Focus<'f>,
    what: &str,
) -> Result<&'f ColumnData, ClaimCheck> {
    match focus.candidates().as_slice() {
        [c] => Ok(c),
        _ => Err(unverified(
            slot.part,
            slot.kind,
            slot.fill,
            &format!("the task's words fit no single observed column, so {what} cannot be checked"),
        )),
    }
}

/// A slot naming a row left out of the column (a missing cell).
fn check_excluded_row_slot(
    slot: &Slot<'_>,
    focus: &Focus<'_>,
) -> Result<ClaimCheck, ClaimRejection> {
    let (part, kind, fill) = (slot.part, slot.kind, slot.fill);
    let c = match one_column(slot, focus, "the left-out row") {
        Ok(c) => c,
        Err(unverified) => return Ok(unverified),
    };
    if c.missing
        .iter()
        .any(|m| m.eq_ignore_ascii_case(fill.trim()))
    {
        return Ok(verified(
            part,
            kind,
            fill,
            format!(
                "{} has no value in [{}] and was left out",
                fill.trim(),
                c.name
            ),
        ));
    }
    if c.missing.is_empty() {
        return Ok(unverified(
            part,
            kind,
            fill,
            &format!("[{}] has a value in every row; no row was left out", c.name),
        ));
    }
    Err(reject(
        RejectionCode::WrongRow,
        format!(
            "{part} names \"{fill}\", which is not a row without a value in [{}]; look at that column's empty cells again",
            c.name,
        ),
    ))
}

fn end_word(end: End) -> &'static str {
    match end {
        End::Lowest => "lowest",
        End::Highest => "highest",
        End::Either => "extreme",
    }
}

/// A position counted from one end of a column.
#[derive(Debug, Clone, Copy)]
struct Rank {
    end: End,
    rank: u32,
}

impl Rank {
    /// "lowest", "2nd highest".
    fn words(self) -> String {
        match self.rank {
            1 => end_word(self.end).to_owned(),
            n => format!("rank {n} from the {}", end_word(self.end)),
        }
    }
}

/// A label slot against the rows at its rank: one row must be named as it is; a tie must be named
/// whole, or in part only where the answer says it is a tie (`tie_not_stated` otherwise).
fn check_ranked_label(
    slot: &Slot<'_>,
    answer_text: &str,
    c: &ColumnData,
    at: Rank,
    labels: &[&str],
    value: f64,
) -> Result<ClaimCheck, ClaimRejection> {
    let (part, kind, fill) = (slot.part, slot.kind, slot.fill);
    let is_number = slot.number.is_some();
    let shown = forge_language::numbers::canonical(value);
    if let [label] = labels
        && fill.trim().eq_ignore_ascii_case(label)
    {
        return Ok(verified(
            part,
            kind,
            fill,
            format!("the {} row of [{}] ({label} = {shown})", at.words(), c.name),
        ));
    }
    // The rows the fill names, by whole label.
    let named: Vec<&str> = c
        .labels
        .iter()
        .map(String::as_str)
        .filter(|l| !lexicon::find(fill, l).is_empty())
        .collect();
    let all_tied = labels.len() > 1 && labels.iter().all(|l| named.contains(l));
    let only_tied = !named.is_empty() && named.iter().all(|n| labels.contains(n));
    if only_tied && (all_tied || (labels.len() > 1 && lexicon::names_a_tie(answer_text))) {
        return Ok(verified(
            part,
            kind,
            fill,
            format!(
                "{} tie at the {} of [{}] ({shown}); the answer names {}",
                labels.join(", "),
                at.words(),
                c.name,
                named.join(", ")
            ),
        ));
    }
    if only_tied && labels.len() > 1 {
        return Err(reject(
            RejectionCode::TieNotStated,
            format!(
                "{part} names {}, but the {} of [{}] is a tie; name every tied row, or say it is a tie",
                named.join(", "),
                at.words(),
                c.name
            ),
        ));
    }
    if named.is_empty() && is_number {
        return Err(reject(
            RejectionCode::SlotTypeMismatch,
            format!(
                "{part} claims a row's label, but the answer puts the number \"{fill}\" there; write the row's name"
            ),
        ));
    }
    Err(reject(
        RejectionCode::WrongRow,
        wrong_row_note(part, fill, &named, c, at),
    ))
}

/// The repair note for a row that is not at the slot's rank. Where the answer names one row of the column,
/// the note states that row's own value and how many rows lie beyond it toward the slot's end — facts about
/// the model's own claim that it can check against the table — and never which row is right.
fn wrong_row_note(part: &str, fill: &str, named: &[&str], c: &ColumnData, at: Rank) -> String {
    let beyond = |v: f64| match at.end {
        End::Lowest => c.values.iter().filter(|x| **x < v).count(),
        End::Highest => c.values.iter().filter(|x| **x > v).count(),
        End::Either => 0,
    };
    if let [label] = named
        && let Some(value) = c.value_of(label)
        && beyond(value) > 0
    {
        let k = beyond(value);
        let direction = match at.end {
            End::Lowest => "lower",
            _ => "higher",
        };
        return format!(
            "{part} names {label}, whose [{}] is {}; {k} row{} of [{}] {} a {direction} value, so {label} is not its {} row; compare the rows of that column again",
            c.name,
            forge_language::numbers::canonical(value),
            if k == 1 { "" } else { "s" },
            c.name,
            if k == 1 { "has" } else { "have" },
            at.words(),
        );
    }
    format!(
        "{part} names \"{fill}\", which is not the {} row of [{}]; compare the rows of that column again",
        at.words(),
        c.name,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The claim object of a run's verification as the API schema describes it.
    fn schema_claim() -> Value {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../schemas/openapi.json");
        let text = std::fs::read_to_string(path).expect("schemas/openapi.json");
        let schema: Value = serde_json::from_str(&text).expect("openapi.json is JSON");
        fn find(v: &Value) -> Option<&Value> {
            let props = &v["properties"];
            if props["part"].is_object()
                && props["kind"]["enum"].is_array()
                && props["stated"].is_object()
            {
                return Some(v);
            }
            match v {
                Value::Object(m) => m.values().find_map(find),
                Value::Array(a) => a.iter().find_map(find),
                _ => None,
            }
        }
        find(&schema)
            .expect("a claim object in openapi.json")
            .clone()
    }

    #[test]
    fn the_api_schema_lists_exactly_the_claim_kinds_and_statuses_the_gate_writes() {
        let claim = schema_claim();
        let listed = |field: &str| claim["properties"][field]["enum"].clone();
        let kinds: Vec<Value> = ClaimKind::ALL.iter().map(|k| json!(k)).collect();
        assert_eq!(listed("kind"), Value::Array(kinds));
        let statuses = [
            ClaimStatus::Verified,
            ClaimStatus::Unverified,
            ClaimStatus::Disputed,
        ];
        assert_eq!(listed("status"), json!(statuses));
        // Every variant is in ALL: a kind added to the enum but not to ALL fails to compile here.
        for kind in ClaimKind::ALL {
            match kind {
                ClaimKind::Aggregate
                | ClaimKind::ExtremeLabel
                | ClaimKind::ExtremeValue
                | ClaimKind::RankedLabel
                | ClaimKind::RankedValue
                | ClaimKind::EndList
                | ClaimKind::OwnValue
                | ClaimKind::ExcludedRow
                | ClaimKind::Row
                | ClaimKind::Unsupported
                | ClaimKind::Open
                | ClaimKind::DefinedRatio
                | ClaimKind::Verdict
                | ClaimKind::Template
                | ClaimKind::Dispute => {}
            }
        }
    }

    #[test]
    fn a_wrong_row_note_states_the_named_rows_value_and_how_many_lie_beyond_it_never_the_right_row()
    {
        let c = ColumnData {
            name: "Wait".into(),
            rows: "Clinic".into(),
            labels: vec!["North".into(), "South".into(), "East".into(), "West".into()],
            values: vec![31.5, 24.0, 28.0, 19.5],
            missing: Vec::new(),
            unit: None,
            noted_out: Vec::new(),
        };
        let lowest = Rank {
            end: End::Lowest,
            rank: 1,
        };
        let note = wrong_row_note("<lowest-wait clinic>", "East", &["East"], &c, lowest);
        assert_eq!(
            note,
            "<lowest-wait clinic> names East, whose [Wait] is 28; 2 rows of [Wait] have a lower value, so East is not its lowest row; compare the rows of that column again"
        );
        assert!(!note.contains("West"), "the right row is never named");
        let highest = Rank {
            end: End::Highest,
            rank: 1,
        };
        let note = wrong_row_note("<longest-wait clinic>", "South", &["South"], &c, highest);
        assert!(
            note.contains("2 rows of [Wait] have a higher value"),
            "{note}"
        );
        // Two rows named, or none: no value to state.
        let note = wrong_row_note(
            "<lowest-wait clinic>",
            "East or North",
            &["East", "North"],
            &c,
            lowest,
        );
        assert!(
            note.contains("which is not the lowest row of [Wait]"),
            "{note}"
        );
    }

    #[test]
    fn a_rejection_code_reads_as_its_trace_string_and_only_the_five_disagreements_are_disputes() {
        let all = [
            RejectionCode::WrongQuantity,
            RejectionCode::WrongRow,
            RejectionCode::TieNotStated,
            RejectionCode::MisattributedNumber,
            RejectionCode::VerdictContradictsEvidence,
            RejectionCode::UngroundedNumber,
            RejectionCode::VerdictMissing,
            RejectionCode::VerdictsDisagree,
            RejectionCode::SlotTypeMismatch,
        ];
        for code in all {
            assert_eq!(json!(code), json!(code.as_str()), "serde and as_str agree");
        }
        let disputes: Vec<&str> = all
            .iter()
            .filter(|c| c.is_dispute())
            .map(|c| c.as_str())
            .collect();
        assert_eq!(
            disputes,
            [
                "wrong_quantity",
                "wrong_row",
                "tie_not_stated",
                "misattributed_number",
                "verdict_contradicts_evidence"
            ]
        );
    }

    #[test]
    fn options_say_met_or_not_by_phrase_or_by_negation() {
        let phrases = VerdictPhrases::default();
        let o = |a: &str, b: &str| vec![a.to_string(), b.to_string()];
        assert_eq!(
            option_polarity(&o("met", "not met"), 1, &phrases),
            Some(false)
        );
        assert_eq!(
            option_polarity(&o("may", "may not"), 0, &phrases),
            Some(true)
        );
        assert_eq!(
            option_polarity(&o("may", "may not"), 1, &phrases),
            Some(false)
        );
        assert_eq!(
            option_polarity(&o("达标", "未达标"), 1, &phrases),
            Some(false)
        );
        assert_eq!(option_polarity(&o("red", "green"), 0, &phrases), None);
    }
}
