//! Self-tests of `cargo xtask` against the miniature course in tests/fixtures/course/: one tiny
//! stage per outcome class, plus the cache, tampering, `fault` and the learner loop.
//!
//! Each test copies the fixture course under cargo's target tmp dir (the source tree is never
//! written) and runs the real xtask binary on it.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pretty_assertions::assert_eq;

fn fixture_course() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/course")
}

/// Mirrors `from` into `to`, writing only files whose bytes differ (so cargo's fingerprints
/// survive between test runs) and deleting what `from` lacks, except `target/`.
fn mirror(from: &Path, to: &Path, only_stages: Option<&[&str]>) {
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
struct Sandbox {
    dir: PathBuf,
}

impl Sandbox {
    fn new(name: &str, only_stages: Option<&[&str]>) -> Sandbox {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("xtask-selftest")
            .join(name);
        mirror(&fixture_course(), &dir.join("course"), only_stages);
        for generated in ["evidence", "course/learn", "course/evidence"] {
            fs::remove_dir_all(dir.join(generated)).ok();
        }
        Sandbox { dir }
    }

    fn course(&self) -> PathBuf {
        self.dir.join("course")
    }

    fn evidence(&self) -> PathBuf {
        self.dir.join("evidence")
    }

    fn xtask(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
        cmd.args(args)
            .arg("--root")
            .arg(self.course())
            .arg("--scratch")
            .arg(self.dir.join("scratch"))
            .env("LANG", "C");
        if args[0] == "verify" {
            cmd.arg("--evidence").arg(self.evidence());
        }
        cmd.output().unwrap()
    }

    fn verification(&self) -> serde_json::Value {
        read_json(&self.evidence().join("verification.json"))
    }
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(
        &fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn assert_schema_valid(report: &serde_json::Value) {
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

fn outcomes(report: &serde_json::Value) -> BTreeMap<String, String> {
    report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["stage_id"].as_str().unwrap().to_owned(),
                s["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn every_outcome_class_is_detected() {
    let sandbox = Sandbox::new("classes", None);
    let output = sandbox.xtask(&["verify", "--json", "--no-cache"]);
    assert!(
        !output.status.success(),
        "broken contracts must fail verify:\n{}",
        text(&output)
    );
    let report = sandbox.verification();
    let expected: BTreeMap<String, String> = [
        ("01-holds", "holds"),
        ("02-fault-not-caught", "fault_not_caught"),
        ("03-collateral", "collateral"),
        ("04-unviable", "unviable"),
        ("05-malformed-contract", "invalid_contract"),
        ("06-wrong-failure", "wrong_failure"),
        ("07-solution-failing", "solution_failing"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_owned(), b.to_owned()))
    .collect();
    assert_eq!(outcomes(&report), expected);
    assert_eq!(report["all_contracts_hold"], false);
    assert_eq!(report["mode"], "reference");
    assert_schema_valid(&report);
    // --json prints the same report on stdout.
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outcomes(&printed), expected);

    let stage = |id: &str| {
        report["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage_id"] == id)
            .unwrap()
            .clone()
    };
    // collateral names the extra failure; the malformed contract names file and fields.
    assert_eq!(
        stage("03-collateral")["observed"]["failed"],
        serde_json::json!(["doubles_a_number", "doubles_zero"])
    );
    let detail = stage("05-malformed-contract")["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        detail.contains("stages/05-malformed-contract/fixtures/failure.json"),
        "{detail}"
    );
    assert!(
        detail.contains("\"repair\" is a required property"),
        "{detail}"
    );
    assert!(detail.contains("/must_still_pass"), "{detail}");
    assert_eq!(
        stage("06-wrong-failure")["observed"]["excerpt_found"],
        false
    );
    assert!(
        stage("04-unviable")["detail"]
            .as_str()
            .unwrap()
            .contains("cannot add")
    );
    // The holding stage's evidence: per-test results, hashes and logs.
    let holds = stage("01-holds");
    assert_eq!(holds["runs"]["fault"]["failed"], 1);
    assert_eq!(holds["runs"]["solution"]["passed"], 5);
    assert!(
        holds["files"]["stages/01-holds/faults/calc.rs"]
            .as_str()
            .unwrap()
            .len()
            == 64
    );
    let logs = sandbox.evidence().join("single-agent-loop/01-holds");
    assert!(
        fs::read_to_string(logs.join("fault.log"))
            .unwrap()
            .contains("add must sum its operands")
    );
    assert!(
        fs::read_to_string(logs.join("solution.log"))
            .unwrap()
            .contains("test adds_then_doubles ... ok")
    );
    assert_eq!(read_json(&logs.join("contract.json"))["outcome"], "holds");
    // The human summary names the class and the expected/observed difference.
    let human = sandbox.xtask(&["verify", "03"]);
    let human_text = text(&human);
    assert!(!human.status.success());
    assert!(
        human_text.contains("03-collateral — collateral"),
        "{human_text}"
    );
    assert!(
        human_text.contains("+ failed but must pass:   [\"doubles_zero\"]"),
        "{human_text}"
    );
}

#[test]
fn unchanged_inputs_come_from_the_cache_and_tampering_is_caught() {
    let sandbox = Sandbox::new("cache", Some(&["01-holds"]));
    let first = sandbox.xtask(&["verify", "--no-cache"]);
    assert!(first.status.success(), "{}", text(&first));
    let fresh = sandbox.verification();
    assert_eq!(fresh["stages"][0]["cached"], false);
    assert_eq!(fresh["all_contracts_hold"], true);

    let second = sandbox.xtask(&["verify"]);
    assert!(second.status.success(), "{}", text(&second));
    let cached = sandbox.verification();
    assert_eq!(cached["stages"][0]["cached"], true);
    assert_eq!(cached["stages"][0]["cached_from"], fresh["started_at"]);
    assert_schema_valid(&cached);

    // Tamper: the fault no longer differs from the solution.
    let stage = sandbox.course().join("stages/01-holds");
    let solution = fs::read(stage.join("src/calc.rs")).unwrap();
    fs::write(stage.join("faults/calc.rs"), &solution).unwrap();
    let tampered = sandbox.xtask(&["verify"]);
    assert!(!tampered.status.success());
    assert_eq!(
        sandbox.verification()["stages"][0]["outcome"],
        "invalid_contract"
    );
    assert!(
        text(&tampered).contains("is identical to"),
        "{}",
        text(&tampered)
    );

    // Tamper: the solution is broken (and the fault restored).
    mirror(&fixture_course(), &sandbox.course(), Some(&["01-holds"]));
    let broken = String::from_utf8(solution)
        .unwrap()
        .replace("x * 2", "x * 2 + 1");
    fs::write(stage.join("src/calc.rs"), broken).unwrap();
    let output = sandbox.xtask(&["verify"]);
    assert!(!output.status.success());
    assert_eq!(
        sandbox.verification()["stages"][0]["outcome"],
        "solution_failing"
    );
    // The working tree's stage sources were never rewritten by verify.
    assert!(
        fs::read_to_string(stage.join("src/calc.rs"))
            .unwrap()
            .contains("x * 2 + 1")
    );
}

#[test]
fn fault_demo_shows_the_failure_and_the_diagnosis() {
    let sandbox = Sandbox::new("fault", Some(&["01-holds", "05-malformed-contract"]));
    let output = sandbox.xtask(&["fault", "01"]);
    let out = text(&output);
    assert!(output.status.success(), "{out}");
    assert!(out.contains("test adds_two_numbers ... FAILED"), "{out}");
    assert!(out.contains("add must sum its operands"), "{out}");
    assert!(
        out.contains("diagnosis:\n  1. Run `cargo xtask fault 01`"),
        "{out}"
    );
    assert!(
        !out.contains("repair:"),
        "the repair stays hidden unless asked for"
    );

    let malformed = sandbox.xtask(&["fault", "05"]);
    let out = text(&malformed);
    assert!(!malformed.status.success());
    assert!(
        out.contains("failure.json violates schemas/failure.schema.json"),
        "{out}"
    );
    assert!(out.contains("\"repair\" is a required property"), "{out}");
}

#[test]
fn a_learner_goes_from_learn_to_a_passing_check() {
    let sandbox = Sandbox::new("learner", Some(&["01-holds"]));
    let learn = sandbox.xtask(&["learn", "01"]);
    assert!(learn.status.success(), "{}", text(&learn));
    assert!(text(&learn).contains("What should add(2, 3) return?"));
    let crate_dir = sandbox.course().join("learn/01-holds");
    let source = fs::read_to_string(crate_dir.join("src/calc.rs")).unwrap();
    assert!(
        source.contains("a - b"),
        "the learner starts from the faulty source"
    );
    assert!(!crate_dir.join("faults").exists());
    assert!(
        fs::read_to_string(crate_dir.join("Cargo.toml"))
            .unwrap()
            .contains("[workspace]")
    );
    // A second `learn` does not overwrite the learner's work.
    assert!(!sandbox.xtask(&["learn", "01"]).status.success());

    let failing = sandbox.xtask(&["check", "01"]);
    assert!(!failing.status.success());
    assert!(
        text(&failing).contains("FAIL stage::adds_two_numbers"),
        "{}",
        text(&failing)
    );

    fs::write(
        crate_dir.join("src/calc.rs"),
        source.replace("a - b", "a + b"),
    )
    .unwrap();
    let passing = sandbox.xtask(&["check"]);
    assert!(passing.status.success(), "{}", text(&passing));
    let report = read_json(&sandbox.course().join("learn/verification.json"));
    assert_eq!(report["mode"], "learner");
    assert_eq!(report["stages"][0]["outcome"], "passed");
    assert_eq!(report["all_contracts_hold"], true);
    assert_schema_valid(&report);

    let progress = sandbox.xtask(&["progress"]);
    let out = text(&progress);
    assert!(
        out.contains("01  Fixture: addition") && out.contains("done"),
        "{out}"
    );
    assert!(
        out.contains("2 checks") || out.contains("done     (passed"),
        "{out}"
    );

    // Hints come in order, then stay at the last; --lang picks the language.
    assert!(text(&sandbox.xtask(&["hint", "01"])).contains("hint 1/3"));
    assert!(text(&sandbox.xtask(&["hint", "01", "--lang", "zh-CN"])).contains("减法不是加法"));
    assert!(text(&sandbox.xtask(&["hint", "01", "3"])).contains("Replace `a - b`"));
    assert!(!sandbox.xtask(&["hint", "01", "4"]).status.success());

    // A damaged state file is a clear error naming the file and the reset command.
    fs::write(
        sandbox.course().join("learn/progress.json"),
        "{\"format_version\": 1, \"stages\": [",
    )
    .unwrap();
    let broken = sandbox.xtask(&["progress"]);
    let out = text(&broken);
    assert!(!broken.status.success());
    assert!(
        out.contains("learn/progress.json is not valid progress state"),
        "{out}"
    );
    assert!(out.contains("cargo xtask progress --reset"), "{out}");
    assert!(!out.contains("panicked"), "{out}");
    assert!(sandbox.xtask(&["progress", "--reset"]).status.success());
    assert!(text(&sandbox.xtask(&["progress"])).contains("0/1 stages done"));
}

#[test]
fn unknown_stages_and_options_are_clear_errors() {
    let sandbox = Sandbox::new("errors", Some(&["01-holds"]));
    let output = sandbox.xtask(&["verify", "09"]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains("no stage `09` (stages: 01-holds)"),
        "{}",
        text(&output)
    );
    let output = sandbox.xtask(&["verify", "--jbos", "2"]);
    assert!(
        text(&output).contains("unknown option `--jbos`"),
        "{}",
        text(&output)
    );
}
