//! Developer aid: one real run printed event by event (phase + data) with per-decision measurements.
//!
//! usage: trace [--task NAME] [--mode guided|free] [--temperature T] [--gguf PATH] [--seed N]

use std::path::{Path, PathBuf};

use forge_llama::{Mode, ModelPolicySettings, task_run};

/// One real run printed event by event (phase + data) with per-decision measurements.
#[derive(clap::Parser)]
struct Cli {
    /// The task folder under fixtures/tasks
    #[arg(long, default_value = "agent_eval_mini")]
    task: String,
    /// guided or free
    #[arg(long, default_value = "guided")]
    mode: Mode,
    /// Sampling temperature (0 = greedy)
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// The GGUF model (default models/qwen2.5-coder-0.5b.gguf)
    #[arg(long)]
    gguf: Option<PathBuf>,
    /// Sampler seed (the evaluation's seed s runs with 1000 + s: `--seed 1000` replays its seed 0)
    #[arg(long)]
    seed: Option<u32>,
}

fn main() {
    let cli = <Cli as clap::Parser>::parse();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let model = cli
        .gguf
        .unwrap_or_else(|| root.join(forge_llama::DEFAULT_MODEL_PATH));
    let mut cfg = ModelPolicySettings::new(&model, cli.mode);
    cfg.temperature = cli.temperature;
    if let Some(seed) = cli.seed {
        cfg.seed = seed;
    }
    let artifacts = tempfile::tempdir().unwrap();
    let task = cli.task;
    let spec = task_run::spec_for(&root, &task, "trace", artifacts.path());
    let run = task_run::run_with_model(
        &spec,
        cfg,
        &task_run::control_for(&spec.budgets),
        &mut |e| {
            let data = e.data.to_string();
            let cut: String = data
                .chars()
                .take(if std::env::var_os("TRACE_FULL").is_some() {
                    usize::MAX
                } else {
                    600
                })
                .collect();
            println!(
                "{:>3} s{} a{} {:>7}ms {:<22} {}",
                e.seq, e.step, e.attempt, e.elapsed_ms, e.phase, cut
            );
        },
    )
    .unwrap();
    for d in &run.decisions {
        println!("{}", serde_json::to_string(d).unwrap());
    }
    let r = &run.result;
    println!(
        "{}/{} in {:.1}s task_success={:?}\nanswer: {:?}",
        r.status.as_str(),
        r.stop_reason.as_str(),
        run.wall_ms / 1e3,
        r.metrics.as_ref().and_then(|m| m.task_success),
        r.final_answer
    );
}
