//! The seven real stages through the learner's seat: `learn` gives a copy without the answer key,
//! the reference solution file and transfer test copied over it make `check` pass, and the pass
//! reveals the reference repair. Runs on a private copy of `stages/` (with a root manifest that
//! lists only the stages), never on the working tree.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{read_json, text};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let dest = to.join(path.file_name().unwrap());
        if path.is_dir() {
            if path.file_name().unwrap() == "target" {
                continue;
            }
            fs::create_dir_all(&dest).unwrap();
            copy_tree(&path, &dest);
        } else if fs::read(&dest).ok() != Some(fs::read(&path).unwrap()) {
            fs::write(&dest, fs::read(&path).unwrap()).unwrap();
        }
    }
}

struct Course {
    dir: PathBuf,
}

impl Course {
    /// `stages/`, `Cargo.lock` and a root manifest whose only members are the stages.
    fn new() -> Course {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("xtask-real-stages");
        let course = dir.join("course");
        fs::remove_dir_all(course.join("stages")).ok();
        for generated in ["learn/progress.json", "learn/verification.json"] {
            fs::remove_file(course.join(generated)).ok();
        }
        fs::create_dir_all(course.join("stages")).unwrap();
        copy_tree(&repo().join("stages"), &course.join("stages"));
        fs::copy(repo().join("Cargo.lock"), course.join("Cargo.lock")).unwrap();
        let manifest = fs::read_to_string(repo().join("Cargo.toml")).unwrap();
        let members = "members = [\"stages/*\", \"crates/*\", \"xtask\"]";
        assert!(
            manifest.contains(members),
            "the root manifest changed its members"
        );
        fs::write(
            course.join("Cargo.toml"),
            manifest.replace(members, "members = [\"stages/*\"]"),
        )
        .unwrap();
        Course { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.join("course")
    }

    fn xtask(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(args)
            .arg("--root")
            .arg(self.root())
            .arg("--scratch-dir")
            .arg(self.dir.join("scratch"))
            .env("LANG", "C")
            .output()
            .unwrap()
    }
}

/// Every hint, the explanation, the repair and the diagnosis of a stage, in both languages.
fn answer_key(stage: &Path) -> Vec<String> {
    let meta: toml::Table =
        toml::from_str(&fs::read_to_string(stage.join("stage.toml")).unwrap()).unwrap();
    let contract = read_json(&stage.join("fixtures/failure.json"));
    let mut secrets = Vec::new();
    for hint in meta["hints"].as_array().unwrap() {
        for lang in ["en", "zh-CN"] {
            secrets.push(hint[lang].as_str().unwrap().to_owned());
        }
    }
    for lang in ["en", "zh-CN"] {
        secrets.push(
            meta["prediction"]["explanation"][lang]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    secrets.push(contract["repair"].as_str().unwrap().to_owned());
    for step in contract["diagnosis"].as_array().unwrap() {
        secrets.push(step.as_str().unwrap().to_owned());
    }
    secrets.extend(["**Answer", "**答案", "## After it passes", "## 通过之后"].map(String::from));
    secrets
}

#[test]
fn every_stage_goes_from_learn_to_a_revealed_pass() {
    let course = Course::new();
    let stages = course.root().join("stages");
    let mut ids: Vec<String> = fs::read_dir(&stages)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    assert_eq!(ids.len(), 7);
    for id in &ids {
        let n = &id[..2];
        let stage = stages.join(id);
        let copy = course.root().join("learn").join(id);
        fs::remove_dir_all(&copy).ok();
        let learn = course.xtask(&["learn", n]);
        assert!(learn.status.success(), "{id}: {}", text(&learn));

        let secrets = answer_key(&stage);
        let mut stack = vec![copy.clone()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let content = fs::read_to_string(&path).unwrap();
                for secret in &secrets {
                    assert!(
                        !content.contains(secret.as_str()),
                        "{} gives away {secret:?}",
                        path.display()
                    );
                }
            }
        }

        let meta: toml::Table =
            toml::from_str(&fs::read_to_string(stage.join("stage.toml")).unwrap()).unwrap();
        let answer = meta["prediction"]["answer"].as_str().unwrap();
        let predict = course.xtask(&["predict", n, answer]);
        assert!(
            text(&predict).contains(&format!("{answer}: right.")),
            "{id}: {}",
            text(&predict)
        );

        let contract = read_json(&stage.join("fixtures/failure.json"));
        let source = contract["faulty_source_path"].as_str().unwrap();
        fs::copy(stage.join(source), copy.join(source)).unwrap();
        // The reference transfer test as is would be refused as copied; the learner's own adds one.
        let reference = fs::read_to_string(stage.join("tests/transfer.rs")).unwrap();
        fs::write(
            copy.join("tests/transfer.rs"),
            format!("{reference}\n#[test]\nfn my_own_check_compiles() {{}}\n"),
        )
        .unwrap();
        let check = course.xtask(&["check", n]);
        let out = text(&check);
        assert!(check.status.success(), "{id}:\n{out}");
        assert!(out.contains(&format!("Stage {n} passes.")), "{id}:\n{out}");
        assert!(
            out.contains(&format!("+++ stages/{id}/{source}")),
            "{id}: the reference repair is shown:\n{out}"
        );
        assert!(
            out.contains("Your file is now the reference's code (formatting and comments aside)."),
            "{id}:\n{out}"
        );
        assert!(
            out.contains(contract["repair"].as_str().unwrap()),
            "{id}: the repair principle is shown:\n{out}"
        );
        assert!(out.contains("Design question: "), "{id}:\n{out}");
    }
    let report = read_json(&course.root().join("learn/verification.json"));
    assert_eq!(report["stages"].as_array().unwrap().len(), 7);
    assert_eq!(report["all_contracts_hold"], true);
}
