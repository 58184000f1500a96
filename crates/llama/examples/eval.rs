//! `cargo xtask eval` runs this: the task suite through the real model, resumable, with a progress bar;
//! writes `<out>/runs.jsonl`, `summary.json`, `report.md` and `success.png`. Measures; asserts nothing
//! about the score — it exits non-zero only when scoring itself failed (`--require-scoring`).
//!
//! usage: eval [--tasks a,b|all] [--modes guided,free] [--temps 0,0.7] [--seeds N]
//!             [--model 0.5b|1.5b|PATH] [--out DIR] [--fresh] [--require-scoring] [--note TEXT]
//!             [--backend in-process|llama-server] [--url http://HOST:PORT] [--parallel N] [--threads N]
//!             [--wall-clock-s S] [--report-only]
//! `--report-only` runs nothing: it rewrites the reports from every record already in `<out>/runs.jsonl`
//! (evaluations of several configurations, e.g. t=0 with one seed and t=0.7 with five, in one report).
//! With `--backend llama-server` and no `--url`, a llama-server (`cargo xtask llama-tools`) is started with
//! `-np N` slots for the evaluation and stopped after it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use forge_llama::Mode;
use forge_llama::backend::BackendConfig;
use forge_llama::eval::{self, Plan};
use forge_llama::http_client::HttpConfig;
use forge_llama::server_process::{self, LlamaServerProcess, ServerOptions};

const USAGE: &str = "usage: eval [--tasks a,b|all] [--modes guided,free] [--temps 0,0.7] [--seeds N] \
[--model 0.5b|1.5b|PATH] [--out DIR] [--fresh] [--require-scoring] [--note TEXT] \
[--backend in-process|llama-server] [--url http://HOST:PORT] [--parallel N] [--threads N] [--wall-clock-s S] [--report-only]";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

fn flag(args: &[String], name: &str) -> Result<Option<String>, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(None),
        Some(i) => args
            .get(i + 1)
            .cloned()
            .map(Some)
            .ok_or_else(|| format!("{name} needs a value")),
    }
}

struct Parsed {
    plan: Plan,
    out: PathBuf,
    fresh: bool,
    report_only: bool,
    require_scoring: bool,
    note: String,
    /// Start a llama-server for the evaluation (a server backend without `--url`).
    start_server: bool,
}

fn parse() -> Result<Parsed, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let known_values = [
        "--tasks",
        "--modes",
        "--temps",
        "--seeds",
        "--model",
        "--out",
        "--note",
        "--backend",
        "--url",
        "--parallel",
        "--threads",
        "--wall-clock-s",
    ];
    let known_switches = ["--fresh", "--require-scoring", "--report-only"];
    let mut i = 0;
    while i < args.len() {
        if known_values.contains(&args[i].as_str()) {
            i += 2;
        } else if known_switches.contains(&args[i].as_str()) {
            i += 1;
        } else {
            return Err(format!("unknown argument {:?}\n{USAGE}", args[i]));
        }
    }
    let root = root();
    let tasks_dir = root.join("fixtures/tasks");
    let tasks = match flag(&args, "--tasks")?.as_deref() {
        None | Some("all") => eval::all_tasks(&tasks_dir).map_err(|e| e.to_string())?,
        Some(list) => list.split(',').map(str::to_owned).collect(),
    };
    for task in &tasks {
        if !tasks_dir.join(task).join("task.json").is_file() {
            return Err(format!("--tasks: no task folder fixtures/tasks/{task}"));
        }
    }
    let modes = flag(&args, "--modes")?
        .unwrap_or_else(|| "guided".into())
        .split(',')
        .map(|m| m.parse::<Mode>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--modes: {e}"))?;
    let temperatures = flag(&args, "--temps")?
        .unwrap_or_else(|| "0".into())
        .split(',')
        .map(|t| {
            t.parse::<f32>()
                .ok()
                .filter(|t| (0.0..=2.0).contains(t))
                .ok_or(format!("--temps: {t:?} is not a temperature in 0..=2"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let seeds = flag(&args, "--seeds")?.map_or(Ok(1), |s| {
        s.parse::<u32>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or(format!("--seeds: {s:?} is not a positive integer"))
    })?;
    let (model_path, model_name) = match flag(&args, "--model")?.as_deref() {
        None | Some("0.5b") => (
            root.join("models/qwen2.5-coder-0.5b.gguf"),
            "qwen2.5-coder-0.5b".to_owned(),
        ),
        Some("1.5b") => (
            root.join("models/qwen2.5-coder-1.5b.gguf"),
            "qwen2.5-coder-1.5b".to_owned(),
        ),
        Some(path) => {
            let p = PathBuf::from(path);
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .ok_or(format!("--model: {path:?} names no file"))?;
            (p, name)
        }
    };
    forge_llama::inspect::quick_check(&model_path).map_err(|e| format!("--model: {e}"))?;
    let out = flag(&args, "--out")?
        .map(PathBuf::from)
        .unwrap_or_else(|| eval::out_dir(&root.join("evidence/eval"), &model_name));
    let note = flag(&args, "--note")?.unwrap_or_default();
    let parallel = flag(&args, "--parallel")?.map_or(Ok(1), |s| {
        s.parse::<usize>()
            .ok()
            .filter(|n| (1..=16).contains(n))
            .ok_or(format!("--parallel: {s:?} is not 1..=16"))
    })?;
    let threads = flag(&args, "--threads")?
        .map(|s| s.parse::<i32>().ok().filter(|n| (1..=64).contains(n)).ok_or(format!("--threads: {s:?} is not 1..=64")))
        .transpose()?;
    let wall_clock_s = flag(&args, "--wall-clock-s")?
        .map(|s| s.parse::<u64>().ok().filter(|n| (1..=86_400).contains(n)).ok_or(format!("--wall-clock-s: {s:?} is not 1..=86400")))
        .transpose()?;
    let url = flag(&args, "--url")?;
    let (backend, start_server) = match flag(&args, "--backend")?.as_deref() {
        None | Some("in-process") => {
            if url.is_some() {
                return Err("--url needs --backend llama-server".into());
            }
            (BackendConfig::InProcess, false)
        }
        Some("llama-server") => match &url {
            Some(u) => (
                BackendConfig::LlamaServer(HttpConfig::new(u.clone())),
                false,
            ),
            None => (
                BackendConfig::LlamaServer(HttpConfig::new("http://127.0.0.1:0")),
                true,
            ),
        },
        Some(other) => {
            return Err(format!(
                "--backend: unknown backend {other:?} (in-process or llama-server)"
            ));
        }
    };
    if parallel > 1 && matches!(backend, BackendConfig::InProcess) {
        return Err(format!(
            "--parallel {parallel} needs --backend llama-server (one in-process model decodes one run at a time)"
        ));
    }
    let plan = Plan {
        tasks,
        modes,
        temperatures,
        seeds,
        model_path,
        model_name,
        tasks_dir,
        knowledge_dir: root.join("knowledge"),
        backend,
        parallel,
        threads,
        wall_clock_s,
    };
    Ok(Parsed {
        plan,
        out,
        fresh: args.iter().any(|a| a == "--fresh"),
        report_only: args.iter().any(|a| a == "--report-only"),
        require_scoring: args.iter().any(|a| a == "--require-scoring"),
        note,
        start_server,
    })
}

fn main() -> ExitCode {
    let Parsed {
        mut plan,
        out,
        fresh,
        report_only,
        require_scoring,
        note,
        start_server,
    } = match parse() {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("eval: {message}");
            return ExitCode::from(2);
        }
    };
    if report_only {
        if fresh {
            eprintln!("eval: --report-only reads the records --fresh would delete");
            return ExitCode::from(2);
        }
        let records = match eval::load_records(&out.join("runs.jsonl")) {
            Ok(records) if !records.is_empty() => records,
            Ok(_) => {
                eprintln!("eval: no records in {}", out.join("runs.jsonl").display());
                return ExitCode::from(2);
            }
            Err(e) => {
                eprintln!("eval: {e}");
                return ExitCode::from(2);
            }
        };
        let summaries = eval::summarize(&records);
        if let Err(e) = eval::write_reports(&out, &summaries, &note) {
            eprintln!("eval: {e}");
            return ExitCode::from(1);
        }
        eprintln!("eval: reports rewritten from {} records in {}", records.len(), out.display());
        return ExitCode::SUCCESS;
    }
    // Kept alive for the whole evaluation; dropping it stops the server.
    let _server = if start_server {
        let options = ServerOptions::new(
            server_process::default_binary(&root()),
            &plan.model_path,
            plan.parallel as u32,
        );
        match LlamaServerProcess::start(&options, std::time::Duration::from_secs(300)) {
            Ok(server) => {
                eprintln!(
                    "eval: llama-server with {} slot(s) at {}",
                    plan.parallel,
                    server.url()
                );
                plan.backend = BackendConfig::LlamaServer(server.http_config());
                Some(server)
            }
            Err(e) => {
                eprintln!("eval: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        None
    };
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("eval: cannot create {}: {e}", out.display());
        return ExitCode::from(2);
    }
    let jsonl = out.join("runs.jsonl");
    if fresh {
        let _ = std::fs::remove_file(&jsonl);
    }
    let artifacts = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("eval: no temporary directory: {e}");
            return ExitCode::from(2);
        }
    };
    let bar = indicatif::ProgressBar::new(plan.runs().len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let mut successes = 0u32;
    let mut finished = 0u32;
    let result = eval::execute(
        &plan,
        &jsonl,
        artifacts.path(),
        &mut |done, total, record| {
            finished += 1;
            successes += u32::from(record.task_success == Some(true));
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(format!(
                "{successes}/{finished} ok; last {} {} t={} s{}: {}",
                record.task, record.mode, record.temperature, record.seed, record.stop_reason
            ));
        },
    );
    bar.finish();
    let records = match result {
        Ok(records) => records,
        Err(e) => {
            eprintln!("eval: {e}");
            return ExitCode::from(1);
        }
    };
    let wanted: Vec<_> = plan
        .runs()
        .into_iter()
        .map(|(t, m, temp, s)| (t, m.to_string(), format!("{temp}"), s))
        .collect();
    let selected: Vec<_> = records
        .into_iter()
        .filter(|r| wanted.contains(&r.key()))
        .collect();
    let summaries = eval::summarize(&selected);
    if let Err(e) = eval::write_reports(&out, &summaries, &note) {
        eprintln!("eval: {e}");
        return ExitCode::from(1);
    }
    print!("{}", eval::report_markdown(&summaries, &note));
    eprintln!("eval: wrote {}", out.display());
    let unscored: Vec<String> = selected
        .iter()
        .filter(|r| r.task_success.is_none() && r.status != "cancelled")
        .map(|r| {
            format!(
                "{} ({}; ground truth {})",
                r.task, r.stop_reason, r.ground_truth
            )
        })
        .collect();
    if require_scoring && !unscored.is_empty() {
        eprintln!(
            "eval: scoring failed for {} run(s): {}",
            unscored.len(),
            unscored.join(", ")
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
