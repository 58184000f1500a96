//! One proposed decision checked the way the loop checks it — the decision contract, then the tool's argument
//! contract — with no tool run and no run state: the decision sandbox (`POST /agent/decisions/validate`).
//!
//! The checks are the loop's own functions (`decision::parse_decision`, `ToolRegistry::validate_arguments`),
//! and a refused action is recorded in a fresh observation ledger exactly as `agent_loop::act` records it, so
//! the observation shown is the one a model would read. What needs a run (the ledger-consistency check, the
//! guards, the final-answer gate) is named as not checked, never guessed.

use serde::Serialize;
use serde_json::Value;

use crate::decision::{Decision, parse_decision};
use crate::ledger::{Ledger, ObservationError};
use crate::registry::{ArgumentError, ToolRegistry};

/// The step number a sandbox observation carries: the first step of a run.
const SANDBOX_STEP: u32 = 1;

/// How far a proposal got through the runtime's checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Not a decision: the loop would emit `decision.invalid` and ask the model to repair it.
    InvalidDecision,
    /// A decision whose arguments the tool's contract refuses: `tool.rejected`, no tool runs.
    InvalidArguments,
    /// An action the loop would dispatch (after the checks that need a run).
    ValidAction,
    /// A final answer in the contract's shape; only a run's final-answer gate can judge its evidence.
    ValidFinal,
}

/// Why a proposal was refused: the runtime's stable code, sub-kind, named fields and message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refusal {
    pub code: String,
    pub kind: String,
    pub fields: Vec<String>,
    pub message: String,
}

/// A tool's argument names (from its registry schema) next to the names a proposal gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContractView {
    pub required: Vec<String>,
    pub allowed: Vec<String>,
    /// Required names the proposal left out.
    pub missing: Vec<String>,
    /// Names the proposal gave that the tool does not declare.
    pub undeclared: Vec<String>,
}

impl ContractView {
    fn of(schema: &Value, given: &serde_json::Map<String, Value>) -> Self {
        let names = |v: &Value| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        };
        let required = names(&schema["required"]);
        let allowed: Vec<String> = schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let missing = required
            .iter()
            .filter(|n| !given.contains_key(*n))
            .cloned()
            .collect();
        let undeclared = given
            .keys()
            .filter(|n| !allowed.contains(n))
            .cloned()
            .collect();
        ContractView {
            required,
            allowed,
            missing,
            undeclared,
        }
    }
}

/// The sandbox's answer for one proposal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DryRun {
    pub verdict: Verdict,
    /// The trace phase the loop would emit for this proposal.
    pub phase: &'static str,
    /// The decision in contract form, once it parsed.
    pub decision: Option<Value>,
    /// The arguments as the tool would receive them: schema order, defaults applied.
    pub validated_arguments: Option<Value>,
    pub refusal: Option<Refusal>,
    /// The failed observation the loop records for refused arguments (what the model reads next).
    pub observation: Option<Value>,
    /// The message the loop adds to the model's next prompt.
    pub feedback: Option<String>,
    /// The tool's argument names against the proposal's, for an action naming a known tool: the whole picture
    /// the validator reports one refusal at a time.
    pub contract: Option<ContractView>,
    /// What the runtime would still check inside a run, by name.
    pub not_checked: Vec<&'static str>,
    /// Always false: the sandbox never runs a tool.
    pub tool_ran: bool,
}

/// Checks one proposal (the model's raw text) against the decision contract and the registry.
pub fn validate_proposal(text: &str, registry: &ToolRegistry) -> DryRun {
    let tools = registry.tool_names();
    // Outside a task there is no answer template: a final given slot by slot is refused by name.
    match parse_decision(text, &tools, None) {
        Err(error) => DryRun {
            verdict: Verdict::InvalidDecision,
            phase: "decision.invalid",
            refusal: Some(Refusal {
                code: error.code().into(),
                kind: error.code().into(),
                fields: error.fields(),
                message: error.to_string(),
            }),
            ..DryRun::empty()
        },
        Ok(Decision::Final(final_decision)) => DryRun {
            verdict: Verdict::ValidFinal,
            phase: "decision.valid",
            decision: Some(Decision::Final(final_decision).to_json()),
            not_checked: vec!["final_answer_gate", "claims_gate"],
            ..DryRun::empty()
        },
        Ok(Decision::Action(action)) => {
            let decision = Some(Decision::Action(action.clone()).to_json());
            let contract = registry
                .spec(&action.tool)
                .map(|spec| ContractView::of(&spec.arguments_schema, &action.arguments));
            let dry = match registry.validate_arguments(&action.tool, &action.arguments) {
                Ok(valid) => DryRun {
                    verdict: Verdict::ValidAction,
                    phase: "tool.started",
                    decision,
                    validated_arguments: Some(Value::Object(valid)),
                    not_checked: vec!["ledger_consistency", "loop_guards", "budgets"],
                    ..DryRun::empty()
                },
                Err(error) => refused_arguments(
                    &action.tool,
                    Value::Object(action.arguments),
                    decision,
                    &error,
                ),
            };
            DryRun { contract, ..dry }
        }
    }
}

/// The refusal of an action's arguments, with the observation a fresh ledger records for it.
fn refused_arguments(
    tool: &str,
    arguments: Value,
    decision: Option<Value>,
    error: &ArgumentError,
) -> DryRun {
    let message = error.to_string();
    let mut ledger = Ledger::new();
    let observation = ledger
        .record_failure(
            tool,
            SANDBOX_STEP,
            ObservationError {
                code: ArgumentError::CODE.into(),
                message: message.clone(),
                retryable: None,
            },
            Some(arguments),
        )
        .map(|record| record.to_json())
        .ok();
    DryRun {
        verdict: Verdict::InvalidArguments,
        phase: "tool.rejected",
        decision,
        refusal: Some(Refusal {
            code: ArgumentError::CODE.into(),
            kind: error.kind().into(),
            fields: error.fields(),
            message,
        }),
        observation,
        feedback: Some(error.feedback(tool)),
        ..DryRun::empty()
    }
}

impl DryRun {
    fn empty() -> Self {
        DryRun {
            verdict: Verdict::InvalidDecision,
            phase: "decision.invalid",
            decision: None,
            validated_arguments: None,
            refusal: None,
            observation: None,
            feedback: None,
            contract: None,
            not_checked: Vec::new(),
            tool_ran: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> DryRun {
        validate_proposal(text, ToolRegistry::builtin())
    }

    #[test]
    fn the_old_chart_shape_is_refused_with_the_observation_the_loop_records() {
        let dry = check(
            r#"{"type":"action","tool":"plot","arguments":{"kind":"bar","labels":["A","B"],"values":[1,2]}}"#,
        );
        assert_eq!(dry.verdict, Verdict::InvalidArguments);
        let refusal = dry.refusal.unwrap();
        assert_eq!(refusal.code, "invalid_arguments");
        assert_eq!(refusal.kind, "missing");
        assert_eq!(refusal.fields, ["title"]);
        let observation = dry.observation.unwrap();
        assert_eq!(observation["id"], "obs-plot-1");
        assert_eq!(observation["ok"], false);
        assert_eq!(observation["error"]["code"], "invalid_arguments");
        assert_eq!(observation["attempted_arguments"]["kind"], "bar");
        assert!(dry.feedback.unwrap().contains("No tool was run"));
        // The validator names one refusal at a time; the contract view shows the whole difference.
        let contract = dry.contract.unwrap();
        assert_eq!(contract.missing, ["title"]);
        assert_eq!(contract.undeclared, ["kind"]);
        assert!(contract.allowed.contains(&"column".to_owned()));
        assert!(!dry.tool_ran);
    }

    #[test]
    fn valid_actions_come_back_normalised_and_finals_name_the_gate_they_still_face() {
        let dry = check(
            r#"{"type":"action","tool":"knowledge_search","arguments":{"query":"release rule"}}"#,
        );
        assert_eq!(dry.verdict, Verdict::ValidAction, "{dry:?}");
        assert!(dry.validated_arguments.unwrap()["top_k"].is_number());
        let dry = check(r#"{"type":"final","answer":"79","evidence_ids":["obs-calculator-2"]}"#);
        assert_eq!(dry.verdict, Verdict::ValidFinal);
        assert!(dry.not_checked.contains(&"final_answer_gate"));
    }

    #[test]
    fn text_that_is_not_a_decision_gets_the_decision_error_and_its_fields() {
        let dry = check(r#"{"type":"action","tool":"plot","arguments":{},"thought":"x"}"#);
        assert_eq!(dry.verdict, Verdict::InvalidDecision);
        let refusal = dry.refusal.unwrap();
        assert_eq!(refusal.code, "unexpected_field");
        assert_eq!(refusal.fields, ["thought"]);
        assert_eq!(check("").refusal.unwrap().code, "empty_output");
        assert_eq!(
            check(r#"{"type":"action","tool":"search","arguments":{}}"#)
                .refusal
                .unwrap()
                .code,
            "unknown_tool"
        );
    }
}
