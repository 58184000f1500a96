//! `cargo xtask mutants`: how strong each stage's tests are, measured with cargo-mutants.
//!
//! For each stage, a standalone copy of the crate (scratch area, never `stages/`) is handed to
//! `cargo mutants`; its `outcomes.json` becomes `evidence/mutants/NN-name.json`: the counts, every
//! surviving mutant and the reason `stage.toml` gives for it. The file holds no timings, so an
//! unchanged stage rewrites nothing. A survivor without a reason, or a reason for a mutant that no
//! longer survives, fails the verb. This module does not run when cargo-mutants is not installed.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use forge_course::args::{Args, Verb};
use forge_course::course::{self, Course, Stage};
use forge_course::scratch;

pub const MUTANTS: Verb = Verb {
    name: "mutants",
    about: "Run cargo-mutants on each stage's src/ and record the figures in evidence/mutants/",
    positionals: "[STAGE…]",
    flags: &[("jobs", Some("N"), "mutants built and tested at a time")],
};

/// `evidence/mutants/NN-name.json`.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct MutantsEvidence {
    pub stage_id: String,
    /// `cargo-mutants 27.1.0`.
    pub tool: String,
    /// blake3 tree hashes of the stage's `src/` and `tests/` when measured: the figures are
    /// current only while both are unchanged (checked by xtask/tests/stage_contracts.rs).
    pub src_tree_blake3: String,
    pub tests_tree_blake3: String,
    pub total: u32,
    pub caught: u32,
    pub missed: u32,
    pub unviable: u32,
    pub timeout: u32,
    /// Every survivor (missed or timed out), with the stage.toml reason when there is one.
    pub survivors: Vec<Survivor>,
    /// Survivors without a reason in stage.toml; the contract is that this is zero.
    pub unexplained: u32,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Survivor {
    /// cargo-mutants' mutant name without line and column (stable while the code moves).
    pub mutant: String,
    pub outcome: String,
    pub reason: Option<String>,
}

pub fn cmd_mutants(args: Args) -> anyhow::Result<ExitCode> {
    let course = Course::open(&args)?;
    let stages = course.select(&args.positional)?;
    let jobs = args.number("jobs")?.unwrap_or(2).max(1);
    let version = match Command::new(cargo_path())
        .args(["mutants", "--version"])
        .output()
    {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        _ => {
            eprintln!(
                "cargo-mutants is not installed; install it with `cargo install --locked cargo-mutants` \
                 (a few minutes) and run `cargo xtask mutants` again"
            );
            return Ok(ExitCode::from(2));
        }
    };
    let mut all_explained = true;
    let mut rows = Vec::new();
    for stage in &stages {
        println!("== {} (cargo mutants)", stage.id);
        let evidence = measure(&course, stage, &version, jobs)?;
        let stale = stale_explanations(stage, &evidence)?;
        let path = evidence_path(&course.evidence, &stage.id);
        scratch::write_if_changed(
            &path,
            (serde_json::to_string_pretty(&evidence)? + "\n").as_bytes(),
        )?;
        for survivor in evidence.survivors.iter().filter(|s| s.reason.is_none()) {
            println!(
                "   unexplained survivor ({}): {}",
                survivor.outcome, survivor.mutant
            );
        }
        for mutant in &stale {
            println!("   stage.toml explains a mutant that no longer survives: {mutant}");
        }
        if evidence.unexplained > 0 || !stale.is_empty() {
            all_explained = false;
        }
        rows.push(evidence);
    }
    println!(
        "\n{:<32} {:>6} {:>6} {:>6} {:>8} {:>7} {:>11}",
        "stage", "total", "caught", "missed", "unviable", "timeout", "unexplained"
    );
    for e in &rows {
        println!(
            "{:<32} {:>6} {:>6} {:>6} {:>8} {:>7} {:>11}",
            e.stage_id, e.total, e.caught, e.missed, e.unviable, e.timeout, e.unexplained
        );
    }
    eprintln!(
        "wrote {}",
        course.relative(&course.evidence.join("mutants"))
    );
    Ok(if all_explained {
        ExitCode::SUCCESS
    } else {
        println!(
            "\nEvery surviving mutant needs a test that kills it or a one-line reason in the stage's \
             stage.toml ([[mutants.explained]] mutant = \"…\", reason = \"…\")."
        );
        ExitCode::FAILURE
    })
}

fn cargo_path() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// Runs cargo-mutants on a standalone copy of the stage and summarises its outcomes.
fn measure(
    course: &Course,
    stage: &Stage,
    version: &str,
    jobs: u64,
) -> anyhow::Result<MutantsEvidence> {
    let base = course.scratch.join("mutants");
    let copy = base.join(&stage.id);
    let output = base.join(format!("{}-out", stage.id));
    let manifest = scratch::standalone_manifest(course, stage, None, true)?;
    scratch::sync_dir(
        &stage.dir,
        &copy,
        &["faults", "README.md", "README.zh-CN.md"],
        &[("Cargo.toml".to_owned(), manifest.into_bytes())],
        &["Cargo.lock"],
    )?;
    let root_lock = course.root.join("Cargo.lock");
    if root_lock.is_file() {
        scratch::write_if_changed(&copy.join("Cargo.lock"), &fs::read(&root_lock)?)?;
    }
    fs::remove_dir_all(&output).ok();
    let status = Command::new(cargo_path())
        .arg("mutants")
        .arg("--dir")
        .arg(&copy)
        .arg("--output")
        .arg(&output)
        // The copy lives under target/, which the repository's .gitignore covers.
        .args(["--gitignore", "false", "--colors", "never", "--jobs"])
        .arg(jobs.to_string())
        // Each mutant builds in its own copy; a shared target dir would serialise them on its lock.
        .env_remove("CARGO_TARGET_DIR")
        .stdin(Stdio::null())
        .status()
        .context("running cargo mutants")?;
    let outcomes_path = output.join("mutants.out/outcomes.json");
    let text = fs::read_to_string(&outcomes_path).with_context(|| {
        format!(
            "cargo mutants exited with {status} and wrote no {}",
            outcomes_path.display()
        )
    })?;
    let outcomes: Outcomes = serde_json::from_str(&text)
        .with_context(|| format!("parsing {}", outcomes_path.display()))?;
    if let Some(baseline) = outcomes
        .outcomes
        .iter()
        .find(|o| o.scenario.as_str() == Some("Baseline"))
        && baseline.summary != "Success"
    {
        bail!(
            "the unmutated baseline of {} did not pass ({}): see {}",
            stage.id,
            baseline.summary,
            output.join("mutants.out/log").display()
        );
    }
    let meta = course::load_meta(stage)?;
    let reasons: BTreeMap<&str, &str> = meta
        .mutants
        .explained
        .iter()
        .map(|e| (e.mutant.as_str(), e.reason.as_str()))
        .collect();
    let mut survivors = Vec::new();
    let (mut caught, mut missed, mut unviable, mut timeout) = (0, 0, 0, 0);
    for outcome in &outcomes.outcomes {
        let Some(name) = outcome.scenario.mutant_name() else {
            continue;
        };
        let label = match outcome.summary.as_str() {
            "CaughtMutant" => {
                caught += 1;
                continue;
            }
            "Unviable" => {
                unviable += 1;
                continue;
            }
            "MissedMutant" => {
                missed += 1;
                "missed"
            }
            "Timeout" => {
                timeout += 1;
                "timeout"
            }
            other => bail!("cargo mutants reported an unknown outcome `{other}` for {name}"),
        };
        let mutant = without_position(name);
        survivors.push(Survivor {
            reason: reasons.get(mutant.as_str()).map(|r| (*r).to_owned()),
            mutant,
            outcome: label.to_owned(),
        });
    }
    survivors.sort_by(|a, b| a.mutant.cmp(&b.mutant));
    let hash = |sub: &str| -> anyhow::Result<String> {
        Ok(course::tree_hash(&course::hash_tree(&stage.dir.join(sub))?))
    };
    Ok(MutantsEvidence {
        stage_id: stage.id.clone(),
        tool: version.to_owned(),
        src_tree_blake3: hash("src")?,
        tests_tree_blake3: hash("tests")?,
        total: caught + missed + unviable + timeout,
        caught,
        missed,
        unviable,
        timeout,
        unexplained: survivors.iter().filter(|s| s.reason.is_none()).count() as u32,
        survivors,
    })
}

/// Explanations in stage.toml that match no survivor (the code or the tests changed since).
fn stale_explanations(stage: &Stage, evidence: &MutantsEvidence) -> anyhow::Result<Vec<String>> {
    let meta = course::load_meta(stage)?;
    Ok(meta
        .mutants
        .explained
        .iter()
        .filter(|e| !evidence.survivors.iter().any(|s| s.mutant == e.mutant))
        .map(|e| e.mutant.clone())
        .collect())
}

/// `src/retry.rs:40:9: replace … with …` → `src/retry.rs: replace … with …`.
pub fn without_position(name: &str) -> String {
    let mut parts = name.splitn(4, ':');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(file), Some(line), Some(col), Some(rest))
            if line.parse::<u32>().is_ok() && col.parse::<u32>().is_ok() =>
        {
            format!("{file}:{rest}")
        }
        _ => name.to_owned(),
    }
}

/// Where a stage's evidence file lives.
pub fn evidence_path(evidence: &Path, stage_id: &str) -> PathBuf {
    evidence.join("mutants").join(format!("{stage_id}.json"))
}

/// The part of cargo-mutants' `outcomes.json` this verb reads.
#[derive(Deserialize)]
struct Outcomes {
    outcomes: Vec<Outcome>,
}

#[derive(Deserialize)]
struct Outcome {
    scenario: Scenario,
    summary: String,
}

/// `"Baseline"` or `{"Mutant": {"name": …}}`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Scenario {
    Named(String),
    Mutant {
        #[serde(rename = "Mutant")]
        mutant: MutantName,
    },
}

#[derive(Deserialize)]
struct MutantName {
    name: String,
}

impl Scenario {
    fn as_str(&self) -> Option<&str> {
        match self {
            Scenario::Named(name) => Some(name),
            Scenario::Mutant { .. } => None,
        }
    }

    fn mutant_name(&self) -> Option<&str> {
        match self {
            Scenario::Mutant { mutant } => Some(&mutant.name),
            Scenario::Named(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutant_names_lose_only_their_position() {
        assert_eq!(
            without_position("src/stopping.rs:110:29: replace >= with < in StopController::decide"),
            "src/stopping.rs: replace >= with < in StopController::decide"
        );
        assert_eq!(
            without_position("src/a.rs: replace x with y"),
            "src/a.rs: replace x with y"
        );
    }

    #[test]
    fn outcomes_json_scenarios_parse() {
        let text = r#"{"outcomes": [
            {"scenario": "Baseline", "summary": "Success"},
            {"scenario": {"Mutant": {"name": "src/a.rs:1:2: replace f with 0", "file": "src/a.rs"}}, "summary": "MissedMutant"}
        ]}"#;
        let outcomes: Outcomes = serde_json::from_str(text).unwrap();
        assert_eq!(outcomes.outcomes[0].scenario.as_str(), Some("Baseline"));
        assert_eq!(
            outcomes.outcomes[1].scenario.mutant_name(),
            Some("src/a.rs:1:2: replace f with 0")
        );
    }
}
