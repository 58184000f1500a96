//! The evaluation's reports: `summary.json`, `report.md` (the side-by-side table with every outcome class and
//! the model's lift over the grammar-only policy, the per-task table, the failure breakdown) and `success.png`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::EvalError;
use super::statistics::ConfigSummary;

/// `model guided t=0.7`, or `model guided grammar-only` (no temperature applies to it).
fn config_label(c: &ConfigSummary) -> String {
    match c.policy.as_str() {
        "model" => format!("{} {} t={}", c.model, c.mode, c.temperature),
        other => format!("{} {} {other}", c.model, c.mode),
    }
}

fn temperature_label(c: &ConfigSummary) -> String {
    match c.policy.as_str() {
        "model" => c.temperature.to_string(),
        _ => "uniform".into(),
    }
}

/// `+43 pp (28 to 57) over 12/39`, `n/a` without a baseline.
fn lift_text(c: &ConfigSummary) -> String {
    match &c.lift_over_grammar_only {
        Some(l) => format!(
            "{:+.0} pp ({:+.0} to {:+.0}) over {}/{}",
            l.difference * 100.0,
            l.newcombe_95.0 * 100.0,
            l.newcombe_95.1 * 100.0,
            l.baseline_successes,
            l.baseline_scored
        ),
        None if c.policy == "model" => "n/a (no grammar-only runs)".into(),
        None => "—".into(),
    }
}

fn percent(x: Option<f64>) -> String {
    x.map_or("n/a".into(), |x| format!("{:.0} %", x * 100.0))
}

/// The forced-share table: of the tokens each configuration's policy wrote, how many the decoder's masks
/// forced, overall and in the final answers, next to the success rate it goes with.
fn share_section(summaries: &[ConfigSummary]) -> String {
    let mut s = String::from(
        "\n## Who decided the tokens (forced share)\n\n\
         A token is forced when every token the decoder's masks (the step's grammar, banned repeats) allowed at \
         that position spells one text; otherwise the policy had a choice. The prefix the runtime writes before \
         the policy's first token (guided mode's branch) is not an output token and is in neither count. Free \
         mode decodes under its own grammar too, so its forced tokens are counted the same way. A server backend \
         applies the grammar out of sight: its runs are listed as unknown, never estimated.\n\n\
         | model | policy | mode | temperature | correct | forced share | forced / choice tokens | forced share in final answers | runs counted / unknown |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for c in summaries {
        let share = &c.token_share;
        s.push_str(&format!(
            "| {} | {} | {} | {} | {}/{} ({}) | {} | {} / {} | {} | {} / {} |\n",
            c.model,
            c.policy,
            c.mode,
            temperature_label(c),
            c.successes,
            c.scored,
            percent(c.success_rate),
            percent(share.forced_share),
            share.forced_tokens,
            share.choice_tokens,
            percent(share.of_gap("final")),
            share.runs_counted,
            share.runs_unknown,
        ));
    }
    s
}

/// `report.md`: the side-by-side table, the per-task table and the failure breakdown.
pub fn report_markdown(summaries: &[ConfigSummary], note: &str) -> String {
    let mut s = String::from("# Evaluation report\n\n");
    if !note.is_empty() {
        s.push_str(note);
        s.push_str("\n\n");
    }
    s.push_str("| model | policy | mode | temperature | correct | 95 % Wilson | pass^k | wrong-accepted | abstained | no answer | lift over grammar-only (95 % Newcombe) | GT unavailable | decision p50 / p95 | wall per run (p50) | tokens in / out (mean) |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for c in summaries {
        let pass = c
            .pass_hat_k
            .iter()
            .map(|(k, v)| format!("k={k}: {:.2}", v))
            .collect::<Vec<_>>()
            .join(", ");
        s.push_str(&format!(
            "| {} | {} | {} | {} | {}/{} ({}) | {:.0}–{:.0} % | {} | {} | {} | {} | {} | {} | {} / {} ms | {} s | {:.0} / {:.0} |\n",
            c.model,
            c.policy,
            c.mode,
            temperature_label(c),
            c.successes,
            c.scored,
            percent(c.success_rate),
            c.wilson_95.0 * 100.0,
            c.wilson_95.1 * 100.0,
            if pass.is_empty() { "n/a".into() } else { pass },
            c.accepted_but_wrong,
            c.abstained,
            c.no_answer,
            lift_text(c),
            c.ground_truth_unavailable,
            c.decision_latency_p50_ms.map_or("n/a".into(), |v| format!("{v:.0}")),
            c.decision_latency_p95_ms.map_or("n/a".into(), |v| format!("{v:.0}")),
            c.wall_per_run_p50_s.map_or("n/a".into(), |v| format!("{v:.1}")),
            c.mean_input_tokens,
            c.mean_output_tokens,
        ));
    }
    s.push_str(&share_section(summaries));
    let tasks: Vec<&String> = {
        let mut t: Vec<&String> = summaries.iter().flat_map(|c| c.per_task.keys()).collect();
        t.sort();
        t.dedup();
        t
    };
    s.push_str("\n## Per task (successes / scored runs)\n\n| task |");
    for c in summaries {
        s.push_str(&format!(" {} |", config_label(c)));
    }
    s.push_str("\n|---|");
    s.push_str(&"---|".repeat(summaries.len()));
    s.push('\n');
    for task in tasks {
        s.push_str(&format!("| {task} |"));
        for c in summaries {
            match c.per_task.get(task) {
                Some((ok, n)) => s.push_str(&format!(" {ok}/{n} |")),
                None => s.push_str(" – |"),
            }
        }
        s.push('\n');
    }
    s.push_str("\n## Failure breakdown\n\n");
    for c in summaries {
        let list = |m: &BTreeMap<String, u32>| {
            if m.is_empty() {
                "none".to_owned()
            } else {
                m.iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        s.push_str(&format!(
            "- **{}** — stop reasons: {}; rejected finals: {}; invalid decisions: {}; failed checks: {}\n",
            config_label(c),
            list(&c.stop_reasons),
            list(&c.rejected_finals),
            list(&c.invalid_decisions),
            list(&c.failed_checks),
        ));
    }
    s
}

/// Writes `summary.json`, `report.md` and `success.png` (success per task, one bar series per
/// mode × temperature) into `out_dir`.
pub fn write_reports(
    out_dir: &Path,
    summaries: &[ConfigSummary],
    note: &str,
) -> Result<(), EvalError> {
    let write = |name: &str, bytes: &[u8]| {
        let path = out_dir.join(name);
        fs::write(&path, bytes).map_err(|source| EvalError::Write {
            path: path.display().to_string(),
            source,
        })
    };
    let json = serde_json::json!({ "note": note, "configs": summaries });
    write(
        "summary.json",
        (serde_json::to_string_pretty(&json).expect("summaries serialise") + "\n").as_bytes(),
    )?;
    write("report.md", report_markdown(summaries, note).as_bytes())?;
    let mut tasks: Vec<String> = summaries
        .iter()
        .flat_map(|c| c.per_task.keys().cloned())
        .collect();
    tasks.sort();
    tasks.dedup();
    if tasks.is_empty() {
        return Ok(());
    }
    let series: Vec<(String, Vec<f64>)> = summaries
        .iter()
        .map(|c| {
            let name = match c.policy.as_str() {
                "model" => format!("{} t={}", c.mode, c.temperature),
                other => format!("{} {other}", c.mode),
            };
            let values = tasks
                .iter()
                .map(|t| {
                    c.per_task.get(t).map_or(0.0, |(ok, n)| {
                        100.0 * f64::from(*ok) / f64::from((*n).max(1))
                    })
                })
                .collect();
            (name, values)
        })
        .collect();
    let title = format!(
        "Task Success per task — {}",
        summaries.first().map_or("", |c| c.model.as_str())
    );
    let png = runtime::tools::plot::render_grouped_png(&title, &tasks, &series, "Task Success (%)")
        .map_err(|e| EvalError::Chart(e.to_string()))?;
    write("success.png", &png)
}

/// The folder a model's evaluation writes to: `<root>/<model name>`.
pub fn out_dir(root: &Path, model_name: &str) -> PathBuf {
    root.join(model_name)
}
