//! `cargo xtask learn`: the learner's copy of a stage, and the `learn/` workspace around it.
//!
//! A copy holds the stage's `src/` (the faulty file, or `todo!()` bodies with `--scratch`), its
//! stage and error tests, a transfer-test skeleton the learner fills in, and a README made only of
//! the guide sections that give nothing away. It never receives `stage.toml` (the hints),
//! `fixtures/failure.json` (the diagnosis and repair), `faults/` or the full guides. `learn/` is one
//! cargo workspace (its own `Cargo.toml`, the course's `Cargo.lock`, `target/`), so rust-analyzer
//! and plain `cargo test` work inside it. This module never writes into `stages/`.

use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::args::{Args, Verb};
use crate::course::{self, Course, Lang, OPTION_LABELS, Stage};
use crate::guide::{self, Exercise};
use crate::learner::{copy_dir, has_copy, learn_dir, learn_package, progress_path};
use crate::progress::{self, Progress};
use crate::scratch;
use crate::skeleton;

pub const LEARN: Verb = Verb {
    name: "learn",
    about: "Create learn/NN-name/: the faulty source (or todo!() bodies), the stage tests and a transfer-test skeleton",
    positionals: "STAGE",
    flags: &[
        (
            "force",
            None,
            "replace an existing copy (your edits in it are lost)",
        ),
        (
            "scratch",
            None,
            "todo!() bodies instead of the faulty source: build the stage from its tests",
        ),
    ],
};

/// What a copy never receives: hints (stage.toml), diagnosis and repair (failure.json), the faulty
/// and reference files, the full guides.
pub const WITHHELD: &[&str] = &[
    "faults",
    "stage.toml",
    "fixtures/failure.json",
    "README.md",
    "README.zh-CN.md",
    "ANSWERS.md",
    "ANSWERS.zh-CN.md",
];

/// The transfer test a fresh copy starts with. `check` recognises it byte for byte as "not
/// written yet".
pub fn transfer_skeleton(stage: &Stage, lib: &str) -> String {
    let n = stage.number();
    format!(
        "//! Your transfer test for stage {n}: the same rule on new data (README.md, \"Transfer challenge\").\n\
         //! `cargo xtask check {n}` requires that it passes on your code and fails on the original\n\
         //! faulty code, i.e. that it would have caught the bug. Rename the test, add more.\n\
         \n\
         #[allow(unused_imports)]\n\
         use {lib}::*;\n\
         \n\
         #[test]\n\
         fn transfer() {{\n    \
             todo!(\"write the transfer test described in README.md\")\n\
         }}\n"
    )
}

pub fn cmd_learn(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(1, "cargo xtask learn STAGE [--scratch] [--force]")?;
    let course = Course::open(&args)?;
    let stage = course
        .stage(
            args.positional
                .first()
                .context("usage: cargo xtask learn STAGE [--scratch] [--force]")?,
        )?
        .clone();
    let lang = Lang::choose(&args)?;
    let exercise = if args.flag("scratch") {
        Exercise::Scratch
    } else {
        Exercise::Repair
    };
    if has_copy(&course, &stage) && !args.flag("force") {
        bail!(
            "{} already exists and may hold your work; edit it and run `cargo xtask check {}`, \
             or pass --force to start over (overwrites your edits)",
            course.relative(&copy_dir(&course, &stage)),
            stage.number()
        );
    }
    create_copy(&course, &stage, exercise)?;
    print_intro(&course, &stage, exercise, lang, &mut std::io::stdout())?;
    Ok(ExitCode::SUCCESS)
}

/// Writes (or rewrites) `learn/NN-name/` and the workspace files, and records the start.
pub fn create_copy(course: &Course, stage: &Stage, exercise: Exercise) -> anyhow::Result<PathBuf> {
    let mut progress = Progress::open(course)?;
    let validator = course::compile_schema("failure.schema.json")?;
    let contract = course::load_contract(stage, &validator).map_err(|p| anyhow::anyhow!("{p}"))?;
    let dir = copy_dir(course, stage);
    let source = match exercise {
        Exercise::Repair => fs::read(stage.dir.join(&contract.fault_file))
            .with_context(|| format!("reading {}/{}", stage.id, contract.fault_file))?,
        Exercise::Scratch => {
            let solution = fs::read_to_string(stage.dir.join(&contract.faulty_source_path))
                .with_context(|| format!("reading {}/{}", stage.id, contract.faulty_source_path))?;
            skeleton::todo_bodies(&solution)
                .with_context(|| format!("{}/{}", stage.id, contract.faulty_source_path))?
                .into_bytes()
        }
    };
    let manifest = scratch::standalone_manifest(course, stage, Some(&learn_package(stage)), false)?;
    let lib = stage.lib_name()?;
    let mut overlay = vec![
        (contract.faulty_source_path.clone(), source),
        ("Cargo.toml".to_owned(), manifest.into_bytes()),
        (
            "tests/transfer.rs".to_owned(),
            transfer_skeleton(stage, &lib).into_bytes(),
        ),
    ];
    for lang in [Lang::En, Lang::ZhCn] {
        let readme = guide::learner_readme(stage, &contract.faulty_source_path, exercise, lang)?;
        overlay.push((lang.guide_file().to_owned(), readme.into_bytes()));
    }
    scratch::sync_dir(&stage.dir, &dir, WITHHELD, &overlay, &[])?;
    write_workspace(course)?;

    let entry = progress.stages.entry(stage.id.clone()).or_default();
    entry.started_at = Some(progress::now());
    entry.exercise = Some(exercise.as_str().to_owned());
    entry.passed_at = None;
    entry.last_result = None;
    progress.save(&progress_path(course))?;
    Ok(dir)
}

/// `learn/Cargo.toml` (every copy a member), `learn/Cargo.lock` (the course's, so the copies build
/// against the very versions `verify` proved) and `learn/.cargo/config.toml` (one target dir).
pub fn write_workspace(course: &Course) -> anyhow::Result<()> {
    let learn = learn_dir(course);
    let members: Vec<toml::Value> = course
        .stages
        .iter()
        .filter(|s| has_copy(course, s))
        .map(|s| toml::Value::String(s.id.clone()))
        .collect();
    let mut workspace = toml::Table::new();
    workspace.insert("resolver".into(), "3".into());
    workspace.insert("members".into(), toml::Value::Array(members));
    let mut root = toml::Table::new();
    root.insert("workspace".into(), toml::Value::Table(workspace));
    if let Some(profiles) = scratch::profiles_for_stages(course) {
        root.insert("profile".into(), profiles);
    }
    let text = format!(
        "# Generated by `cargo xtask learn`: the workspace of your stage copies. Open learn/ in your\n\
         # editor so rust-analyzer sees the files you edit. Regenerated on every `learn`.\n{}",
        toml::to_string(&root)?
    );
    scratch::write_if_changed(&learn.join("Cargo.toml"), text.as_bytes())?;
    let root_lock = course.root.join("Cargo.lock");
    if root_lock.is_file() {
        scratch::write_if_changed(&learn.join("Cargo.lock"), &fs::read(&root_lock)?)?;
    }
    scratch::write_if_changed(
        &learn.join(".cargo/config.toml"),
        b"# Generated by `cargo xtask learn`: all learner crates share learn/target.\n[build]\ntarget-dir = \"target\"\n",
    )?;
    Ok(())
}

/// What `learn` prints: where the copy is, the prediction question, and what to run next.
pub fn print_intro(
    course: &Course,
    stage: &Stage,
    exercise: Exercise,
    lang: Lang,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<()> {
    let meta = course::load_meta(stage)?;
    let validator = course::compile_schema("failure.schema.json")?;
    let contract = course::load_contract(stage, &validator).map_err(|p| anyhow::anyhow!("{p}"))?;
    let dir = course.relative(&copy_dir(course, stage)).into_owned();
    let n = stage.number();
    let file = format!("{dir}/{}", contract.faulty_source_path);
    let predicted = Progress::open(course)?
        .stage(stage)
        .and_then(|s| s.prediction.clone());
    match lang {
        Lang::En => {
            writeln!(out, "Created {dir} — stage {n}: {}", meta.title.get(lang))?;
            match exercise {
                Exercise::Repair => writeln!(
                    out,
                    "  {file} holds a deliberate defect; the tests in tests/ describe correct behaviour."
                )?,
                Exercise::Scratch => writeln!(
                    out,
                    "  {file} has todo!() bodies: build it from the steps in {dir}/README.md."
                )?,
            }
            writeln!(
                out,
                "  Open learn/ in your editor: it is a cargo workspace, so rust-analyzer sees your files."
            )?;
        }
        Lang::ZhCn => {
            writeln!(out, "已创建 {dir} —— 阶段 {n}：{}", meta.title.get(lang))?;
            match exercise {
                Exercise::Repair => writeln!(
                    out,
                    "  {file} 里有一处故意埋下的缺陷；tests/ 里的测试描述了正确行为。"
                )?,
                Exercise::Scratch => writeln!(
                    out,
                    "  {file} 的函数体都是 todo!()：按 {dir}/README.md 里的步骤把它写出来。"
                )?,
            }
            writeln!(
                out,
                "  用编辑器打开 learn/ 目录：它是一个 cargo 工作区，rust-analyzer 能识别你的文件。"
            )?;
        }
    }
    if predicted.is_none() {
        print_prediction(&meta, lang, out)?;
        match lang {
            Lang::En => writeln!(out, "  commit: cargo xtask predict {n} <A-D>")?,
            Lang::ZhCn => writeln!(out, "  提交：cargo xtask predict {n} <A-D>")?,
        }
    }
    match lang {
        Lang::En => {
            writeln!(out, "\nNext:")?;
            writeln!(out, "  edit   {file}")?;
            writeln!(out, "  write  {dir}/tests/transfer.rs (your transfer test)")?;
            writeln!(
                out,
                "  run    cargo xtask check {n}   (or: cargo xtask watch)"
            )?;
            writeln!(out, "  stuck? cargo xtask hint {n}")?;
        }
        Lang::ZhCn => {
            writeln!(out, "\n接下来：")?;
            writeln!(out, "  修改   {file}")?;
            writeln!(out, "  编写   {dir}/tests/transfer.rs（你的迁移测试）")?;
            writeln!(
                out,
                "  运行   cargo xtask check {n}（或 cargo xtask watch）"
            )?;
            writeln!(out, "  卡住了 cargo xtask hint {n}")?;
        }
    }
    Ok(())
}

/// The question and its options labelled A-D, without the answer.
pub fn print_prediction(
    meta: &course::StageMeta,
    lang: Lang,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<()> {
    let heading = match lang {
        Lang::En => "Predict first",
        Lang::ZhCn => "先做判断",
    };
    writeln!(out, "\n{heading}: {}", meta.prediction.question.get(lang))?;
    for (label, option) in OPTION_LABELS.iter().zip(meta.prediction.options.get(lang)) {
        writeln!(out, "  {label}) {option}")?;
    }
    Ok(())
}
