//! `runner`: serve the loopback service and page, run one task from the terminal, or inspect a model.
//!
//! Wiring only: the service lives in `forge_server`, the loop in `runtime`, the model in `forge_llama`.

mod provider;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use forge_server::run_bridge::{
    Executor, PolicyChoice, RunSpec, RuntimeExecutor, budgets_from_json, budgets_json,
};
use forge_server::{Mode, ServerConfig, Service};
use serde_json::Value;

#[derive(Parser)]
#[command(
    name = "runner",
    version,
    about = "Forge's local ReAct runner: a llama.cpp model proposes, the runtime decides"
)]
struct Cli {
    /// Project root (fixtures/, knowledge/, schemas/, .runs/). Default: $FORGE_ROOT, else found from the current directory.
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the HTTP API and the web page on 127.0.0.1 (loopback only unless --allow-remote).
    Serve(ServeArgs),
    /// Run one task in this process and print its trace and result.
    Run(RunArgs),
    /// Print the facts of a GGUF model file.
    Inspect(ModelArgs),
}

/// Where generation happens: this process (default) or an inference server.
#[derive(clap::Args)]
struct BackendArgs {
    /// in-process | llama-server (native /completion: the runner's prompt, prefill and grammar) |
    /// openai-chat (/v1/chat/completions with a JSON schema, e.g. vLLM; no prefill)
    #[arg(long, default_value = "in-process")]
    backend: String,
    /// Server URL for llama-server / openai-chat, e.g. http://127.0.0.1:8080
    #[arg(long)]
    url: Option<String>,
    /// Longest silence tolerated from the server, in seconds (queueing and prompt processing included).
    #[arg(long, default_value_t = 120)]
    server_stall_s: u64,
}

impl BackendArgs {
    fn config(&self) -> Result<forge_llama::BackendConfig> {
        let mut config = forge_llama::BackendConfig::from_kind(&self.backend, self.url.as_deref())
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        match &mut config {
            forge_llama::BackendConfig::LlamaServer(h)
            | forge_llama::BackendConfig::OpenaiChat { http: h, .. } => {
                h.stall_timeout_ms = self.server_stall_s.max(1) * 1000;
            }
            forge_llama::BackendConfig::InProcess => {}
        }
        Ok(config)
    }
}

#[derive(clap::Args)]
struct ModelArgs {
    /// GGUF model file (default: <model-dir>/<default model file>).
    #[arg(long)]
    gguf: Option<PathBuf>,
    /// Directory holding the default model (default: <root>/models).
    #[arg(long)]
    model_dir: Option<PathBuf>,
}

#[derive(clap::Args)]
struct ServeArgs {
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    #[arg(long, default_value_t = forge_server::DEFAULT_PORT)]
    port: u16,
    /// Bind a non-loopback --host. The API has no authentication and runs tools on this machine.
    /// Requests must still name an allowed Host (loopback, the bound IP, or --allow-host).
    #[arg(long)]
    allow_remote: bool,
    /// A host name requests may carry in their Host header besides loopback names and the bound
    /// address (repeatable), e.g. forge.lan. Everything else is refused (DNS-rebinding protection).
    #[arg(long = "allow-host")]
    allow_host: Vec<String>,
    /// Allow cross-origin requests from this exact origin (repeatable), e.g. https://example.org
    #[arg(long = "allow-origin")]
    allow_origin: Vec<String>,
    #[command(flatten)]
    model: ModelArgs,
    /// The backend every run uses.
    #[command(flatten)]
    backend: BackendArgs,
    /// Accept `policy: "scripted:fixtures/…"` in run requests (browser and HTTP tests only).
    #[arg(long)]
    enable_test_policies: bool,
    /// Where runs are stored (default: <root>/.runs).
    #[arg(long)]
    runs_dir: Option<PathBuf>,
    /// Runs that may wait behind the running one (more are refused with 429).
    #[arg(long, default_value_t = 8)]
    queue_capacity: usize,
    /// On SIGTERM/Ctrl-C, seconds open HTTP requests may take to finish before they are closed.
    #[arg(long, default_value_t = forge_server::DRAIN_LIMIT.as_secs())]
    drain_limit_s: u64,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    Guided,
    Free,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PolicyArg {
    Model,
    Scripted,
}

#[derive(clap::Args)]
struct RunArgs {
    #[arg(long, value_enum, default_value = "guided")]
    mode: ModeArg,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    backend: BackendArgs,
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// Print every event and the result as JSON lines instead of text.
    #[arg(long)]
    json: bool,
    #[arg(long, value_enum, default_value = "model")]
    policy: PolicyArg,
    /// Scripted fixture (with --policy scripted), e.g. fixtures/happy.json.
    #[arg(long)]
    fixture: Option<PathBuf>,
    /// Task folder name under fixtures/tasks/ (default: the first folder that loads, in sorted order).
    #[arg(long)]
    task: Option<String>,
    /// Budget overrides as JSON, e.g. '{"max_steps": 8}'.
    #[arg(long)]
    budgets: Option<String>,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let explicit = cli
        .root
        .or_else(|| std::env::var_os("FORGE_ROOT").map(PathBuf::from));
    let root = find_root(explicit.as_deref())?;
    match cli.command {
        Command::Serve(args) => serve(&root, args),
        Command::Run(args) => run(&root, args),
        Command::Inspect(args) => {
            let path = model_path(&root, &args);
            let info = forge_llama::inspect(&path).map_err(|e| anyhow::anyhow!("{e}"))?;
            println!("{}", serde_json::to_string_pretty(&info)?);
            Ok(())
        }
    }
}

/// `--root`, else the nearest ancestor of the current directory with Cargo.toml and fixtures/tasks,
/// else the source tree this binary was built from.
fn find_root(explicit: Option<&Path>) -> Result<PathBuf> {
    let is_root =
        |p: &Path| p.join("Cargo.toml").is_file() && p.join("fixtures").join("tasks").is_dir();
    if let Some(r) = explicit {
        if !is_root(r) {
            bail!(
                "--root {} does not hold Cargo.toml and fixtures/tasks/",
                r.display()
            );
        }
        return Ok(r.canonicalize()?);
    }
    let cwd = std::env::current_dir()?;
    for dir in cwd.ancestors() {
        if is_root(dir) {
            return Ok(dir.to_path_buf());
        }
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if is_root(&built) {
        return Ok(built.canonicalize()?);
    }
    bail!("cannot find the Forge project root; run inside the project or pass --root")
}

fn abs_path(root: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    }
}

/// `--model-dir`, else the directory of the default model (`<root>/models`).
fn model_dir(root: &Path, args: &ModelArgs) -> PathBuf {
    match &args.model_dir {
        Some(dir) => abs_path(root, dir),
        None => root.join(
            Path::new(forge_llama::DEFAULT_MODEL_PATH)
                .parent()
                .expect("default model path has a directory"),
        ),
    }
}

fn model_path(root: &Path, args: &ModelArgs) -> PathBuf {
    if let Some(g) = &args.gguf {
        return abs_path(root, g);
    }
    let default = Path::new(forge_llama::DEFAULT_MODEL_PATH);
    model_dir(root, args).join(
        default
            .file_name()
            .expect("default model path has a file name"),
    )
}

fn serve(root: &Path, args: ServeArgs) -> Result<()> {
    let addr = forge_server::bind_address(&args.host, args.port, args.allow_remote)
        .map_err(anyhow::Error::msg)?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "WARNING: serving on {addr}, reachable from other machines. The API has no authentication and runs tools here."
        );
    }
    let model = model_path(root, &args.model);
    let backend_config = args.backend.config()?;
    if let Some(url) = backend_config.url() {
        eprintln!("runs generate on {} at {url}", backend_config.kind());
    } else if !model.is_file() {
        eprintln!(
            "note: no model file at {} yet (cargo xtask model fetch); runs will end failed/model_unavailable",
            model.display()
        );
    }
    let mut config = ServerConfig::new(root);
    if let Some(r) = args.runs_dir {
        config.runs_dir = if r.is_absolute() { r } else { root.join(r) };
    }
    config.enable_test_policies = args.enable_test_policies;
    config.allow_remote = args.allow_remote;
    config.allowed_hosts = args
        .allow_host
        .iter()
        .map(|h| forge_server::check_allowed_host(h))
        .collect::<Result<_, _>>()
        .map_err(anyhow::Error::msg)?;
    config.allowed_origins = args
        .allow_origin
        .iter()
        .map(|o| forge_server::check_allowed_origin(o))
        .collect::<Result<_, _>>()
        .map_err(anyhow::Error::msg)?;
    config.jobs.queue_capacity = args.queue_capacity;
    config.drain_limit = std::time::Duration::from_secs(args.drain_limit_s);
    config.inspect_scope = forge_server::InspectScope {
        models_dir: model_dir(root, &args.model),
        files: args.model.gguf.iter().map(|g| abs_path(root, g)).collect(),
    };
    let provider = Arc::new(provider::LlamaProvider {
        root: root.to_path_buf(),
        default_model: model,
        backend: backend_config,
        models_dir: model_dir(root, &args.model),
        gguf_flag: args.model.gguf.as_ref().map(|g| abs_path(root, g)),
    });
    let service = Service::start(config, provider).map_err(|e| anyhow::anyhow!("{e}"))?;
    let rec = &service.recovery;
    if rec.loaded > 0 || !rec.discarded.is_empty() {
        eprintln!(
            "reloaded {} runs ({} sealed as interrupted, {} completed from their own files, {} damaged and repaired, {} torn event lines dropped, {} never-accepted directories removed)",
            rec.loaded,
            rec.interrupted.len(),
            rec.completed_from_disk.len(),
            rec.damaged.len(),
            rec.torn_event_lines,
            rec.discarded.len()
        );
        for (id, damage) in &rec.damaged {
            eprintln!("  {id}: {}", damage.join("; "));
        }
    }
    if args.enable_test_policies {
        eprintln!(
            "test policies enabled: run requests may use policy \"scripted:fixtures/<file>.json\""
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let served = rt.block_on(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot bind {addr}"))?;
        let local = listener.local_addr()?;
        let shown = if local.ip().is_ipv6() { format!("[{}]:{}", local.ip(), local.port()) } else { local.to_string() };
        let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
        let mut int = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
        let (first_tx, first_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            // The first SIGTERM or Ctrl-C starts the ordered shutdown; a second one ends the process at once.
            tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
            eprintln!("shutting down: cancelling the running run, sealing queued runs (signal again to exit at once)");
            let _ = first_tx.send(());
            tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
            eprintln!("second signal: exiting now; the next start-up seals what was left unfinished");
            std::process::exit(130);
        });
        println!("Forge runner listening on http://{shown}/");
        service
            .serve(listener, async {
                let _ = first_rx.await;
            })
            .await
            .context("server stopped with an error")
    });
    // A blocking task the shutdown gave up waiting for must not hold the process open.
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    served
}

fn run(root: &Path, args: RunArgs) -> Result<()> {
    let mode = match args.mode {
        ModeArg::Guided => Mode::Guided,
        ModeArg::Free => Mode::Free,
    };
    let budgets_value: Value = match &args.budgets {
        Some(text) => serde_json::from_str(text).context("--budgets is not JSON")?,
        None => Value::Null,
    };
    let budgets = budgets_from_json(&budgets_value).map_err(|errs| {
        anyhow::anyhow!(
            "invalid budgets: {}",
            errs.iter()
                .map(|e| format!("{}: {}", e.field, e.message))
                .collect::<Vec<_>>()
                .join("; ")
        )
    })?;
    let policy = match args.policy {
        PolicyArg::Model => PolicyChoice::Model,
        PolicyArg::Scripted => {
            let f = args
                .fixture
                .as_ref()
                .context("--policy scripted needs --fixture FILE")?;
            let abs = if f.is_absolute() {
                f.clone()
            } else {
                std::env::current_dir()?.join(f)
            };
            PolicyChoice::Scripted {
                fixture: abs.display().to_string(),
            }
        }
    };
    let tasks_dir = root.join("fixtures").join("tasks");
    let task = match args.task.clone() {
        Some(t) => t,
        None => forge_server::tasks::default_task(&tasks_dir, &root.join("knowledge"))
            .context("no task folder under fixtures/tasks/ loads; pass --task NAME")?,
    };
    let spec = RunSpec {
        task,
        mode,
        temperature: args.temperature,
        budgets: budgets_json(&budgets),
        policy,
        model: None,
        tool_timeout_seconds: None,
    };
    let run_id = format!("run-cli-{}", forge_server::jobs::now_ms());
    let artifact_dir = root.join(".runs").join("cli").join(&run_id);
    std::fs::create_dir_all(&artifact_dir)?;
    let provider = Arc::new(provider::LlamaProvider {
        root: root.to_path_buf(),
        default_model: model_path(root, &args.model),
        backend: args.backend.config()?,
        models_dir: model_dir(root, &args.model),
        gguf_flag: None,
    });
    let executor = RuntimeExecutor {
        root: root.to_path_buf(),
        tasks_dir,
        knowledge_dir: root.join("knowledge"),
        provider,
    };
    let json = args.json;
    let mut sink = |event: Value| {
        if json {
            println!("{event}");
        } else {
            let data = event.get("data").map(|d| d.to_string()).unwrap_or_default();
            let short: String = data.chars().take(160).collect();
            println!(
                "#{:<3} step {:<2} {:<24} {}",
                event["seq"],
                event["step"],
                event["phase"].as_str().unwrap_or(""),
                short
            );
        }
    };
    let result = executor
        .execute(
            &run_id,
            &spec,
            &artifact_dir,
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
            &mut sink,
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if json {
        println!("{}", serde_json::json!({ "result": result }));
    } else {
        println!("{}", serde_json::to_string_pretty(&result)?);
        // The claims gate's verdict on the answer, one line per claim: an abstention reads as one.
        if let Some(verification) = result.get("verification").filter(|v| !v.is_null()) {
            println!(
                "verification: {}",
                verification["status"].as_str().unwrap_or("?")
            );
            for claim in verification["claims"].as_array().into_iter().flatten() {
                let field = |k: &str| claim[k].as_str().unwrap_or_default().to_owned();
                println!(
                    "  {} = {} — {}: {}",
                    field("part"),
                    field("stated"),
                    field("status"),
                    field("detail")
                );
            }
        }
        println!("artifacts: {}", artifact_dir.display());
    }
    let completed = result.get("status").and_then(Value::as_str) == Some("completed");
    std::process::exit(if completed { 0 } else { 1 });
}
