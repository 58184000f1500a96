//! One build serves the whole test command and whatever runs after it: `cargo test --workspace` compiles nothing
//! `cargo build --workspace --all-targets` (the test command's one build) did not, and every compilation unit
//! `cargo build -p runner` (the main job) or `cargo build -p xtask` (`cargo xtask`) needs — llama.cpp's build
//! script included — is one the tests already built: same package, target, features, opt-level and debug info.
//! Read from cargo's unit graph, so the checks run in seconds and build nothing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// A compilation unit as cargo caches it: package, target, mode, features, opt-level, debug info.
type Unit = (String, String, String, Vec<String>, String, String);
type Units = BTreeSet<Unit>;

fn workspace_manifest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml")
}

/// The units of `cargo <args>`, from `--unit-graph`. That flag is unstable: `RUSTC_BOOTSTRAP=1` lets the
/// stable cargo print it. A throwaway target directory keeps clear of the lock of the build running us.
fn units(args: &[&str]) -> Units {
    let scratch = tempfile::tempdir().expect("scratch target dir");
    let out = Command::new(env!("CARGO"))
        .args(args)
        .arg("--manifest-path")
        .arg(workspace_manifest())
        .arg("--target-dir")
        .arg(scratch.path())
        .args([
            "--locked",
            "--offline",
            "--unit-graph",
            "-Z",
            "unstable-options",
        ])
        .env("RUSTC_BOOTSTRAP", "1")
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo {args:?} --unit-graph: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let graph: Value = serde_json::from_slice(&out.stdout).expect("unit graph is JSON");
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    graph["units"]
        .as_array()
        .expect("units")
        .iter()
        .map(|u| {
            // `pkg_id` is `source#name@version`, or `source#version` when a path package's folder is its name.
            let id = text(&u["pkg_id"]);
            let (source, fragment) = id.split_once('#').unwrap_or(("", &id));
            let package = if fragment.contains('@') {
                fragment.to_owned()
            } else {
                format!("{}@{fragment}", source.rsplit('/').next().unwrap_or(source))
            };
            let features = u["features"]
                .as_array()
                .expect("features")
                .iter()
                .map(text)
                .collect();
            (
                package,
                text(&u["target"]["name"]),
                text(&u["mode"]),
                features,
                text(&u["profile"]["opt_level"]),
                text(&u["profile"]["debuginfo"]),
            )
        })
        .collect()
}

/// The units of `cargo test --workspace --no-run`, computed once for every check in this binary.
fn tests_build() -> &'static Units {
    static TESTS: OnceLock<Units> = OnceLock::new();
    TESTS.get_or_init(|| units(&["test", "--workspace", "--no-run"]))
}

/// The units of `wanted` that `built` lacks, each with the variants `built` has of it instead.
fn not_built_by(wanted: &Units, built: &Units, who: &str) -> Vec<String> {
    wanted
        .difference(built)
        .map(|u| {
            let instead: Vec<String> = built
                .iter()
                .filter(|t| t.0 == u.0 && t.1 == u.1 && t.2 == u.2)
                .map(|t| format!("{:?} opt {} debug {}", t.3, t.4, t.5))
                .collect();
            format!(
                "{} {} ({}): {who} {:?} opt {} debug {} — built {instead:?}",
                u.0, u.1, u.2, u.3, u.4, u.5
            )
        })
        .collect()
}

#[test]
fn the_runners_build_is_a_subset_of_the_tests_build() {
    let runner = units(&["build", "-p", "runner"]);
    assert!(
        runner
            .iter()
            .any(|u| u.0.starts_with("llama-cpp-sys-2") && u.2 == "run-custom-build"),
        "the runner's build includes llama.cpp's build script"
    );
    let missing = not_built_by(&runner, tests_build(), "runner");
    assert!(
        missing.is_empty(),
        "`cargo run -p runner` would compile units the test command did not build; pin their features in \
         crates/runner/Cargo.toml:\n{}",
        missing.join("\n")
    );
}

/// `scripts/start.sh` checks the model with `cargo xtask model fetch` before it serves, and learners run
/// `cargo xtask` verbs after the tests: xtask resolved alone must find every unit built.
#[test]
fn the_xtask_build_is_a_subset_of_the_tests_build() {
    let xtask = units(&["build", "-p", "xtask"]);
    let missing = not_built_by(&xtask, tests_build(), "xtask");
    assert!(
        missing.is_empty(),
        "`cargo xtask` would compile units the test command did not build; pin their features in \
         xtask/Cargo.toml ([build-dependencies] for the host side):\n{}",
        missing.join("\n")
    );
}

/// `scripts/test-all.sh` builds once with `cargo build --workspace --all-targets` and then runs `cargo xtask`
/// verbs and `cargo test --workspace`: that must compile nothing but the doctests it always compiles on the fly.
#[test]
fn the_test_commands_one_build_is_the_tests_build() {
    let script =
        std::fs::read_to_string(workspace_manifest().with_file_name("scripts/test-all.sh"))
            .expect("scripts/test-all.sh is readable");
    assert!(
        script
            .lines()
            .any(|l| l.trim() == "cargo build --workspace --all-targets"),
        "scripts/test-all.sh builds with the command this test checks"
    );
    let all_targets = units(&["build", "--workspace", "--all-targets"]);
    let tests: Units = tests_build()
        .iter()
        .filter(|u| u.2 != "doctest")
        .cloned()
        .collect();
    let missing = not_built_by(&tests, &all_targets, "tests");
    assert!(
        missing.is_empty(),
        "`cargo test --workspace` would compile units `cargo build --workspace --all-targets` did not:\n{}",
        missing.join("\n")
    );
}
