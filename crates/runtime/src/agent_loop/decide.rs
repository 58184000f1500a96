//! A decision for this step: the policy asked (with repair notes on an invalid proposal), the proposal parsed
//! exactly, a final answer through its gate (evidence, claims, verdicts), guard stops.

use std::time::Instant;

use serde_json::{Value, json};

use crate::StopReason;
use crate::claims;
use crate::decision::{Decision, FinalDecision, decision_schema, parse_decision};
use crate::guards::GuardKind;
use crate::policy::{Gap, Policy, RepairNote, TokenShare};

use super::*;

impl Run<'_, '_> {
    /// One step's decision: the first call plus up to `max_retries` repairs in the same step.
    pub(super) fn obtain_decision(&mut self, policy: &mut dyn Policy) -> Result<Decision, End> {
        let tools = self.registry.tool_names();
        let mut repair: Option<RepairNote> = None;
        for attempt in 0..=self.config.budgets.max_retries {
            if attempt > 0 {
                if self.policy_control.is_cancelled() {
                    return Err(End::stop(StopReason::Cancelled));
                }
                if let Some(reason) = self.meter.exhausted_before_model_call() {
                    return Err(End::stop(reason));
                }
            }
            let max_new_tokens = self.meter.max_new_tokens();
            let request = self.request(attempt, repair.clone(), max_new_tokens);
            let (started_phase, completed_phase) = if attempt == 0 {
                ("model.started", "model.completed")
            } else {
                ("model.repair.started", "model.repair.completed")
            };
            self.emit(
                started_phase,
                attempt,
                json!({
                    "policy": policy.name(),
                    "max_new_tokens": max_new_tokens,
                    "gap": request.gap,
                    "repair_code": repair.as_ref().map(|r| r.error_code.clone()),
                }),
            );
            let call_started = Instant::now();
            let outcome = policy.decide(&request, &self.policy_control);
            let latency = call_started.elapsed();
            self.meter.usage.model_calls += 1;
            self.meter.usage.model_latency += latency;
            let output = match outcome {
                Ok(output) => output,
                Err(error) => {
                    let message = self.tracer.scrub_text(&error.to_string());
                    let failed_phase = if attempt == 0 {
                        "model.failed"
                    } else {
                        "model.repair.failed"
                    };
                    self.emit(
                        failed_phase,
                        attempt,
                        json!({ "code": policy_error_code(&error), "message": message }),
                    );
                    let mut end = End::from_policy_error(&error);
                    if let Some(run_error) = end.error.as_mut() {
                        run_error.message = message;
                    }
                    return Err(end);
                }
            };
            // The raw text is hashed and parsed here, then dropped: it never enters the trace. The runtime's
            // prefix (its own text, not the policy's) does, to say which fields of the decision it fixed.
            let parsed = parse_decision(&output.raw_text, &tools, self.task.answer_template());
            self.record_call(completed_phase, attempt, &output, latency);
            let runtime_prefix = output.runtime_prefix;
            if let Some(reason) = self.meter.exceeded_after_model_call() {
                return Err(End::stop(reason));
            }
            match parsed {
                Ok(decision) => {
                    let phase = if attempt == 0 {
                        "decision.valid"
                    } else {
                        "decision.repaired"
                    };
                    if attempt > 0 {
                        self.counters.recovered += 1;
                    }
                    let summary = self.summarize(&decision);
                    self.emit(
                        phase,
                        attempt,
                        json!({
                            "decision": decision.to_json(),
                            "summary": summary,
                            "written": written_by(&decision.to_json(), &runtime_prefix),
                        }),
                    );
                    return Ok(decision);
                }
                Err(error) => {
                    self.counters.invalid_decisions += 1;
                    if attempt == 0 {
                        self.counters.recoverable_failures += 1;
                    }
                    self.emit(
                        "decision.invalid",
                        attempt,
                        json!({
                            "code": error.code(),
                            "error": error.to_string(),
                            // Structured, as the specification's trace asks: the contract's missing field
                            // names and the number of unexpected ones.
                            "missing_fields": error.missing_fields(),
                            "unexpected_field_count": error.unexpected_field_count(),
                        }),
                    );
                    repair = Some(RepairNote {
                        error_code: error.code().to_owned(),
                        error: error.to_string(),
                        schema: decision_schema().clone(),
                    });
                }
            }
        }
        Err(End::error(
            StopReason::InvalidDecision,
            repair
                .as_ref()
                .map_or("invalid_decision", |r| r.error_code.as_str()),
            repair
                .as_ref()
                .map_or_else(String::new, |r| r.error.clone()),
        ))
    }

    /// A model call that returned: its tokens and share into the run's usage, its `*.completed` event.
    fn record_call(
        &mut self,
        phase: &str,
        attempt: u32,
        output: &crate::policy::PolicyOutput,
        latency: std::time::Duration,
    ) {
        let usage = &mut self.meter.usage;
        usage.input_tokens += u64::from(output.input_tokens);
        usage.output_tokens += u64::from(output.output_tokens);
        usage.prefill_tokens_saved += u64::from(output.prefill_tokens_saved);
        count_share(usage, &output.share);
        self.emit(
            phase,
            attempt,
            json!({
                "output_blake3": blake3::hash(output.raw_text.as_bytes()).to_hex().to_string(),
                "output_chars": output.raw_text.chars().count(),
                "input_tokens": output.input_tokens,
                "output_tokens": output.output_tokens,
                "prefill_tokens_saved": output.prefill_tokens_saved,
                "temperature": output.temperature,
                "latency_ms": latency.as_millis() as u64,
                "share": output.share,
                "forced_share": output.share.forced_share(),
                "runtime_prefix_chars": output.runtime_prefix.chars().count(),
            }),
        );
    }

    /// A short public description of the decision, written by the runtime (not the model).
    pub(super) fn summarize(&self, decision: &Decision) -> String {
        match decision {
            Decision::Action(action) => match self.task.gap(self.current_records()) {
                Gap::Tool { tool, hint, .. } if tool == action.tool => {
                    format!("run {} to {hint}", action.tool)
                }
                _ => format!("run {}", action.tool),
            },
            Decision::Final(final_decision) => {
                format!(
                    "answer citing {} observation(s)",
                    final_decision.evidence_ids.len()
                )
            }
        }
    }

    /// The evidence gate: every required tool has a successful observation and the final cites
    /// the latest one of each; every cited id exists, succeeded and is current.
    pub(super) fn final_gate(
        &mut self,
        final_decision: FinalDecision,
    ) -> Result<FinalDecision, Option<End>> {
        let cited = &final_decision.evidence_ids;
        let reopened_before = self.reopened.is_some();
        let rejection = self.evidence_rejection(cited);
        // The evidence is complete and current: now what the answer says must agree with it.
        let checked = match rejection {
            Some(rejection) => Err(rejection),
            None => match claims::check(self.task, &self.ledger, &final_decision) {
                Ok(claims) => Ok(claims),
                Err(dispute) if dispute.is_dispute() => self.dispute(&final_decision, dispute),
                Err(fault) => Err((fault.code.as_str(), fault.message)),
            },
        };
        match checked {
            Ok(claims) => {
                self.emit(
                    "final.validated",
                    0,
                    json!({ "accepted": true, "evidence_ids": cited, "claims": claims.to_json() }),
                );
                // An abstention reads as one: each claim the gate could not verify is marked in the text.
                let answer = claims::marked_answer(self.task, &final_decision.answer, &claims);
                self.verification = Some(claims);
                self.counters.recovered += std::mem::take(&mut self.pending_recovery);
                Ok(FinalDecision {
                    answer,
                    ..final_decision
                })
            }
            Err((code, message)) => {
                let mut data = json!({ "accepted": false, "code": code, "message": message, "evidence_ids": cited });
                if !reopened_before && let Some(reopened) = &self.reopened {
                    // The next step asks for that calculation again (see `reopen`).
                    data[reopened.event_key()] = json!(reopened.id);
                }
                self.emit("final.validated", 0, data);
                self.counters.rejected_finals += 1;
                self.counters.recoverable_failures += 1;
                self.pending_recovery += 1;
                self.feedback
                    .push(format!("final answer rejected ({code}): {message}"));
                if self
                    .guards
                    .record_rejected_final(&final_decision.answer, cited)
                {
                    return Err(Some(self.guard_stop(
                        GuardKind::RepeatedFinal,
                        json!({ "evidence_ids": cited }),
                    )));
                }
                Err(None)
            }
        }
    }

    /// Why the cited evidence cannot back a final answer, checked in order: ids that do not exist, failed
    /// observations, superseded ones, required tools not run yet, required evidence not cited; `None` when
    /// the evidence is complete and current.
    fn evidence_rejection(&self, cited: &[String]) -> Option<(&'static str, String)> {
        let found = self.task.evidence(self.ledger.records());
        let items = self.task.required_evidence();
        let unknown: Vec<&String> = cited
            .iter()
            .filter(|id| self.ledger.get(id).is_none())
            .collect();
        let failed: Vec<&String> = cited
            .iter()
            .filter(|id| self.ledger.get(id).is_some_and(|r| !r.ok))
            .collect();
        // Superseded: an item would accept it, but a later observation is that item's evidence now.
        let stale: Vec<&String> = cited
            .iter()
            .filter(|id| {
                self.ledger.get(id).is_some_and(|r| {
                    let accepting: Vec<usize> =
                        (0..items.len()).filter(|&i| items[i].accepts(r)).collect();
                    !accepting.is_empty()
                        && accepting
                            .iter()
                            .all(|&i| found[i].as_deref() != Some(id.as_str()))
                })
            })
            .collect();
        let missing: Vec<String> = items
            .iter()
            .zip(&found)
            .filter(|(_, id)| id.is_none())
            .map(|(item, _)| item.describe())
            .collect();
        let uncited: Vec<&String> = found
            .iter()
            .flatten()
            .filter(|id| !cited.contains(id))
            .collect();
        let join = |ids: &[&String]| {
            ids.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !unknown.is_empty() {
            Some((
                "final_unknown_evidence",
                format!(
                    "evidence_ids name observations that do not exist: {}",
                    join(&unknown)
                ),
            ))
        } else if !failed.is_empty() {
            Some((
                "final_failed_evidence",
                format!("evidence_ids cite failed observations: {}", join(&failed)),
            ))
        } else if !stale.is_empty() {
            Some((
                "final_stale_evidence",
                format!(
                    "evidence_ids cite superseded observations: {}; cite the latest successful one of each tool",
                    join(&stale)
                ),
            ))
        } else if !missing.is_empty() {
            Some((
                "final_missing_evidence",
                format!(
                    "no successful observation yet from: {}; run it before answering",
                    missing.join(", ")
                ),
            ))
        } else if !uncited.is_empty() {
            Some((
                "final_uncited_evidence",
                format!("evidence_ids must also cite: {}", join(&uncited)),
            ))
        } else {
            None
        }
    }

    /// A final the claims gate disagrees with: rejected with the failed check named while repairs remain;
    /// once `max_retries` repairs have been disputed too (or the model repeats a disputed answer), accepted
    /// as an abstention that names every disagreement on its part — the runtime neither certifies the model's answer nor
    /// writes its own.
    fn dispute(
        &mut self,
        final_decision: &FinalDecision,
        dispute: claims::ClaimRejection,
    ) -> Result<claims::Verification, (&'static str, String)> {
        self.disputes += 1;
        let repeated = self
            .guards
            .repeats_rejected_final(&final_decision.answer, &final_decision.evidence_ids);
        if self.disputes > self.config.budgets.max_retries || repeated {
            return Ok(claims::disputed(dispute));
        }
        match dispute.code {
            claims::RejectionCode::VerdictContradictsEvidence => {
                self.reopen(ResultKind::Boolean, &dispute.rule_check_note)
            }
            claims::RejectionCode::WrongQuantity => self.reopen(ResultKind::Number, ""),
            _ => {}
        }
        Err((dispute.code.as_str(), dispute.message))
    }

    /// After the first dispute of a verdict (or of a quantity), the rule check the verdict followed (or the
    /// calculation) is asked for again: in guided mode the only step left was the final, so a model whose
    /// comparison or aggregate was wrong could not compute again, though the repair note asked it to. Once per
    /// run, so a run that stays disputed still ends as an abstention within its step budget. `note` (where the
    /// model's check parted from the rule, limit by limit) goes with the step that asks for the check again,
    /// beside its hint: the nearest words to what the model writes next.
    fn reopen(&mut self, kind: ResultKind, note: &str) {
        if self.reopened.is_some() {
            return;
        }
        let Some(index) = self
            .task
            .required_evidence()
            .iter()
            .position(|e| e.result == Some(kind))
        else {
            return;
        };
        let found = self.task.evidence(self.ledger.records());
        let Some(id) = found.get(index).cloned().flatten() else {
            return;
        };
        self.reopened = Some(Reopened {
            id,
            kind,
            note: note.to_owned(),
        });
    }

    pub(super) fn guard_stop(&mut self, kind: GuardKind, detail: Value) -> End {
        self.counters.loop_guard_fired = true;
        let mut data = json!({ "code": kind.code() });
        if let (Some(map), Value::Object(extra)) = (data.as_object_mut(), detail) {
            map.extend(extra);
        }
        self.emit(kind.phase(), 0, data);
        End::stop(StopReason::LoopDetected)
    }
}

/// Adds one decision's token share to the run's usage (an unknown share is counted as unknown, not as zero).
fn count_share(usage: &mut crate::budget::Usage, share: &TokenShare) {
    match share {
        TokenShare::Counted { forced, choice } => {
            usage.forced_tokens += u64::from(*forced);
            usage.choice_tokens += u64::from(*choice);
        }
        TokenShare::Unknown { .. } => usage.share_unknown_decisions += 1,
    }
}

/// Which top-level fields of a decision the runtime wrote in its prefix (the field and its whole value are
/// in it) and which the policy wrote, in the decision's order, plus the prefix itself. Read from the
/// parsed decision, so whatever prefix a grammar uses, the split names fields, never the policy's raw text.
pub(crate) fn written_by(decision: &Value, runtime_prefix: &str) -> Value {
    let mut runtime = Vec::new();
    let mut policy = Vec::new();
    let mut composed = Vec::new();
    let slot_by_slot = decision.get("slots").is_some();
    for (key, value) in decision.as_object().into_iter().flatten() {
        let field = format!("{}:{}", json!(key), value);
        if runtime_prefix.contains(&field) {
            runtime.push(key.as_str());
        } else if slot_by_slot && key == "answer" {
            // Written by the runtime after the policy: the task's template with the policy's slot values.
            composed.push(key.as_str());
        } else {
            policy.push(key.as_str());
        }
    }
    json!({ "runtime_prefix": runtime_prefix, "runtime": runtime, "policy": policy, "composed": composed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_whole_in_the_prefix_are_the_runtimes_and_the_rest_the_policys() {
        let action = json!({"type":"action","tool":"calculator","arguments":{"expression":"1+2"}});
        let prefix = r#"{"type":"action","tool":"calculator","arguments":{"expression":""#;
        assert_eq!(
            written_by(&action, prefix),
            json!({"runtime_prefix": prefix, "runtime": ["type", "tool"], "policy": ["arguments"], "composed": []})
        );
        let answer = json!({"type":"final","evidence_ids":["obs-a-1"],"answer":"It is 3."});
        let prefix = r#"{"type":"final","evidence_ids":["obs-a-1"],"answer":""#;
        assert_eq!(
            written_by(&answer, prefix)["runtime"],
            json!(["type", "evidence_ids"])
        );
        // Given slot by slot: the slots are the policy's, the answer the runtime wrote from them.
        let slotted = json!({"type":"final","evidence_ids":["obs-a-1"],"slots":{"total":"3"},"answer":"It is 3."});
        let prefix = r#"{"type":"final","evidence_ids":["obs-a-1"],"slots":{"#;
        let written = written_by(&slotted, prefix);
        assert_eq!(written["policy"], json!(["slots"]));
        assert_eq!(written["composed"], json!(["answer"]));
        assert_eq!(written_by(&answer, prefix)["composed"], json!([]));
        // Free mode: no prefix, every field the policy's; a value only partly in the prefix is not the runtime's.
        assert_eq!(written_by(&answer, "")["runtime"], json!([]));
        assert_eq!(
            written_by(&answer, r#"{"type":"final","evidence_ids":["obs-a"#)["policy"],
            json!(["evidence_ids", "answer"])
        );
    }
}
