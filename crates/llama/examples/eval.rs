//! Task Success evaluation (`cargo xtask eval` runs it): N real AgentEval Mini runs per mode and temperature,
//! each scored by the runtime's metrics against expected.json. Writes evidence/eval/llama-<mode>-t<temp>.json
//! and evidence/eval/llama-summary.json. Measures; asserts nothing.
//!
//! usage: eval [--gguf PATH] [--runs N] [--modes guided,free] [--temps 0,0.7] [--out-dir DIR]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use forge_llama::{LlamaConfig, Mode, harness};
use serde_json::json;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = root();
    let model = arg(&args, "--gguf").map(PathBuf::from).unwrap_or_else(|| root.join(forge_llama::DEFAULT_MODEL_PATH));
    let runs: u32 = arg(&args, "--runs").and_then(|v| v.parse().ok()).unwrap_or(5);
    let modes: Vec<Mode> = arg(&args, "--modes")
        .unwrap_or_else(|| "guided,free".into())
        .split(',')
        .map(|m| m.parse().unwrap_or_else(|e| panic!("--modes: {e}")))
        .collect();
    let temps: Vec<f32> = arg(&args, "--temps")
        .unwrap_or_else(|| "0,0.7".into())
        .split(',')
        .map(|t| t.parse().unwrap_or_else(|_| panic!("--temps: {t:?} is not a number")))
        .collect();
    let out_dir = arg(&args, "--out-dir").map(PathBuf::from).unwrap_or_else(|| root.join("evidence/eval"));
    if let Err(e) = forge_llama::inspect::quick_check(&model) {
        eprintln!("eval: {e}");
        std::process::exit(2);
    }
    std::fs::create_dir_all(&out_dir).unwrap();
    let artifacts = tempfile::tempdir().unwrap();
    let mut summary = BTreeMap::new();
    for &mode in &modes {
        for &temp in &temps {
            let mut rows = Vec::new();
            let mut successes = 0;
            for i in 0..runs {
                let spec = harness::default_spec(&root, &format!("eval-{mode}-{temp}-{i}"), artifacts.path());
                let mut cfg = LlamaConfig::new(&model, mode);
                cfg.temperature = temp;
                cfg.seed = 1000 + i;
                let run = harness::run_with_model(&spec, cfg, &harness::control_for(&spec.budgets), &mut |_| {}).unwrap();
                let r = &run.result;
                let m = r.metrics.as_ref();
                let success = m.and_then(|m| m.task_success).unwrap_or(false);
                successes += u32::from(success);
                eprintln!(
                    "eval: {mode} t={temp} run {i}: {}/{} task_success={success} in {:.1}s",
                    r.status.as_str(),
                    r.stop_reason.as_str(),
                    run.wall_ms / 1e3
                );
                rows.push(json!({
                    "run": i, "seed": 1000 + i,
                    "status": r.status.as_str(), "stop_reason": r.stop_reason.as_str(),
                    "task_success": success,
                    "steps": r.steps,
                    "valid_action_rate": m.and_then(|m| m.valid_action_rate),
                    "tool_argument_accuracy": m.and_then(|m| m.tool_argument_accuracy),
                    "termination_correctness": m.and_then(|m| m.termination_correctness),
                    "wall_s": (run.wall_ms / 10.0).round() / 100.0,
                    "prefill_tokens_saved": m.map(|m| m.prefill_tokens_saved),
                    "final_answer": r.final_answer,
                }));
            }
            let key = format!("{mode}-t{temp}");
            let rate = f64::from(successes) / f64::from(runs.max(1));
            summary.insert(key.clone(), json!({ "runs": runs, "task_success": successes, "rate": rate }));
            let file = out_dir.join(format!("llama-{key}.json"));
            let doc = json!({
                "what": "Task Success of real AgentEval Mini runs (runtime metrics vs expected.json)",
                "model": model.file_name().map(|n| n.to_string_lossy().into_owned()),
                "mode": mode.to_string(), "temperature": temp, "runs": runs,
                "task_success": successes, "rate": rate,
                "results": rows,
            });
            std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap() + "\n").unwrap();
            eprintln!("eval: {key}: {successes}/{runs} Task Success -> {}", file.display());
        }
    }
    let file = out_dir.join("llama-summary.json");
    std::fs::write(&file, serde_json::to_string_pretty(&json!(summary)).unwrap() + "\n").unwrap();
    eprintln!("eval: wrote {}", file.display());
}
