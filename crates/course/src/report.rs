//! verification.json: the report types (schemas/verification.schema.json), timestamps, host and
//! toolchain facts. Field meanings are documented in docs/xtask.md.
//!
//! This module only describes, serialises and validates results (a report its own schema rejects is never
//! written); it does not decide outcomes.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::SystemTime;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::cargo::TestResult;

pub const FORMAT_VERSION: u32 = 1;

/// Refuses to write a report that its own schema would reject.
pub fn check_against_schema(verification: &Verification) -> anyhow::Result<()> {
    let validator = crate::course::compile_schema("verification.schema.json")?;
    let errors = crate::course::schema_errors(&validator, &serde_json::to_value(verification)?);
    if !errors.is_empty() {
        anyhow::bail!(
            "the report violates schemas/verification.schema.json:\n  {}",
            errors.join("\n  ")
        );
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Reference,
    Learner,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verification {
    pub format_version: u32,
    pub mode: Mode,
    pub generator: String,
    pub toolchain: Toolchain,
    pub host: Host,
    pub started_at: String,
    pub finished_at: String,
    pub duration_ms: u64,
    pub options: RunOptions,
    pub all_contracts_hold: bool,
    pub stages_tree_hash: String,
    pub cargo_lock_blake3: Option<String>,
    pub summary: BTreeMap<String, u32>,
    pub stages: Vec<StageReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunOptions {
    pub selected: Vec<String>,
    pub no_cache: bool,
    pub jobs: u32,
    pub timeout_s: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Toolchain {
    pub rustc: String,
    pub rustc_commit: String,
    pub host_triple: String,
    pub cargo: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Host {
    pub os: String,
    pub os_release: Option<String>,
    pub kernel: Option<String>,
    pub arch: String,
    pub cpus: u32,
    pub memory_mib: Option<u64>,
}

/// One stage's verdict. In reference mode `outcome` is a contract class; in learner mode it says
/// whether the learner's code passes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageReport {
    pub stage_id: String,
    pub experiment_id: String,
    pub fault_id: Option<String>,
    pub outcome: String,
    pub detail: String,
    pub expected: Expectation,
    pub observed: Observation,
    pub cached: bool,
    pub cached_from: Option<String>,
    pub cache_key: String,
    pub duration_ms: u64,
    pub files: BTreeMap<String, String>,
    pub runs: Runs,
    pub evidence_dir: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Expectation {
    /// Tests that must fail (the target test under the fault; nothing for solutions).
    pub fail: Vec<String>,
    /// Tests that must pass.
    pub pass: Vec<String>,
    pub excerpt: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Observation {
    pub failed: Vec<String>,
    pub passed: Vec<String>,
    pub excerpt_found: Option<bool>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Runs {
    pub solution: Option<RunReport>,
    pub fault: Option<RunReport>,
    pub learner: Option<RunReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// `solution`, `fault` or `learner`.
    pub variant: String,
    /// Where the crate that ran lives, relative to the course root when possible.
    pub source_dir: String,
    pub targets: Vec<String>,
    pub build_ok: bool,
    pub build_errors: Vec<String>,
    /// Wall time of the (shared) cargo build that produced this run's binaries.
    pub build_ms: u64,
    /// Wall time spent running this run's test binaries.
    pub run_ms: u64,
    pub timed_out: bool,
    pub passed: u32,
    pub failed: u32,
    pub ignored: u32,
    pub tests: Vec<TestResult>,
}

/// RFC 3339 UTC timestamp with millisecond precision, e.g. `2026-04-30T22:07:01.123Z`.
pub fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

pub fn toolchain() -> anyhow::Result<Toolchain> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(&rustc)
        .arg("-vV")
        .output()
        .context("running `rustc -vV`")?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    };
    let cargo = crate::cargo::cargo_command()
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    Ok(Toolchain {
        rustc: text.lines().next().unwrap_or_default().to_owned(),
        rustc_commit: field("commit-hash:"),
        host_triple: field("host:"),
        cargo,
    })
}

pub fn host() -> Host {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let os_release = read("/etc/os-release").and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_owned())
    });
    let memory_mib = read("/proc/meminfo").and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib / 1024)
    });
    Host {
        os: std::env::consts::OS.to_owned(),
        os_release,
        kernel: read("/proc/sys/kernel/osrelease").map(|k| k.trim().to_owned()),
        arch: std::env::consts::ARCH.to_owned(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        memory_mib,
    }
}

/// Keys whose values change from run to run although nothing about the verdicts changed: when and
/// where it ran, how long it took, and whether the result came from the cache.
const VOLATILE_KEYS: &[&str] = &[
    "started_at",
    "finished_at",
    "duration_ms",
    "toolchain",
    "host",
    "jobs",
    "no_cache",
    "cached",
    "cached_from",
    "cache_key",
    "build_ms",
    "run_ms",
    "generator",
];

/// The report without its volatile keys (at any depth): what a re-run must reproduce.
pub fn substance(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => map
            .iter()
            .filter(|(k, _)| !VOLATILE_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), substance(v)))
            .collect(),
        serde_json::Value::Array(items) => items.iter().map(substance).collect(),
        other => other.clone(),
    }
}

/// Writes a reference report only when its substance differs from the file already there, so a
/// re-run that reproduces the same verdicts leaves a committed `evidence/verification.json` (and
/// its timestamps, which then say when these results were first produced) untouched.
pub fn write_if_substance_changed(
    path: &std::path::Path,
    verification: &Verification,
) -> anyhow::Result<bool> {
    let fresh = serde_json::to_value(verification)?;
    let unchanged = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|old| substance(&old) == substance(&fresh));
    if unchanged {
        return Ok(false);
    }
    crate::scratch::write_if_changed(
        path,
        (serde_json::to_string_pretty(&fresh)? + "\n").as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn substance_ignores_timings_and_cache_flags_at_any_depth() {
        let a = serde_json::json!({"started_at": "x", "stages": [{"outcome": "holds", "cached": true,
            "runs": {"fault": {"run_ms": 3, "failed": 1}}}]});
        let b = serde_json::json!({"started_at": "y", "stages": [{"outcome": "holds", "cached": false,
            "runs": {"fault": {"run_ms": 9, "failed": 1}}}]});
        assert_eq!(substance(&a), substance(&b));
        let c = serde_json::json!({"started_at": "y", "stages": [{"outcome": "collateral", "cached": false,
            "runs": {"fault": {"run_ms": 9, "failed": 2}}}]});
        assert_ne!(substance(&a), substance(&c));
    }

    #[test]
    fn formats_rfc3339() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_709_251_199_250); // leap-year February end
        assert_eq!(rfc3339(t), "2024-02-29T23:59:59.250Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(t), "2000-02-29T00:00:00.000Z");
    }
}
