//! The box a learner's build and tests run in: bubblewrap (no network, own PID/IPC/UTS namespaces, the
//! instructor's home hidden behind an empty tmpfs, the system, the toolchain, the registry and the course's
//! stages read-only) plus rlimits set inside it by `prlimit` (CPU seconds, address space, processes, file
//! size), run as a uid of the box's own when grading as root (the kernel never limits root's processes).
//!
//! A build may write only the learner's scratch directory; a test run writes nothing but a size-capped tmpfs
//! `/tmp`, with its scratch directory read-only.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cargo::Launcher;

/// Why grading cannot box a learner's code (grading refuses to run it unboxed).
#[derive(Debug, thiserror::Error)]
pub enum BoxError {
    #[error(
        "`grade` runs every learner's code inside bubblewrap, and `bwrap` is not installed or cannot \
         start a box here ({0}); install it with `apt-get install bubblewrap`"
    )]
    NoBubblewrap(String),
    #[error("`{0}` is needed inside the box and was not found")]
    MissingTool(&'static str),
    #[error("the Rust toolchain could not be located: {0}")]
    Toolchain(String),
}

/// What a boxed build or test may use.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// CPU seconds per process (SIGXCPU, then SIGKILL).
    pub cpu_secs: u64,
    /// Address space per process.
    pub memory_bytes: u64,
    /// Processes and threads of the box's uid.
    pub processes: u64,
    /// Largest file a process may write.
    pub file_bytes: u64,
    /// Size of the test run's `/tmp`.
    pub tmp_bytes: u64,
}

impl Limits {
    /// A build: rustc needs threads and address space; the learner's code does not run.
    pub fn build() -> Limits {
        Limits {
            cpu_secs: 300,
            memory_bytes: 4 << 30,
            processes: 256,
            file_bytes: 512 << 20,
            tmp_bytes: 256 << 20,
        }
    }

    /// A test run of the learner's code.
    pub fn tests(timeout_secs: u64) -> Limits {
        Limits {
            cpu_secs: timeout_secs + 5,
            memory_bytes: 1 << 30,
            processes: 64,
            file_bytes: 16 << 20,
            tmp_bytes: 16 << 20,
        }
    }
}

/// Where the toolchain and the registry live on this machine (bound read-only into every box).
#[derive(Debug, Clone)]
pub struct Toolchain {
    pub sysroot: PathBuf,
    pub registry: PathBuf,
    pub git: Option<PathBuf>,
    pub bwrap: PathBuf,
    pub prlimit: PathBuf,
    /// `Some` when grading as root: the box drops to a uid of its own (`setpriv`).
    pub setpriv: Option<PathBuf>,
    pub home: Option<PathBuf>,
}

/// The cargo home inside a build box: a tmpfs with the registry bound read-only below it.
const BOX_CARGO_HOME: &str = "/cargo-home";

impl Toolchain {
    /// Finds bubblewrap, prlimit, the sysroot and the registry; starts one trial box.
    pub fn locate() -> Result<Toolchain, BoxError> {
        let bwrap = which("bwrap").ok_or_else(|| BoxError::NoBubblewrap("not on PATH".into()))?;
        let prlimit = which("prlimit").ok_or(BoxError::MissingTool("prlimit"))?;
        let root = is_root();
        let setpriv = if root {
            Some(which("setpriv").ok_or(BoxError::MissingTool("setpriv"))?)
        } else {
            None
        };
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        let output = Command::new(rustc)
            .args(["--print", "sysroot"])
            .output()
            .map_err(|e| BoxError::Toolchain(e.to_string()))?;
        if !output.status.success() {
            return Err(BoxError::Toolchain(
                String::from_utf8_lossy(&output.stderr).into_owned(),
            ));
        }
        let sysroot = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".cargo")))
            .ok_or_else(|| BoxError::Toolchain("neither CARGO_HOME nor HOME is set".into()))?;
        let git = cargo_home.join("git");
        let toolchain = Toolchain {
            sysroot,
            registry: cargo_home.join("registry"),
            git: git.is_dir().then_some(git),
            bwrap,
            prlimit,
            setpriv,
            home,
        };
        toolchain.trial()?;
        Ok(toolchain)
    }

    /// One empty box, so a kernel without user namespaces fails here with bwrap's own words.
    fn trial(&self) -> Result<(), BoxError> {
        let spec = BoxSpec {
            toolchain: self,
            scratch: Path::new("/nonexistent-forge-scratch"),
            course: None,
            uid: None,
            limits: Limits::tests(5),
        };
        let mut cmd = spec.launcher(Mode::Run).command("true".as_ref());
        let output = cmd
            .output()
            .map_err(|e| BoxError::NoBubblewrap(e.to_string()))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(BoxError::NoBubblewrap(
                String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            ))
        }
    }

    pub fn cargo(&self) -> PathBuf {
        self.sysroot.join("bin/cargo")
    }
}

/// A build (writes the scratch directory) or a test run (writes only its tmpfs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Build,
    Run,
}

/// One learner's box.
pub struct BoxSpec<'a> {
    pub toolchain: &'a Toolchain,
    /// The learner's scratch directory, at the same path inside the box.
    pub scratch: &'a Path,
    /// The course root and its `stages/` (path dependencies of a stage's manifest, which inherit from the
    /// root manifest), read-only in builds: the root's `Cargo.toml` and `stages/`, nothing else of the course.
    pub course: Option<(&'a Path, &'a Path)>,
    /// The uid the box runs as (when grading as root).
    pub uid: Option<u32>,
    pub limits: Limits,
}

impl BoxSpec<'_> {
    /// The launcher for `mode`: bwrap's mounts and namespaces, then the uid drop, then the rlimits.
    pub fn launcher(&self, mode: Mode) -> Launcher {
        let mut prefix = vec![self.toolchain.bwrap.clone().into_os_string()];
        prefix.extend(self.mounts(mode).list);
        prefix.push("--".into());
        prefix.extend(self.inside());
        let cargo_args = match mode {
            // One rustc at a time per learner: learners already run side by side.
            Mode::Build => vec!["--offline".into(), "--jobs".into(), "1".into()],
            Mode::Run => Vec::new(),
        };
        Launcher {
            prefix,
            env: Some(self.env(mode)),
            cargo: Some(self.toolchain.cargo()),
            cargo_args,
        }
    }

    /// bwrap's namespaces and mounts for `mode`.
    fn mounts(&self, mode: Mode) -> Mounts {
        let tc = self.toolchain;
        let mut m = Mounts::default();
        m.args(&["--unshare-net", "--unshare-pid", "--unshare-ipc"]);
        m.args(&["--unshare-uts", "--unshare-cgroup-try"]);
        m.args(&["--die-with-parent", "--new-session"]);
        m.system();
        let tmp_size = self.limits.tmp_bytes.to_string();
        m.args(&["--perms", "1777", "--size", &tmp_size, "--tmpfs", "/tmp"]);
        m.mounted.push(PathBuf::from("/tmp"));
        if let Some(home) = tc.home.as_ref().filter(|h| h.as_os_str() != "/") {
            // The instructor's home: an empty tmpfs (their keys, config and history are not in the box).
            m.ancestors(home);
            m.args(&["--tmpfs"]);
            m.paths(&[home]);
            m.mounted.push(home.clone());
        }
        m.mount("--ro-bind", &tc.sysroot, &tc.sysroot);
        if mode == Mode::Build {
            m.args(&["--perms", "0777", "--tmpfs", BOX_CARGO_HOME]);
            m.mounted.push(PathBuf::from(BOX_CARGO_HOME));
            let registry = Path::new(BOX_CARGO_HOME).join("registry");
            m.mount("--ro-bind-try", &tc.registry, &registry);
            if let Some(git) = &tc.git {
                m.mount("--ro-bind", git, &Path::new(BOX_CARGO_HOME).join("git"));
            }
            if let Some((root, stages)) = self.course {
                let manifest = root.join("Cargo.toml");
                m.mount("--ro-bind", &manifest, &manifest);
                m.mount("--ro-bind", stages, stages);
            }
            m.mount("--bind", self.scratch, self.scratch);
        } else {
            m.mount("--ro-bind-try", self.scratch, self.scratch);
        }
        m
    }

    /// What runs first inside the box: the drop to the box's uid (as root), then the rlimits.
    fn inside(&self) -> Vec<OsString> {
        let tc = self.toolchain;
        let mut a: Vec<OsString> = Vec::new();
        if let (Some(setpriv), Some(uid)) = (&tc.setpriv, self.uid) {
            let id = uid.to_string();
            a.push(setpriv.into());
            for arg in ["--reuid", &id, "--regid", &id, "--clear-groups"] {
                a.push(arg.into());
            }
            for arg in ["--inh-caps=-all", "--bounding-set=-all", "--"] {
                a.push(arg.into());
            }
        }
        let l = self.limits;
        a.push(tc.prlimit.clone().into());
        for (name, value) in [
            ("cpu", l.cpu_secs),
            ("as", l.memory_bytes),
            ("nproc", l.processes),
            ("fsize", l.file_bytes),
            ("core", 0),
        ] {
            a.push(format!("--{name}={value}").into());
        }
        a.push("--".into());
        a
    }

    /// The box's whole environment (nothing of the instructor's is passed on).
    fn env(&self, mode: Mode) -> Vec<(OsString, OsString)> {
        let tc = self.toolchain;
        let path = format!("{}:/usr/bin:/bin", tc.sysroot.join("bin").display());
        let mut env: Vec<(OsString, OsString)> = vec![
            ("PATH".into(), path.into()),
            ("LANG".into(), "C.UTF-8".into()),
            ("RUST_BACKTRACE".into(), "0".into()),
            ("TMPDIR".into(), "/tmp".into()),
        ];
        if let Some(home) = &tc.home {
            env.push(("HOME".into(), home.into()));
        }
        if mode == Mode::Build {
            env.push(("CARGO_HOME".into(), BOX_CARGO_HOME.into()));
            env.push(("RUSTC".into(), tc.sysroot.join("bin/rustc").into()));
            env.push(("CARGO_TERM_COLOR".into(), "never".into()));
            // Every learner's build reuses the seed's dependency units: no incremental state to grow.
            env.push(("CARGO_INCREMENTAL".into(), "0".into()));
        }
        env
    }
}

/// bwrap's mount arguments in order. Every directory a mount needs on its way down is made first with mode
/// 0755 (bwrap would make it 0700, and the box's uid could not pass through it).
#[derive(Default)]
struct Mounts {
    list: Vec<OsString>,
    mounted: Vec<PathBuf>,
}

impl Mounts {
    fn args(&mut self, items: &[&str]) {
        self.list.extend(items.iter().map(OsString::from));
    }

    fn paths(&mut self, items: &[&Path]) {
        self.list
            .extend(items.iter().map(|p| p.as_os_str().to_os_string()));
    }

    fn ancestors(&mut self, dest: &Path) {
        let mut chain: Vec<&Path> = dest.ancestors().skip(1).collect();
        chain.reverse();
        for dir in chain {
            let exists = dir == Path::new("/")
                || self.mounted.iter().any(|m| m == dir)
                || ["/usr", "/etc", "/proc", "/dev"]
                    .iter()
                    .any(|system| dir.starts_with(system));
            if !exists {
                self.args(&["--perms", "0755", "--dir"]);
                self.paths(&[dir]);
                self.mounted.push(dir.to_path_buf());
            }
        }
    }

    /// The system, read-only: `/usr` (and the top-level links into it, or the directories), `/etc`, `/proc`, `/dev`.
    fn system(&mut self) {
        self.mount("--ro-bind", Path::new("/usr"), Path::new("/usr"));
        for top in ["bin", "sbin", "lib", "lib64", "lib32"] {
            let path = Path::new("/").join(top);
            match std::fs::read_link(&path) {
                Ok(target) => {
                    self.args(&["--symlink"]);
                    self.paths(&[&target, &path]);
                }
                Err(_) if path.is_dir() => self.mount("--ro-bind", &path, &path),
                Err(_) => {}
            }
        }
        self.mount("--ro-bind", Path::new("/etc"), Path::new("/etc"));
        self.args(&["--proc", "/proc", "--dev", "/dev"]);
        self.mounted
            .extend([PathBuf::from("/proc"), PathBuf::from("/dev")]);
    }

    fn mount(&mut self, kind: &str, src: &Path, dest: &Path) {
        self.ancestors(dest);
        self.args(&[kind]);
        self.paths(&[src, dest]);
        self.mounted.push(dest.to_path_buf());
    }
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn is_root() -> bool {
    // The uid of this process, read from procfs (no libc dependency for one number).
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// Whether this process grades as root (then every box runs as a uid of its own).
pub fn grading_as_root() -> bool {
    is_root()
}
