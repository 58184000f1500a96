//! The evaluation's statistics: success with its Wilson interval, pass^k over seeds, the outcome classes
//! (correct / abstained / wrong-accepted / no answer), and the model's lift over the grammar-only policy with
//! Newcombe's interval for a difference of two proportions. Pure arithmetic over run records; no I/O.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::RunRecord;
use forge_decoding::share::TokenShare;

/// An `f32` as it was written (0.7, not 0.699999988079071): the summary is built as a `serde_json::Value`,
/// which widens every `f32` to the nearest `f64` of its binary value.
fn f32_as_written<S: serde::Serializer>(value: &f32, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(value.to_string().parse().unwrap_or(f64::from(*value)))
}

/// Wilson score interval for `successes` out of `n` at 95 % (z = 1.96); `(0, 1)` when n = 0.
pub fn wilson(successes: u32, n: u32) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let n_f = f64::from(n);
    let p = f64::from(successes) / n_f;
    let denominator = 1.0 + z * z / n_f;
    let centre = p + z * z / (2.0 * n_f);
    let margin = z * ((p * (1.0 - p) + z * z / (4.0 * n_f)) / n_f).sqrt();
    (
        ((centre - margin) / denominator).max(0.0),
        ((centre + margin) / denominator).min(1.0),
    )
}

/// Newcombe's hybrid score interval (his method 10) at 95 % for the difference of two independent proportions
/// `a_successes / a_n − b_successes / b_n`, built from the two Wilson intervals. `None` when either is empty.
pub fn newcombe_difference(
    a_successes: u32,
    a_n: u32,
    b_successes: u32,
    b_n: u32,
) -> Option<(f64, f64, f64)> {
    if a_n == 0 || b_n == 0 {
        return None;
    }
    let (p1, p2) = (
        f64::from(a_successes) / f64::from(a_n),
        f64::from(b_successes) / f64::from(b_n),
    );
    let ((l1, u1), (l2, u2)) = (wilson(a_successes, a_n), wilson(b_successes, b_n));
    let d = p1 - p2;
    let lower = d - ((p1 - l1).powi(2) + (u2 - p2).powi(2)).sqrt();
    let upper = d + ((u1 - p1).powi(2) + (p2 - l2).powi(2)).sqrt();
    Some((d, lower.max(-1.0), upper.min(1.0)))
}

fn choose(n: u32, k: u32) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1))
}

/// τ-bench's pass^k for one task with `c` successes in `n` trials: the chance that k trials drawn without
/// replacement all succeed, C(c, k) / C(n, k).
pub fn pass_hat_k(c: u32, n: u32, k: u32) -> f64 {
    if n == 0 || k == 0 || k > n {
        return f64::NAN;
    }
    choose(c, k) / choose(n, k)
}

pub(super) fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * (sorted.len() - 1) as f64).round() as usize;
    Some(sorted[rank.min(sorted.len() - 1)])
}

/// How far the model's success rate lies above the grammar-only policy's, for the same model file, mode and
/// tasks: the share of the successes the model earned beyond what the grammar alone produces.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lift {
    /// Success rate of the model minus that of the grammar-only policy (−1..1).
    pub difference: f64,
    /// Newcombe's 95 % interval of the difference.
    pub newcombe_95: (f64, f64),
    pub baseline_successes: u32,
    pub baseline_scored: u32,
}

/// Who decided the output tokens of one configuration's runs: forced and choice tokens pooled over the runs
/// whose every decision was counted (runs with an unknown decision are counted apart, never guessed into the
/// share), overall and by what each decision was for (`knowledge_search`, …, `final`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ConfigShare {
    pub forced_tokens: u64,
    pub choice_tokens: u64,
    /// forced / (forced + choice) over the counted runs; `None` when no run was counted.
    pub forced_share: Option<f64>,
    /// Runs in the pool, and runs left out because a decision's share was unknown (a server backend) or the
    /// record predates the count.
    pub runs_counted: u32,
    pub runs_unknown: u32,
    /// Per gap: (forced, choice) tokens of the counted runs' decisions.
    pub by_gap: BTreeMap<String, (u64, u64)>,
}

impl ConfigShare {
    fn of(runs: &[&RunRecord]) -> ConfigShare {
        let mut share = ConfigShare::default();
        for r in runs {
            if r.forced_share.is_none() {
                share.runs_unknown += 1;
                continue;
            }
            share.runs_counted += 1;
            share.forced_tokens += r.forced_tokens;
            share.choice_tokens += r.choice_tokens;
            for d in &r.decision_tokens {
                if let Some(TokenShare::Counted { forced, choice }) = &d.share {
                    let entry = share.by_gap.entry(d.gap.clone()).or_default();
                    entry.0 += u64::from(*forced);
                    entry.1 += u64::from(*choice);
                }
            }
        }
        let total = share.forced_tokens + share.choice_tokens;
        share.forced_share = (total > 0).then(|| share.forced_tokens as f64 / total as f64);
        share
    }

    /// The forced share of one gap's decisions (`final`, a tool name), when any were counted.
    pub fn of_gap(&self, gap: &str) -> Option<f64> {
        let (forced, choice) = self.by_gap.get(gap)?;
        (forced + choice > 0).then(|| *forced as f64 / (forced + choice) as f64)
    }
}

/// The figures for one model × policy × mode × temperature.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigSummary {
    pub model: String,
    /// `model` (the model chooses tokens) or `grammar-only` (uniform among what the grammar allows).
    #[serde(default = "super::model_policy")]
    pub policy: String,
    pub mode: String,
    /// For the grammar-only policy the temperature does not apply (recorded as 0).
    #[serde(serialize_with = "f32_as_written")]
    pub temperature: f32,
    pub runs: u32,
    /// Runs whose ground truth was available (the denominator of the success rate).
    pub scored: u32,
    pub successes: u32,
    pub success_rate: Option<f64>,
    pub wilson_95: (f64, f64),
    /// pass^k for k = 1..=seeds, averaged over tasks with that many scored trials.
    pub pass_hat_k: Vec<(u32, f64)>,
    /// Completed runs whose accepted final answer was still scored wrong (the scorer's `wrong_accepted`:
    /// a verified answer that fails the checks, or a verified answer on a task that cannot be verified).
    pub accepted_but_wrong: u32,
    /// Runs that ended with an answer whose claims were not all verified (each named), on a task that
    /// could be answered: neither a success nor a wrong answer.
    #[serde(default)]
    pub abstained: u32,
    /// Runs that ended without an accepted answer (a stop, a failure) on a task that could be answered.
    #[serde(default)]
    pub no_answer: u32,
    /// Against the grammar-only policy of the same model and mode (model policy only, when it was run).
    #[serde(default)]
    pub lift_over_grammar_only: Option<Lift>,
    pub ground_truth_unavailable: u32,
    pub stop_reasons: BTreeMap<String, u32>,
    pub rejected_finals: BTreeMap<String, u32>,
    pub invalid_decisions: BTreeMap<String, u32>,
    pub failed_checks: BTreeMap<String, u32>,
    pub per_task: BTreeMap<String, (u32, u32)>,
    pub mean_input_tokens: f64,
    pub mean_output_tokens: f64,
    pub decision_latency_p50_ms: Option<f64>,
    pub decision_latency_p95_ms: Option<f64>,
    pub wall_per_run_p50_s: Option<f64>,
    pub wall_per_run_mean_s: f64,
    pub wall_total_s: f64,
    /// Per-step grammar build time (build + render), median and 95th percentile.
    pub grammar_p50_ms: Option<f64>,
    pub grammar_p95_ms: Option<f64>,
    /// Forced and choice tokens (the decoder's masks), pooled over the runs that counted them.
    pub token_share: ConfigShare,
}

/// Groups records by (model, mode, temperature) and computes every figure.
pub fn summarize(records: &[RunRecord]) -> Vec<ConfigSummary> {
    let mut groups: BTreeMap<(String, String, String, String), Vec<&RunRecord>> = BTreeMap::new();
    for r in records {
        groups
            .entry((
                r.model.clone(),
                r.mode.clone(),
                // Grammar-only after the model's rows of the same mode.
                if r.policy == "model" {
                    "0".into()
                } else {
                    format!("1{}", r.policy)
                },
                format!("{}", r.temperature),
            ))
            .or_default()
            .push(r);
    }
    let mut summaries: Vec<ConfigSummary> = groups.into_values().map(summarize_config).collect();
    add_lifts(&mut summaries);
    summaries
}

/// Every figure of one configuration's runs (all of the same model, mode, policy and temperature).
fn summarize_config(rs: Vec<&RunRecord>) -> ConfigSummary {
    let first = rs[0];
    let scored: Vec<&&RunRecord> = rs.iter().filter(|r| r.task_success.is_some()).collect();
    let successes = scored
        .iter()
        .filter(|r| r.task_success == Some(true))
        .count() as u32;
    let mut per_task: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for r in &scored {
        let entry = per_task.entry(r.task.clone()).or_default();
        entry.1 += 1;
        entry.0 += u32::from(r.task_success == Some(true));
    }
    let max_k = per_task.values().map(|(_, n)| *n).max().unwrap_or(0);
    let pass_hat_k = (1..=max_k)
        .map(|k| {
            let values: Vec<f64> = per_task
                .values()
                .filter(|(_, n)| *n >= k)
                .map(|(c, n)| pass_hat_k(*c, *n, k))
                .collect();
            (k, values.iter().sum::<f64>() / values.len().max(1) as f64)
        })
        .collect();
    let count = |f: &dyn Fn(&RunRecord) -> Vec<String>| {
        let mut m: BTreeMap<String, u32> = BTreeMap::new();
        for r in &rs {
            for key in f(r) {
                *m.entry(key).or_default() += 1;
            }
        }
        m
    };
    let sum_maps = |f: &dyn Fn(&RunRecord) -> &BTreeMap<String, u32>| {
        let mut m: BTreeMap<String, u32> = BTreeMap::new();
        for r in &rs {
            for (k, v) in f(r) {
                *m.entry(k.clone()).or_default() += v;
            }
        }
        m
    };
    let mut latencies: Vec<f64> = rs
        .iter()
        .flat_map(|r| r.decision_latency_ms.iter().copied())
        .collect();
    latencies.sort_by(f64::total_cmp);
    let mut grammar: Vec<f64> = rs
        .iter()
        .flat_map(|r| r.grammar_ms.iter().copied())
        .collect();
    grammar.sort_by(f64::total_cmp);
    let mut walls: Vec<f64> = rs.iter().map(|r| r.wall_ms / 1e3).collect();
    walls.sort_by(f64::total_cmp);
    let n = rs.len() as f64;
    ConfigSummary {
        model: first.model.clone(),
        policy: first.policy.clone(),
        mode: first.mode.clone(),
        temperature: first.temperature,
        runs: rs.len() as u32,
        scored: scored.len() as u32,
        successes,
        success_rate: (!scored.is_empty()).then(|| f64::from(successes) / scored.len() as f64),
        wilson_95: wilson(successes, scored.len() as u32),
        pass_hat_k,
        accepted_but_wrong: rs
            .iter()
            .filter(|r| match r.outcome.as_deref() {
                Some(outcome) => outcome == "wrong_accepted",
                None => r.status == "completed" && r.task_success == Some(false),
            })
            .count() as u32,
        abstained: rs
            .iter()
            .filter(|r| r.outcome.as_deref() == Some("abstained"))
            .count() as u32,
        no_answer: rs
            .iter()
            .filter(|r| r.outcome.as_deref() == Some("no_answer"))
            .count() as u32,
        lift_over_grammar_only: None,
        ground_truth_unavailable: rs
            .iter()
            .filter(|r| r.ground_truth.starts_with("unavailable"))
            .count() as u32,
        stop_reasons: count(&|r| vec![r.stop_reason.clone()]),
        rejected_finals: sum_maps(&|r| &r.rejected_finals),
        invalid_decisions: sum_maps(&|r| &r.invalid_decisions),
        // Only runs scored wrong: a successful run's checks hold false leaves too (the other
        // alternatives of an any_of group).
        failed_checks: count(&|r| {
            if r.task_success == Some(false) {
                failed_checks(&r.checks)
            } else {
                Vec::new()
            }
        }),
        per_task,
        mean_input_tokens: rs.iter().map(|r| r.input_tokens as f64).sum::<f64>() / n,
        mean_output_tokens: rs.iter().map(|r| r.output_tokens as f64).sum::<f64>() / n,
        decision_latency_p50_ms: percentile(&latencies, 0.5),
        decision_latency_p95_ms: percentile(&latencies, 0.95),
        wall_per_run_p50_s: percentile(&walls, 0.5),
        wall_per_run_mean_s: walls.iter().sum::<f64>() / n,
        wall_total_s: walls.iter().sum::<f64>(),
        grammar_p50_ms: percentile(&grammar, 0.5),
        grammar_p95_ms: percentile(&grammar, 0.95),
        token_share: ConfigShare::of(&rs),
    }
}

/// The model's lift: each model row against the grammar-only row of the same model file and mode (all its
/// seeds pooled; the grammar-only policy has no temperature).
fn add_lifts(summaries: &mut [ConfigSummary]) {
    let baselines: Vec<(String, String, u32, u32)> = summaries
        .iter()
        .filter(|c| c.policy == GRAMMAR_ONLY)
        .map(|c| (c.model.clone(), c.mode.clone(), c.successes, c.scored))
        .collect();
    for c in summaries.iter_mut().filter(|c| c.policy == "model") {
        let Some((_, _, b_ok, b_n)) = baselines
            .iter()
            .find(|(m, mode, ..)| *m == c.model && *mode == c.mode)
        else {
            continue;
        };
        if let Some((difference, lower, upper)) =
            newcombe_difference(c.successes, c.scored, *b_ok, *b_n)
        {
            c.lift_over_grammar_only = Some(Lift {
                difference,
                newcombe_95: (lower, upper),
                baseline_successes: *b_ok,
                baseline_scored: *b_n,
            });
        }
    }
}

/// The policy name of the grammar-only baseline in records and summaries.
pub const GRAMMAR_ONLY: &str = "grammar-only";

/// Names of the Task Success checks that failed, from the metrics' breakdown (any object whose boolean
/// leaves are false; `evidence[2]` style for arrays). `expected` is what the ground truth says (a verdict
/// of false is not a failed check).
pub(crate) fn failed_checks(checks: &Value) -> Vec<String> {
    fn walk(prefix: &str, v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Bool(false) => out.push(prefix.to_owned()),
            Value::Object(m) => {
                for (k, v) in m.iter().filter(|(k, _)| k.as_str() != "expected") {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&p, v, out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(&format!("{prefix}[{i}]"), v, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", checks, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temperature_is_summarised_as_written() {
        #[derive(Serialize)]
        struct T(#[serde(serialize_with = "f32_as_written")] f32);
        assert_eq!(
            serde_json::json!({ "t": T(0.7) }).to_string(),
            r#"{"t":0.7}"#
        );
        assert_eq!(
            serde_json::json!({ "t": T(0.0) }).to_string(),
            r#"{"t":0.0}"#
        );
        assert_eq!(
            serde_json::json!({ "t": T(1.25) }).to_string(),
            r#"{"t":1.25}"#
        );
    }
}
