//! Self-tests of `cargo xtask` against the miniature course in tests/fixtures/course/: one tiny
//! stage per outcome class, plus the cache, tampering, `fault` and the learner loop.
//!
//! Each test copies the fixture course under cargo's target tmp dir (the source tree is never
//! written) and runs the real xtask binary on it.

mod common;

use std::collections::BTreeMap;
use std::fs;

use common::{Sandbox, assert_schema_valid, fixture_course, mirror, read_json, text};
use pretty_assertions::assert_eq;

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

    let second = sandbox.xtask(&["verify", "--json"]);
    assert!(second.status.success(), "{}", text(&second));
    let cached: serde_json::Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(cached["stages"][0]["cached"], true);
    assert_eq!(cached["stages"][0]["cached_from"], fresh["started_at"]);
    assert_schema_valid(&cached);
    // Same verdicts: the evidence file keeps the first run's report (and its timestamps).
    assert_eq!(sandbox.verification(), fresh);

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
    // A learner before the pass: the failing test, never the diagnosis.
    let output = sandbox.xtask(&["fault", "01"]);
    let out = text(&output);
    assert!(output.status.success(), "{out}");
    assert!(out.contains("test adds_two_numbers ... FAILED"), "{out}");
    assert!(!out.contains("diagnosis:"), "{out}");
    assert!(!out.contains("Run `cargo xtask fault 01`"), "{out}");
    assert!(
        out.contains("shown once stage 01 passes, or with --instructor"),
        "{out}"
    );

    let output = sandbox.xtask(&["fault", "01", "--instructor"]);
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

    // The room mode: the failing output, then the contract, then each diagnosis step, one screen at a time
    // (stdin closed: every screen in order); it shows the diagnosis, so only with --instructor.
    let refused = sandbox.xtask(&["fault", "01", "--room"]);
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("add --instructor"),
        "{}",
        text(&refused)
    );
    let room = sandbox.xtask(&["fault", "01", "--instructor", "--room", "--show-repair"]);
    let out = text(&room);
    assert!(room.status.success(), "{out}");
    let at = |needle: &str| {
        out.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing from:\n{out}"))
    };
    assert!(
        at("[1/5]") < at("WHAT FAILS") && at("WHAT FAILS") < at("  | "),
        "{out}"
    );
    assert!(
        at("add must sum its operands") < at("THE CONTRACT"),
        "{out}"
    );
    assert!(
        at("must still pass:") < at("DIAGNOSIS, step 1 of 2"),
        "{out}"
    );
    assert!(at("DIAGNOSIS, step 2 of 2") < at("THE REPAIR"), "{out}");
    assert_eq!(out.matches("[any key: next · q: quit]").count(), 4, "{out}");

    let malformed = sandbox.xtask(&["fault", "05"]);
    let out = text(&malformed);
    assert!(!malformed.status.success());
    assert!(
        out.contains("failure.json violates schemas/failure.schema.json"),
        "{out}"
    );
    assert!(out.contains("\"repair\" is a required property"), "{out}");
}

/// Re-running an unchanged course rewrites no evidence: logs carry no timings, no thread ids and
/// no colour codes, tests are listed in one order, and verification.json is rewritten only when a
/// verdict or a hashed input changes. This is what keeps `git status` clean after the tests.
#[test]
fn evidence_is_deterministic_across_runs() {
    let sandbox = Sandbox::new("determinism", Some(&["01-holds", "03-collateral"]));
    let snapshot = || -> BTreeMap<String, Vec<u8>> {
        let mut files = BTreeMap::new();
        let mut stack = vec![sandbox.evidence()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let rel = path
                    .strip_prefix(sandbox.evidence())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if rel.starts_with("cache") {
                    continue;
                }
                if path.is_dir() {
                    stack.push(path);
                } else {
                    files.insert(rel, fs::read(&path).unwrap());
                }
            }
        }
        files
    };
    sandbox.xtask(&["verify", "--no-cache"]);
    let first = snapshot();
    assert!(
        first.contains_key("verification.json"),
        "{:?}",
        first.keys()
    );
    sandbox.xtask(&["verify", "--no-cache"]);
    let second = snapshot();
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        second.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &first {
        assert!(
            second[name] == *bytes,
            "{name} changed between two identical runs"
        );
        if name.ends_with(".log") {
            let log = String::from_utf8_lossy(bytes);
            assert!(!log.contains('\u{1b}'), "{name} holds colour codes:\n{log}");
            assert!(
                !log.contains(" ms)") && !log.contains("finished in"),
                "{name} holds timings:\n{log}"
            );
        }
    }
    let fault_log =
        String::from_utf8_lossy(&first["single-agent-loop/03-collateral/fault.log"]).into_owned();
    assert!(
        fault_log.contains("thread 'doubles_zero' panicked"),
        "{fault_log}"
    );
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
