//! `cargo xtask llama-tools`: build llama.cpp's `llama-server` and `llama-bench` from the llama-cpp-python
//! sdist (the only registry package that ships llama.cpp's full tree) into `target/llama-tools/`.
//!
//! The sdist is fetched with pip and its sha256 checked against the pinned value; the build is cached outside
//! the clone under `~/.cache/forge/llama-tools/<sdist hash>-<cpu fingerprint>/` (`$FORGE_CACHE_DIR` moves it),
//! so a fresh clone on the same machine only copies two files. The tools are built for the build machine's
//! CPU (ggml's feature switches set one by one from /proc/cpuinfo, as for the runner's own llama.cpp); the CPU fingerprint in the cache key keeps a cache restored on another CPU from
//! being used. Nothing here is vendored into the repository, and nothing is run but pip, tar and cmake.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::args::{Args, Verb};

pub const LLAMA_TOOLS: Verb = Verb {
    name: "llama-tools",
    about: "Build llama-server and llama-bench from the llama-cpp-python sdist into target/llama-tools/",
    positionals: "",
    flags: &[
        ("force", None, "rebuild even when a build is cached"),
        ("jobs", Some("N"), "parallel compile jobs"),
        ("print-dir", None, "print the tools directory and do nothing else"),
    ],
};

pub const USAGE: &str = "cargo xtask llama-tools [--force] [--jobs N] [--print-dir]";

/// The package whose sdist carries `vendor/llama.cpp`.
const PACKAGE: &str = "llama-cpp-python";
const VERSION: &str = "0.3.36";
/// sha256 of llama_cpp_python-0.3.36.tar.gz as first fetched from the registry.
const SDIST_SHA256: &str = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e";
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
    let home = std::env::var_os("HOME").context("neither FORGE_CACHE_DIR, XDG_CACHE_HOME nor HOME is set")?;
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
    let simd: Vec<&str> =
        flags.iter().copied().filter(|f| f.starts_with("avx") || ["fma", "f16c", "bmi2", "sse4_2", "asimd", "sve"].contains(f)).collect();
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
    let has = |names: &[&str]| if names.iter().all(|n| flags.contains(n)) { "ON" } else { "OFF" };
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

pub fn cmd_llama_tools(root: &Path, args: Args) -> anyhow::Result<()> {
    args.at_most_positionals(0, USAGE)?;
    let dest = tools_dir(root);
    if args.flag("print-dir") {
        println!("{}", dest.display());
        return Ok(());
    }
    let jobs = args.number("jobs")?.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get() as u64));
    let (cpu, simd) = cpu_fingerprint();
    // The feature switches are part of the key: a cache built with other switches is another build.
    let switches = blake3::hash(ggml_feature_defines().join(" ").as_bytes()).to_hex()[..8].to_string();
    let key = format!("{}-{cpu}-{switches}", &SDIST_SHA256[..16]);
    let force = args.flag("force");

    if !force && installed_matches(&dest, &key) {
        eprintln!("llama-tools: {} already built for this CPU (sdist sha256 {})", dest.display(), &SDIST_SHA256[..16]);
        return Ok(());
    }
    let cache = cache_root()?;
    let entry = cache.join(&key);
    if force || !TOOLS.iter().all(|t| entry.join(t).is_file()) || !entry.join("manifest.json").is_file() {
        let started = Instant::now();
        build_into(&cache, &entry, jobs, &simd)?;
        eprintln!("llama-tools: built in {:.0} s", started.elapsed().as_secs_f64());
    } else {
        eprintln!("llama-tools: using the cached build {}", entry.display());
    }
    install(&entry, &dest)?;
    eprintln!("llama-tools: {} and {} in {}", TOOLS[0], TOOLS[1], dest.display());
    Ok(())
}

fn installed_matches(dest: &Path, key: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(dest.join("manifest.json")) else { return false };
    let Ok(m) = serde_json::from_str::<Value>(&text) else { return false };
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
        std::fs::copy(entry.join(f), tmp.join(f)).with_context(|| format!("copying {f} from {}", entry.display()))?;
    }
    let _ = std::fs::remove_dir_all(dest);
    std::fs::rename(&tmp, dest).with_context(|| format!("moving the tools into {}", dest.display()))?;
    Ok(())
}

fn run(cmd: &mut Command, what: &str) -> anyhow::Result<()> {
    eprintln!("llama-tools: {what}");
    let status = cmd.status().with_context(|| format!("cannot start {:?} ({what})", cmd.get_program()))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// Fetch (or reuse) the sdist, check its hash, build both tools and store them in `entry`.
fn build_into(cache: &Path, entry: &Path, jobs: u64, simd: &str) -> anyhow::Result<()> {
    for tool in ["cmake", "tar"] {
        if Command::new(tool).arg("--version").output().is_err() {
            bail!("{tool} is not installed (scripts/test-all.sh installs it; on Debian: apt-get install cmake)");
        }
    }
    let started = Instant::now();
    let sdist_dir = cache.join("sdist");
    std::fs::create_dir_all(&sdist_dir)?;
    let sdist = sdist_dir.join(sdist_file_name());
    let have = sdist.is_file() && forge_model::fetch::sha256_file(&sdist).map(|h| h == SDIST_SHA256).unwrap_or(false);
    if !have {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        run(
            Command::new(&python)
                .args(["-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", "--dest"])
                .arg(&sdist_dir)
                .arg(format!("{PACKAGE}=={VERSION}")),
            &format!("downloading the {PACKAGE} {VERSION} sdist with pip"),
        )?;
    }
    let hash = forge_model::fetch::sha256_file(&sdist).with_context(|| format!("hashing {}", sdist.display()))?;
    if hash != SDIST_SHA256 {
        bail!("{} has sha256 {hash}, expected {SDIST_SHA256}; delete it and retry", sdist.display());
    }
    let fetched_s = started.elapsed().as_secs_f64();

    let work = cache.join(format!("work-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let top = format!("{}-{VERSION}", PACKAGE.replace('-', "_"));
    run(
        Command::new("tar").arg("-xzf").arg(&sdist).arg("-C").arg(&work).arg(format!("{top}/vendor/llama.cpp")),
        "unpacking vendor/llama.cpp",
    )?;
    let src = work.join(&top).join("vendor/llama.cpp");
    let ggml_version = ggml_version(&src.join("ggml/CMakeLists.txt")).unwrap_or_else(|| "unknown".into());
    let build = work.join("build");
    let features = ggml_feature_defines();
    let mut defines: Vec<&str> = vec![
        "-DCMAKE_BUILD_TYPE=Release",
        "-DBUILD_SHARED_LIBS=OFF",
        "-DLLAMA_CURL=OFF",
        "-DLLAMA_OPENSSL=OFF",
        "-DLLAMA_BUILD_TOOLS=ON",
        "-DLLAMA_BUILD_SERVER=ON",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF",
        // No web UI: neither npm nor a download at build time.
        "-DLLAMA_BUILD_UI=OFF",
        "-DLLAMA_USE_PREBUILT_UI=OFF",
    ];
    // For the machine that builds (and runs) them, feature by feature; the cache key holds both the CPU
    // fingerprint and these switches.
    defines.extend(features.iter().map(String::as_str));
    let configure_started = Instant::now();
    run(Command::new("cmake").arg("-S").arg(&src).arg("-B").arg(&build).args(&defines).arg("-Wno-dev"), "configuring llama.cpp")?;
    run(
        Command::new("cmake").arg("--build").arg(&build).args(["--config", "Release", "--target"]).args(TOOLS).args(["-j", &jobs.to_string()]),
        &format!("compiling {} and {} ({jobs} jobs; several minutes)", TOOLS[0], TOOLS[1]),
    )?;
    let compile_s = configure_started.elapsed().as_secs_f64();

    let staged = cache.join(format!("staged-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staged);
    std::fs::create_dir_all(&staged)?;
    for t in TOOLS {
        std::fs::copy(build.join("bin").join(t), staged.join(t)).with_context(|| format!("{t} was not built"))?;
    }
    let (cpu, _) = cpu_fingerprint();
    let manifest = json!({
        "what": "llama.cpp tools built by `cargo xtask llama-tools` (not the runner's in-process llama.cpp)",
        "package": PACKAGE,
        "version": VERSION,
        "sdist": sdist_file_name(),
        "sdist_sha256": SDIST_SHA256,
        "ggml_version": ggml_version,
        "cmake_defines": defines,
        "cpu_fingerprint": cpu,
        "cpu_simd_flags": simd,
        "cache_key": entry.file_name().map(|n| n.to_string_lossy().into_owned()),
        "jobs": jobs,
        "fetch_seconds": (fetched_s * 10.0).round() / 10.0,
        "compile_seconds": compile_s.round(),
        "built_at": forge_model::fetch::now_rfc3339(),
    });
    std::fs::write(staged.join("manifest.json"), serde_json::to_string_pretty(&manifest)? + "\n")?;
    let _ = std::fs::remove_dir_all(entry);
    std::fs::rename(&staged, entry).with_context(|| format!("storing the build in {}", entry.display()))?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// `0.25.3` from ggml's CMakeLists (`set(GGML_VERSION_MAJOR 0)` …).
pub fn ggml_version(cmakelists: &Path) -> Option<String> {
    let text = std::fs::read_to_string(cmakelists).ok()?;
    let part = |name: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("set({name} "))?.strip_suffix(')').map(str::trim).map(str::to_string))
    };
    Some(format!("{}.{}.{}", part("GGML_VERSION_MAJOR")?, part("GGML_VERSION_MINOR")?, part("GGML_VERSION_PATCH")?))
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
        assert_eq!(sdist_file_name(), "llama_cpp_python-0.3.36.tar.gz");
    }

    #[test]
    fn an_install_for_another_cache_key_is_not_reused() {
        let dir = std::env::temp_dir().join(format!("forge-llama-tools-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for t in TOOLS {
            std::fs::write(dir.join(t), "").unwrap();
        }
        std::fs::write(dir.join("manifest.json"), r#"{"cache_key":"832db0699007f1be-aaaaaaaaaaaa"}"#).unwrap();
        assert!(installed_matches(&dir, "832db0699007f1be-aaaaaaaaaaaa"));
        assert!(!installed_matches(&dir, "832db0699007f1be-bbbbbbbbbbbb"));
        std::fs::remove_file(dir.join("llama-bench")).unwrap();
        assert!(!installed_matches(&dir, "832db0699007f1be-aaaaaaaaaaaa"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
