//! Shared by xtask's self-tests: private copies of the fixture course (under cargo's target tmp
//! dir, never the source tree), the real xtask binary run against them, and small readers.
// Every test binary compiles this module and uses a part of it: what one binary leaves unused is not dead.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn fixture_course() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/course")
}

/// Mirrors `from` into `to`, writing only files whose bytes differ (so cargo's fingerprints
/// survive between test runs) and deleting what `from` lacks, except `target/`.
pub fn mirror(from: &Path, to: &Path, only_stages: Option<&[&str]>) {
    fs::create_dir_all(to).unwrap();
    let mut wanted = Vec::new();
    copy(from, from, to, only_stages, &mut wanted);
    prune(to, to, &wanted);
}

fn copy(base: &Path, dir: &Path, to: &Path, only: Option<&[&str]>, wanted: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let rel = path.strip_prefix(base).unwrap().to_path_buf();
        if rel.starts_with("target") || rel.starts_with("learn") || rel.starts_with("evidence") {
            continue;
        }
        if let (Some(only), Ok(inside)) = (only, rel.strip_prefix("stages")) {
            let stage = inside
                .components()
                .next()
                .map(|c| c.as_os_str().to_string_lossy().into_owned());
            if stage.is_some_and(|s| !only.contains(&s.as_str())) {
                continue;
            }
        }
        if path.is_dir() {
            copy(base, &path, to, only, wanted);
        } else {
            let bytes = fs::read(&path).unwrap();
            let dest = to.join(&rel);
            if fs::read(&dest).ok() != Some(bytes.clone()) {
                fs::create_dir_all(dest.parent().unwrap()).unwrap();
                fs::write(&dest, bytes).unwrap();
            }
            wanted.push(rel);
        }
    }
}

fn prune(base: &Path, dir: &Path, wanted: &[PathBuf]) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let rel = path.strip_prefix(base).unwrap().to_path_buf();
        if rel.starts_with("target") || rel == Path::new("Cargo.lock") {
            continue;
        }
        if path.is_dir() {
            prune(base, &path, wanted);
        } else if !wanted.contains(&rel) {
            fs::remove_file(&path).unwrap();
        }
    }
}

/// A private copy of the fixture course (optionally only some stages) for one test.
pub struct Sandbox {
    pub dir: PathBuf,
}

impl Sandbox {
    pub fn new(name: &str, only_stages: Option<&[&str]>) -> Sandbox {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("xtask-selftest")
            .join(name);
        mirror(&fixture_course(), &dir.join("course"), only_stages);
        for generated in ["evidence", "course/learn", "course/evidence"] {
            fs::remove_dir_all(dir.join(generated)).ok();
        }
        Sandbox { dir }
    }

    pub fn course(&self) -> PathBuf {
        self.dir.join("course")
    }

    pub fn evidence(&self) -> PathBuf {
        self.dir.join("evidence")
    }

    pub fn xtask(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
        cmd.args(args)
            .arg("--root")
            .arg(self.course())
            .arg("--scratch-dir")
            .arg(self.dir.join("scratch"))
            .env("LANG", "C");
        if args[0] == "verify" {
            cmd.arg("--evidence").arg(self.evidence());
        }
        cmd.output().unwrap()
    }

    pub fn verification(&self) -> serde_json::Value {
        read_json(&self.evidence().join("verification.json"))
    }
}

pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(
        &fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub fn assert_schema_valid(report: &serde_json::Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/verification.schema.json");
    let schema = read_json(&path);
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|e| format!("{} {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "verification.json violates its schema:\n{}",
        errors.join("\n")
    );
}
