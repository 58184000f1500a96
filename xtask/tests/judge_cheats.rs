//! The cheats a learner could try, each refused: a pass is proof.
//!
//! Each test plays one cheat from issue 22 on a private copy of the fixture course and asserts
//! that `check` does not pass the stage (or that the state refuses the lie). On the judge before
//! issue 22 every one of them was accepted.

mod common;

use std::fs;
use std::path::PathBuf;

use common::{Sandbox, read_json, text};

const FIXED: &str = "a + b";
const FAULTY: &str = "a - b";
/// Asserts nothing about behaviour, yet told the old fault build apart by its package name.
const PACKAGE_NAME_TRANSFER: &str = "#[test]\nfn knows_its_build() {\n    assert!(!env!(\"CARGO_PKG_NAME\").ends_with(\"fault-check\"));\n}\n";
const INCLUDE_TRANSFER: &str = "#[test]\nfn reads_its_source() {\n    assert!(!include_str!(\"../src/calc.rs\").contains(\"a - b\"));\n}\n";
/// Slips past the name screen (`std` renamed) and reads the manifest dir at run time.
const RENAMED_STD_TRANSFER: &str = "use std as s;\n\n#[test]\nfn reads_the_manifest_dir() {\n    let dir = s::env::var(\"CARGO_MANIFEST_DIR\").unwrap();\n    assert!(!dir.contains(\"fault\"), \"{dir}\");\n}\n";
const CATCHING_TRANSFER: &str = "use holds::{add, double};\n\n#[test]\nfn a_doubled_sum() {\n    assert_eq!(double(add(1, 2)), 6);\n}\n";

fn sandbox(name: &str, stages: &[&str]) -> Sandbox {
    let sandbox = Sandbox::new(name, Some(stages));
    let learn = sandbox.xtask(&["learn", "01"]);
    assert!(learn.status.success(), "{}", text(&learn));
    let predict = sandbox.xtask(&["predict", "01", "B"]);
    assert!(predict.status.success(), "{}", text(&predict));
    sandbox
}

fn copy(sandbox: &Sandbox) -> PathBuf {
    sandbox.course().join("learn/01-holds")
}

fn repair(sandbox: &Sandbox) {
    let path = copy(sandbox).join("src/calc.rs");
    let source = fs::read_to_string(&path).unwrap();
    fs::write(&path, source.replace(FAULTY, FIXED)).unwrap();
}

fn check(sandbox: &Sandbox) -> (bool, String) {
    let output = sandbox.xtask(&["check", "01"]);
    (output.status.success(), text(&output))
}

fn assert_not_passed(sandbox: &Sandbox, passed: bool, out: &str) {
    assert!(!passed, "{out}");
    assert!(!out.contains("Stage 01 passes."), "{out}");
    assert!(!out.contains("Repair principle"), "{out}");
    let progress = read_json(&sandbox.course().join("learn/progress.json"));
    assert!(
        progress["stages"]["01-holds"]["passed_at"].is_null(),
        "{progress}"
    );
}

#[test]
fn an_ignored_stage_test_still_judges_the_fault() {
    let sandbox = sandbox("cheat-ignored", &["01-holds"]);
    let stage_tests = copy(&sandbox).join("tests/stage.rs");
    let tests = fs::read_to_string(&stage_tests).unwrap();
    fs::write(
        &stage_tests,
        tests.replace(
            "#[test]\nfn adds_two_numbers",
            "#[test]\n#[ignore]\nfn adds_two_numbers",
        ),
    )
    .unwrap();
    fs::write(
        copy(&sandbox).join("tests/transfer.rs"),
        PACKAGE_NAME_TRANSFER,
    )
    .unwrap();
    let (passed, out) = check(&sandbox);
    assert_not_passed(&sandbox, passed, &out);
    assert!(out.contains("FAIL stage::adds_two_numbers"), "{out}");
    assert!(
        out.contains("tests/stage.rs in your copy differ from the course's"),
        "{out}"
    );
}

#[test]
fn an_ignore_in_the_course_tests_runs_anyway() {
    // The course's own #[ignore] is no hiding place either: check runs with --include-ignored.
    let sandbox = Sandbox::new("cheat-include-ignored", Some(&["01-holds"]));
    let stage_tests = sandbox.course().join("stages/01-holds/tests/stage.rs");
    let tests = fs::read_to_string(&stage_tests).unwrap();
    fs::write(
        &stage_tests,
        tests.replace(
            "#[test]\nfn adds_two_numbers",
            "#[test]\n#[ignore]\nfn adds_two_numbers",
        ),
    )
    .unwrap();
    assert!(sandbox.xtask(&["learn", "01"]).status.success());
    assert!(sandbox.xtask(&["predict", "01", "B"]).status.success());
    fs::write(copy(&sandbox).join("tests/transfer.rs"), CATCHING_TRANSFER).unwrap();
    let (passed, out) = check(&sandbox);
    assert_not_passed(&sandbox, passed, &out);
    assert!(out.contains("FAIL stage::adds_two_numbers"), "{out}");
}

#[test]
fn an_edited_stage_test_is_not_the_judge() {
    let sandbox = sandbox("cheat-edited", &["01-holds"]);
    let stage_tests = copy(&sandbox).join("tests/stage.rs");
    let tests = fs::read_to_string(&stage_tests).unwrap();
    fs::write(&stage_tests, tests.replace("add(2, 3), 5", "add(2, 3), -1")).unwrap();
    fs::write(
        copy(&sandbox).join("tests/transfer.rs"),
        PACKAGE_NAME_TRANSFER,
    )
    .unwrap();
    let (passed, out) = check(&sandbox);
    assert_not_passed(&sandbox, passed, &out);
    assert!(out.contains("FAIL stage::adds_two_numbers"), "{out}");
    // The learner's file is reported, not rewritten.
    assert!(fs::read_to_string(&stage_tests).unwrap().contains("-1"));
}

#[test]
fn a_transfer_test_that_reads_its_build_is_refused() {
    let sandbox = sandbox("cheat-env", &["01-holds"]);
    repair(&sandbox);
    for (transfer, what) in [
        (PACKAGE_NAME_TRANSFER, "`env!`"),
        (INCLUDE_TRANSFER, "`include_str!`"),
        (
            "#[test]\nfn t() {\n    assert!(std::fs::read_to_string(\"src/calc.rs\").unwrap().contains(\"+\"));\n}\n",
            "`std::fs`",
        ),
    ] {
        fs::write(copy(&sandbox).join("tests/transfer.rs"), transfer).unwrap();
        let (passed, out) = check(&sandbox);
        assert_not_passed(&sandbox, passed, &out);
        assert!(out.contains("your transfer test is refused"), "{out}");
        assert!(out.contains(what), "{out}");
    }
    let zh = sandbox.xtask(&["check", "01", "--lang", "zh-CN"]);
    assert!(text(&zh).contains("迁移测试被拒绝"), "{}", text(&zh));
}

#[test]
fn the_fault_build_is_the_same_crate_at_the_same_path() {
    let sandbox = sandbox("cheat-manifest-dir", &["01-holds"]);
    repair(&sandbox);
    fs::write(
        copy(&sandbox).join("tests/transfer.rs"),
        RENAMED_STD_TRANSFER,
    )
    .unwrap();
    let (passed, out) = check(&sandbox);
    assert_not_passed(&sandbox, passed, &out);
    assert!(
        out.contains("your transfer test also passes on the original faulty code"),
        "{out}"
    );
}

#[test]
fn a_transfer_test_must_pass_on_the_reference_solution() {
    let sandbox = sandbox("cheat-reference", &["01-holds"]);
    repair(&sandbox);
    // The learner's own triple differs from the reference; a transfer test pinned to it "catches"
    // the fault file only because that file carries the reference triple.
    let path = copy(&sandbox).join("src/calc.rs");
    let source = fs::read_to_string(&path).unwrap();
    fs::write(&path, source.replace("x * 3", "x * 3 + 1")).unwrap();
    fs::write(
        copy(&sandbox).join("tests/transfer.rs"),
        "use holds::triple;\n\n#[test]\nfn pinned_to_mine() {\n    assert_eq!(triple(2), 7);\n}\n",
    )
    .unwrap();
    let (passed, out) = check(&sandbox);
    assert_not_passed(&sandbox, passed, &out);
    assert!(out.contains("fails on the reference solution"), "{out}");
}

#[test]
fn the_reference_transfer_test_copied_is_refused() {
    let sandbox = sandbox("cheat-copied", &["01-holds"]);
    repair(&sandbox);
    let reference =
        fs::read_to_string(sandbox.course().join("stages/01-holds/tests/transfer.rs")).unwrap();
    fs::write(copy(&sandbox).join("tests/transfer.rs"), reference).unwrap();
    let (passed, out) = check(&sandbox);
    assert_not_passed(&sandbox, passed, &out);
    assert!(
        out.contains("the course's reference transfer test"),
        "{out}"
    );
}

#[test]
fn an_honest_pass_records_what_was_judged_and_names_only_open_stages_next() {
    let sandbox = sandbox("honest-pass", &["01-holds", "02-fault-not-caught"]);
    // Stage 02 is passed already (a valid record): Next must not send the learner there.
    let progress_path = sandbox.course().join("learn/progress.json");
    let mut progress = read_json(&progress_path);
    progress["stages"]["02-fault-not-caught"] = serde_json::json!({
        "started_at": null, "prediction": {"choice": "A", "correct": true, "at": "x"},
        "checks": 1, "last_check_at": null, "last_result": "passed",
        "passed_at": "2026-01-01T00:00:00Z", "hints_shown": 0
    });
    fs::write(&progress_path, serde_json::to_string(&progress).unwrap()).unwrap();
    // Repaired, and reformatted the way rustfmt would not: still the reference's code.
    let path = copy(&sandbox).join("src/calc.rs");
    let source = fs::read_to_string(&path).unwrap();
    fs::write(
        &path,
        source.replace("i64 {\n    a - b\n}", "i64 { a + b }"),
    )
    .unwrap();
    fs::write(copy(&sandbox).join("tests/transfer.rs"), CATCHING_TRANSFER).unwrap();
    let (passed, out) = check(&sandbox);
    assert!(passed, "{out}");
    assert!(out.contains("Stage 01 passes."), "{out}");
    assert!(
        out.contains("Your file is now the reference's code (formatting and comments aside)."),
        "{out}"
    );
    assert!(!out.contains("Next: cargo xtask learn 02"), "{out}");
    assert!(out.contains("Every stage is passed now."), "{out}");

    let report = read_json(&sandbox.course().join("learn/verification.json"));
    let stage = &report["stages"][0];
    assert_eq!(stage["outcome"], "passed");
    assert_eq!(stage["runs"]["fault"]["failed"], 1);
    assert_eq!(stage["runs"]["solution"]["failed"], 0);
    let files = stage["files"].as_object().unwrap();
    for judged in [
        "learn/01-holds/src/calc.rs",
        "learn/01-holds/tests/stage.rs",
        "learn/01-holds/tests/transfer.rs",
    ] {
        assert!(files.contains_key(judged), "{files:?}");
    }
    let source_hash = blake3::hash(&fs::read(&path).unwrap()).to_hex().to_string();
    assert!(
        files["learn/01-holds/src/calc.rs"]
            .as_str()
            .unwrap()
            .contains(&source_hash),
        "{files:?}"
    );
}

#[test]
fn state_cannot_lie() {
    let sandbox = Sandbox::new("state-lies", Some(&["01-holds"]));
    // No prediction before the question was read.
    let early = sandbox.xtask(&["predict", "01", "B"]);
    assert!(!early.status.success());
    assert!(
        text(&early).contains("run `cargo xtask learn 01` first"),
        "{}",
        text(&early)
    );

    assert!(sandbox.xtask(&["learn", "01"]).status.success());
    assert!(sandbox.xtask(&["predict", "01", "A"]).status.success());
    // A reset keeps a backup and the committed prediction.
    let reset = sandbox.xtask(&["progress", "--reset"]);
    assert!(reset.status.success(), "{}", text(&reset));
    let backups: Vec<String> = fs::read_dir(sandbox.course().join("learn"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("progress.reset-"))
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert!(text(&reset).contains(&backups[0]), "{}", text(&reset));
    let again = sandbox.xtask(&["predict", "01", "B"]);
    assert!(!again.status.success());
    assert!(
        text(&again).contains("you already committed A"),
        "{}",
        text(&again)
    );
    // Even with the new record deleted by hand, the backup remembers.
    fs::remove_file(sandbox.course().join("learn/progress.json")).unwrap();
    assert!(!sandbox.xtask(&["predict", "01", "B"]).status.success());

    // A hand-edited record: a stage that does not exist, a pass without a check.
    let path = sandbox.course().join("learn/progress.json");
    for (record, why) in [
        (
            r#"{"format_version": 2, "stages": {"09-invented": {"started_at": null, "checks": 1,
                "last_check_at": null, "last_result": "passed", "passed_at": "x", "hints_shown": 0}}}"#,
            "stages.09-invented is not a stage of this course",
        ),
        (
            r#"{"format_version": 2, "stages": {"01-holds": {"started_at": null, "checks": 0,
                "last_check_at": null, "last_result": null, "passed_at": "x", "hints_shown": 0}}}"#,
            "stages.01-holds is passed without a single check",
        ),
    ] {
        fs::write(&path, record).unwrap();
        let shown = sandbox.xtask(&["progress"]);
        assert!(!shown.status.success(), "{}", text(&shown));
        assert!(text(&shown).contains(why), "{}", text(&shown));
        assert!(
            !text(&shown).contains("1/1 stages done"),
            "{}",
            text(&shown)
        );
    }
}

#[test]
fn progress_speaks_chinese() {
    let sandbox = Sandbox::new("zh-progress", Some(&["01-holds"]));
    assert!(sandbox.xtask(&["learn", "01"]).status.success());
    let out = text(&sandbox.xtask(&["progress", "--lang", "zh-CN"]));
    for english in [
        "started",
        "not checked",
        "hints",
        "stages done",
        "predicted",
    ] {
        assert!(!out.contains(english), "{english:?} in:\n{out}");
    }
    assert!(out.contains("已完成 0/1 个阶段"), "{out}");
}

#[test]
fn the_walkthrough_in_chinese_has_no_english_left() {
    let sandbox = Sandbox::new("zh-walkthrough", Some(&["01-holds"]));
    let zh = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--lang", "zh-CN"]);
        let output = sandbox.xtask(&all);
        (output.status.success(), text(&output))
    };
    let mut transcript = String::new();
    let (ok, out) = zh(&["check", "01"]);
    assert!(!ok);
    transcript.push_str(&out);
    let (ok, out) = zh(&["learn", "01"]);
    assert!(ok, "{out}");
    transcript.push_str(&out);
    let (ok, out) = zh(&["check", "01"]);
    assert!(!ok);
    transcript.push_str(&out);
    let (ok, out) = zh(&["predict", "01", "B"]);
    assert!(ok, "{out}");
    transcript.push_str(&out);
    let (ok, out) = zh(&["check", "01"]);
    assert!(!ok);
    assert!(out.contains("第一个失败"), "{out}");
    transcript.push_str(&out);
    repair(&sandbox);
    fs::write(copy(&sandbox).join("tests/transfer.rs"), CATCHING_TRANSFER).unwrap();
    let (ok, out) = zh(&["check", "01"]);
    assert!(ok, "{out}");
    assert!(out.contains("阶段 01 通过。"), "{out}");
    transcript.push_str(&out);
    let (_, out) = zh(&["progress"]);
    transcript.push_str(&out);
    for english in [
        "checking",
        "first failure",
        "Stage 0",
        "passes",
        "Next",
        "Every ",
        "Repair principle",
        "Design question",
        "Your ",
        "Created",
        "Predict first",
        "not this time",
        "compiler warning",
        "does not exist",
        "commit a prediction",
        "FAIL",
        "Restore the arithmetic",
    ] {
        assert!(
            !transcript.contains(english),
            "{english:?} in:\n{transcript}"
        );
    }
}

#[test]
fn the_cargo_alias_shows_the_first_build() {
    let config = fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.cargo/config.toml"),
    )
    .unwrap();
    let alias = config
        .lines()
        .find(|l| l.trim_start().starts_with("xtask"))
        .unwrap();
    assert!(
        !alias.contains("--quiet") && !alias.contains(" -q "),
        "the first `cargo xtask` compiles for minutes; cargo must show it: {alias}"
    );
}
