//! Server-side throughput benchmark: guided runs (AgentEval Mini, or the tasks `--tasks` names, in turn) in process one after another, then through
//! llama-server with `-np 1/2/4` and as many runs in flight as slots. Reports suite runs per hour, decision
//! latency p50/p95 and Task Success per configuration, and ratios to the in-process sequential figure — all
//! measured in the same run. Writes evidence/bench/server-throughput.json. Not a test: nothing is asserted.
//!
//! usage: server_throughput [--gguf PATH] [--server BIN] [--runs N] [--parallel 1,2,4] [--tasks a,b,…] [--out FILE]
//!   --tasks    run i of every configuration is task i mod n (default agent_eval_mini), so each
//!              configuration runs the same list
//!   --runs N   runs per configuration after one uncounted warm-up run (default 8: twice the most slots,
//!              so the slots stay busy; with as many runs as slots the wall time is just the slowest run)
//!   --server   llama-server binary (default target/llama-tools/llama-server, `cargo xtask llama-tools`)

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use forge_decoding::backend::BackendConfig;
use forge_decoding::server_process::{self, LlamaServerProcess, ServerOptions};
use forge_llama::task_run::{self, ModelRun};
use forge_llama::{Mode, ModelPolicySettings};
use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// Guided runs in process, then through llama-server with -np 1/2/4; writes evidence/bench/server-throughput.json.
#[derive(clap::Parser)]
struct Cli {
    /// The GGUF model (default models/qwen2.5-coder-0.5b.gguf)
    #[arg(long)]
    gguf: Option<PathBuf>,
    /// The llama-server binary (default target/llama-tools/llama-server, `cargo xtask llama-tools`)
    #[arg(long)]
    server: Option<PathBuf>,
    /// The report (default evidence/bench/server-throughput.json)
    #[arg(long)]
    out: Option<PathBuf>,
    /// Runs per configuration after one uncounted warm-up run (twice the most slots keeps them busy)
    #[arg(long, default_value_t = 8)]
    runs: usize,
    /// Server slot counts to measure, comma-separated
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    parallel: Vec<u32>,
    /// Task folders; run i of every configuration is task i mod n, comma-separated
    #[arg(long, value_delimiter = ',', default_value = "agent_eval_mini")]
    tasks: Vec<String>,
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    v[i]
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// One configuration: `runs` runs with `in_flight` of them at a time (after one warm-up run).
fn measure(
    label: &str,
    config: &ModelPolicySettings,
    tasks: &[String],
    runs: usize,
    in_flight: usize,
) -> Value {
    let root = root();
    let artifacts = tempfile::tempdir().expect("temp dir");
    let one = |i: usize, name: String| -> ModelRun {
        let spec = task_run::spec_for(&root, &tasks[i % tasks.len()], &name, artifacts.path());
        task_run::run_with_model(
            &spec,
            config.clone(),
            &task_run::control_for(&spec.budgets),
            &mut |_| {},
        )
        .expect("task loads")
    };
    let warm = one(0, format!("{label}-warmup"));
    eprintln!(
        "throughput: {label} warm-up {:?} in {:.1}s",
        warm.result.status,
        warm.wall_ms / 1e3
    );
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<ModelRun>> = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..in_flight {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= runs {
                        break;
                    }
                    let run = one(i, format!("{label}-{i}"));
                    done.lock().unwrap().push(run);
                }
            });
        }
    });
    let wall_s = started.elapsed().as_secs_f64();
    let runs_done = done.into_inner().unwrap();
    let latencies: Vec<f64> = runs_done
        .iter()
        .flat_map(|r| r.decisions.iter().map(|d| d.latency_ms))
        .collect();
    let successes = runs_done
        .iter()
        .filter(|r| r.result.metrics.as_ref().and_then(|m| m.task_success) == Some(true))
        .count();
    let completed = runs_done
        .iter()
        .filter(|r| r.result.status.as_str() == "completed")
        .count();
    let per_hour = runs as f64 / (wall_s / 3600.0);
    eprintln!(
        "throughput: {label}: {runs} runs, {in_flight} in flight, {wall_s:.1}s → {per_hour:.0} runs/h, decision p50 {:.0} ms p95 {:.0} ms, success {successes}/{runs}",
        percentile(latencies.clone(), 0.5),
        percentile(latencies.clone(), 0.95)
    );
    json!({
        "label": label,
        "runs": runs,
        "in_flight": in_flight,
        "wall_s": round(wall_s),
        "runs_per_hour": per_hour.round(),
        "mean_run_wall_s": round(runs_done.iter().map(|r| r.wall_ms).sum::<f64>() / 1e3 / runs_done.len().max(1) as f64),
        "completed": completed,
        "task_success": successes,
        "decisions": latencies.len(),
        "decision_latency_ms": { "p50": percentile(latencies.clone(), 0.5).round(), "p95": percentile(latencies, 0.95).round() },
        "loadavg_after": loadavg(),
    })
}

fn main() {
    let cli = <Cli as clap::Parser>::parse();
    let root = root();
    let model = cli
        .gguf
        .unwrap_or_else(|| root.join(forge_llama::DEFAULT_MODEL_PATH));
    let server_bin = cli
        .server
        .unwrap_or_else(|| server_process::default_binary(&root));
    let out = cli
        .out
        .unwrap_or_else(|| root.join("evidence/bench/server-throughput.json"));
    let runs = cli.runs;
    let parallel = cli.parallel;
    let tasks: Vec<String> = cli
        .tasks
        .iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    if let Some(unknown) = tasks.iter().find(|t| {
        !root
            .join(task_run::DEFAULT_TASKS_DIR)
            .join(t)
            .join("task.json")
            .is_file()
    }) {
        eprintln!(
            "throughput: no task {unknown:?} in {}",
            task_run::DEFAULT_TASKS_DIR
        );
        std::process::exit(2);
    }
    if !server_bin.is_file() {
        eprintln!(
            "throughput: no llama-server at {} (run `cargo xtask llama-tools`)",
            server_bin.display()
        );
        std::process::exit(2);
    }
    let load_at_start = loadavg();
    let opts = ServerOptions::new(&server_bin, &model, 1);
    eprintln!(
        "throughput: {} threads, {runs} runs per configuration, load {load_at_start}",
        opts.threads
    );

    let mut configs: Vec<Value> = Vec::new();
    // Written after every configuration, so a long benchmark interrupted halfway still leaves its numbers.
    let write = |configs: &[Value], done: bool| {
        let tools: Value = server_bin
            .parent()
            .and_then(|d| std::fs::read_to_string(d.join("manifest.json")).ok())
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or(Value::Null);
        let report = json!({
            "what": "guided runs per hour: in process one at a time vs llama-server -np N with N runs in flight, same run, this machine",
            "tasks": tasks,
            "complete": done,
            "model": model.file_name().map(|n| n.to_string_lossy().into_owned()),
            "threads": opts.threads,
            "runs_per_configuration": runs,
            "loadavg_at_start": load_at_start,
            "loadavg_at_end": loadavg(),
            "llama_cpp": {
                "in_process": { "ggml_version": forge_llama::engine::ggml_version(), "bindings": "llama-cpp-2 0.1.160 / llama-cpp-sys-2 0.1.161" },
                "llama_server": tools,
            },
            "target": "llama-server -np 4 ≥ 1.5× the in-process sequential runs per hour",
            "configurations": configs,
        });
        std::fs::create_dir_all(out.parent().expect("out has a parent")).expect("create out dir");
        std::fs::write(
            &out,
            serde_json::to_string_pretty(&report).expect("serialises") + "\n",
        )
        .expect("write report");
    };
    let in_process = measure(
        "in-process",
        &ModelPolicySettings::new(&model, Mode::Guided),
        &tasks,
        runs,
        1,
    );
    // The in-process model is not needed any more; free its memory before the servers load theirs.
    forge_llama::engine::unload_all();
    let base = in_process["runs_per_hour"].as_f64().unwrap_or(f64::NAN);
    configs.push(in_process);
    write(&configs, false);
    for np in parallel {
        let opts = ServerOptions {
            parallel: np,
            ..ServerOptions::new(&server_bin, &model, np)
        };
        let server = match LlamaServerProcess::start(&opts, Duration::from_secs(120)) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("throughput: llama-server -np {np} did not start: {e}");
                std::process::exit(2);
            }
        };
        let mut config = ModelPolicySettings::new(&model, Mode::Guided);
        config.backend = BackendConfig::LlamaServer(server.http_config());
        let mut m = measure(
            &format!("llama-server -np {np}"),
            &config,
            &tasks,
            runs,
            np as usize,
        );
        m["ratio_to_in_process_sequential"] = json!(round(
            m["runs_per_hour"].as_f64().unwrap_or(f64::NAN) / base
        ));
        configs.push(m);
        drop(server);
        write(&configs, false);
    }
    write(&configs, true);
    eprintln!("throughput: wrote {}", out.display());
}
