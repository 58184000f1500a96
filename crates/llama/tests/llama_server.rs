//! The server backends against a real llama-server started by each test (0.5B model, `-np 2`), and against
//! fake endpoints (a tiny TcpListener) that send garbage or stall.
//!
//! Real-server tests need `target/llama-tools/llama-server` (`cargo xtask llama-tools`, which
//! scripts/test-all.sh runs first) and the model; without them they are skipped with a message, and fail
//! under FORGE_REQUIRE_MODEL=1. The fake-endpoint tests always run (no model, no llama-server).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use forge_decoding::backend::{BackendConfig, BackendRequest};
use forge_decoding::generation::{EngineSettings, Finish, GrammarMode, Sampling};
use forge_decoding::http_client::HttpConfig;
use forge_decoding::server_process::{self, LlamaServerProcess, ServerOptions};
use forge_llama::task_run::{self, ModelRun};
use forge_llama::{Mode, ModelPolicySettings};
use runtime::policy::{RunControl, TokenShare};
use runtime::{RunStatus, StopReason};

/// The language data's verdict words (what a task without `verdict_phrases` uses).
static PHRASES_DEFAULT: std::sync::LazyLock<runtime::answer::VerdictPhrases> =
    std::sync::LazyLock::new(Default::default);

/// The llama-server binary and the model, or a skip (a failure under FORGE_REQUIRE_MODEL=1).
fn tools_or_skip(test: &str) -> Option<(PathBuf, PathBuf)> {
    let model = common::model_or_skip(test)?;
    let binary = server_process::default_binary(&common::workspace_root());
    if binary.is_file() {
        return Some((binary, model));
    }
    if std::env::var("FORGE_REQUIRE_MODEL").is_ok_and(|v| v == "1") {
        panic!(
            "{test}: FORGE_REQUIRE_MODEL=1 but {} is missing; run `cargo xtask llama-tools`",
            binary.display()
        );
    }
    eprintln!(
        "SKIPPED {test}: needs {} (run `cargo xtask llama-tools`)",
        binary.display()
    );
    None
}

fn start_server(binary: PathBuf, model: PathBuf, parallel: u32) -> LlamaServerProcess {
    let opts = ServerOptions::new(binary, model, parallel);
    LlamaServerProcess::start(&opts, Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("llama-server did not start: {e}"))
}

fn server_config(
    model: &std::path::Path,
    mode: Mode,
    backend: BackendConfig,
) -> ModelPolicySettings {
    let mut c = ModelPolicySettings::new(model, mode);
    c.backend = backend;
    c
}

fn run_task(name: &str, config: ModelPolicySettings, control: Option<RunControl>) -> ModelRun {
    let root = common::workspace_root();
    let artifacts = tempfile::tempdir().unwrap();
    let mut spec = task_run::spec_for(&root, "agent_eval_mini", name, artifacts.path());
    // These tests are about completing and about typed errors, not speed: on a loaded 2-core machine
    // (CI beside an evaluation) two runs sharing one server took over the default 300 s.
    spec.budgets.wall_clock_s = 1800;
    let control = control.unwrap_or_else(|| task_run::control_for(&spec.budgets));
    task_run::run_with_model(&spec, config, &control, &mut |_| {}).unwrap()
}

fn describe(run: &ModelRun) -> String {
    let r = &run.result;
    format!(
        "{:?}/{:?} in {:.1}s, task_success={:?}, error={:?}, answer={:?}",
        r.status,
        r.stop_reason,
        run.wall_ms / 1e3,
        r.metrics.as_ref().and_then(|m| m.task_success),
        r.error,
        r.final_answer
    )
}

/// The tools record how llama-cpp-sys-2 compiled the llama.cpp they link, which is the runner's: ggml's kernels
/// at -O3, libllama and common at -O1, common in unity batches (xtask/llama-tools/optimisation.cmake, passed by
/// scripts/lib.sh).
#[test]
fn the_linked_llama_cpp_has_its_kernels_at_o3_and_the_rest_at_o1() {
    let Some((binary, _)) =
        tools_or_skip("the_linked_llama_cpp_has_its_kernels_at_o3_and_the_rest_at_o1")
    else {
        return;
    };
    let manifest = binary.with_file_name("manifest.json");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let levels = &manifest["llama_cpp_optimisation"];
    for (target, level) in [
        ("ggml-base", "-O3"),
        ("ggml-cpu", "-O3"),
        ("llama", "-O1"),
        ("llama-common", "-O1"),
        ("cpp-httplib", "-O1"),
    ] {
        assert_eq!(levels[target], level, "{target} in {levels}");
    }
    // common is compiled in unity batches with json.cpp on its own (its JSON_ASSERT must not leak); ggml is not batched.
    let unity = &manifest["llama_cpp_unity_builds"];
    assert_eq!(
        unity["llama-common"],
        serde_json::json!(["json.cpp"]),
        "{unity}"
    );
    assert!(
        unity["ggml-cpu"].is_null() && unity["llama"].is_array(),
        "{unity}"
    );
}

/// Two guided runs at once on a server with two slots: each completes with task success, its tokens and timings
/// come from the server, and the server's prompt cache reuses the shared prefix after each run's first decision.
/// (One run alone takes the same path; the single-run test this replaced spent 19 s re-proving it.)
#[test]
fn two_guided_runs_in_parallel_on_two_slots_both_succeed() {
    let _serial = common::serial();
    let Some((binary, model)) =
        tools_or_skip("two_guided_runs_in_parallel_on_two_slots_both_succeed")
    else {
        return;
    };
    let server = start_server(binary, model.clone(), 2);
    let runs: Vec<ModelRun> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let config = server_config(
                    &model,
                    Mode::Guided,
                    BackendConfig::LlamaServer(server.http_config()),
                );
                s.spawn(move || run_task(&format!("server-parallel-{i}"), config, None))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("run thread"))
            .collect()
    });
    for (i, run) in runs.iter().enumerate() {
        eprintln!("parallel run {i}: {}", describe(run));
        for d in &run.decisions {
            eprintln!("  {d:?}");
        }
        let r = &run.result;
        assert_eq!(
            (r.status, r.stop_reason),
            (RunStatus::Completed, StopReason::Completed),
            "run {i}: {}",
            describe(run)
        );
        assert_eq!(
            r.metrics.as_ref().and_then(|m| m.task_success),
            Some(true),
            "run {i}: {}",
            describe(run)
        );
        assert!(
            run.decisions
                .iter()
                .all(|d| d.input_tokens > 0 && d.output_tokens > 0),
            "run {i}: {:?}",
            run.decisions
        );
        assert!(
            run.decisions.iter().skip(1).any(|d| d.reused_tokens > 0),
            "run {i}: {:?}",
            run.decisions
        );
        // Per-token masks are the server's: the share is unknown, not estimated.
        assert!(
            run.decisions
                .iter()
                .all(|d| matches!(&d.share, TokenShare::Unknown { reason } if reason.starts_with("llama-server:"))),
            "run {i}: {:?}",
            run.decisions
        );
        assert_eq!(r.metrics.as_ref().and_then(|m| m.forced_share), None);
    }
}

#[test]
fn server_killed_mid_run_ends_the_run_with_a_typed_error_and_the_caller_goes_on() {
    let _serial = common::serial();
    let Some((binary, model)) = tools_or_skip(
        "server_killed_mid_run_ends_the_run_with_a_typed_error_and_the_caller_goes_on",
    ) else {
        return;
    };
    let server = start_server(binary, model.clone(), 2);
    let pid = server.pid();
    let http = server.http_config();
    let config = server_config(
        &model,
        Mode::Guided,
        BackendConfig::LlamaServer(http.clone()),
    );
    let root = common::workspace_root();
    let artifacts = tempfile::tempdir().unwrap();
    let spec = task_run::spec_for(&root, "agent_eval_mini", "server-killed", artifacts.path());
    let control = task_run::control_for(&spec.budgets);
    // SIGKILL the server shortly after the second decision starts: mid-prompt or mid-generation.
    let mut model_calls = 0;
    let mut killer = None;
    let mut phases = Vec::new();
    let run = task_run::run_with_model(&spec, config, &control, &mut |e| {
        phases.push(e.phase.clone());
        if e.phase == "model.started" {
            model_calls += 1;
            if model_calls == 2 {
                killer = Some(std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(300));
                    std::process::Command::new("kill")
                        .args(["-9", &pid.to_string()])
                        .status()
                        .expect("kill runs")
                }));
            }
        }
    })
    .unwrap();
    let killed = killer.map(|k| k.join().unwrap().success()).unwrap_or(false);
    eprintln!(
        "run with llama-server (pid {pid}) killed: {} phases={phases:?}",
        describe(&run)
    );
    assert!(
        killed,
        "the run never reached its second decision: {phases:?}"
    );
    let r = &run.result;
    assert_eq!(
        (r.status, r.stop_reason),
        (RunStatus::Failed, StopReason::ModelUnavailable),
        "{}",
        describe(&run)
    );
    let error = r.error.as_ref().expect("a typed error");
    assert_eq!(error.code, "model_unavailable", "{error:?}");
    assert!(error.message.contains(&http.url), "{error:?}");
    assert_eq!(phases.last().map(String::as_str), Some("run.finished"));

    // The caller is still here: a new run against the dead URL fails the same typed way, at once.
    // (Refused once the socket is gone; "reset by peer" when the connect races the killed process's teardown.)
    let again = run_task(
        "server-dead",
        server_config(
            &model,
            Mode::Guided,
            BackendConfig::LlamaServer(http.clone()),
        ),
        None,
    );
    assert_eq!(
        (again.result.status, again.result.stop_reason),
        (RunStatus::Failed, StopReason::ModelUnavailable)
    );
    let message = &again.result.error.as_ref().unwrap().message;
    assert!(message.contains(&http.url), "{}", describe(&again));
    assert!(
        ["connection refused", "reset by peer"]
            .iter()
            .any(|m| message.to_lowercase().contains(m)),
        "{}",
        describe(&again)
    );
}

#[test]
fn openai_chat_backend_against_llama_servers_v1_endpoint() {
    let _serial = common::serial();
    let Some((binary, model)) =
        tools_or_skip("openai_chat_backend_against_llama_servers_v1_endpoint")
    else {
        return;
    };
    let server = start_server(binary, model.clone(), 2);
    let config = BackendConfig::OpenaiChat {
        http: HttpConfig::new(format!("{}/v1", server.url())),
        model: None,
    };

    // One schema-constrained generation: the answer is JSON of that schema, with token counts from `usage`.
    let mut b =
        forge_llama::open_backend(&config, &model, EngineSettings::default()).expect("connects");
    assert!(b.describe().starts_with("openai-chat"), "{}", b.describe());
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 20}, "population": {"type": "integer"}},
        "required": ["city", "population"], "additionalProperties": false
    });
    let request = BackendRequest {
        system: "You answer with JSON only.",
        user: "Name a large city and its population.",
        prefill: "",
        grammar: Some("root ::= \"{}\""), // ignored by this backend: it sends the schema
        json_schema: Some(&schema),
        grammar_mode: GrammarMode::CheckFirst,
        sampling: Sampling::default(),
        max_new_tokens: 64,
        stop_at_json_end: true,
        banned_prefixes: &[],
    };
    let g = b.generate(&request, &mut |_| None).expect("generates");
    eprintln!("openai-chat answer: {g:?}");
    let v: serde_json::Value =
        serde_json::from_str(&g.text).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", g.text));
    assert!(v["city"].is_string() && v["population"].is_i64(), "{v}");
    assert!(g.input_tokens > 0 && g.output_tokens > 0, "{g:?}");
    assert!(
        matches!(g.finish, Finish::JsonComplete | Finish::EndOfGeneration),
        "{g:?}"
    );

    // A whole guided run: the schema carries what the prefill would have written. Whatever the 0.5B model
    // makes of it, the run ends in a known pair and never as a transport failure.
    let run = run_task(
        "openai-guided",
        server_config(&model, Mode::Guided, config),
        None,
    );
    eprintln!("guided run via openai-chat: {}", describe(&run));
    let r = &run.result;
    assert_eq!(r.stop_reason.status(), r.status);
    assert!(
        !matches!(
            r.stop_reason,
            StopReason::ModelUnavailable | StopReason::RuntimeError
        ),
        "{}\nllama-server log tail:\n{}",
        describe(&run),
        server.log_tail()
    );
    assert!(
        r.steps >= 1 && !run.decisions.is_empty(),
        "{}",
        describe(&run)
    );
}

// ---------------------------------------------------------------------------------------------------------
// Fake endpoints: no model, no llama-server.

/// What the fake server does on `/completion`.
#[derive(Clone, Copy)]
enum Completion {
    /// An event stream whose data is not JSON.
    Garbage,
    /// Headers, then nothing (the connection stays open until the test ends).
    Stall,
    /// A well-formed stream whose text is never a decision (every call needs a repair).
    NotADecision,
}

/// A loopback HTTP server that answers `/health`, `/props` and `/apply-template` like llama-server, `/completion`
/// as told, and `/health` with `health_body` when given.
fn fake_server(
    completion: Completion,
    health_body: Option<&'static str>,
) -> (String, Arc<AtomicBool>) {
    let (url, done, _bodies) = recording_fake_server(completion, health_body);
    (url, done)
}

/// The JSON bodies of the `/completion` requests a fake server received, in arrival order.
type Bodies = Arc<std::sync::Mutex<Vec<serde_json::Value>>>;

/// [`fake_server`], also keeping the JSON body of every `/completion` request.
fn recording_fake_server(
    completion: Completion,
    health_body: Option<&'static str>,
) -> (String, Arc<AtomicBool>, Bodies) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let bodies = Arc::new(std::sync::Mutex::new(Vec::new()));
    let stop = done.clone();
    let seen = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let stop = stop.clone();
            let seen = seen.clone();
            std::thread::spawn(move || answer(stream, completion, health_body, &stop, &seen));
        }
    });
    (url, done, bodies)
}

fn answer(
    mut stream: TcpStream,
    completion: Completion,
    health_body: Option<&str>,
    stop: &AtomicBool,
    seen: &std::sync::Mutex<Vec<serde_json::Value>>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
    let json = |s: &mut TcpStream, body: &str| {
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    };
    match path.as_str() {
        "/health" => json(&mut stream, health_body.unwrap_or(r#"{"status":"ok"}"#)),
        "/props" => json(
            &mut stream,
            r#"{"total_slots":1,"model_path":"/somewhere/fake.gguf"}"#,
        ),
        "/apply-template" => json(
            &mut stream,
            r#"{"prompt":"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"}"#,
        ),
        "/completion" => {
            seen.lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null));
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
            );
            match completion {
                Completion::Garbage => {
                    let _ = write!(
                        stream,
                        "data: {{\"content\": \"{{\\\"type\\\"\", \"tokens\": [1]}}\n\ndata: {{not json at all\n\n"
                    );
                }
                Completion::NotADecision => {
                    let _ = write!(
                        stream,
                        "data: {{\"content\": \"no decision here\", \"tokens\": [1, 2, 3], \"stop\": true, \"timings\": {{\"prompt_n\": 10, \"predicted_ms\": 1.0}}}}\n\n"
                    );
                }
                Completion::Stall => {
                    let _ = stream.flush();
                    while !stop.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            }
        }
        _ => {
            let _ = write!(
                stream,
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    }
}

#[test]
fn repairs_run_at_temperature_zero_on_the_wire_and_in_the_trace() {
    let (url, done, bodies) = recording_fake_server(Completion::NotADecision, None);
    let mut config = server_config(
        std::path::Path::new("models/not-needed.gguf"),
        Mode::Guided,
        BackendConfig::LlamaServer(HttpConfig::new(&url)),
    );
    config.temperature = 0.7;
    let root = common::workspace_root();
    let artifacts = tempfile::tempdir().unwrap();
    let spec = task_run::spec_for(&root, "agent_eval_mini", "fake-repair", artifacts.path());
    let control = RunControl::new(Instant::now() + Duration::from_secs(60));
    let mut events = Vec::new();
    let run = task_run::run_with_model(&spec, config, &control, &mut |e| {
        events.push(serde_json::to_value(e).unwrap())
    })
    .unwrap();
    done.store(true, Ordering::SeqCst);
    let r = &run.result;
    assert_eq!(
        (r.status, r.stop_reason),
        (RunStatus::Failed, StopReason::InvalidDecision),
        "{}",
        describe(&run)
    );
    let temperature = |phase: &str| -> Vec<f64> {
        events
            .iter()
            .filter(|e| e["phase"] == phase)
            .map(|e| e["data"]["temperature"].as_f64().expect("a temperature"))
            .collect()
    };
    let first = temperature("model.completed");
    let repairs = temperature("model.repair.completed");
    assert_eq!(first.len(), 1);
    assert!(
        (first[0] - 0.7).abs() < 1e-6,
        "the first call samples at the run's temperature: {first:?}"
    );
    assert_eq!(
        repairs.len(),
        spec.budgets.max_retries as usize,
        "every repair attempt is traced"
    );
    assert!(
        repairs.iter().all(|t| *t == 0.0),
        "repairs are greedy: {repairs:?}"
    );
    // The server applies the grammar out of sight: every decision's share is unknown, by name, never a guess,
    // and so is the run's (its unknown decisions counted).
    for e in events
        .iter()
        .filter(|e| e["phase"] == "model.completed" || e["phase"] == "model.repair.completed")
    {
        let share = &e["data"]["share"];
        assert_eq!(share["status"], "unknown", "{e}");
        assert!(
            share["reason"]
                .as_str()
                .unwrap()
                .starts_with("llama-server:"),
            "{e}"
        );
        assert!(e["data"]["forced_share"].is_null(), "{e}");
    }
    let metrics = r.metrics.as_ref().expect("metrics");
    assert_eq!(
        (metrics.forced_share, metrics.share_unknown_decisions),
        (None, 1 + spec.budgets.max_retries)
    );
    // What the server was asked for, call by call.
    let sent: Vec<f64> = bodies
        .lock()
        .unwrap()
        .iter()
        .map(|b| b["temperature"].as_f64().expect("temperature sent"))
        .collect();
    assert_eq!(sent.len(), 1 + repairs.len(), "{sent:?}");
    assert!(
        (sent[0] - 0.7).abs() < 1e-6 && sent[1..].iter().all(|t| *t == 0.0),
        "{sent:?}"
    );
}

fn fake_run(name: &str, http: HttpConfig, control: RunControl) -> ModelRun {
    // No model is loaded for a server backend: the model path is never read.
    let config = server_config(
        std::path::Path::new("models/not-needed.gguf"),
        Mode::Guided,
        BackendConfig::LlamaServer(http),
    );
    run_task(name, config, Some(control))
}

#[test]
fn malformed_json_in_the_stream_ends_the_run_model_unavailable() {
    let (url, done) = fake_server(Completion::Garbage, None);
    let run = fake_run(
        "fake-garbage",
        HttpConfig::new(&url),
        RunControl::new(Instant::now() + Duration::from_secs(30)),
    );
    done.store(true, Ordering::SeqCst);
    let r = &run.result;
    assert_eq!(
        (r.status, r.stop_reason),
        (RunStatus::Failed, StopReason::ModelUnavailable),
        "{}",
        describe(&run)
    );
    let message = &r.error.as_ref().unwrap().message;
    assert!(
        message.contains("malformed event data") && message.contains("not json at all"),
        "{message}"
    );
}

#[test]
fn malformed_health_answer_is_model_unavailable_before_the_first_decision() {
    let (url, done) = fake_server(Completion::Garbage, Some("<html>proxy error</html>"));
    let run = fake_run(
        "fake-health",
        HttpConfig::new(&url),
        RunControl::new(Instant::now() + Duration::from_secs(30)),
    );
    done.store(true, Ordering::SeqCst);
    let r = &run.result;
    assert_eq!(
        (r.status, r.stop_reason),
        (RunStatus::Failed, StopReason::ModelUnavailable),
        "{}",
        describe(&run)
    );
    assert!(
        r.error.as_ref().unwrap().message.contains("malformed JSON"),
        "{}",
        describe(&run)
    );
    assert!(run.decisions.is_empty());
}

#[test]
fn a_stalling_server_is_cut_off_by_the_run_deadline() {
    let (url, done) = fake_server(Completion::Stall, None);
    // The stall timeout is far away; the run's deadline is what ends the wait.
    let http = HttpConfig {
        stall_timeout_ms: 600_000,
        ..HttpConfig::new(&url)
    };
    let run = fake_run(
        "fake-stall-deadline",
        http,
        RunControl::new(Instant::now() + Duration::from_millis(1500)),
    );
    done.store(true, Ordering::SeqCst);
    let r = &run.result;
    assert_eq!(
        (r.status, r.stop_reason),
        (RunStatus::Stopped, StopReason::Timeout),
        "{}",
        describe(&run)
    );
}

#[test]
fn a_stalling_server_is_cut_off_by_the_stall_timeout() {
    let (url, done) = fake_server(Completion::Stall, None);
    let http = HttpConfig {
        stall_timeout_ms: 300,
        ..HttpConfig::new(&url)
    };
    let run = fake_run(
        "fake-stall",
        http,
        RunControl::new(Instant::now() + Duration::from_secs(600)),
    );
    done.store(true, Ordering::SeqCst);
    let r = &run.result;
    assert_eq!(
        (r.status, r.stop_reason),
        (RunStatus::Failed, StopReason::ModelUnavailable),
        "{}",
        describe(&run)
    );
    assert!(
        r.error
            .as_ref()
            .unwrap()
            .message
            .contains("sent nothing for"),
        "{}",
        describe(&run)
    );
}

#[test]
fn a_server_that_is_down_is_model_unavailable_with_the_reason() {
    // Bind and drop: nothing listens on this port now.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let run = fake_run(
        "fake-down",
        HttpConfig::new(format!("http://127.0.0.1:{port}")),
        RunControl::new(Instant::now() + Duration::from_secs(30)),
    );
    let r = &run.result;
    assert_eq!(
        (r.status, r.stop_reason),
        (RunStatus::Failed, StopReason::ModelUnavailable),
        "{}",
        describe(&run)
    );
    assert!(
        r.error
            .as_ref()
            .unwrap()
            .message
            .contains("connection refused"),
        "{}",
        describe(&run)
    );
}

#[test]
fn bad_urls_are_refused_with_the_reason() {
    for (url, needle) in [
        ("https://gpu:8000", "https is not supported"),
        ("gpu:8000", "must start with http://"),
        ("http://", "no host"),
    ] {
        let err = forge_llama::open_backend(
            &BackendConfig::LlamaServer(HttpConfig::new(url)),
            std::path::Path::new("x"),
            EngineSettings::default(),
        )
        .err()
        .unwrap_or_else(|| panic!("{url} accepted"));
        assert!(err.to_string().contains(needle), "{url}: {err}");
    }
}

/// The runner's real guided grammars (llama.cpp's schema converter, compacted) survive the rewrite the
/// server backend applies: every tool prefix is accepted, and a decision continues the same way before and
/// after it. Needs neither the model nor llama-server.
#[test]
fn real_guided_grammars_resume_after_their_prefixes() {
    use forge_decoding::gbnf::{Grammar, resume_text_after as resume_after};
    let accepts = |gbnf: &str, text: &str| Grammar::parse(gbnf).map(|g| g.accepts(text));
    use forge_decoding::grammar::{self, Caps, Inputs};
    use runtime::policy::{Grounding, ResultKind};
    let cards = runtime::registry::ToolRegistry::builtin().cards();
    let grounding = Grounding {
        numbers: ["79", "72", "2"].map(String::from).to_vec(),
        stated: ["79", "72", "2"].map(String::from).to_vec(),
        counts: vec!["0".into(), "1".into(), "2".into()],
        labels: vec!["A".into(), "B".into()],
        evidence_ids: vec!["obs-knowledge_search-1".into(), "obs-calculator-2".into()],
        series: Vec::new(),
        computed: Vec::new(),
        computed_exact: Vec::new(),
        units: Vec::new(),
    };
    let inputs = Inputs {
        tools: &cards,
        grounding: &grounding,
        answer_template: "<lowest> is lowest.",
        verdict_phrases: &PHRASES_DEFAULT,
        decision_summary: None,
        caps: Caps::default(),
        answer_form: forge_decoding::grammar::AnswerForm::Slots,
        done: &[],
    };
    let continuations = [
        ("knowledge_search", "batch release rule\"}}"),
        ("calculator", "(79 + 72) / 2\"}}"),
        (
            "plot",
            "\"A\",\"B\"],\"values\":[79,72],\"title\":\"Yield\",\"average\":72}}",
        ),
    ];
    for card in &cards {
        let gbnf = grammar::guided_tool(
            &inputs,
            &card.name,
            Some(ResultKind::Number).filter(|_| card.name == "calculator"),
        )
        .unwrap()
        .render();
        let prefix = grammar::guided_tool_prefix(&inputs, &card.name).unwrap();
        let resumed =
            resume_after(&gbnf, &prefix).unwrap_or_else(|e| panic!("{}: {e}\n{gbnf}", card.name));
        assert!(
            !accepts(&resumed, "").unwrap(),
            "{}: a bare prefix is not a decision",
            card.name
        );
        if let Some((_, rest)) = continuations.iter().find(|(t, _)| *t == card.name) {
            let whole = format!("{prefix}{rest}");
            let before = accepts(&gbnf, &whole).unwrap();
            let after = accepts(&resumed, rest).unwrap();
            assert_eq!(before, after, "{}: {whole}", card.name);
            assert!(after, "{}: {whole}\n{resumed}", card.name);
        }
    }
    let ids = [
        "obs-knowledge_search-1".to_string(),
        "obs-calculator-2".to_string(),
    ];
    let gbnf = grammar::guided_final(&inputs, &ids).unwrap().render();
    let prefix = grammar::guided_final_prefix(&inputs, &ids);
    let resumed = resume_after(&gbnf, &prefix).unwrap();
    let rest = "\"lowest\":\"A\"}}";
    assert!(accepts(&gbnf, &format!("{prefix}{rest}")).unwrap());
    assert!(accepts(&resumed, rest).unwrap(), "{resumed}");
    assert!(
        !accepts(&resumed, "\"lowest\":\"\"}}").unwrap(),
        "an empty slot is refused"
    );
}

/// Set in the helper process `a_server_dies_with_the_process_that_started_it` starts.
const ORPHAN_HELPER: &str = "FORGE_TEST_SERVER_HELPER";

#[test]
fn a_server_dies_with_the_process_that_started_it() {
    if std::env::var(ORPHAN_HELPER).is_ok_and(|v| v == "1") {
        // The helper: start a server, say its pid, and wait to be killed (Drop never runs then).
        let Some((binary, model)) =
            tools_or_skip("a_server_dies_with_the_process_that_started_it (helper)")
        else {
            return;
        };
        let server = start_server(binary, model, 1);
        println!("server-pid {}", server.pid());
        std::io::stdout().flush().unwrap();
        std::thread::sleep(Duration::from_secs(600));
        return;
    }
    let _serial = common::serial();
    let Some(_) = tools_or_skip("a_server_dies_with_the_process_that_started_it") else {
        return;
    };
    let mut helper = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "a_server_dies_with_the_process_that_started_it",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ORPHAN_HELPER, "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(helper.stdout.take().unwrap());
    let pid: u32 = stdout
        .lines()
        .map_while(Result::ok)
        // libtest prints "test <name> ... " on the same line first.
        .find_map(|line| {
            line.split("server-pid ")
                .nth(1)
                .and_then(|p| p.trim().parse().ok())
        })
        .expect("the helper printed its server's pid");
    let alive = |pid: u32| {
        // A killed server is a zombie until init reaps it: state `Z` counts as gone.
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
        })
    };
    assert!(alive(pid), "the helper's server {pid} is running");
    helper.kill().unwrap(); // SIGKILL: no destructor runs in the helper
    helper.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let survived = alive(pid);
    if survived {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    assert!(
        !survived,
        "llama-server {pid} outlived the process that started it"
    );
}
