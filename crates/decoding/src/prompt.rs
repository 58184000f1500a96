//! Prompt text for the model: a compact system prompt (tool cards from the registry, the decision shape) and
//! a user message (task, state view, what to do next).
//!
//! Layout is chosen for KV-cache reuse: everything that stays the same across steps comes first (system
//! prompt, task, older observations) and what changes every step (budget, the next-step line) comes last.
//! It never sees expected values: only the `DecisionRequest`, which the runtime builds without ground truth.

use forge_language::template;
use serde_json::Value;

use runtime::policy::{DecisionRequest, Gap, ResultKind, ToolCard};

use crate::answer_form::AnswerForm;

/// The system prompt. Depends only on the tool cards, so it is identical for every step and run.
pub fn system_prompt(tools: &[ToolCard]) -> String {
    let mut s = String::from(
        "You are a careful agent that solves a task with tools. Reply with exactly one JSON object, no prose.\n\
         To run a tool: {\"type\":\"action\",\"tool\":NAME,\"arguments\":{...}}\n\
         To answer: {\"type\":\"final\",\"evidence_ids\":[observation ids],\"slots\":{SLOT NAME:VALUE,...}} filling each \
         <slot> of the task's answer template by its name, or \"answer\":TEXT when it has none\n\
         Tools:\n",
    );
    for card in tools {
        s.push_str(&format!(
            "- {}({}): {}\n",
            card.name,
            signature(&card.arguments_schema),
            first_sentence(&card.description)
        ));
        s.push_str(&argument_lines(&card.arguments_schema));
    }
    s.push_str(
        "Rules: copy numbers and labels exactly from the observations; let the calculator do every sum, average and \
         comparison; answer only when every needed observation exists, citing their ids; the answer's verdict must \
         agree with the computed results.",
    );
    s
}

/// `query: string, top_k?: integer 1..4` — the argument schema in one line.
pub fn signature(schema: &Value) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    props
        .iter()
        .map(|(name, p)| {
            let opt = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            format!("{name}{opt}: {}", type_name(p))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line per argument with the registry's own description (examples included), for the guided step.
pub fn argument_lines(schema: &Value) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    props
        .iter()
        .map(|(name, p)| {
            let desc = p.get("description").and_then(Value::as_str).unwrap_or("");
            format!("  {name} ({}): {desc}\n", type_name(p))
        })
        .collect()
}

fn type_name(p: &Value) -> String {
    let ty = p.get("type").and_then(Value::as_str).unwrap_or("any");
    match ty {
        "array" => format!(
            "{}[]",
            p.get("items")
                .map(type_name)
                .unwrap_or_else(|| "any".into())
        ),
        "integer" => match (p.get("minimum"), p.get("maximum")) {
            (Some(a), Some(b)) => format!("integer {a}..{b}"),
            _ => "integer".into(),
        },
        other => other.to_string(),
    }
}

fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(i) => &text[..=i],
        None => text,
    }
}

/// Extra lines for a guided step, by what the step must write. Wording only: nothing here names a task, a
/// label or a value; it was chosen by measuring the task suite (the model summed without dividing, pasted
/// the whole task as a query, repeated the average as chart values).
fn step_guidance(tool: &str, result: Option<ResultKind>) -> &'static str {
    match (tool, result) {
        ("knowledge_search", _) => "Use a short query: a few keywords naming what to look up.",
        ("calculator", Some(ResultKind::Boolean)) => {
            "Write one check that is true exactly when the rule holds: each limit the knowledge states, compared with \
             what it limits over the column by reference, joined by and (e.g. mean([Column]) <= A and max([Column]) <= B; \
             a limit on every row is a limit on min(...) or max(...); a limit keeps the unit the knowledge writes it in, \
             e.g. max([Column]) <= 2.5 kg)."
        }
        ("calculator", _) => {
            "Write one aggregate over the column the task names, by reference: mean([Column]) for an average, \
             sum([Column]) for a total; a rate the knowledge defines over totals is one total over another: \
             sum([Column A]) / sum([Column B]) * 100."
        }
        ("plot", _) => {
            "column: the column the task names, by reference ([Name]), or labels and values: every row label and its \
             number in that column, in order. average: the calculator's average."
        }
        _ => "",
    }
}

/// At most this many grounded numbers are listed in a prompt (the grammar enforces all of them anyway).
const LISTED_NUMBERS: usize = 40;

/// How the policy asks (guided or free): the runtime's one definition.
pub use runtime::policy::Mode;

/// The user message for one decision.
pub fn user_message(req: &DecisionRequest, mode: Mode, answer_form: AnswerForm) -> String {
    let mut s = format!("Task: {}\n", req.task.trim());
    s.push_str(&render_state(&req.state));
    if let Some(repair) = &req.repair {
        s.push_str(&format!(
            "Your previous reply was rejected ({}): {}\n",
            repair.error_code, repair.error
        ));
    }
    if !req.missing.is_empty() && mode == Mode::Guided {
        s.push_str(&format!(
            "Still needed before the final answer: {}.\n",
            req.missing.join("; ")
        ));
    }
    let numbers = listed_numbers(req);
    match (mode, &req.gap) {
        (Mode::Guided, Gap::Tool { tool, hint, result }) => {
            s.push_str(&format!("Next: call {tool} to {hint}.\n"));
            if let Some(card) = req.tools.iter().find(|c| &c.name == tool) {
                s.push_str(&format!("{tool}: {}\n", card.description));
            }
            let guidance = step_guidance(tool, *result);
            if !guidance.is_empty() {
                s.push_str(guidance);
                s.push('\n');
            }
        }
        (
            Mode::Guided,
            Gap::Final {
                evidence_ids,
                answer_template,
            },
        ) => {
            s.push_str(&numbers);
            // Slot by slot the verdict words follow the "rule check" the model states (the grammar writes
            // them by the task's phrases): the outcome is restated to copy, and no sentence of the prompt
            // holds "true" or "false" of its own for the model to copy instead.
            let states_check = answer_form.by_slots(answer_template)
                && template::states_rule_check(&template::parse(answer_template));
            let checks = if states_check {
                cited_rule_checks(&req.state, evidence_ids)
            } else {
                String::new()
            };
            s.push_str(&checks);
            let verdict = if checks.is_empty() {
                ", choosing the verdict words that agree with them (a rule check that came out true means the \
                 rule holds)"
            } else {
                "; the verdict words are the ones your \"rule check\" gives"
            };
            s.push_str(&format!(
                "Next: the final answer, citing {}. {}{verdict}: {}\n",
                evidence_ids.join(", "),
                fill_instruction(answer_template, answer_form),
                answer_template
            ));
        }
        // Free mode: the model picks the tool. The harness shows the evidence the final-answer gate still
        // needs as a numbered checklist (first item first), the numbers it may use, and — once nothing is
        // missing — the template; an exact repeat of an earlier action is refused by the grammar.
        (Mode::Free, gap) => {
            if req.missing.is_empty() {
                s.push_str(&numbers);
                let ids = match gap {
                    Gap::Final { evidence_ids, .. } => evidence_ids.join(", "),
                    Gap::Tool { .. } => String::new(),
                };
                s.push_str(&format!(
                    "Every needed observation exists. Next: the final answer citing {ids}. {}, choosing the verdict \
                     words that agree with them: {}\n",
                    fill_instruction(&req.answer_template, answer_form),
                    req.answer_template
                ));
            } else {
                s.push_str("Evidence the final answer still needs, in order:\n");
                for (i, item) in req.missing.iter().enumerate() {
                    s.push_str(&format!("{}. {item}\n", i + 1));
                }
                s.push_str("Next: one tool call that produces item 1 (an action already run is refused).\n");
            }
        }
    }
    s
}

/// How the final answer is written: slot by slot, each by the name the template gives it (the runtime writes
/// the sentence), or the template as text when it has no slots.
fn fill_instruction(answer_template: &str, answer_form: AnswerForm) -> &'static str {
    if !answer_form.by_slots(answer_template) {
        "Fill this template with numbers and labels from the observations"
    } else {
        "Give \"slots\": each <slot> of this template by its name, filled with a number or label from the \
         observations (the runtime writes the sentence from them)"
    }
}

/// The outcome of each rule check the final cites, restated on the line before the answer:
/// `Your rule check obs-calculator-3 came out false, so your "rule check" is "false".` It is the model's own
/// comparison's result, already at the end of its observation line; the runtime's reading of the rule is not
/// in it. Without it the 1.5B stated its rule check by a lean (suite, stop 53: with `"rule check"` written
/// before the verdict, all 6 changed tasks whose rule holds came out right and all 4 whose rule fails wrong;
/// on one of them "true" 15.8 against "false" 13.8 after a check that came out false, copied from the
/// prompt's own "a rule check that came out true means the rule holds", which slot by slot is left out).
fn cited_rule_checks(state: &Value, evidence_ids: &[String]) -> String {
    let Some(observations) = state.get("observations").and_then(Value::as_array) else {
        return String::new();
    };
    observations
        .iter()
        .filter(|o| o.get("ok").and_then(Value::as_bool) == Some(true))
        .filter_map(|o| {
            let id = o.get("id").and_then(Value::as_str)?;
            let outcome = o.get("result")?.get("value")?.as_bool()?;
            evidence_ids
                .iter()
                .any(|cited| cited == id)
                .then(|| {
                    format!("Your rule check {id} came out {outcome}, so your \"rule check\" is \"{outcome}\".\n")
                })
        })
        .collect()
}

/// `Numbers from the observations: 72, 78, ….` — empty when there are none.
fn listed_numbers(req: &DecisionRequest) -> String {
    let listed: Vec<&str> = req
        .grounding
        .numbers
        .iter()
        .take(LISTED_NUMBERS)
        .map(String::as_str)
        .collect();
    if listed.is_empty() {
        return String::new();
    }
    format!("Numbers from the observations: {}.\n", listed.join(", "))
}

/// The runtime's state view as compact lines: observation-like lists first (they only grow, so their
/// tokens stay cached), then everything else, budgets last (they change every step).
pub fn render_state(state: &Value) -> String {
    let Some(obj) = state.as_object() else {
        return if state.is_null() {
            String::new()
        } else {
            format!("State: {}\n", compact(state))
        };
    };
    let mut keys: Vec<&String> = obj.keys().collect();
    keys.sort_by_key(|k| {
        let k = k.as_str();
        if k.contains("observation") {
            0
        } else if k.contains("budget") || k.contains("remaining") || k.contains("usage") {
            3
        } else if k.contains("feedback") {
            2
        } else {
            1
        }
    });
    let mut s = String::new();
    for k in keys {
        let v = &obj[k.as_str()];
        match v {
            Value::Array(items) if items.is_empty() => s.push_str(&format!("{k}: none\n")),
            Value::Array(items) => {
                s.push_str(&format!("{k}:\n"));
                for item in items {
                    let line = if k.contains("observation") {
                        render_observation(item)
                    } else {
                        compact(item)
                    };
                    s.push_str(&format!("- {line}\n"));
                }
            }
            Value::Null => {}
            Value::Object(m) if k.contains("budget") => {
                // Token and second counts are the runtime's business; a small model only misreads them as data.
                let left: Vec<String> = ["steps_left", "tool_calls_left"]
                    .iter()
                    .filter_map(|f| {
                        m.get(*f).map(|v| {
                            format!("{} {v}", f.trim_end_matches("_left").replace('_', " "))
                        })
                    })
                    .collect();
                if !left.is_empty() {
                    s.push_str(&format!("{k} left: {}\n", left.join(", ")));
                }
            }
            other => s.push_str(&format!("{k}: {}\n", compact(other))),
        }
    }
    s
}

/// Keys of a tool result that cost many tokens and tell the model nothing it can act on.
const BULKY_RESULT_KEYS: [&str; 4] = ["citations", "source_blake3", "artifact", "truncated"];

/// The ends of each column a numeric calculation read, as the calculator reports them, each on a line of
/// its own under the observation (`lowest [Wait]: A = 28`, `highest [Wait]: B = 35`), tied rows listed
/// together. Written inline after the result (`rows of [Wait]: lowest A = 28; highest B = 35`) the 1.5B
/// named a wrong row for a lowest/highest slot in 12 of 66 suite runs; on lines of their own, 4 of them (suite,
/// stop 52). As `A (28)` the 0.5B copied the bracket into its row slot: the value follows `=`. A rule check
/// (a true/false result) reads the same columns again and gets none: its view stays the comparison.
fn column_ends(result: &Value) -> String {
    if !result.get("value").is_some_and(Value::is_number) {
        return String::new();
    }
    let end = |column: &Value, key: &str| -> Option<String> {
        let end = column.get(key)?;
        let labels: Vec<&str> = end
            .get("labels")?
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        Some(format!(
            "{key} {}: {} = {}",
            column.get("reference")?.as_str()?,
            labels.join(", "),
            compact(end.get("value")?)
        ))
    };
    let parts: Vec<String> = result
        .get("columns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|column| {
            Some(format!(
                "\n  {}\n  {}",
                end(column, "lowest")?,
                end(column, "highest")?
            ))
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        parts.join("")
    }
}

/// One observation: `id (tool) ok: <text>` where the text is the tool's own `view` (multi-line, indented),
/// a calculation as `expression = value`, or the tool's summary; `id (tool) failed: code: message`.
/// The runtime keeps the full observation; this is only the view.
pub fn render_observation(o: &Value) -> String {
    let line = observation_line(o);
    // A note the runtime adds to an entry (a rule check a verdict dispute re-opened) follows its line.
    match o.get("note").and_then(Value::as_str) {
        Some(note) => format!("{line}\n  ({note})"),
        None => line,
    }
}

fn observation_line(o: &Value) -> String {
    let id = o.get("id").and_then(Value::as_str).unwrap_or("?");
    let tool = o.get("tool").and_then(Value::as_str).unwrap_or("?");
    if o.get("ok").and_then(Value::as_bool) == Some(true) {
        let result = o.get("result").cloned().unwrap_or(Value::Null);
        if let Some(view) = result.get("view").and_then(Value::as_str) {
            let body: String = view.lines().map(|l| format!("\n  {l}")).collect();
            return format!("{id} ({tool}) ok:{body}");
        }
        if let (Some(expression), Some(value)) = (
            result.get("expression").and_then(Value::as_str),
            result.get("value"),
        ) {
            return format!(
                "{id} ({tool}) ok: {} = {}{}",
                expression.trim(),
                compact(value),
                column_ends(&result)
            );
        }
        let text = match result.get("summary").and_then(Value::as_str) {
            Some(summary) => summary.to_string(),
            None => match result {
                Value::Object(mut m) => {
                    if let Some(Value::String(preview)) = m.get("preview") {
                        preview.clone()
                    } else {
                        BULKY_RESULT_KEYS.iter().for_each(|k| {
                            m.remove(*k);
                        });
                        compact(&Value::Object(m))
                    }
                }
                other => compact(&other),
            },
        };
        format!("{id} ({tool}) ok: {text}")
    } else {
        let err = o.get("error");
        let code = err
            .and_then(|e| e.get("code"))
            .and_then(Value::as_str)
            .unwrap_or("error");
        let message = err
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut line = format!("{id} ({tool}) failed: {code}: {message}");
        if let Some(args) = o.get("attempted_arguments") {
            line.push_str(&format!(" (arguments were {})", compact(args)));
        }
        line
    }
}

fn compact(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_calculation_over_a_column_shows_the_column_s_ends_and_a_rule_check_does_not() {
        let column = json!({"reference": "[Compliance]", "name": "Compliance", "rows": "Ward",
            "lowest": {"labels": ["Beech", "Elm"], "value": 85}, "highest": {"labels": ["Ash"], "value": 92}});
        let mean = json!({"id": "obs-calculator-2", "tool": "calculator", "ok": true,
            "result": {"expression": "mean([Compliance])", "value": 88, "columns": [column.clone()]}});
        assert_eq!(
            render_observation(&mean),
            "obs-calculator-2 (calculator) ok: mean([Compliance]) = 88\n  lowest [Compliance]: Beech, Elm = 85\n  highest [Compliance]: Ash = 92"
        );
        let check = json!({"id": "obs-calculator-3", "tool": "calculator", "ok": true,
            "result": {"expression": "mean([Compliance]) >= 90", "value": false, "columns": [column]}});
        assert_eq!(
            render_observation(&check),
            "obs-calculator-3 (calculator) ok: mean([Compliance]) >= 90 = false"
        );
        let literal = json!({"id": "obs-calculator-4", "tool": "calculator", "ok": true,
            "result": {"expression": "1 + 2", "value": 3}});
        assert_eq!(
            render_observation(&literal),
            "obs-calculator-4 (calculator) ok: 1 + 2 = 3"
        );
        // A note the runtime adds (a disputed rule check) follows the entry's line.
        let mut noted = literal.clone();
        noted["note"] = json!("disputed: see feedback");
        assert_eq!(
            render_observation(&noted),
            "obs-calculator-4 (calculator) ok: 1 + 2 = 3\n  (disputed: see feedback)"
        );
    }

    #[test]
    fn the_final_step_restates_the_outcome_of_each_cited_rule_check_and_nothing_else() {
        let observation = |id: &str, ok: bool, value: serde_json::Value| json!({"id": id, "tool": "calculator", "ok": ok, "result": {"expression": "x", "value": value}});
        let state = json!({"observations": [
            observation("obs-calculator-2", true, json!(88)),
            observation("obs-calculator-3", true, json!(false)),
            observation("obs-calculator-4", true, json!(true)),
            observation("obs-calculator-5", false, json!(true)),
        ]});
        let cited = |ids: &[&str]| ids.iter().map(|id| id.to_string()).collect::<Vec<_>>();
        // Only a cited, successful true/false result: a number is no rule check, an uncited check is not
        // the answer's, and the runtime adds no reading of its own.
        assert_eq!(
            cited_rule_checks(
                &state,
                &cited(&["obs-calculator-2", "obs-calculator-3", "obs-calculator-5"])
            ),
            "Your rule check obs-calculator-3 came out false, so your \"rule check\" is \"false\".\n"
        );
        assert_eq!(
            cited_rule_checks(&state, &cited(&["obs-calculator-4"])),
            "Your rule check obs-calculator-4 came out true, so your \"rule check\" is \"true\".\n"
        );
        assert_eq!(cited_rule_checks(&state, &cited(&["obs-calculator-2"])), "");
        assert_eq!(
            cited_rule_checks(&json!({}), &cited(&["obs-calculator-3"])),
            ""
        );
    }
}
