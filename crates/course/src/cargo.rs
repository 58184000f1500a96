//! Driving cargo and libtest: build test binaries (`--no-run --message-format=json`), run them
//! directly with a timeout, and parse libtest's plain output into per-test outcomes.
//!
//! Stable Rust has no machine-readable test output, so this parses the `test NAME ... ok` lines and
//! the `---- NAME stdout ----` sections. It knows nothing about fault contracts.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;

pub fn cargo_command() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    // A CARGO_TARGET_DIR inherited from the caller must not override the dir we pass explicitly.
    cmd.env_remove("CARGO_TARGET_DIR");
    cmd
}

/// How a build or a test binary is started: directly (the default), or inside a box — a program prefix such as
/// `bwrap … -- prlimit … --`, a clean environment, and cargo arguments such as `--offline` (`grade` boxes every
/// learner's build and tests this way; `check` and `verify` start them directly).
#[derive(Debug, Clone, Default)]
pub struct Launcher {
    pub prefix: Vec<OsString>,
    /// `Some`: the environment is exactly these variables (a box starts clean); `None`: inherited.
    pub env: Option<Vec<(OsString, OsString)>>,
    /// The cargo to run instead of `$CARGO` (a box names the toolchain's own binary, not a rustup proxy).
    pub cargo: Option<PathBuf>,
    pub cargo_args: Vec<OsString>,
}

impl Launcher {
    /// `program`, behind the prefix and in the launcher's environment.
    pub fn command(&self, program: &OsStr) -> Command {
        let mut cmd = match self.prefix.split_first() {
            None => Command::new(program),
            Some((first, rest)) => {
                let mut cmd = Command::new(first);
                cmd.args(rest).arg(program);
                cmd
            }
        };
        if let Some(env) = &self.env {
            cmd.env_clear();
            cmd.envs(env.iter().map(|(k, v)| (k, v)));
        }
        cmd
    }

    fn cargo(&self) -> Command {
        let mut cmd = match &self.cargo {
            Some(cargo) => self.command(cargo.as_os_str()),
            None if self.prefix.is_empty() && self.env.is_none() => cargo_command(),
            None => self.command(&std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())),
        };
        cmd.env_remove("CARGO_TARGET_DIR");
        cmd
    }
}

/// One package's build request: the cargo package name and which integration test targets.
#[derive(Debug, Clone)]
pub struct BuildRequest {
    pub package: String,
    pub targets: Vec<String>,
}

/// A built integration test binary.
#[derive(Debug, Clone)]
pub struct TestBinary {
    pub package: String,
    pub target: String,
    pub executable: PathBuf,
    pub manifest_dir: PathBuf,
}

#[derive(Debug, Default)]
pub struct BuildOutcome {
    pub binaries: Vec<TestBinary>,
    /// Rendered compiler errors per package name (packages that failed to build).
    pub errors: BTreeMap<String, Vec<String>>,
    /// Rendered compiler warnings per package name (cargo replays them for fresh builds too).
    pub warnings: BTreeMap<String, Vec<String>>,
    pub duration: Duration,
    /// cargo's own stderr (for logs), and whether cargo exited successfully.
    pub stderr: String,
    pub success: bool,
}

/// Builds the requested test targets in one cargo invocation with `cargo build --keep-going --test …` (test profile, the same binaries `cargo test` builds), so a package that
/// does not compile does not hide the others.
pub fn build_tests(
    manifest: &Path,
    target_dir: &Path,
    requests: &[BuildRequest],
    jobs: Option<usize>,
) -> anyhow::Result<BuildOutcome> {
    build_tests_with(manifest, target_dir, requests, jobs, &Launcher::default())
}

/// [`build_tests`], cargo started by `launcher`.
pub fn build_tests_with(
    manifest: &Path,
    target_dir: &Path,
    requests: &[BuildRequest],
    jobs: Option<usize>,
    launcher: &Launcher,
) -> anyhow::Result<BuildOutcome> {
    let started = Instant::now();
    let mut cmd = launcher.cargo();
    cmd.arg("build")
        .args(&launcher.cargo_args)
        .arg("--keep-going")
        .arg("--message-format=json");
    cmd.arg("--manifest-path")
        .arg(manifest)
        .arg("--target-dir")
        .arg(target_dir);
    if let Some(jobs) = jobs {
        cmd.arg("--jobs").arg(jobs.to_string());
    }
    let mut all_targets: Vec<&str> = Vec::new();
    for request in requests {
        cmd.arg("--package").arg(&request.package);
        for target in &request.targets {
            if !all_targets.contains(&target.as_str()) {
                all_targets.push(target);
            }
        }
    }
    for target in &all_targets {
        cmd.arg("--test").arg(target);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = cmd
        .output()
        .with_context(|| format!("running cargo test --no-run for {}", manifest.display()))?;
    let mut outcome = BuildOutcome {
        duration: started.elapsed(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        success: output.status.success(),
        ..Default::default()
    };
    let wanted = |package: &str, target: &str| {
        requests
            .iter()
            .any(|r| r.package == package && r.targets.iter().any(|t| t == target))
    };
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let reason = message["reason"].as_str().unwrap_or_default();
        let package = package_name(
            message["package_id"].as_str().unwrap_or_default(),
            message["manifest_path"].as_str(),
        );
        match reason {
            "compiler-artifact" => {
                let is_test_target = message["target"]["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k == "test"));
                let target = message["target"]["name"].as_str().unwrap_or_default();
                let Some(executable) = message["executable"].as_str() else {
                    continue;
                };
                if is_test_target && wanted(&package, target) {
                    let manifest_path =
                        PathBuf::from(message["manifest_path"].as_str().unwrap_or_default());
                    outcome.binaries.push(TestBinary {
                        package: package.clone(),
                        target: target.to_owned(),
                        executable: PathBuf::from(executable),
                        manifest_dir: manifest_path
                            .parent()
                            .map(Path::to_path_buf)
                            .unwrap_or_default(),
                    });
                }
            }
            "compiler-message" => {
                let rendered =
                    clean_output(message["message"]["rendered"].as_str().unwrap_or_default());
                let bucket = match message["message"]["level"].as_str() {
                    Some("error") => &mut outcome.errors,
                    Some("warning") => &mut outcome.warnings,
                    _ => continue,
                };
                let list = bucket.entry(package).or_default();
                // The same warning is reported once per test target that compiles the file.
                if !list.contains(&rendered) {
                    list.push(rendered);
                }
            }
            _ => {}
        }
    }
    Ok(outcome)
}

/// Package name from a cargo package id (`path+file:///…/dir#name@0.1.0`, `…#0.1.0` when the
/// directory is the name, or the old `name 0.1.0 (…)` form).
fn package_name(package_id: &str, manifest_path: Option<&str>) -> String {
    if let Some((_, fragment)) = package_id.rsplit_once('#') {
        if let Some((name, _)) = fragment.split_once('@') {
            return name.to_owned();
        }
        // `#0.1.0`: the name is the last path segment of the URL.
        let url = package_id
            .rsplit_once('#')
            .map(|(u, _)| u)
            .unwrap_or_default();
        return url.rsplit('/').next().unwrap_or_default().to_owned();
    }
    if let Some((name, _)) = package_id.split_once(' ') {
        return name.to_owned();
    }
    manifest_path.unwrap_or_default().to_owned()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestOutcome {
    Passed,
    Failed,
    Ignored,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct TestResult {
    pub name: String,
    pub target: String,
    pub outcome: TestOutcome,
    /// The test's captured output (only for failures), trimmed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub output: Option<String>,
}

/// The result of running one test binary.
#[derive(Debug, Clone)]
pub struct BinaryRun {
    pub target: String,
    pub tests: Vec<TestResult>,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration: Duration,
    pub stdout: String,
    pub stderr: String,
}

/// Runs a libtest binary the way `cargo test` would (cwd = the package dir), killing it after
/// `timeout`. `filter` runs only that exact test.
pub fn run_test_binary(
    binary: &TestBinary,
    timeout: Duration,
    filter: Option<&str>,
) -> anyhow::Result<BinaryRun> {
    run_test_binary_with(binary, timeout, filter, false)
}

/// [`run_test_binary`], optionally with `--include-ignored`: a judge runs `#[ignore]`d tests too.
pub fn run_test_binary_with(
    binary: &TestBinary,
    timeout: Duration,
    filter: Option<&str>,
    include_ignored: bool,
) -> anyhow::Result<BinaryRun> {
    run_test_binary_in(
        binary,
        timeout,
        filter,
        include_ignored,
        &Launcher::default(),
    )
}

/// [`run_test_binary_with`], the binary started by `launcher`.
pub fn run_test_binary_in(
    binary: &TestBinary,
    timeout: Duration,
    filter: Option<&str>,
    include_ignored: bool,
    launcher: &Launcher,
) -> anyhow::Result<BinaryRun> {
    let started = Instant::now();
    let mut cmd = launcher.command(binary.executable.as_os_str());
    cmd.current_dir(&binary.manifest_dir)
        .env("CARGO_MANIFEST_DIR", &binary.manifest_dir)
        .env("RUST_BACKTRACE", "0")
        .env_remove("RUST_TEST_NOCAPTURE")
        .arg("--color")
        .arg("never");
    if let Some(filter) = filter {
        cmd.arg("--exact").arg(filter);
    }
    if include_ignored {
        cmd.arg("--include-ignored");
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", binary.executable.display()))?;
    let mut stdout_pipe = child.stdout.take().expect("piped");
    let mut stderr_pipe = child.stderr.take().expect("piped");
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        stdout_pipe.read_to_end(&mut buf).ok();
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        stderr_pipe.read_to_end(&mut buf).ok();
        buf
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > timeout {
            timed_out = true;
            child.kill().ok();
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let stdout = clean_output(&String::from_utf8_lossy(
        &out_reader.join().unwrap_or_default(),
    ));
    let stderr = clean_output(&String::from_utf8_lossy(
        &err_reader.join().unwrap_or_default(),
    ));
    let tests = parse_libtest(&binary.target, &stdout);
    Ok(BinaryRun {
        target: binary.target.clone(),
        tests,
        exit_code: status.code(),
        timed_out,
        duration: started.elapsed(),
        stdout,
        stderr,
    })
}

/// Test output as it should be stored and shown: without ANSI colour codes (pretty_assertions
/// paints its diffs whatever the terminal), without the thread ids newer toolchains print in
/// `thread 'name' (12345) panicked`, and without the backtrace note libtest attaches to the first
/// panic only — all three differ between runs of the same code.
pub fn clean_output(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI sequence: ESC [ parameters… final byte in '@'..='~'.
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    let mut cleaned = String::with_capacity(out.len());
    for line in out.split_inclusive('\n') {
        // libtest prints this under whichever test panicked first: it moves between runs.
        if line.starts_with("note: run with `RUST_BACKTRACE=1`") {
            continue;
        }
        cleaned.push_str(&drop_thread_id(line));
    }
    cleaned
}

/// `thread 'name' (12345) panicked at …` → `thread 'name' panicked at …`.
fn drop_thread_id(line: &str) -> std::borrow::Cow<'_, str> {
    let Some(rest) = line.strip_prefix("thread '") else {
        return line.into();
    };
    let Some(end) = rest.find("' (") else {
        return line.into();
    };
    let after = &rest[end + 3..];
    let digits = after.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || !after[digits..].starts_with(") ") {
        return line.into();
    }
    format!("thread '{}'{}", &rest[..end], &after[digits + 1..]).into()
}

/// Parses libtest's pretty output: result lines plus each failure's captured output.
pub fn parse_libtest(target: &str, stdout: &str) -> Vec<TestResult> {
    let mut results: Vec<TestResult> = Vec::new();
    let mut sections: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut current_section: Option<String> = None;
    for line in stdout.lines() {
        if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|l| l.strip_suffix(" stdout ----"))
        {
            current_section = Some(name.to_owned());
            sections.entry(name.to_owned()).or_default();
            continue;
        }
        if line == "failures:" || line.starts_with("test result: ") {
            current_section = None;
            continue;
        }
        if let Some(section) = &current_section {
            sections.get_mut(section).expect("opened").push(line);
            continue;
        }
        if let Some(rest) = line.strip_prefix("test ")
            && let Some((name, status)) = rest.rsplit_once(" ... ")
        {
            let name = name.strip_suffix(" - should panic").unwrap_or(name).trim();
            let outcome = if status == "ok" {
                TestOutcome::Passed
            } else if status == "FAILED" {
                TestOutcome::Failed
            } else if status.starts_with("ignored") {
                TestOutcome::Ignored
            } else {
                continue;
            };
            results.push(TestResult {
                name: name.to_owned(),
                target: target.to_owned(),
                outcome,
                output: None,
            });
        }
    }
    for result in &mut results {
        if result.outcome == TestOutcome::Failed
            && let Some(lines) = sections.get(&result.name)
        {
            let text = lines.join("\n");
            result.output = Some(text.trim().to_owned());
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\nrunning 3 tests\ntest a_passes ... ok\ntest b_fails ... FAILED\ntest c_skipped ... ignored, slow\ntest d - should panic ... ok\n\nfailures:\n\n---- b_fails stdout ----\n\nthread 'b_fails' panicked at tests/stage.rs:9:5:\nthe fault is visible\nnote: run with `RUST_BACKTRACE=1`\n\n\nfailures:\n    b_fails\n\ntest result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out\n";

    #[test]
    fn parses_outcomes_and_failure_output() {
        let results = parse_libtest("stage", SAMPLE);
        let summary: Vec<(&str, TestOutcome)> = results
            .iter()
            .map(|r| (r.name.as_str(), r.outcome))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("a_passes", TestOutcome::Passed),
                ("b_fails", TestOutcome::Failed),
                ("c_skipped", TestOutcome::Ignored),
                ("d", TestOutcome::Passed)
            ]
        );
        let output = results[1].output.as_deref().unwrap();
        assert!(output.starts_with("thread 'b_fails' panicked"), "{output}");
        assert!(output.contains("the fault is visible"));
        assert!(!output.contains("failures:"));
    }

    #[test]
    fn output_is_stored_without_colours_or_thread_ids() {
        let raw = "thread 'b_fails' (31337) panicked at tests/stage.rs:9:5:\n\u{1b}[1mDiff\u{1b}[0m \u{1b}[31m< left\u{1b}[0m\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\nthread 'main' panicked at x\n";
        assert_eq!(
            clean_output(raw),
            "thread 'b_fails' panicked at tests/stage.rs:9:5:\nDiff < left\nthread 'main' panicked at x\n"
        );
        // A quote in the name and a non-numeric parenthesis are left alone.
        let odd = "thread 'a' (x) panicked\n";
        assert_eq!(clean_output(odd), odd);
    }

    #[test]
    fn package_names_from_ids() {
        assert_eq!(
            package_name("path+file:///w/stages/x#forge-stage01@0.1.0", None),
            "forge-stage01"
        );
        assert_eq!(package_name("path+file:///w/xtask#0.1.0", None), "xtask");
        assert_eq!(
            package_name("xtask 0.1.0 (path+file:///w/xtask)", None),
            "xtask"
        );
    }
}
