//! Shared harness for the server's HTTP tests: a service on a temporary `.runs/`, requests through the
//! router (`oneshot`), a provider without a model, and a "hold" provider whose policy blocks until the
//! test cancels or releases it (it never returns a decision).
// Every test binary compiles this module and uses a part of it: what one binary leaves unused is not dead.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use forge_server::{
    Mode, ModelEntry, ModelProvider, ProviderError, ServerConfig, Service, UnavailableProvider,
};
use http_body_util::BodyExt;
use runtime::policy::{DecisionRequest, Policy, PolicyError, PolicyOutput, RunControl};
use serde_json::{Value, json};
use tower::ServiceExt;

pub const HOST: &str = "127.0.0.1:4890";

pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("project root")
}

pub struct Harness {
    pub service: Service,
    pub router: Router,
    pub runs: tempfile::TempDir,
    pub release: Arc<AtomicBool>,
}

pub struct Options {
    pub test_policies: bool,
    pub hold: bool,
    pub queue_capacity: usize,
    pub retention: usize,
    pub allowed_origins: Vec<String>,
    /// `--allow-remote` and `--allow-host` names.
    pub allow_remote: bool,
    pub allowed_hosts: Vec<String>,
    /// The project root the service reads (course, evaluation); default: this project.
    pub root: Option<PathBuf>,
    pub example_root: Option<PathBuf>,
    pub runs_dir: Option<PathBuf>,
    /// Task folders to serve instead of the project's fixtures/tasks.
    pub tasks_dir: Option<PathBuf>,
    /// Serve the models whose fetch manifests are in this directory (the `ModelsDirProvider`).
    pub models_dir: Option<PathBuf>,
    /// The run store's writer (default: the real disk); tests put crashing or failing doubles here.
    pub store_io: Option<Arc<dyn forge_server::store::StoreIo>>,
    /// A panic injected on the worker after a run's executor returned (the supervisor's tests).
    pub worker_fault: Option<forge_server::jobs::WorkerFault>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            test_policies: true,
            hold: false,
            queue_capacity: 8,
            retention: 200,
            allowed_origins: vec![],
            allow_remote: false,
            allowed_hosts: vec![],
            root: None,
            example_root: None,
            runs_dir: None,
            tasks_dir: None,
            models_dir: None,
            store_io: None,
            worker_fault: None,
        }
    }
}

pub fn harness(opts: Options) -> Harness {
    let runs = tempfile::tempdir().expect("tempdir");
    let mut config = ServerConfig::new(opts.root.clone().unwrap_or_else(project_root));
    if opts.root.is_some() {
        // Tasks and knowledge stay the project's; only what the routes under test read moves.
        config.tasks_dir = project_root().join("fixtures/tasks");
        config.knowledge_dir = project_root().join("knowledge");
    }
    config.allow_remote = opts.allow_remote;
    config.allowed_hosts = opts.allowed_hosts;
    config.runs_dir = opts
        .runs_dir
        .clone()
        .unwrap_or_else(|| runs.path().join(".runs"));
    config.enable_test_policies = opts.test_policies;
    config.allowed_origins = opts.allowed_origins;
    config.jobs.queue_capacity = opts.queue_capacity;
    config.jobs.retention = opts.retention;
    config.jobs.worker_fault = opts.worker_fault;
    if let Some(r) = opts.example_root {
        config.example_root = r;
    }
    if let Some(t) = opts.tasks_dir {
        config.tasks_dir = t;
    }
    let release = Arc::new(AtomicBool::new(false));
    // The models directory the provider lists is also the one inspection may read (as in `runner serve`).
    if let Some(dir) = &opts.models_dir {
        config.inspect_scope.models_dir = dir.clone();
    }
    let provider: Arc<dyn ModelProvider> = if let Some(dir) = opts.models_dir {
        Arc::new(ModelsDirProvider { dir })
    } else if opts.hold {
        Arc::new(HoldProvider {
            release: release.clone(),
        })
    } else {
        Arc::new(UnavailableProvider {
            reason: "no model in tests".into(),
        })
    };
    let executor = Arc::new(forge_server::RuntimeExecutor::new(
        &config,
        provider.clone(),
    ));
    let io = opts
        .store_io
        .unwrap_or_else(|| Arc::new(forge_server::store::DiskIo));
    let service = Service::start_with(config, provider, executor, io).expect("service starts");
    let router = service.router();
    Harness {
        service,
        router,
        runs,
        release,
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.release.store(true, Ordering::SeqCst);
        // Join the worker and release `.runs/.lock`, so the next harness may open the same directory.
        self.service.state.jobs.close();
    }
}

/// What a crash leaves: the runs directory's files as they are on disk right now, copied to `to`
/// (without `.lock`, which the dead process's OS lock no longer backs).
pub fn copy_as_crashed(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_as_crashed(&entry.path(), &target);
        } else if entry.file_name() != ".lock" {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A provider whose policy waits until the run is cancelled or the test releases it. Used to hold a run
/// in `running` deterministically; it never produces a decision.
pub struct HoldProvider {
    pub release: Arc<AtomicBool>,
}

struct HoldPolicy {
    release: Arc<AtomicBool>,
}

impl Policy for HoldPolicy {
    fn name(&self) -> String {
        "test-hold".into()
    }
    fn decide(
        &mut self,
        _r: &DecisionRequest,
        control: &RunControl,
    ) -> Result<PolicyOutput, PolicyError> {
        loop {
            if control.is_cancelled() {
                return Err(PolicyError::Cancelled);
            }
            if self.release.load(Ordering::SeqCst) {
                return Err(PolicyError::ModelUnavailable("released by the test".into()));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl ModelProvider for HoldProvider {
    fn inspect(&self, _path: Option<&str>) -> Result<Value, ProviderError> {
        Err(ProviderError::unavailable("test provider"))
    }
    fn unload(&self) -> Result<Value, ProviderError> {
        Ok(json!({"unloaded": 0}))
    }
    fn cache_state(&self) -> Value {
        json!({"loaded": false})
    }
    fn policy(&self, _mode: Mode, _t: f32) -> Result<Box<dyn Policy>, PolicyError> {
        Ok(Box::new(HoldPolicy {
            release: self.release.clone(),
        }))
    }
}

/// A provider that lists the fetch manifests of a directory with the server's own scan (real files) and
/// whose policies cannot load weights: a model run ends `failed/model_unavailable` naming the model. The
/// first model (sorted) is the default.
pub struct ModelsDirProvider {
    pub dir: PathBuf,
}

impl ModelProvider for ModelsDirProvider {
    fn inspect(&self, path: Option<&str>) -> Result<Value, ProviderError> {
        let p = path.ok_or_else(|| ProviderError::unavailable("no default model"))?;
        let bytes = std::fs::metadata(p)
            .map_err(|e| ProviderError::unavailable(format!("{p}: {e}")))?
            .len();
        Ok(
            json!({ "file_name": Path::new(p).file_name().unwrap().to_string_lossy(), "bytes": bytes, "quantization": "Q4_K_M" }),
        )
    }
    fn unload(&self) -> Result<Value, ProviderError> {
        Ok(json!({"unloaded": 0}))
    }
    fn cache_state(&self) -> Value {
        json!({"loaded": [], "max_loaded_models": 1})
    }
    fn policy(&self, _mode: Mode, _t: f32) -> Result<Box<dyn Policy>, PolicyError> {
        Err(PolicyError::ModelUnavailable("no default model".into()))
    }
    fn models(&self) -> Vec<ModelEntry> {
        let mut listed = forge_server::catalogue::scan_manifests(&self.dir).0;
        if let Some(first) = listed.first_mut() {
            first.default = true;
        }
        listed
    }
    fn policy_for(
        &self,
        model: &ModelEntry,
        _mode: Mode,
        _t: f32,
    ) -> Result<Box<dyn Policy>, PolicyError> {
        Err(PolicyError::ModelUnavailable(format!(
            "test provider: {} has no weights",
            model.name
        )))
    }
}

/// Write `<name>.gguf` (`bytes` long) and its fetch manifest into `dir`, as `cargo xtask model fetch` does.
pub fn write_model(dir: &Path, name: &str, bytes: usize) -> PathBuf {
    let file = dir.join(format!("{name}.gguf"));
    let mut data = b"GGUF".to_vec();
    data.resize(bytes, 0);
    std::fs::write(&file, &data).unwrap();
    let manifest = json!({
        "model": name, "file": format!("{name}.gguf"), "bytes": bytes, "sha256": format!("{:0>64}", name.len()),
        "hash_pinned": true, "source": "test", "parts": [], "fetched_at": "2026-12-01T10:00:00Z",
    });
    std::fs::write(
        dir.join(format!("{name}.manifest.json")),
        serde_json::to_vec_pretty(&manifest).unwrap(),
    )
    .unwrap();
    file
}

/// Copy a task folder of the project into `dir` (task folders are small).
pub fn copy_task(dir: &Path, name: &str) {
    let from = project_root().join("fixtures/tasks").join(name);
    std::fs::create_dir_all(dir.join(name)).unwrap();
    for e in std::fs::read_dir(&from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(name).join(e.file_name())).unwrap();
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub bytes: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.bytes)))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
    /// Every refusal is `{code, message}`; returns the code.
    pub fn code(&self) -> String {
        let v = self.json();
        assert!(v["message"].is_string(), "error without message: {v}");
        v["code"].as_str().expect("error code").to_string()
    }
}

pub async fn send(router: &Router, req: Request<Body>) -> Reply {
    let resp = router.clone().oneshot(req).await.expect("infallible");
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes()
        .to_vec();
    Reply {
        status,
        headers,
        bytes,
    }
}

pub fn get(uri: &str) -> Request<Body> {
    Request::get(uri)
        .header(header::HOST, HOST)
        .body(Body::empty())
        .unwrap()
}

pub fn post_json(uri: &str, body: &Value) -> Request<Body> {
    Request::post(uri)
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap()
}

pub fn post_empty(uri: &str) -> Request<Body> {
    Request::post(uri)
        .header(header::HOST, HOST)
        .body(Body::empty())
        .unwrap()
}

pub async fn start_run(router: &Router, body: Value) -> String {
    let r = send(router, post_json("/agent/runs", &body)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text());
    let v = r.json();
    assert_eq!(v["status"], "queued");
    v["id"].as_str().unwrap().to_string()
}

pub async fn snapshot(router: &Router, id: &str, after: u64) -> Value {
    let r = send(router, get(&format!("/agent/runs/{id}?after_seq={after}"))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    r.json()
}

/// The one way these tests wait: poll `cond` until it answers `Ok`, failing after `limit` with `what` and
/// the last `Err` it gave (the state seen). No fixed sleeps, no wall-clock assertions; the limit is a
/// deadline for "never happened", far above how long the condition normally takes.
pub async fn eventually<T, Fut>(limit: Duration, what: &str, mut cond: impl FnMut() -> Fut) -> T
where
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + limit;
    loop {
        match cond().await {
            Ok(v) => return v,
            Err(seen) => assert!(
                Instant::now() < deadline,
                "not within {limit:?}: {what}; last seen: {seen}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Poll until terminal; returns the final full snapshot (after_seq=0).
pub async fn wait_terminal(router: &Router, id: &str) -> Value {
    eventually(
        Duration::from_secs(60),
        &format!("run {id} finishes"),
        || async move {
            let s = snapshot(router, id, 0).await;
            if s["terminal"] == true {
                Ok(s)
            } else {
                Err(s.to_string())
            }
        },
    )
    .await
}

pub async fn wait_status(router: &Router, id: &str, status: &str) -> Value {
    eventually(
        Duration::from_secs(30),
        &format!("run {id} reaches {status}"),
        || async move {
            let s = snapshot(router, id, 0).await;
            if s["status"] == status {
                Ok(s)
            } else {
                Err(s.to_string())
            }
        },
    )
    .await
}

fn trace_event_validator() -> &'static jsonschema::Validator {
    static V: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        let text = std::fs::read_to_string(project_root().join("schemas/trace_event.schema.json"))
            .expect("trace_event schema");
        jsonschema::validator_for(&serde_json::from_str(&text).expect("schema JSON"))
            .expect("valid schema")
    })
}

/// Seq numbers 1..=n, no gaps, no duplicates, ending with run.finished; every event (including the
/// ones the server seals itself) conforms to schemas/trace_event.schema.json.
pub fn assert_contiguous(events: &[Value]) {
    for (i, e) in events.iter().enumerate() {
        assert_eq!(
            e["seq"].as_u64(),
            Some(i as u64 + 1),
            "event {i} out of sequence: {e}"
        );
        let errors: Vec<String> = trace_event_validator()
            .iter_errors(e)
            .map(|err| err.to_string())
            .collect();
        assert!(
            errors.is_empty(),
            "event {e} does not match trace_event.schema.json: {errors:?}"
        );
    }
    assert_eq!(
        events.last().map(|e| e["phase"].clone()),
        Some(json!("run.finished")),
        "last event is not run.finished"
    );
}
