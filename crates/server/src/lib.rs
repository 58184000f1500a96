//! Forge's loopback runner service: HTTP API, job queue, `.runs/` store, example package and web page.
//!
//! The service does not know how a model is loaded: the `runner` binary passes a [`ModelProvider`]
//! (llama.cpp in production). Scripted policies are reachable only with `enable_test_policies`.

pub mod catalogue;
pub mod chapter;
pub mod course;
pub mod error;
pub mod evaluation;
pub mod example;
mod http;
pub mod jobs;
pub mod provider;
pub mod redact;
pub mod request;
pub mod run_bridge;
pub mod safe_fs;
pub mod sources;
pub mod store;
pub mod tasks;
mod web;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

pub use catalogue::ModelEntry;
pub use error::{ApiError, FieldError};
pub use jobs::{Jobs, JobsConfig, RecoveryReport};
pub use provider::{
    InspectScope, Mode, ModelProvider, OutsideScope, ProviderError, UnavailableProvider,
};
pub use run_bridge::{Executor, PolicyChoice, RunSpec, RuntimeExecutor};

/// Largest request body accepted (413 above).
pub const MAX_BODY_BYTES: usize = 256 * 1024;
pub const DEFAULT_PORT: u16 = 4890;

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The project root: fixtures/tasks, knowledge/, schemas/ are read from here.
    pub root: PathBuf,
    /// The task folders offered and run (default `<root>/fixtures/tasks`); read on every request.
    pub tasks_dir: PathBuf,
    /// The knowledge files tasks name (default `<root>/knowledge`).
    pub knowledge_dir: PathBuf,
    /// Where runs are persisted (default `<root>/.runs`).
    pub runs_dir: PathBuf,
    /// The tree offered as the example package (default: `root`).
    pub example_root: PathBuf,
    /// Accept `policy: "scripted:fixtures/…"` in run requests (tests only).
    pub enable_test_policies: bool,
    /// Serving on a non-loopback address on purpose. The `Host` check still applies: a request must name
    /// a loopback name, the bound address, or one of `allowed_hosts` (DNS-rebinding protection).
    pub allow_remote: bool,
    /// Extra host names a request's `Host` may carry (`runner serve --allow-host`), compared without
    /// port and case.
    pub allowed_hosts: Vec<String>,
    /// Origins allowed to call the API cross-origin (exact `scheme://host[:port]` strings).
    pub allowed_origins: Vec<String>,
    /// What `POST /models/inspect` may read (default: `<root>/models`, no extra files).
    pub inspect_scope: InspectScope,
    /// On shutdown, how long open HTTP requests may take to finish before they are closed.
    pub drain_limit: std::time::Duration,
    /// A connection that has not sent a whole request head within this is closed (hyper's
    /// `header_read_timeout`; also bounds an idle keep-alive connection).
    pub header_read_timeout: std::time::Duration,
    /// A request body not received within this ends in 408 (tower-http `RequestBodyTimeoutLayer`).
    pub body_timeout: std::time::Duration,
    /// Most connections served at once; further ones wait in the listen backlog. Capped further by
    /// the open-file limit less [`FD_RESERVE`], so connections can never take the descriptors the run
    /// store needs.
    pub max_connections: usize,
    pub jobs: JobsConfig,
}

impl ServerConfig {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Self {
            runs_dir: root.join(".runs"),
            tasks_dir: root.join("fixtures").join("tasks"),
            knowledge_dir: root.join("knowledge"),
            example_root: root.clone(),
            inspect_scope: InspectScope {
                models_dir: root.join("models"),
                files: Vec::new(),
            },
            root,
            enable_test_policies: false,
            allow_remote: false,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            drain_limit: DRAIN_LIMIT,
            header_read_timeout: HEADER_READ_TIMEOUT,
            body_timeout: BODY_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
            jobs: JobsConfig::default(),
        }
    }
}

/// Everything a request handler can reach.
pub struct AppState {
    pub config: ServerConfig,
    pub jobs: Jobs,
    pub provider: Arc<dyn ModelProvider>,
    pub example: example::ExamplePackage,
    pub started: Instant,
    /// The listener's address once `Service::serve` runs (its IP is an allowed `Host`).
    pub bound: std::sync::OnceLock<SocketAddr>,
}

impl AppState {
    /// May a request carrying `Host: name[:port]` be served? Loopback names, the bound IP, the names of
    /// `allowed_hosts`, and — only when bound to an unspecified address with `allow_remote` — any IP
    /// literal (a page can only be *named* by an IP it is served from, so an IP literal is never a
    /// rebinding). Everything else is refused, with or without `--allow-remote`.
    pub fn host_allowed(&self, name: &str) -> bool {
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        if bare.is_empty() {
            return false;
        }
        if is_loopback_host(bare) {
            return true;
        }
        let bare_lower = bare.trim_end_matches('.').to_ascii_lowercase();
        if self
            .config
            .allowed_hosts
            .iter()
            .any(|h| h.trim_end_matches('.').eq_ignore_ascii_case(&bare_lower))
        {
            return true;
        }
        match (bare.parse::<IpAddr>(), self.bound.get()) {
            (Ok(ip), Some(bound)) if bound.ip() == ip => true,
            (Ok(_), Some(bound)) => bound.ip().is_unspecified() && self.config.allow_remote,
            _ => false,
        }
    }
}

/// Check one `--allow-origin` value: exactly `http(s)://host[:port]` (what a browser sends as `Origin`).
/// `null` (sandboxed frames, `file:` pages, redirects — any page can produce it) and wildcards are refused.
pub fn check_allowed_origin(origin: &str) -> Result<String, String> {
    let refuse = |why: &str| Err(format!("--allow-origin {origin:?} refused: {why}"));
    if origin.eq_ignore_ascii_case("null") {
        return refuse(
            "`null` is the origin of sandboxed frames and local files; any page can send it",
        );
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return refuse("give scheme://host[:port], e.g. https://course.example");
    };
    if scheme != "http" && scheme != "https" {
        return refuse("only http and https origins exist for the page");
    }
    let host = if let Some(v6) = rest.strip_prefix('[') {
        match v6.split_once(']') {
            Some((ip, port))
                if port.is_empty() || port[1..].parse::<u16>().is_ok() && port.starts_with(':') =>
            {
                ip.parse::<std::net::Ipv6Addr>()
                    .map(|_| ip.to_owned())
                    .map_err(|e| e.to_string())
            }
            _ => Err("malformed IPv6 origin".to_owned()),
        }
    } else {
        match rest.rsplit_once(':') {
            Some((h, port)) if port.parse::<u16>().is_ok() => Ok(h.to_owned()),
            Some(_) => Err("the port is not a number".to_owned()),
            None => Ok(rest.to_owned()),
        }
    };
    match host {
        Ok(h) if check_allowed_host(&h).is_ok() && !rest.contains('/') => Ok(origin.to_owned()),
        Ok(_) => refuse("no path, wildcard or user part; exactly scheme://host[:port]"),
        Err(why) => refuse(&why),
    }
}

/// Check one `--allow-host` value: a DNS name or IP literal, no scheme, port, path or wildcard.
pub fn check_allowed_host(name: &str) -> Result<String, String> {
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<IpAddr>().is_ok() {
        return Ok(bare.to_owned());
    }
    let ok = !bare.is_empty()
        && bare.len() <= 253
        && bare.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    if ok {
        Ok(bare.to_ascii_lowercase())
    } else {
        Err(format!(
            "--allow-host {name:?} is not a host name (give a bare name such as forge.lan, no scheme, port or wildcard)"
        ))
    }
}

/// A configured service: the router plus the job system behind it.
pub struct Service {
    pub state: Arc<AppState>,
    pub recovery: RecoveryReport,
}

impl Service {
    /// Open `.runs/`, reload history, start the worker, with the production executor (the runtime).
    pub fn start(
        config: ServerConfig,
        provider: Arc<dyn ModelProvider>,
    ) -> Result<Service, ApiError> {
        let executor = Arc::new(RuntimeExecutor::new(&config, provider.clone()));
        Self::start_with_executor(config, provider, executor)
    }

    /// Same, with any executor (tests use this to hold a run in `running`).
    pub fn start_with_executor(
        config: ServerConfig,
        provider: Arc<dyn ModelProvider>,
        executor: Arc<dyn Executor>,
    ) -> Result<Service, ApiError> {
        Self::start_with(config, provider, executor, Arc::new(store::DiskIo))
    }

    /// Same, writing the run store through `io` (tests inject crashes and disk errors at this seam).
    /// Refuses with 409 `runs_dir_locked` when another server holds the runs directory.
    pub fn start_with(
        mut config: ServerConfig,
        provider: Arc<dyn ModelProvider>,
        executor: Arc<dyn Executor>,
        io: Arc<dyn store::StoreIo>,
    ) -> Result<Service, ApiError> {
        let store = store::RunStore::open_with(&config.runs_dir, io).map_err(|e| match e {
            store::StoreError::Locked { .. } => {
                ApiError::new(409, "runs_dir_locked", e.to_string())
            }
            other => ApiError::new(503, "store_unavailable", other.to_string()),
        })?;
        for dir in [&config.root, &config.runs_dir, &config.example_root] {
            let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
            for d in [abs, dir.clone()] {
                let s = d.display().to_string();
                if !config.jobs.redact_roots.contains(&s) {
                    config.jobs.redact_roots.push(s);
                }
            }
        }
        // Longest first, so a nested directory is rewritten before its parent.
        config
            .jobs
            .redact_roots
            .sort_by_key(|s| std::cmp::Reverse(s.len()));
        let (jobs, recovery) = Jobs::start(store, executor, config.jobs.clone())?;
        let example = example::ExamplePackage::new(config.example_root.clone());
        let state = Arc::new(AppState {
            config,
            jobs,
            provider,
            example,
            started: Instant::now(),
            bound: std::sync::OnceLock::new(),
        });
        Ok(Service { state, recovery })
    }

    pub fn router(&self) -> axum::Router {
        http::router(self.state.clone())
    }

    /// Serve on an already-bound listener until `shutdown` resolves, then stop in order: stop accepting
    /// connections and runs (503 `shutting_down`), cancel the running run (`cancelled/shutdown`) and seal
    /// the queued ones (`cancelled/shutdown`), drain open HTTP requests for at most `config.drain_limit`, and
    /// join the worker once its run has sealed itself (at most [`WORKER_JOIN_LIMIT`]; a run still going
    /// after that — a model load has no cancellation point — is sealed `cancelled/shutdown` here). Returns once all of that is done.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        if let Ok(addr) = listener.local_addr() {
            let _ = self.state.bound.set(addr);
        }
        let app = self
            .router()
            .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
                self.state.config.body_timeout,
            ));
        let jobs = self.state.jobs.clone();
        let drain_limit = self.state.config.drain_limit;
        let header_timeout = self.state.config.header_read_timeout;
        let limit = connection_limit(self.state.config.max_connections);
        let slots = Arc::new(tokio::sync::Semaphore::new(limit));
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(header_timeout)
            .keep_alive(true);
        tokio::pin!(shutdown);
        loop {
            // A slot first, then accept: past the limit, connections wait in the kernel's backlog and
            // cost this process no descriptor.
            let slot = tokio::select! {
                _ = &mut shutdown => break,
                slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            };
            let (stream, _peer) = tokio::select! {
                _ = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // EMFILE/ENFILE or an aborted handshake: not fatal; back off a little.
                        eprintln!("forge-server: accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let service = hyper_util::service::TowerToHyperService::new(app.clone());
            let conn = graceful
                .watch(builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service));
            tokio::spawn(async move {
                let _ = conn.await;
                drop(slot);
            });
        }
        drop(listener);
        // Jobs first, so no request still being served can queue a run that would then be lost.
        let stopper = jobs.clone();
        let stopped = tokio::task::spawn_blocking(move || stopper.shutdown());
        if tokio::time::timeout(drain_limit, graceful.shutdown())
            .await
            .is_err()
        {
            eprintln!(
                "forge-server: HTTP requests still open after {} s; closing them",
                drain_limit.as_secs_f32()
            );
        }
        let _ = stopped.await;
        let result = Ok(());
        let stopper = jobs.clone();
        let _ = tokio::task::spawn_blocking(move || stopper.shutdown()).await;
        let deadline = tokio::time::Instant::now() + WORKER_JOIN_LIMIT;
        while !jobs.worker_finished() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        if jobs.worker_finished() {
            // Joins at once (the thread has ended) and releases `.runs/.lock`.
            let _ = tokio::task::spawn_blocking(move || jobs.close()).await;
        } else {
            // A model load cannot be interrupted: seal the run `cancelled/shutdown` ourselves, so it is
            // never left `running` for the next start-up to call `interrupted`.
            let sealer = jobs.clone();
            let sealed = tokio::task::spawn_blocking(move || sealer.seal_running_for_exit())
                .await
                .ok()
                .flatten();
            eprintln!(
                "forge-server: the running run did not stop within {} s; sealed {} cancelled/shutdown",
                WORKER_JOIN_LIMIT.as_secs(),
                sealed.as_deref().unwrap_or("it")
            );
        }
        result
    }
}

/// How long a shutdown waits for open HTTP requests to finish before closing them (default of
/// `ServerConfig::drain_limit`, `runner serve --drain-limit-s`).
pub const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);
/// Default of `ServerConfig::header_read_timeout`.
pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Default of `ServerConfig::body_timeout`.
pub const BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Default of `ServerConfig::max_connections`.
pub const MAX_CONNECTIONS: usize = 4096;
/// Descriptors kept free of connections: the run store, artifacts, task and model files, the runtime.
pub const FD_RESERVE: u64 = 256;

/// The connection limit in effect: `wanted`, and never more than the open-file limit allows after
/// [`FD_RESERVE`]. The soft limit is raised to the hard one first (a process may always do that).
pub fn connection_limit(wanted: usize) -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return wanted.min(512);
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim = raised;
        }
    }
    let open_now = std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count() as u64)
        .unwrap_or(0);
    let room = lim.rlim_cur.saturating_sub(FD_RESERVE + open_now).max(1);
    wanted
        .min(usize::try_from(room).unwrap_or(usize::MAX))
        .max(1)
}

/// How long a shutdown waits for the cancelled run to seal itself and the worker to end.
pub const WORKER_JOIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

/// True for addresses a `--host` may name without `--allow-remote`.
pub fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost")
        || h.parse::<IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false)
}

/// Parse `--host`/`--port` into an address, refusing a non-loopback host unless `allow_remote`.
pub fn bind_address(host: &str, port: u16, allow_remote: bool) -> Result<SocketAddr, String> {
    let ip: IpAddr = if host.eq_ignore_ascii_case("localhost") {
        IpAddr::from([127, 0, 0, 1])
    } else {
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .map_err(|e| format!("--host {host:?} is not an IP address: {e}"))?
    };
    if !ip.is_loopback() && !allow_remote {
        return Err(format!(
            "--host {host} is not a loopback address; the runner executes tools on this machine and has no authentication. Pass --allow-remote to bind it anyway."
        ));
    }
    Ok(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_refuses_non_loopback_hosts_unless_allowed() {
        assert_eq!(
            bind_address("127.0.0.1", 4890, false).unwrap().to_string(),
            "127.0.0.1:4890"
        );
        assert_eq!(
            bind_address("localhost", 1, false).unwrap().to_string(),
            "127.0.0.1:1"
        );
        assert_eq!(
            bind_address("::1", 2, false).unwrap().to_string(),
            "[::1]:2"
        );
        let err = bind_address("0.0.0.0", 4890, false).unwrap_err();
        assert!(err.contains("--allow-remote"), "{err}");
        assert!(bind_address("192.168.1.9", 4890, false).is_err());
        assert!(bind_address("0.0.0.0", 4890, true).is_ok());
        assert!(
            bind_address("example.org", 4890, true).is_err(),
            "names other than localhost are not resolved"
        );
    }

    #[test]
    fn allowed_origins_and_hosts_are_checked_and_null_is_refused() {
        for ok in [
            "https://course.example",
            "http://127.0.0.1:8080",
            "http://[::1]:3000",
            "http://a-b.lan",
        ] {
            assert_eq!(check_allowed_origin(ok).as_deref(), Ok(ok), "{ok}");
        }
        for bad in [
            "null",
            "NULL",
            "*",
            "course.example",
            "ftp://x.example",
            "https://x.example/path",
            "https://*.example",
            "https://u@x.example",
            "http://x.example:port",
            "",
        ] {
            assert!(check_allowed_origin(bad).is_err(), "{bad}");
        }
        assert_eq!(check_allowed_host("Forge.LAN").as_deref(), Ok("forge.lan"));
        for bad in [
            "",
            "forge.lan:80",
            "http://forge.lan",
            "*.lan",
            "a/b",
            "-x.lan",
        ] {
            assert!(check_allowed_host(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn loopback_host_names() {
        for h in [
            "localhost",
            "127.0.0.1",
            "127.9.9.9",
            "::1",
            "[::1]",
            "LocalHost",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in ["", "0.0.0.0", "10.0.0.1", "localhost.evil", "::", "evil"] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }
}
