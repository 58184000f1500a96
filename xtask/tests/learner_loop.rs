//! Self-tests of the learner's seat on the fixture course: what a fresh copy may and may not hold,
//! one prediction before the first check, what `check` reveals and when, the transfer-test proof,
//! scratch mode, the watch loop, one hint level at a time and a damaged progress file.
//!
//! Like verify_fixtures.rs, each test works on a private copy of tests/fixtures/course/.

mod common;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Sandbox, assert_schema_valid, read_json, text};
use pretty_assertions::assert_eq;

const FIXED: &str = "a + b";
const FAULTY: &str = "a - b";
/// A transfer test that catches the fixture's fault (`add` subtracts).
const CATCHING_TRANSFER: &str = "use holds::{add, double};\n\n#[test]\nfn a_doubled_sum() {\n    assert_eq!(double(add(1, 2)), 6);\n}\n";
/// A transfer test that passes on the fault too: it never calls `add`.
const BLIND_TRANSFER: &str =
    "use holds::double;\n\n#[test]\nfn doubles_only() {\n    assert_eq!(double(3), 6);\n}\n";

fn copy(sandbox: &Sandbox) -> PathBuf {
    sandbox.course().join("learn/01-holds")
}

fn files_under(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((rel, fs::read_to_string(&path).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

fn stage_dir(sandbox: &Sandbox) -> PathBuf {
    sandbox.course().join("stages/01-holds")
}

#[test]
fn a_fresh_copy_gives_nothing_away() {
    let sandbox = Sandbox::new("learner-fresh", Some(&["01-holds"]));
    let learn = sandbox.xtask(&["learn", "01"]);
    assert!(learn.status.success(), "{}", text(&learn));
    let out = text(&learn);
    assert!(out.contains("What should add(2, 3) return?"), "{out}");
    assert!(
        out.contains("  B) 5") && out.contains("predict 01 <A-D>"),
        "{out}"
    );
    assert!(!out.contains("FIXTURE-EXPLANATION"), "{out}");

    let dir = copy(&sandbox);
    let files = files_under(&dir);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "Cargo.toml",
            "README.md",
            "README.zh-CN.md",
            "src/calc.rs",
            "src/lib.rs",
            "tests/errors.rs",
            "tests/stage.rs",
            "tests/transfer.rs"
        ]
    );
    // Every piece of the answer key, in both languages.
    let meta: toml::Table =
        toml::from_str(&fs::read_to_string(stage_dir(&sandbox).join("stage.toml")).unwrap())
            .unwrap();
    let contract = read_json(&stage_dir(&sandbox).join("fixtures/failure.json"));
    let mut secrets: Vec<String> = Vec::new();
    for hint in meta["hints"].as_array().unwrap() {
        secrets.push(hint["en"].as_str().unwrap().to_owned());
        secrets.push(hint["zh-CN"].as_str().unwrap().to_owned());
    }
    let explanation = &meta["prediction"]["explanation"];
    secrets.push(explanation["en"].as_str().unwrap().to_owned());
    secrets.push(explanation["zh-CN"].as_str().unwrap().to_owned());
    secrets.push(contract["repair"].as_str().unwrap().to_owned());
    for step in contract["diagnosis"].as_array().unwrap() {
        secrets.push(step.as_str().unwrap().to_owned());
    }
    secrets.extend(
        [
            "FIXTURE-EXPLANATION-IN-GUIDE",
            "FIXTURE-DIAGNOSIS-IN-GUIDE",
            "FIXTURE-REPAIR-IN-GUIDE",
            "FIXTURE-STRONG-ANSWER",
            "**Answer",
            "**答案",
            FIXED,
        ]
        .map(String::from),
    );
    for (name, content) in &files {
        for secret in &secrets {
            assert!(
                !content.contains(secret.as_str()),
                "{name} gives away {secret:?}"
            );
        }
    }
    let source = fs::read_to_string(dir.join("src/calc.rs")).unwrap();
    assert!(
        source.contains(FAULTY),
        "the copy starts from the faulty file"
    );
    let readme = fs::read_to_string(dir.join("README.md")).unwrap();
    for wanted in [
        "## The problem",
        "## Predict first",
        "- **B.** `5`",
        "## Boundary decision",
        "## Fault lab",
        "## Transfer challenge",
        "[中文](README.zh-CN.md)",
    ] {
        assert!(
            readme.contains(wanted),
            "README lacks {wanted:?}:\n{readme}"
        );
    }
    assert!(
        fs::read_to_string(dir.join("README.zh-CN.md"))
            .unwrap()
            .contains("## 先做判断")
    );
    assert!(
        !readme.contains("## Implementation steps"),
        "the steps state the fix; a repair copy has none:\n{readme}"
    );
    let transfer = fs::read_to_string(dir.join("tests/transfer.rs")).unwrap();
    assert!(
        transfer.contains("todo!(") && transfer.contains("use holds::*;"),
        "{transfer}"
    );

    // The learn/ workspace: members, the course's lock, and only profile overrides it can use.
    let learn_dir = sandbox.course().join("learn");
    let manifest = fs::read_to_string(learn_dir.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("members = [\"01-holds\"]"), "{manifest}");
    assert!(!manifest.contains("not-a-course-package"), "{manifest}");
    assert!(
        manifest.contains("[profile.dev.package.\"*\"]"),
        "{manifest}"
    );
    assert_eq!(
        fs::read(learn_dir.join("Cargo.lock")).unwrap(),
        fs::read(sandbox.course().join("Cargo.lock")).unwrap()
    );
    // What rust-analyzer asks cargo: the learner's files belong to a workspace member.
    let metadata = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(learn_dir.join("Cargo.toml"))
        .output()
        .unwrap();
    assert!(metadata.status.success(), "{}", text(&metadata));
    let metadata: serde_json::Value = serde_json::from_slice(&metadata.stdout).unwrap();
    let package = &metadata["packages"][0];
    assert_eq!(package["name"], "fixture-01-holds-learn");
    let lib = package["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["kind"][0] == "lib")
        .unwrap();
    assert_eq!(
        PathBuf::from(lib["src_path"].as_str().unwrap()),
        dir.join("src/lib.rs")
    );
    assert_eq!(metadata["workspace_members"].as_array().unwrap().len(), 1);
}

#[test]
fn a_prediction_comes_once_and_before_the_first_check() {
    let sandbox = Sandbox::new("learner-predict", Some(&["01-holds"]));
    assert!(sandbox.xtask(&["learn", "01"]).status.success());
    let refused = sandbox.xtask(&["check", "01"]);
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("commit a prediction before the first check")
            && text(&refused).contains("cargo xtask predict 01 <A-D>"),
        "{}",
        text(&refused)
    );
    let bad = sandbox.xtask(&["predict", "01", "E"]);
    assert!(!bad.status.success());
    assert!(text(&bad).contains("`E` is not an option; choose one of A, B, C, D"));

    let wrong = sandbox.xtask(&["predict", "01", "a"]);
    assert!(wrong.status.success(), "{}", text(&wrong));
    let out = text(&wrong);
    assert!(
        out.contains("A: not this time. The answer is B: 5"),
        "{out}"
    );
    assert!(
        out.contains("FIXTURE-EXPLANATION: two plus three is five."),
        "{out}"
    );
    let again = sandbox.xtask(&["predict", "01", "B"]);
    assert!(!again.status.success());
    assert!(
        text(&again).contains("you already committed A"),
        "{}",
        text(&again)
    );

    let progress = read_json(&sandbox.course().join("learn/progress.json"));
    assert_eq!(progress["format_version"], 2);
    assert_eq!(progress["stages"]["01-holds"]["prediction"]["choice"], "A");
    assert_eq!(
        progress["stages"]["01-holds"]["prediction"]["correct"],
        false
    );
    assert!(
        text(&sandbox.xtask(&["progress"])).contains("predicted A ✗"),
        "{}",
        text(&sandbox.xtask(&["progress"]))
    );

    // After a check, a stage takes no prediction (here: a record with a check and none made).
    fs::write(
        sandbox.course().join("learn/progress.json"),
        r#"{"format_version": 2, "stages": {"01-holds": {"started_at": null, "checks": 1,
            "last_check_at": null, "last_result": "failed", "passed_at": null, "hints_shown": 0}}}"#,
    )
    .unwrap();
    let late = sandbox.xtask(&["predict", "01", "B", "--lang", "zh-CN"]);
    assert!(!late.status.success());
    assert!(
        text(&late).contains("a prediction is made before the first check"),
        "{}",
        text(&late)
    );
}

#[test]
fn check_reveals_only_after_a_pass_and_demands_a_transfer_test_that_catches_the_fault() {
    let sandbox = Sandbox::new("learner-check", Some(&["01-holds"]));
    assert!(sandbox.xtask(&["learn", "01"]).status.success());
    assert!(sandbox.xtask(&["predict", "01", "B"]).status.success());
    let dir = copy(&sandbox);
    let revealed = |out: &str| {
        out.contains("Repair principle")
            || out.contains("Restore the arithmetic the test describes.")
            || out.contains(&format!("+    {FIXED}"))
            || out.contains("Design question")
    };

    let failing = sandbox.xtask(&["check", "01"]);
    let out = text(&failing);
    assert!(!failing.status.success());
    assert!(out.contains("FAIL stage::adds_two_numbers"), "{out}");
    assert!(
        out.contains("first failure, stage::adds_two_numbers"),
        "{out}"
    );
    assert!(!revealed(&out), "nothing is revealed before a pass:\n{out}");

    let source = fs::read_to_string(dir.join("src/calc.rs")).unwrap();
    fs::write(dir.join("src/calc.rs"), source.replace(FAULTY, FIXED)).unwrap();
    let missing = sandbox.xtask(&["check", "01"]);
    let out = text(&missing);
    assert!(!missing.status.success());
    assert!(
        out.contains("Every stage test passes. Next: write your transfer test"),
        "{out}"
    );
    assert!(!revealed(&out), "{out}");

    fs::write(dir.join("tests/transfer.rs"), BLIND_TRANSFER).unwrap();
    let blind = sandbox.xtask(&["check", "01"]);
    let out = text(&blind);
    assert!(!blind.status.success());
    assert!(out.contains("ok   transfer::doubles_only"), "{out}");
    assert!(
        out.contains("your transfer test also passes on the original faulty code"),
        "{out}"
    );
    assert!(!revealed(&out), "{out}");
    let report = read_json(&sandbox.course().join("learn/verification.json"));
    assert_eq!(report["stages"][0]["outcome"], "transfer_not_caught");
    assert_schema_valid(&report);

    fs::write(dir.join("tests/transfer.rs"), CATCHING_TRANSFER).unwrap();
    let passing = sandbox.xtask(&["check"]);
    let out = text(&passing);
    assert!(passing.status.success(), "{out}");
    assert!(out.contains("Stage 01 passes."), "{out}");
    assert!(
        out.contains(&format!("-    {FAULTY}")) && out.contains(&format!("+    {FIXED}")),
        "{out}"
    );
    assert!(
        out.contains("Your file is now the reference's code (formatting and comments aside)."),
        "{out}"
    );
    assert!(
        out.contains("Repair principle: Restore the arithmetic the test describes."),
        "{out}"
    );
    assert!(
        out.contains("Design question: *Why test the sum on its own before composing it?*"),
        "{out}"
    );
    assert!(out.contains("stages/01-holds/tests/transfer.rs"), "{out}");
    assert!(out.contains("Every stage is passed now."), "{out}");

    let report = read_json(&sandbox.course().join("learn/verification.json"));
    assert_schema_valid(&report);
    assert_eq!(report["mode"], "learner");
    assert_eq!(report["all_contracts_hold"], true);
    let stage = &report["stages"][0];
    assert_eq!(stage["outcome"], "passed");
    assert_eq!(stage["runs"]["fault"]["failed"], 1);
    assert_eq!(stage["runs"]["fault"]["tests"][0]["name"], "a_doubled_sum");
    assert!(stage["detail"].as_str().unwrap().contains("a_doubled_sum"));

    let progress = text(&sandbox.xtask(&["progress"]));
    assert!(
        progress.contains("done     (passed") && progress.contains("1/1 stages done"),
        "{progress}"
    );
}

#[test]
fn scratch_mode_compiles_with_todo_bodies_and_the_same_tests_fail() {
    let sandbox = Sandbox::new("learner-scratch", Some(&["01-holds"]));
    let learn = sandbox.xtask(&["learn", "01", "--scratch"]);
    assert!(learn.status.success(), "{}", text(&learn));
    assert!(
        text(&learn).contains("has todo!() bodies"),
        "{}",
        text(&learn)
    );
    let dir = copy(&sandbox);
    let source = fs::read_to_string(dir.join("src/calc.rs")).unwrap();
    assert!(source.contains("todo!()") && source.contains("pub fn add(a: i64, b: i64) -> i64"));
    assert!(
        !source.contains(FIXED) && !source.contains(FAULTY),
        "{source}"
    );
    let readme = fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("## Implementation steps") && !readme.contains("## Fault lab"));
    assert!(sandbox.xtask(&["predict", "01", "B"]).status.success());

    let check = sandbox.xtask(&["check", "01"]);
    let out = text(&check);
    assert!(!check.status.success());
    assert!(!out.contains("does not compile"), "{out}");
    assert!(out.contains("FAIL stage::adds_two_numbers"), "{out}");
    assert!(out.contains("not yet implemented"), "{out}");
    assert_eq!(
        read_json(&sandbox.course().join("learn/progress.json"))["stages"]["01-holds"]["exercise"],
        "scratch"
    );

    // Written from the steps, judged by the same tests (and the same transfer proof).
    let mut built = source.clone();
    for (signature, body) in [
        ("pub fn add(a: i64, b: i64) -> i64 {", "a + b"),
        ("pub fn double(x: i64) -> i64 {", "x * 2"),
        ("pub fn triple(x: i64) -> i64 {", "x * 3"),
    ] {
        let stub = format!("{signature}\n    todo!()\n}}");
        assert!(built.contains(&stub), "{built}");
        built = built.replace(&stub, &format!("{signature}\n    {body}\n}}"));
    }
    fs::write(dir.join("src/calc.rs"), built).unwrap();
    fs::write(dir.join("tests/transfer.rs"), CATCHING_TRANSFER).unwrap();
    let passing = sandbox.xtask(&["check", "01"]);
    assert!(passing.status.success(), "{}", text(&passing));
    assert!(
        text(&passing).contains("Your version differs from the reference"),
        "{}",
        text(&passing)
    );
}

#[test]
fn hints_come_one_level_at_a_time() {
    let sandbox = Sandbox::new("learner-hints", Some(&["01-holds"]));
    let jump = sandbox.xtask(&["hint", "01", "3"]);
    assert!(!jump.status.success());
    assert!(
        text(&jump).contains("hints come one level at a time"),
        "{}",
        text(&jump)
    );
    assert!(text(&sandbox.xtask(&["hint", "01"])).contains("hint 1/3"));
    assert!(text(&sandbox.xtask(&["hint", "01", "--lang", "zh-CN"])).contains("减法不是加法"));
    let third = text(&sandbox.xtask(&["hint", "01"]));
    assert!(third.contains("Replace `a - b`"), "{third}");
    // Seen levels can be read again; levels that do not exist are refused.
    assert!(text(&sandbox.xtask(&["hint", "01", "1"])).contains("Look at the operator"));
    assert!(text(&sandbox.xtask(&["hint", "01"])).contains("(that was the last hint)"));
    assert!(!sandbox.xtask(&["hint", "01", "4"]).status.success());
}

#[test]
fn a_damaged_progress_file_is_a_clear_error() {
    let sandbox = Sandbox::new("learner-corrupt", Some(&["01-holds"]));
    let path = sandbox.course().join("learn/progress.json");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    for (content, why) in [
        ("{\"format_version\": 1, \"stages\": [", "expected a map"),
        (
            "{\"format_version\": 9, \"stages\": {}}",
            "format_version 9 is not 1 or 2",
        ),
        (
            r#"{"format_version": 2, "stages": {"01-holds": {"started_at": null, "prediction": {"choice": "Q", "correct": true, "at": "x"},
                "checks": 0, "last_check_at": null, "last_result": null, "passed_at": null, "hints_shown": 0}}}"#,
            "prediction.choice `Q` is not one of A-D",
        ),
    ] {
        fs::write(&path, content).unwrap();
        let broken = sandbox.xtask(&["progress"]);
        let out = text(&broken);
        assert!(!broken.status.success());
        assert!(
            out.contains("learn/progress.json is not valid progress state"),
            "{out}"
        );
        assert!(out.contains(why), "{out}");
        assert!(out.contains("cargo xtask progress --reset"), "{out}");
        assert!(!out.contains("panicked"), "{out}");
    }
    // A version-1 file (before predictions) still loads.
    fs::write(
        &path,
        r#"{"format_version": 1, "stages": {"01-holds": {"started_at": null, "checks": 2,
            "last_check_at": null, "last_result": "failed", "passed_at": null, "hints_shown": 1}}}"#,
    )
    .unwrap();
    assert!(text(&sandbox.xtask(&["progress"])).contains("hints 1/3"));
    assert!(sandbox.xtask(&["progress", "--reset"]).status.success());
    assert!(text(&sandbox.xtask(&["progress"])).contains("0/1 stages done"));
}

/// The xtask's output so far, collected by a reader thread.
struct Transcript(Arc<Mutex<String>>);

impl Transcript {
    fn wait_for(&self, needle: &str, after: usize, deadline: Duration) -> usize {
        let start = Instant::now();
        loop {
            {
                let text = self.0.lock().unwrap();
                if let Some(at) = text[after.min(text.len())..].find(needle) {
                    return after + at + needle.len();
                }
            }
            assert!(
                start.elapsed() < deadline,
                "no {needle:?} within {deadline:?}; output so far:\n{}",
                self.0.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn watch_rechecks_when_a_file_changes_and_finishes_when_the_stage_passes() {
    let sandbox = Sandbox::new("learner-watch", Some(&["01-holds"]));
    assert!(sandbox.xtask(&["learn", "01"]).status.success());
    assert!(sandbox.xtask(&["predict", "01", "B"]).status.success());
    let dir = copy(&sandbox);
    fs::write(dir.join("tests/transfer.rs"), CATCHING_TRANSFER).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["watch", "01", "--root"])
        .arg(sandbox.course())
        .arg("--scratch-dir")
        .arg(sandbox.dir.join("scratch"))
        .env("LANG", "C")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let transcript = Transcript(Arc::new(Mutex::new(String::new())));
    for pipe in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let sink = transcript.0.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut text = sink.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
    }
    // Generous: the first check compiles the fixture course from cold on a busy 2-core machine.
    let deadline = Duration::from_secs(900);
    let mut stdin = child.stdin.take().unwrap();
    let at = transcript.wait_for("FAIL stage::adds_two_numbers", 0, deadline);
    let at = transcript.wait_for("watching learn/01-holds/", at, deadline);
    // A key: the next hint, without a re-check.
    stdin.write_all(b"h\n").unwrap();
    let at = transcript.wait_for("hint 1/3", at, deadline);
    // A save: the check runs again and the stage passes.
    let source = fs::read_to_string(dir.join("src/calc.rs")).unwrap();
    fs::write(dir.join("src/calc.rs"), source.replace(FAULTY, FIXED)).unwrap();
    let at = transcript.wait_for("Stage 01 passes.", at, deadline);
    transcript.wait_for("Every stage passes.", at, deadline);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < deadline,
            "watch did not exit after the last stage passed"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    let checks =
        read_json(&sandbox.course().join("learn/progress.json"))["stages"]["01-holds"]["checks"]
            .as_u64()
            .unwrap();
    assert_eq!(checks, 2, "one check at start, one after the save");
}
