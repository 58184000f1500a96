//! `cargo xtask grade` on a synthetic class (the fixture course's stage 01): an honest pass, the fault left in
//! place, a bogus transfer test, a copy of the reference, two learners with the same code, and submissions that
//! read a file outside their folder, open a socket, loop forever, fill the disk or fork without bound. Each is graded as it
//! should be, within the box's limits, and nothing is written outside the grading scratch directory.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use common::{Sandbox, read_json, text};

const STAGE: &str = "01-holds";
const LIB: &str = "//! Fixture stage 01-holds for xtask self-tests.\n\nmod calc;\n\npub use calc::{add, double, triple};\n";
const REST: &str = "\npub fn double(x: i64) -> i64 {\n    x * 2\n}\n\npub fn triple(x: i64) -> i64 {\n    x * 3\n}\n";
/// A transfer test of the learner's own: each learner writes different cases.
fn own_transfer(n: i64) -> String {
    format!(
        "use holds::add;\n\n#[test]\nfn sums_case_{n}() {{\n    assert_eq!(add(-{n}, {}), 10);\n    assert_eq!(add({}, 0), {});\n    let total: i64 = (1..={n}).map(|k| add(k, 1)).sum();\n    assert!(total > {n});\n}}\n",
        n + 10,
        n * 7,
        n * 7
    )
}
const TWIN_TRANSFER: &str = "use holds::{add, double};\n\n#[test]\nfn zero_is_neutral_for_every_value() {\n    for x in [3, -9, 120, 0] {\n        assert_eq!(add(x, 0), x);\n        assert_eq!(double(add(x, x)), 4 * x);\n    }\n}\n";
/// Passes on the fault as well: it never looks at `add`.
const BOGUS_TRANSFER: &str = "use holds::double;\n\n#[test]\nfn doubles_are_even() {\n    for x in [1, 2, 3, 50] {\n        assert_eq!(double(x) % 2, 0);\n    }\n}\n";

fn calc(add_body: &str) -> String {
    format!("pub fn add(a: i64, b: i64) -> i64 {{\n    {add_body}\n}}\n{REST}")
}

/// Writes one learner's `learn/01-holds/` (src and transfer test) below `class/name/learn/`.
fn learner(class: &Path, name: &str, calc_rs: &str, transfer: &str) {
    let stage = class.join(name).join("learn").join(STAGE);
    fs::create_dir_all(stage.join("src")).unwrap();
    fs::create_dir_all(stage.join("tests")).unwrap();
    fs::write(stage.join("src/lib.rs"), LIB).unwrap();
    fs::write(stage.join("src/calc.rs"), calc_rs).unwrap();
    fs::write(stage.join("tests/transfer.rs"), transfer).unwrap();
    // What a learner's own state claims is never proof: this says passed for everyone.
    fs::write(
        class.join(name).join("learn/verification.json"),
        "{\"all_contracts_hold\": true}",
    )
    .unwrap();
}

fn zipped(class: &Path, name: &str, calc_rs: &str, transfer: &str) {
    let file = fs::File::create(class.join(format!("{name}.zip"))).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default();
    for (path, text) in [
        (format!("learn/{STAGE}/src/lib.rs"), LIB.to_owned()),
        (format!("learn/{STAGE}/src/calc.rs"), calc_rs.to_owned()),
        (
            format!("learn/{STAGE}/tests/transfer.rs"),
            transfer.to_owned(),
        ),
        (
            "learn/progress.json".to_owned(),
            format!(
                "{{\"stages\": {{\"{STAGE}\": {{\"started_at\": \"2026-05-01T10:00:00Z\", \"passed_at\": \"2026-05-01T10:42:00Z\"}}}}}}"
            ),
        ),
        ("../escape.rs".to_owned(), "fn x() {}".to_owned()),
    ] {
        zip.start_file(path, options).unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
}

/// Every file below `dir` with its bytes (what "nothing written" is checked against).
fn snapshot(dir: &Path, skip: &[&str]) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            if skip.iter().any(|s| rel.starts_with(s)) {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else {
                files.insert(rel, fs::read(&path).unwrap_or_default());
            }
        }
    }
    files
}

fn marker_processes(marker: &str) -> usize {
    fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            fs::read(e.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(marker))
                .unwrap_or(false)
        })
        .count()
}

#[test]
fn a_synthetic_class_is_graded_in_the_box_with_copies_flagged() {
    let sandbox = Sandbox::new("grade-class", Some(&[STAGE]));
    let class = sandbox.dir.join("class");
    fs::remove_dir_all(&class).ok();
    fs::create_dir_all(&class).unwrap();
    let secret = sandbox.dir.join("instructor-secret.txt");
    fs::write(&secret, "TOP-SECRET-CANARY-7731").unwrap();
    let planted = sandbox.dir.join("planted-by-learner.txt");
    fs::remove_file(&planted).ok();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();

    zipped(&class, "honest", &calc("b + a"), &own_transfer(3));
    learner(&class, "fault_left", &calc("a - b"), &own_transfer(4));
    learner(&class, "bogus_transfer", &calc("a + b"), BOGUS_TRANSFER);
    let reference_transfer =
        fs::read_to_string(sandbox.course().join("stages/01-holds/tests/transfer.rs")).unwrap();
    let renamed = reference_transfer
        .replace("adds_then_doubles", "my_own_idea")
        .replace("\n    ", " ");
    learner(&class, "ref_copy", &calc("a + b"), &renamed);
    learner(&class, "twin_a", &calc("a + b"), TWIN_TRANSFER);
    // The same test renamed and reformatted.
    let twin_b = "use holds::{add, double};\n#[test]\nfn check_it() { for value in [3, -9, 120, 0] { assert_eq!(add(value, 0), value); assert_eq!(double(add(value, value)), 4 * value); } }\n";
    learner(&class, "twin_b", &calc("a + b"), twin_b);
    let reader = format!(
        "use std as s;\n\npub fn add(a: i64, b: i64) -> i64 {{\n    let _ = s::fs::write({planted:?}, \"x\");\n    if let Ok(secret) = s::fs::read_to_string({secret:?}) {{\n        panic!(\"LEAKED {{secret}}\");\n    }}\n    a + b\n}}\n{REST}"
    );
    learner(&class, "reads_outside", &reader, &own_transfer(5));
    let socket = format!(
        "pub fn add(a: i64, b: i64) -> i64 {{\n    let _ = std::net::TcpStream::connect(\"127.0.0.1:{port}\");\n    a + b\n}}\n{REST}"
    );
    learner(&class, "opens_socket", &socket, &own_transfer(6));
    learner(
        &class,
        "loops_forever",
        &calc("loop {\n        std::hint::black_box(a);\n    }"),
        &own_transfer(7),
    );
    learner(
        &class,
        "fills_disk",
        &calc("std::fs::write(\"/tmp/fill\", vec![7u8; 64 << 20]).unwrap();\n    a + b"),
        &own_transfer(9),
    );
    learner(
        &class,
        "forks",
        &calc(
            "loop {\n        let _ = std::process::Command::new(\"sleep\").arg(\"31.4159\").spawn();\n    }",
        ),
        &own_transfer(8),
    );

    let course_before = snapshot(&sandbox.course(), &["target"]);
    let class_before = snapshot(&class, &["_grades"]);
    let out = sandbox.xtask(&[
        "grade",
        class.to_str().unwrap(),
        "--stages",
        "01",
        "--timeout",
        "5",
    ]);
    let log = text(&out);
    assert!(out.status.success(), "{log}");

    let grades = read_json(&class.join("_grades/grades.json"));
    let grade = |name: &str| -> (String, String) {
        let learner = grades["learners"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {grades}"));
        let stage = &learner["stages"][0];
        (
            stage["outcome"].as_str().unwrap().to_owned(),
            stage["reason"].as_str().unwrap().to_owned(),
        )
    };
    let expect = |name: &str, outcome: &str, words: &[&str]| {
        let (got, reason) = grade(name);
        assert_eq!(got, outcome, "{name}: {reason}\n{log}");
        for word in words {
            assert!(reason.contains(word), "{name}: {word:?} not in {reason:?}");
        }
    };
    expect(
        "honest",
        "passed",
        &["transfer test passes on the reference"],
    );
    expect(
        "fault_left",
        "failed",
        &["stage::adds_two_numbers", "add must sum its operands"],
    );
    expect(
        "bogus_transfer",
        "transfer_not_caught",
        &["passes on the faulty code too"],
    );
    expect("ref_copy", "passed", &[]);
    expect("twin_a", "passed", &[]);
    expect("twin_b", "passed", &[]);
    expect(
        "reads_outside",
        "refused",
        &["renames std", "in the box it was passed"],
    );
    expect(
        "opens_socket",
        "refused",
        &["std::net", "opens network sockets"],
    );
    expect("loops_forever", "refused", &["ran past the 5 s time limit"]);
    expect(
        "fills_disk",
        "refused",
        &["std::fs", "hit the box's disk limit"],
    );
    expect(
        "forks",
        "refused",
        &["std::process", "starts processes", "time limit"],
    );

    // Copies are flagged with the pairs named, and nobody else is.
    let copies: Vec<(String, Vec<String>)> = grades["copies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().to_owned(),
                c["learners"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l.as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect();
    assert!(
        copies.contains(&("identical".into(), vec!["twin_a".into(), "twin_b".into()])),
        "{copies:?}"
    );
    assert!(
        copies.contains(&(
            "reference_copy".into(),
            vec!["ref_copy".into(), "reference".into()]
        )),
        "{copies:?}"
    );
    let flagged: Vec<&String> = copies.iter().flat_map(|(_, l)| l).collect();
    for innocent in ["honest", "fault_left", "bogus_transfer"] {
        assert!(
            !flagged.contains(&&innocent.to_owned()),
            "{innocent}: {copies:?}"
        );
    }

    // The zip was read (and its `../` entry left out), its progress log gives the one time to a first pass.
    let honest = grades["learners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "honest")
        .unwrap();
    assert_eq!(honest["source"], "zip");
    assert!(
        honest["notes"][0]
            .as_str()
            .unwrap()
            .contains("outside the archive"),
        "{honest}"
    );
    assert_eq!(honest["stages"][0]["minutes_to_first_pass"], 42.0);
    let stage = &grades["summary"]["per_stage"][0];
    assert_eq!(
        (stage["submitted"].as_u64(), stage["passed"].as_u64()),
        (Some(11), Some(4))
    );

    // Within its limits: the canary never left its file, no socket reached us, no forked process is left.
    let everything = fs::read_to_string(class.join("_grades/grades.json")).unwrap() + &log;
    assert!(!everything.contains("TOP-SECRET-CANARY-7731"));
    assert!(
        listener.accept().is_err(),
        "a learner's code reached the network"
    );
    assert_eq!(
        marker_processes("31.4159"),
        0,
        "forked processes outlived the box"
    );
    // Nothing written outside the scratch directory: the course, the class folder and the planted file.
    assert!(!planted.exists());
    assert_eq!(snapshot(&sandbox.course(), &["target"]), course_before);
    assert_eq!(snapshot(&class, &["_grades"]), class_before);

    // The outputs: markdown and three real PNGs.
    let md = fs::read_to_string(class.join("_grades/grades.md")).unwrap();
    assert!(
        md.contains("| twin_a | passed |") && md.contains("twin_a & twin_b"),
        "{md}"
    );
    for chart in [
        "pass_rate.png",
        "failing_tests.png",
        "time_to_first_pass.png",
    ] {
        let png = fs::read(class.join("_grades").join(chart)).unwrap();
        assert!(
            png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 2000,
            "{chart}"
        );
    }
}

#[test]
fn a_class_folder_that_is_not_one_is_refused_by_name() {
    let sandbox = Sandbox::new("grade-bad-input", Some(&[STAGE]));
    let missing = sandbox.dir.join("no-such-class");
    let out = sandbox.xtask(&["grade", missing.to_str().unwrap(), "--stages", "01"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("is not a folder of learner folders"),
        "{}",
        text(&out)
    );
    let class = sandbox.dir.join("bad-names");
    fs::create_dir_all(class.join("bad name!")).unwrap();
    let out = sandbox.xtask(&["grade", class.to_str().unwrap(), "--stages", "01"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("letters, digits"), "{}", text(&out));
}
