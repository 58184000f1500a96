//! A llama-server child process for tests, benchmarks and (later) parallel evaluation: start it on a free
//! loopback port with `-np N` slots, wait until `/health` says ok (with a deadline), kill it on drop.
//!
//! Not a backend (that is `server_backend`, which talks to any server, started here or not) and not a
//! supervisor: a server that dies stays dead, and its log tail is in the error.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::http_client::{HttpClient, HttpConfig};

/// Where `cargo xtask llama-tools` installs the binaries, relative to the workspace root.
pub const TOOLS_DIR: &str = "target/llama-tools";

#[derive(Debug, Clone, PartialEq)]
pub struct ServerOptions {
    pub binary: PathBuf,
    pub model: PathBuf,
    /// Slots (`-np`): requests decoded together by continuous batching.
    pub parallel: u32,
    /// Context per slot; the server gets `parallel × ctx_per_slot`.
    pub ctx_per_slot: u32,
    pub threads: u32,
    /// Where the server's stderr goes (a temporary file when `None`).
    pub log: Option<PathBuf>,
    pub extra_args: Vec<String>,
}

impl ServerOptions {
    pub fn new(binary: impl Into<PathBuf>, model: impl Into<PathBuf>, parallel: u32) -> Self {
        let threads = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .min(8) as u32;
        Self {
            binary: binary.into(),
            model: model.into(),
            parallel,
            ctx_per_slot: 4096,
            threads,
            log: None,
            extra_args: Vec::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServerProcessError {
    #[error("no llama-server at {0} (run `cargo xtask llama-tools`)")]
    BinaryMissing(PathBuf),
    #[error("cannot start llama-server: {0}")]
    Spawn(String),
    #[error("llama-server exited during start-up ({status}); log tail:\n{log}")]
    ExitedEarly { status: String, log: String },
    #[error("llama-server was not ready after {secs:.0} s; log tail:\n{log}")]
    NotReady { secs: f64, log: String },
}

pub struct LlamaServerProcess {
    child: Child,
    url: String,
    log: PathBuf,
    _tmp_log: Option<tempfile_path::TempLog>,
}

/// The llama-server the xtask verb builds under `root`.
pub fn default_binary(root: &Path) -> PathBuf {
    root.join(TOOLS_DIR).join("llama-server")
}

impl LlamaServerProcess {
    /// Start and wait until the model is loaded and `/health` is ok (at most `ready_within`).
    ///
    /// The port is picked free and handed to the child, which binds it later: another process may take it
    /// in between. A child that exits because its port is taken is started again on a new port (three
    /// attempts), so that race costs a retry, never a failed start.
    pub fn start(opts: &ServerOptions, ready_within: Duration) -> Result<Self, ServerProcessError> {
        if !opts.binary.is_file() {
            return Err(ServerProcessError::BinaryMissing(opts.binary.clone()));
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Self::start_once(opts, ready_within) {
                Err(ServerProcessError::ExitedEarly { log, .. })
                    if attempt < 3 && port_taken(&log) =>
                {
                    continue;
                }
                other => return other,
            }
        }
    }

    fn start_once(
        opts: &ServerOptions,
        ready_within: Duration,
    ) -> Result<Self, ServerProcessError> {
        let port =
            free_port().map_err(|e| ServerProcessError::Spawn(format!("no free port: {e}")))?;
        let (log, tmp, log_file) = match &opts.log {
            Some(p) => {
                let f = std::fs::File::create(p).map_err(|e| {
                    ServerProcessError::Spawn(format!("log file {}: {e}", p.display()))
                })?;
                (p.clone(), None, f)
            }
            None => {
                let (t, f) = tempfile_path::TempLog::create().map_err(|e| {
                    ServerProcessError::Spawn(format!(
                        "log file in {}: {e}",
                        std::env::temp_dir().display()
                    ))
                })?;
                (t.path.clone(), Some(t), f)
            }
        };
        let mut command = Command::new(&opts.binary);
        die_with_parent(&mut command);
        let child = command
            .arg("-m")
            .arg(&opts.model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["-np", &opts.parallel.to_string()])
            .args(["-c", &(opts.ctx_per_slot * opts.parallel).to_string()])
            .args([
                "-t",
                &opts.threads.to_string(),
                "-tb",
                &opts.threads.to_string(),
            ])
            .args(&opts.extra_args)
            .stdin(Stdio::null())
            .stdout(
                log_file
                    .try_clone()
                    .map_err(|e| ServerProcessError::Spawn(e.to_string()))?,
            )
            .stderr(log_file)
            .spawn()
            .map_err(|e| ServerProcessError::Spawn(format!("{}: {e}", opts.binary.display())))?;
        let mut server = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
            _tmp_log: tmp,
        };
        let client = HttpClient::new(&HttpConfig {
            connect_timeout_ms: 500,
            stall_timeout_ms: 2_000,
            ..HttpConfig::new(&server.url)
        })
        .expect("a loopback URL is valid");
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(ServerProcessError::ExitedEarly {
                    status: status.to_string(),
                    log: server.log_tail(),
                });
            }
            // 503 while the model loads, refused before the socket is bound: keep waiting until the deadline.
            if client
                .get_json("/health")
                .is_ok_and(|v| v.get("status").and_then(|s| s.as_str()) == Some("ok"))
            {
                return Ok(server);
            }
            if started.elapsed() > ready_within {
                return Err(ServerProcessError::NotReady {
                    secs: started.elapsed().as_secs_f64(),
                    log: server.log_tail(),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// An HTTP config for this server.
    pub fn http_config(&self) -> HttpConfig {
        HttpConfig::new(&self.url)
    }

    /// Kill the server now (SIGKILL) and reap it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }
}

/// Asks the kernel to send the server SIGTERM when the thread that started it ends — with the process
/// that started it, including a process killed by a signal, where `Drop` never runs (an evaluation
/// stopped with `kill -9` used to leave its llama-server running, holding a gigabyte and two cores).
/// Start servers from a thread that lives as long as they should (a test's thread, a program's main).
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    const PR_SET_PDEATHSIG: std::ffi::c_int = 1;
    const SIGTERM: std::ffi::c_int = 15;
    unsafe extern "C" {
        fn prctl(option: std::ffi::c_int, ...) -> std::ffi::c_int;
    }
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and only calls prctl(2) and getppid(2),
    // both async-signal-safe; it allocates nothing and touches no lock.
    unsafe {
        command.pre_exec(move || {
            if prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then no signal will come.
            if std::os::unix::process::parent_id() != parent {
                return Err(std::io::Error::other(
                    "the starting process exited before llama-server started",
                ));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}

impl Drop for LlamaServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// llama-server's log when its `--port` was taken between our check and its bind.
fn port_taken(log: &str) -> bool {
    let l = log.to_ascii_lowercase();
    l.contains("address already in use")
        || l.contains("couldn't bind")
        || l.contains("failed to bind")
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

mod tempfile_path {
    //! A log file in the system temp dir, removed on drop (no dependency for one file).
    use std::path::PathBuf;

    pub struct TempLog {
        pub path: PathBuf,
    }

    impl TempLog {
        /// A new file `forge-llama-server-<pid>-<random>.log`, created exclusively (`O_EXCL`, so never
        /// through a planted file or link) with mode 0600.
        pub fn create() -> std::io::Result<(Self, std::fs::File)> {
            use std::sync::atomic::{AtomicU64, Ordering};
            static COUNTER: AtomicU64 = AtomicU64::new(0);
            let mut last = None;
            for _ in 0..16 {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                let n = COUNTER.fetch_add(1, Ordering::Relaxed);
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::hash::Hash::hash(&(nanos, n, std::process::id()), &mut h);
                let tag = std::hash::Hasher::finish(&h);
                let path = std::env::temp_dir().join(format!(
                    "forge-llama-server-{}-{tag:016x}.log",
                    std::process::id()
                ));
                match create_exclusive(&path) {
                    Ok(f) => return Ok((Self { path }, f)),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                    Err(e) => return Err(e),
                }
            }
            Err(last.unwrap_or_else(|| std::io::Error::other("no unique log name")))
        }
    }

    /// Create `path` only if nothing (no file, no link) is there, readable by this user only.
    pub fn create_exclusive(path: &std::path::Path) -> std::io::Result<std::fs::File> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
    }

    impl Drop for TempLog {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod log_file_tests {
    use super::tempfile_path::{TempLog, create_exclusive};
    use std::os::unix::fs::PermissionsExt;

    /// Issue 23, item 7: the log file's name is not predictable and it is opened with O_EXCL.
    #[test]
    fn the_log_file_is_unique_private_and_never_opened_through_a_planted_link() {
        let (a, _fa) = TempLog::create().unwrap();
        let (b, _fb) = TempLog::create().unwrap();
        assert_ne!(a.path, b.path);
        assert_eq!(
            std::fs::metadata(&a.path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let dir = std::env::temp_dir().join(format!("forge-log-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let planted = dir.join("planted.log");
        let _ = std::fs::remove_file(&planted);
        std::os::unix::fs::symlink(dir.join("victim"), &planted).unwrap();
        assert!(create_exclusive(&planted).is_err());
        assert!(!dir.join("victim").exists());
        std::fs::remove_dir_all(&dir).unwrap();
        let path = a.path.clone();
        drop(a);
        assert!(!path.exists());
    }
}
