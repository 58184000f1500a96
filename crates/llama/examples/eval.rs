//! `cargo xtask eval` runs this: the task suite through the real model — and, beside it, the grammar-only
//! policy (same grammars and runtime, tokens drawn uniformly among what the grammar allows) — resumable, with a
//! progress bar; writes `<out>/runs.jsonl`, `summary.json`, `report.md` and `success.png`. Measures; asserts
//! nothing about the score — it exits non-zero only when scoring itself failed (`--require-scoring`).
//! `eval --help` lists every option. `--report-only` runs nothing: it rewrites the reports from every record
//! already in `<out>/runs.jsonl` (evaluations of several configurations in one report). With `--backend
//! llama-server` and no `--url`, a llama-server (`cargo xtask llama-tools`) is started with `-np N` slots for
//! the evaluation and stopped after it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use forge_decoding::Mode;
use forge_decoding::backend::BackendConfig;
use forge_decoding::generation::Chooser;
use forge_decoding::grammar::AnswerForm;
use forge_decoding::http_client::HttpConfig;
use forge_decoding::server_process::{self, LlamaServerProcess, ServerOptions};
use forge_llama::eval::{self, Plan};

/// Evaluate the task suite: tasks × policies × modes × temperatures × seeds, every run scored by its metrics.
#[derive(Debug, Parser)]
#[command(name = "eval")]
struct Cli {
    /// Task folder names, comma-separated, or `all`.
    #[arg(long, default_value = "all")]
    tasks: String,
    /// The folder holding the task folders (a suite of your own; default: fixtures/tasks).
    #[arg(long)]
    tasks_dir: Option<PathBuf>,
    /// The knowledge folder those tasks read (default: knowledge).
    #[arg(long)]
    knowledge_dir: Option<PathBuf>,
    /// Who chooses tokens, comma-separated: `model`, `grammar-only` (uniform among what the grammar allows).
    #[arg(long, default_value = "model,grammar-only")]
    policies: String,
    /// Modes, comma-separated: `guided`, `free`.
    #[arg(long, default_value = "guided")]
    modes: String,
    /// Sampling temperatures of the model, comma-separated, each in 0..=2.
    #[arg(long, default_value = "0")]
    temps: String,
    /// Seeds per configuration (pass^k is computed over them).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    seeds: u32,
    /// `0.5b`, `1.5b` or a GGUF path.
    #[arg(long, default_value = "0.5b")]
    model: String,
    /// Output folder (default: evidence/eval/<model name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Delete earlier records in the output folder before running.
    #[arg(long)]
    fresh: bool,
    /// Exit non-zero when a run could not be scored.
    #[arg(long)]
    require_scoring: bool,
    /// Stop reasons that make the evaluation exit non-zero, comma-separated (e.g. `runtime_error`): for smoke
    /// runs that must prove a path works, not measure how well.
    #[arg(long, default_value = "")]
    fail_on: String,
    /// Rewrite the reports from the records already in the output folder; run nothing.
    #[arg(long)]
    report_only: bool,
    /// A line for the top of the report (what was run, on which code).
    #[arg(long, default_value = "")]
    note: String,
    /// Where generation runs: `in-process` or `llama-server`.
    #[arg(long, default_value = "in-process")]
    backend: String,
    /// The llama-server URL (without it, one is started for the evaluation).
    #[arg(long)]
    url: Option<String>,
    /// Runs in flight at once (needs a server backend).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
    parallel: u16,
    /// CPU threads of the in-process engine.
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=64))]
    threads: Option<i32>,
    /// How the model writes a final answer: `slots` or `sentence` (default: the catalogue's choice for the model)
    #[arg(long)]
    answer_form: Option<String>,
    /// Each run's wall-clock budget in seconds.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    wall_clock_s: Option<u64>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

struct Parsed {
    plan: Plan,
    fail_on: Vec<String>,
    out: PathBuf,
    fresh: bool,
    report_only: bool,
    require_scoring: bool,
    note: String,
    /// Start a llama-server for the evaluation (a server backend without `--url`).
    start_server: bool,
}

fn split(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty())
}

fn parse(cli: Cli) -> Result<Parsed, String> {
    let root = root();
    let tasks_dir = cli.tasks_dir.unwrap_or_else(|| root.join("fixtures/tasks"));
    let knowledge_dir = cli.knowledge_dir.unwrap_or_else(|| root.join("knowledge"));
    let tasks = match cli.tasks.as_str() {
        "all" => eval::all_tasks(&tasks_dir).map_err(|e| e.to_string())?,
        list => split(list).map(str::to_owned).collect(),
    };
    for task in &tasks {
        if !tasks_dir.join(task).join("task.json").is_file() {
            return Err(format!(
                "--tasks: no task folder {}",
                tasks_dir.join(task).display()
            ));
        }
    }
    let choosers = split(&cli.policies)
        .map(|p| match p {
            "model" => Ok(Chooser::Model),
            "grammar-only" => Ok(Chooser::GrammarUniform),
            other => Err(format!(
                "--policies: unknown policy {other:?} (model, grammar-only)"
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if choosers.is_empty() {
        return Err("--policies: name at least one of model, grammar-only".into());
    }
    let modes = split(&cli.modes)
        .map(|m| m.parse::<Mode>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--modes: {e}"))?;
    let temperatures = split(&cli.temps)
        .map(|t| {
            t.parse::<f32>()
                .ok()
                .filter(|t| (0.0..=2.0).contains(t))
                .ok_or(format!("--temps: {t:?} is not a temperature in 0..=2"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (model_path, model_name) = match cli.model.as_str() {
        "0.5b" => (
            root.join("models/qwen2.5-coder-0.5b.gguf"),
            "qwen2.5-coder-0.5b".to_owned(),
        ),
        "1.5b" => (
            root.join("models/qwen2.5-coder-1.5b.gguf"),
            "qwen2.5-coder-1.5b".to_owned(),
        ),
        path => {
            let p = PathBuf::from(path);
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .ok_or(format!("--model: {path:?} names no file"))?;
            (p, name)
        }
    };
    forge_model::inspect::quick_check(&model_path).map_err(|e| format!("--model: {e}"))?;
    let out = cli
        .out
        .unwrap_or_else(|| eval::out_dir(&root.join("evidence/eval"), &model_name));
    let parallel = usize::from(cli.parallel);
    let (backend, start_server) = match cli.backend.as_str() {
        "in-process" => {
            if cli.url.is_some() {
                return Err("--url needs --backend llama-server".into());
            }
            (BackendConfig::InProcess, false)
        }
        "llama-server" => match &cli.url {
            Some(u) => (
                BackendConfig::LlamaServer(HttpConfig::new(u.clone())),
                false,
            ),
            None => (
                BackendConfig::LlamaServer(HttpConfig::new("http://127.0.0.1:0")),
                true,
            ),
        },
        other => {
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
    if choosers.contains(&Chooser::GrammarUniform) && !matches!(backend, BackendConfig::InProcess) {
        return Err(
            "--policies grammar-only runs in process: add --policies model with a server backend"
                .into(),
        );
    }
    if cli.report_only && cli.fresh {
        return Err("--report-only reads the records --fresh would delete".into());
    }
    let plan = Plan {
        tasks,
        choosers,
        modes,
        temperatures,
        seeds: cli.seeds,
        model_path,
        model_name,
        tasks_dir,
        knowledge_dir,
        backend,
        parallel,
        threads: cli.threads,
        answer_form: match cli.answer_form.as_deref() {
            None => None,
            Some("slots") => Some(AnswerForm::Slots),
            Some("sentence") => Some(AnswerForm::Sentence),
            Some(other) => {
                return Err(format!(
                    "--answer-form: unknown form {other:?} (slots or sentence)"
                ));
            }
        },
        wall_clock_s: cli.wall_clock_s,
    };
    Ok(Parsed {
        plan,
        fail_on: split(&cli.fail_on).map(str::to_owned).collect(),
        out,
        fresh: cli.fresh,
        report_only: cli.report_only,
        require_scoring: cli.require_scoring,
        note: cli.note,
        start_server,
    })
}

fn main() -> ExitCode {
    let Parsed {
        mut plan,
        fail_on,
        out,
        fresh,
        report_only,
        require_scoring,
        note,
        start_server,
    } = match parse(Cli::parse()) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("eval: {message}");
            return ExitCode::from(2);
        }
    };
    if report_only {
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
        eprintln!(
            "eval: reports rewritten from {} records in {}",
            records.len(),
            out.display()
        );
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
                "{successes}/{finished} ok; last {} {} {} t={} s{}: {}",
                record.task,
                record.policy,
                record.mode,
                record.temperature,
                record.seed,
                record.stop_reason
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
    let wanted: Vec<eval::RunKey> = plan.runs().iter().map(eval::PlannedRun::key).collect();
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
    let failed: Vec<String> = selected
        .iter()
        .filter(|r| fail_on.contains(&r.stop_reason))
        .map(|r| {
            format!(
                "{} {} {} ({}: {})",
                r.task,
                r.policy,
                r.mode,
                r.stop_reason,
                r.error.as_deref().unwrap_or("")
            )
        })
        .collect();
    if !failed.is_empty() {
        eprintln!(
            "eval: {} run(s) ended with a stop reason in --fail-on: {}",
            failed.len(),
            failed.join("; ")
        );
        return ExitCode::from(1);
    }
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
