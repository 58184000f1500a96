//! The real `runner serve` process, spawned on a free loopback port with a temporary runs and models
//! directory: model inspection through the real GGUF reader over HTTP.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("project root")
}

/// A `runner serve` child, killed on drop.
struct Server {
    child: Child,
    addr: String,
    stderr: mpsc::Receiver<String>,
}

impl Server {
    /// Start and wait (bounded) until it prints its listening address.
    fn start(runs_dir: &Path, models_dir: &Path, extra: &[&str]) -> Server {
        match Self::spawn(runs_dir, models_dir, extra) {
            Ok(s) => s,
            Err((status, stderr)) => panic!("runner serve did not start ({status}): {stderr}"),
        }
    }

    /// Start; when the process exits before listening, its exit status and stderr.
    fn spawn(
        runs_dir: &Path,
        models_dir: &Path,
        extra: &[&str],
    ) -> Result<Server, (String, String)> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
            .arg("--root")
            .arg(project_root())
            .args([
                "serve",
                "--port",
                "0",
                "--enable-test-policies",
                "--runs-dir",
            ])
            .arg(runs_dir)
            .arg("--model-dir")
            .arg(models_dir)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn runner");
        let (out_tx, out_rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = out_tx.send(line);
            }
        });
        let (err_tx, err_rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = err_tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            match out_rx.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix("Forge runner listening on http://") {
                        let addr = rest.trim_end_matches('/').to_string();
                        return Ok(Server {
                            child,
                            addr,
                            stderr: err_rx,
                        });
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        let status = wait_exit(&mut child, Duration::from_secs(10))
            .map(|s| s.to_string())
            .unwrap_or_else(|| {
                let _ = child.kill();
                "still running; killed".into()
            });
        Err((status, err_rx.try_iter().collect::<Vec<_>>().join("\n")))
    }

    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        http(&self.addr, method, path, body)
    }

    fn stderr_so_far(&self) -> String {
        self.stderr.try_iter().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// One HTTP/1.1 request over a fresh loopback connection (`Connection: close`); status and JSON body.
fn http(addr: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let ctype = if body.is_empty() {
        String::new()
    } else {
        "Content-Type: application/json\r\n".into()
    };
    write!(stream, "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{ctype}Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("HTTP head");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status code");
    let value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("body is not JSON ({e}): {body}"));
    (status, value)
}

/// A GGUF v3 header with one F32 tensor whose dimensions multiply past u64 (the issue-14 probe).
fn overflowing_gguf() -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(1u64.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.extend(1u64.to_le_bytes());
    b.push(b'w');
    b.extend(3u32.to_le_bytes());
    for _ in 0..3 {
        b.extend((1u64 << 32).to_le_bytes());
    }
    b.extend(0u32.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b
}

#[test]
fn inspection_over_http_refuses_outside_paths_and_never_echoes_or_panics() {
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(
        models.join("passwd.gguf"),
        b"root:x:0:0:root:/root:/bin/bash\n",
    )
    .unwrap();
    std::fs::write(models.join("overflow.gguf"), overflowing_gguf()).unwrap();
    let server = Server::start(&tmp.path().join(".runs"), &models, &[]);

    let (status, body) = server.request(
        "POST",
        "/models/inspect",
        Some(&json!({ "path": "/etc/passwd" })),
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("path_not_allowed")),
        "{body}"
    );

    let (status, body) = server.request(
        "POST",
        "/models/inspect",
        Some(&json!({ "path": models.join("passwd.gguf") })),
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (503, Some("model_unavailable")),
        "{body}"
    );
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("not a GGUF file"), "{message}");
    for leak in ["72, 6f", "root", "[72"] {
        assert!(
            !message.contains(leak),
            "the file's bytes are echoed ({leak}): {message}"
        );
    }

    let (status, body) = server.request(
        "POST",
        "/models/inspect",
        Some(&json!({ "path": models.join("overflow.gguf") })),
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (503, Some("model_unavailable")),
        "{body}"
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("corrupt GGUF header"),
        "{body}"
    );
    assert!(
        !body["message"].as_str().unwrap().contains("panicked"),
        "{body}"
    );

    // The service is still up and answering.
    let (status, _) = server.request("GET", "/status", None);
    assert_eq!(status, 200, "{}", server.stderr_so_far());
}

#[test]
fn a_second_server_on_the_same_runs_directory_refuses_to_start_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let (runs, models) = (tmp.path().join(".runs"), tmp.path().join("models"));
    let first = Server::start(&runs, &models, &[]);
    let (status, stderr) = match Server::spawn(&runs, &models, &[]) {
        Ok(_) => panic!("a second server started on the same runs directory"),
        Err(refusal) => refusal,
    };
    assert!(status.contains("exit status: 1"), "{status}: {stderr}");
    assert!(
        stderr.contains(&format!("another runner (pid {})", first.child.id()))
            && stderr.contains("--runs-dir"),
        "{stderr}"
    );
    let (code, _) = first.request("GET", "/status", None);
    assert_eq!(code, 200, "the first server is untouched");
}

/// Poll `cond` until it holds or `limit` passes (then panic with `what`); no fixed sleeps.
fn eventually<T>(limit: Duration, what: &str, mut cond: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = cond() {
            return v;
        }
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{name} failed");
}

/// A run held in its first model call (ends only when cancelled).
fn held_run() -> Value {
    json!({ "policy": "scripted:crates/server/tests/fixtures/held_run.json" })
}

fn submit(server: &Server, body: &Value) -> String {
    let (status, accepted) = server.request("POST", "/agent/runs", Some(body));
    assert_eq!(status, 202, "{accepted}");
    accepted["id"].as_str().unwrap().to_string()
}

#[test]
fn sigterm_cancels_the_running_run_seals_the_queued_ones_as_shutdown_and_exits_0() {
    let tmp = tempfile::tempdir().unwrap();
    let (runs, models) = (tmp.path().join(".runs"), tmp.path().join("models"));
    let mut server = Server::start(&runs, &models, &[]);
    let running = submit(&server, &held_run());
    let queued: Vec<String> = (0..2)
        .map(|_| {
            submit(
                &server,
                &json!({ "policy": "scripted:fixtures/happy.json" }),
            )
        })
        .collect();
    // The held run is inside the runtime (its run.started is saved) before the signal.
    eventually(Duration::from_secs(30), "the held run is running", || {
        let (_, snap) = server.request("GET", &format!("/agent/runs/{running}"), None);
        (snap["status"] == "running" && snap["last_seq"].as_u64() >= Some(1)).then_some(())
    });

    signal(&server.child, "TERM");
    let status = wait_exit(&mut server.child, Duration::from_secs(5)).unwrap_or_else(|| {
        panic!(
            "still running 5 s after SIGTERM: {}",
            server.stderr_so_far()
        )
    });
    assert_eq!(status.code(), Some(0), "{}", server.stderr_so_far());

    // A successor on the same directory: the lock was released, and nothing needs sealing again.
    let next = Server::start(&runs, &models, &[]);
    for (id, started) in std::iter::once((&running, true)).chain(queued.iter().map(|q| (q, false)))
    {
        let (code, snap) = next.request("GET", &format!("/agent/runs/{id}"), None);
        assert_eq!(code, 200, "{snap}");
        assert_eq!(
            (
                snap["status"].as_str(),
                snap["result"]["stop_reason"].as_str()
            ),
            (Some("cancelled"), Some("shutdown")),
            "{id}: {snap}"
        );
        let events = snap["events"].as_array().unwrap();
        let finished: Vec<&Value> = events
            .iter()
            .filter(|e| e["phase"] == "run.finished")
            .collect();
        assert_eq!(finished.len(), 1, "exactly one run.finished: {snap}");
        assert_eq!(finished[0]["data"]["stop_reason"], "shutdown");
        assert_eq!(events.last().unwrap()["phase"], "run.finished");
        // Only the running run went through the runtime; the queued ones never started.
        assert_eq!(snap["started_at_ms"].is_u64(), started, "{snap}");
        assert_eq!(
            events.iter().any(|e| e["phase"] == "run.started"),
            started,
            "{snap}"
        );
    }
}

#[test]
fn a_second_signal_exits_at_once_while_the_first_shutdown_waits_for_an_open_request() {
    let tmp = tempfile::tempdir().unwrap();
    let (runs, models) = (tmp.path().join(".runs"), tmp.path().join("models"));
    // Open requests may take a minute to finish, so only the second signal can end the process in time.
    let mut server = Server::start(&runs, &models, &["--drain-limit-s", "60"]);
    let running = submit(&server, &held_run());
    eventually(Duration::from_secs(30), "the held run is running", || {
        let (_, snap) = server.request("GET", &format!("/agent/runs/{running}"), None);
        (snap["status"] == "running").then_some(())
    });
    // A request whose body never arrives keeps the HTTP drain waiting.
    let mut open = TcpStream::connect(&server.addr).unwrap();
    write!(open, "POST /agent/runs HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{", server.addr).unwrap();
    open.flush().unwrap();
    // The request has reached the server once a later one on another connection is answered.
    let (code, _) = server.request("GET", "/status", None);
    assert_eq!(code, 200);

    signal(&server.child, "TERM");
    let mut seen = String::new();
    eventually(
        Duration::from_secs(10),
        "the first signal starts the shutdown",
        || {
            seen.push_str(&server.stderr_so_far());
            seen.contains("shutting down").then_some(())
        },
    );
    signal(&server.child, "INT");
    let status = wait_exit(&mut server.child, Duration::from_secs(5)).unwrap_or_else(|| {
        panic!(
            "still running 5 s after the second signal: {seen}{}",
            server.stderr_so_far()
        )
    });
    assert_eq!(status.code(), Some(130), "{seen}{}", server.stderr_so_far());
    drop(open);
}

/// The real model (models/qwen2.5-coder-0.5b.gguf), or None (the test is skipped) when it is not fetched.
fn real_model_dir() -> Option<PathBuf> {
    let dir = project_root().join("models");
    if dir.join("qwen2.5-coder-0.5b.gguf").is_file() {
        Some(dir)
    } else {
        eprintln!("skipped: no models/qwen2.5-coder-0.5b.gguf (cargo xtask model fetch)");
        None
    }
}

/// Per-request answer bound while a model loads (issue 14: the API must not freeze during a cold load).
const ANSWER_BOUND: Duration = Duration::from_millis(100);

#[test]
fn status_and_polling_answer_within_the_bound_during_a_cold_model_load() {
    let Some(models) = real_model_dir() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(&tmp.path().join(".runs"), &models, &[]);
    let (_, status) = server.request("GET", "/status", None);
    assert_eq!(
        status["model"]["loaded"],
        json!([]),
        "a fresh process has nothing loaded: {status}"
    );
    let id = submit(
        &server,
        &json!({ "policy": "model", "budgets": { "max_steps": 1 } }),
    );

    // Until the model is loaded, every /status and every poll of the run answers within the bound.
    let mut answers: Vec<(&str, Duration)> = Vec::new();
    let mut saw_loading = false;
    eventually(Duration::from_secs(120), "the model is loaded", || {
        let started = Instant::now();
        let (code, status) = server.request("GET", "/status", None);
        answers.push(("/status", started.elapsed()));
        assert_eq!(code, 200, "{status}");
        let started = Instant::now();
        let (code, snap) = server.request("GET", &format!("/agent/runs/{id}?after_seq=0"), None);
        answers.push(("poll", started.elapsed()));
        assert_eq!(code, 200, "{snap}");
        if status["model"]["loading"] == "qwen2.5-coder-0.5b.gguf" {
            saw_loading = true;
        }
        assert!(
            snap["terminal"] == false || status["model"]["loaded"] != json!([]),
            "the run ended without loading the model: {snap}"
        );
        (status["model"]["loaded"] == json!(["qwen2.5-coder-0.5b.gguf"])).then_some(())
    });
    assert!(
        saw_loading,
        "the load was never visible as `loading` in /status ({} answers)",
        answers.len()
    );
    let slowest = answers.iter().map(|(_, d)| *d).max().unwrap_or_default();
    eprintln!(
        "{} answers while the model loaded, slowest {slowest:?}",
        answers.len()
    );
    let slow: Vec<_> = answers.iter().filter(|(_, d)| *d > ANSWER_BOUND).collect();
    assert!(
        slow.is_empty(),
        "answers slower than {ANSWER_BOUND:?} during the load: {slow:?} of {}",
        answers.len()
    );
    let (code, _) = server.request("POST", &format!("/agent/runs/{id}/cancel"), None);
    assert!(code == 200 || code == 409, "cancel answered {code}");
}

/// Issue 23, item 4: SIGTERM while the run's model load is under way (llama.cpp's load has no
/// cancellation point): the process exits within 5 s and the run is sealed `cancelled/shutdown` on disk
/// (before: the shutdown waited 2 s, exited 0 and left the run `running`, sealed `failed/interrupted`
/// by the next start). Real model; skipped without it.
#[test]
fn sigterm_during_a_real_model_load_exits_within_5_s_with_the_run_sealed_cancelled_shutdown() {
    let Some(models) = real_model_dir() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join(".runs");
    let mut server = Server::start(&runs, &models, &[]);
    let id = submit(
        &server,
        &json!({ "policy": "model", "budgets": { "max_steps": 1 } }),
    );
    eventually(
        Duration::from_secs(60),
        "the model load is under way",
        || {
            let (_, status) = server.request("GET", "/status", None);
            (status["model"]["loading"] == "qwen2.5-coder-0.5b.gguf").then_some(())
        },
    );
    signal(&server.child, "TERM");
    let exited = wait_exit(&mut server.child, Duration::from_secs(5)).unwrap_or_else(|| {
        panic!(
            "still running 5 s after SIGTERM: {}",
            server.stderr_so_far()
        )
    });
    assert!(exited.success(), "{exited}: {}", server.stderr_so_far());
    let read = |f: &str| -> Value {
        serde_json::from_slice(
            &std::fs::read(runs.join(&id).join(f)).unwrap_or_else(|e| panic!("{f}: {e}")),
        )
        .unwrap()
    };
    let meta = read("meta.json");
    assert_eq!(meta["status"], "cancelled", "{meta}");
    assert_eq!(read("result.json")["stop_reason"], "shutdown");
    let events = std::fs::read_to_string(runs.join(&id).join("events.jsonl")).unwrap();
    assert_eq!(
        events
            .lines()
            .filter(|l| l.contains("\"run.finished\""))
            .count(),
        1,
        "{events}"
    );
}
