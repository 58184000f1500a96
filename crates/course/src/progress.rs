//! The learner's record, `learn/progress.json`, and the verbs that only read or extend it:
//! `progress`, `hint` and `predict`.
//!
//! Building and judging the learner's crate is `learn.rs` and `check.rs`; this module never runs
//! cargo. It hands out one hint level at a time and takes one prediction per stage, before the
//! first check.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::args::{Args, Verb};
use crate::course::{self, Course, Lang, OPTION_LABELS, Prediction, Stage};
use crate::learner::{learn_dir, progress_path};
use crate::report;

pub const HINT: Verb = Verb {
    name: "hint",
    about: "Print the next graded hint of a stage (one level at a time)",
    positionals: "STAGE [LEVEL]",
    flags: &[],
};
pub const PREDICT: Verb = Verb {
    name: "predict",
    about: "Commit your prediction of a stage's failing test (once, before the first check)",
    positionals: "STAGE <A-D>",
    flags: &[],
};
pub const PROGRESS: Verb = Verb {
    name: "progress",
    about: "List the seven stages with your status, hints used and predictions",
    positionals: "",
    flags: &[(
        "reset",
        None,
        "start a new record (the old one is kept as learn/progress.reset-<time>.json)",
    )],
};

/// Written as 2; files written as 1 (before predictions and exercise kinds) still load.
const PROGRESS_FORMAT: u32 = 2;

/// `learn/progress.json`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Progress {
    pub format_version: u32,
    pub stages: BTreeMap<String, StageProgress>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageProgress {
    pub started_at: Option<String>,
    /// `repair` (the faulty file) or `scratch` (`todo!()` bodies); absent means `repair`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exercise: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prediction: Option<PredictionRecord>,
    pub checks: u32,
    pub last_check_at: Option<String>,
    /// A learner outcome: `passed`, `failed`, `unviable`, `timeout`, `transfer_missing` or
    /// `transfer_not_caught`.
    pub last_result: Option<String>,
    pub passed_at: Option<String>,
    pub hints_shown: u32,
}

/// What `last_result` may hold (the learner outcomes of `check`).
const LEARNER_RESULTS: &[&str] = &[
    "passed",
    "failed",
    "unviable",
    "timeout",
    "transfer_missing",
    "transfer_not_caught",
];

/// A progress record that does not describe this course, or describes a pass that cannot have
/// happened.
#[derive(Debug, thiserror::Error)]
pub enum ProgressProblem {
    #[error("stages.{0} is not a stage of this course")]
    UnknownStage(String),
    #[error("stages.{0} is passed without a single check")]
    PassWithoutCheck(String),
    #[error("stages.{0} is passed without a prediction")]
    PassWithoutPrediction(String),
    #[error("stages.{0}.last_result `{1}` is not a check outcome")]
    UnknownResult(String, String),
}

/// The learner's committed guess.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredictionRecord {
    /// `A` to `D`.
    pub choice: String,
    pub correct: bool,
    pub at: String,
}

impl Progress {
    /// Loads the state; a missing file is a fresh start, a damaged one is an error naming the fix.
    pub fn load(path: &Path) -> anyhow::Result<Progress> {
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Progress {
                    format_version: PROGRESS_FORMAT,
                    stages: BTreeMap::new(),
                });
            }
            Err(e) => bail!("cannot read {}: {e}", path.display()),
        };
        let corrupted = |why: String| {
            anyhow::anyhow!(
                "{} is not valid progress state ({why}).\nRun `cargo xtask progress --reset` to start the record over \
                 (your learn/NN-name crates are kept).",
                path.display()
            )
        };
        let mut progress: Progress =
            serde_json::from_str(&text).map_err(|e| corrupted(e.to_string()))?;
        if !(1..=PROGRESS_FORMAT).contains(&progress.format_version) {
            return Err(corrupted(format!(
                "format_version {} is not 1 or {PROGRESS_FORMAT}",
                progress.format_version
            )));
        }
        for (id, stage) in &progress.stages {
            if let Some(p) = &stage.prediction
                && Prediction::index_of(&p.choice).is_none()
            {
                return Err(corrupted(format!(
                    "stages.{id}.prediction.choice `{}` is not one of A-D",
                    p.choice
                )));
            }
        }
        progress.format_version = PROGRESS_FORMAT;
        Ok(progress)
    }

    /// The course's state, loaded and checked against the course: every stage it names exists,
    /// and a pass has the prediction and the check that must come before it.
    pub fn open(course: &Course) -> anyhow::Result<Progress> {
        let path = progress_path(course);
        let progress = Progress::load(&path)?;
        if let Err(problem) = progress.validate(course) {
            bail!(
                "{} is not valid progress state ({problem}).\nRun `cargo xtask progress --reset` to start the record over \
                 (a backup is kept; your learn/NN-name crates are kept).",
                path.display()
            );
        }
        Ok(progress)
    }

    fn validate(&self, course: &Course) -> Result<(), ProgressProblem> {
        for (id, stage) in &self.stages {
            if !course.stages.iter().any(|s| &s.id == id) {
                return Err(ProgressProblem::UnknownStage(id.clone()));
            }
            if stage.passed_at.is_some() {
                if stage.checks == 0 {
                    return Err(ProgressProblem::PassWithoutCheck(id.clone()));
                }
                if stage.prediction.is_none() {
                    return Err(ProgressProblem::PassWithoutPrediction(id.clone()));
                }
            }
            if let Some(result) = &stage.last_result
                && !LEARNER_RESULTS.contains(&result.as_str())
            {
                return Err(ProgressProblem::UnknownResult(id.clone(), result.clone()));
            }
        }
        Ok(())
    }

    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(self)? + "\n";
        // Write then rename, so an interrupted save never leaves a half-written state file.
        let tmp = path.with_extension("json.tmp");
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))?;
        Ok(())
    }

    pub fn stage(&self, stage: &Stage) -> Option<&StageProgress> {
        self.stages.get(&stage.id)
    }

    pub fn passed(&self, stage: &Stage) -> bool {
        self.stage(stage).is_some_and(|s| s.passed_at.is_some())
    }
}

pub fn now() -> String {
    report::rfc3339(SystemTime::now())
}

pub fn cmd_predict(args: Args) -> anyhow::Result<ExitCode> {
    let usage = "cargo xtask predict STAGE <A-D>";
    args.at_most_positionals(2, usage)?;
    let course = Course::open(&args)?;
    let (Some(selector), Some(choice)) = (args.positional.first(), args.positional.get(1)) else {
        bail!("usage: {usage}");
    };
    let stage = course.stage(selector)?.clone();
    let lang = Lang::choose(&args)?;
    predict(&course, &stage, choice, lang, &mut std::io::stdout())?;
    Ok(ExitCode::SUCCESS)
}

/// Records the learner's guess (once, before the first check) and answers it with the explanation.
pub fn predict(
    course: &Course,
    stage: &Stage,
    choice: &str,
    lang: Lang,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let meta = course::load_meta(stage)?;
    let Some(index) = Prediction::index_of(choice) else {
        bail!(
            "`{choice}` is not an option; choose one of {}",
            OPTION_LABELS.join(", ")
        );
    };
    let path = progress_path(course);
    let mut progress = Progress::open(course)?;
    if !crate::learner::has_copy(course, stage) {
        bail!(
            "stage {n} has no copy yet: run `cargo xtask learn {n}` first and read its question, then predict",
            n = stage.number()
        );
    }
    if let Some((choice, at)) = earlier_prediction(course, stage) {
        bail!(
            "you already committed {choice} for stage {} ({at}, kept across `progress --reset`); a prediction is made once",
            stage.number()
        );
    }
    let entry = progress.stages.entry(stage.id.clone()).or_default();
    if let Some(done) = &entry.prediction {
        bail!(
            "you already committed {} for stage {} ({}); a prediction is made once",
            done.choice,
            stage.number(),
            done.at
        );
    }
    if entry.checks > 0 {
        bail!(
            "stage {} has been checked {} time(s) already; a prediction is made before the first check",
            stage.number(),
            entry.checks
        );
    }
    let label = OPTION_LABELS[index];
    let answer = meta.prediction.answer_index();
    let correct = index == answer;
    entry.prediction = Some(PredictionRecord {
        choice: label.to_owned(),
        correct,
        at: now(),
    });
    progress.save(&path)?;
    let options = meta.prediction.options.get(lang);
    let right = OPTION_LABELS[answer];
    match (lang, correct) {
        (Lang::En, true) => writeln!(out, "{label}: right. {}", options[index])?,
        (Lang::En, false) => writeln!(
            out,
            "{label}: not this time. The answer is {right}: {}",
            options[answer]
        )?,
        (Lang::ZhCn, true) => writeln!(out, "{label}：猜对了。{}", options[index])?,
        (Lang::ZhCn, false) => writeln!(
            out,
            "{label}：这次没猜中。答案是 {right}：{}",
            options[answer]
        )?,
    }
    writeln!(out, "\n{}", meta.prediction.explanation.get(lang).trim())?;
    let next = match lang {
        Lang::En => format!("\nNext: cargo xtask check {}", stage.number()),
        Lang::ZhCn => format!("\n下一步：cargo xtask check {}", stage.number()),
    };
    writeln!(out, "{next}")?;
    Ok(())
}

pub fn cmd_hint(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(2, "cargo xtask hint STAGE [LEVEL]")?;
    let course = Course::open(&args)?;
    let stage = course.stage(
        args.positional
            .first()
            .context("usage: cargo xtask hint STAGE [LEVEL]")?,
    )?;
    let lang = Lang::choose(&args)?;
    let level = args
        .positional
        .get(1)
        .map(|l| {
            l.parse::<u32>()
                .with_context(|| format!("hint level `{l}` is not a number"))
        })
        .transpose()?;
    hint(&course, stage, level, lang, &mut std::io::stdout())?;
    Ok(ExitCode::SUCCESS)
}

/// Shows the next hint, or `level` when it is one already seen or the next one: hints come one
/// level at a time.
pub fn hint(
    course: &Course,
    stage: &Stage,
    level: Option<u32>,
    lang: Lang,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let meta = course::load_meta(stage)?;
    let path = progress_path(course);
    let mut progress = Progress::open(course)?;
    let entry = progress.stages.entry(stage.id.clone()).or_default();
    let total = meta.hints.len() as u32;
    let next = (entry.hints_shown + 1).min(total);
    let level = match level {
        Some(n) if n == 0 || n > total => bail!(
            "hint level {n} does not exist; stage {} has levels 1-{total}",
            stage.number()
        ),
        Some(n) if n > next => bail!(
            "hints come one level at a time: you have seen {} of {total}; \
             `cargo xtask hint {}` shows level {next}",
            entry.hints_shown,
            stage.number()
        ),
        Some(n) => n,
        None => next,
    };
    let first_time = level > entry.hints_shown;
    entry.hints_shown = entry.hints_shown.max(level);
    let label = match lang {
        Lang::En => format!(
            "hint {level}/{total} for stage {} ({})",
            stage.number(),
            meta.title.get(lang)
        ),
        Lang::ZhCn => format!(
            "第 {level}/{total} 条提示 · 阶段 {}（{}）",
            stage.number(),
            meta.title.get(lang)
        ),
    };
    writeln!(
        out,
        "{label}\n\n{}",
        meta.hints[(level - 1) as usize].get(lang)
    )?;
    if level == total && !first_time {
        match lang {
            Lang::En => writeln!(out, "\n(that was the last hint)")?,
            Lang::ZhCn => writeln!(out, "\n（这是最后一条提示）")?,
        }
    }
    progress.save(&path)?;
    Ok(())
}

pub fn cmd_progress(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(0, "cargo xtask progress [--reset]")?;
    let course = Course::open(&args)?;
    if args.flag("reset") {
        match reset(&course)? {
            Some(backup) => println!(
                "progress reset; the old record is kept as {} (predictions stay committed); \
                 your learn/NN-name crates are kept",
                course.relative(&backup)
            ),
            None => println!("no progress recorded yet"),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let lang = Lang::choose(&args)?;
    print_progress(&course, lang, &mut std::io::stdout())?;
    Ok(ExitCode::SUCCESS)
}

/// Moves the record to `learn/progress.reset-<time>.json` and starts a new one that keeps only the
/// committed predictions (a prediction is made once, resets or not). `None` when there was none.
pub fn reset(course: &Course) -> anyhow::Result<Option<PathBuf>> {
    let path = progress_path(course);
    if !path.is_file() {
        return Ok(None);
    }
    let stamp: String = now()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut backup = learn_dir(course).join(format!("progress.reset-{stamp}.json"));
    let mut n = 1;
    while backup.exists() {
        n += 1;
        backup = learn_dir(course).join(format!("progress.reset-{stamp}-{n}.json"));
    }
    fs::rename(&path, &backup)
        .with_context(|| format!("keeping {} as {}", path.display(), backup.display()))?;
    let mut fresh = Progress {
        format_version: PROGRESS_FORMAT,
        stages: BTreeMap::new(),
    };
    if let Ok(old) = Progress::load(&backup) {
        for (id, stage) in old.stages {
            if stage.prediction.is_some() {
                fresh.stages.insert(
                    id,
                    StageProgress {
                        prediction: stage.prediction,
                        ..Default::default()
                    },
                );
            }
        }
    }
    fresh.save(&path)?;
    Ok(Some(backup))
}

/// A prediction for `stage` in a record an earlier `progress --reset` kept aside (read leniently:
/// even a damaged backup still holds the learner's committed choice).
fn earlier_prediction(course: &Course, stage: &Stage) -> Option<(String, String)> {
    let entries = fs::read_dir(learn_dir(course)).ok()?;
    let mut backups: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("progress.reset-") && n.ends_with(".json"))
        })
        .collect();
    backups.sort();
    backups.into_iter().find_map(|path| {
        let text = fs::read_to_string(path).ok()?;
        let value: serde_json::Value = serde_json::from_str(&text).ok()?;
        let p = &value["stages"][&stage.id]["prediction"];
        Some((
            p["choice"].as_str()?.to_owned(),
            p["at"].as_str().unwrap_or_default().to_owned(),
        ))
    })
}

/// The stage list with each stage's status (also the watch mode's `l` key).
pub fn print_progress(course: &Course, lang: Lang, out: &mut dyn Write) -> anyhow::Result<()> {
    let progress = Progress::open(course)?;
    let mut done = 0;
    for stage in &course.stages {
        let title = course::load_meta(stage)
            .map(|m| m.title.get(lang).to_owned())
            .unwrap_or_else(|_| stage.id.clone());
        let state = progress.stage(stage);
        let has_crate = learn_dir(course)
            .join(&stage.id)
            .join("Cargo.toml")
            .is_file();
        let zh = lang == Lang::ZhCn;
        let status = match (state, has_crate) {
            (Some(s), _) if s.passed_at.is_some() => {
                done += 1;
                let at = s.passed_at.as_deref().unwrap_or_default();
                if zh {
                    format!("已完成   （{at} 通过）")
                } else {
                    format!("done     (passed {at})")
                }
            }
            (Some(s), true) if s.checks > 0 => {
                let last = s.last_result.as_deref().unwrap_or("?");
                if zh {
                    format!("进行中   （检查 {} 次，最近：{last}）", s.checks)
                } else {
                    format!(
                        "started  ({} check{}, last: {last})",
                        s.checks,
                        if s.checks == 1 { "" } else { "s" }
                    )
                }
            }
            (_, true) if zh => "进行中   （尚未检查）".to_owned(),
            (_, true) => "started  (not checked yet)".to_owned(),
            _ if zh => "未开始".to_owned(),
            _ => "not started".to_owned(),
        };
        let hints = state.map(|s| s.hints_shown).unwrap_or(0);
        let total = course::load_meta(stage).map_or(3, |m| m.hints.len());
        let (hint_word, predicted_word) = if zh {
            ("提示", "预测")
        } else {
            ("hints", "predicted")
        };
        let predicted = match state.and_then(|s| s.prediction.as_ref()) {
            Some(p) if p.correct => format!("  {predicted_word} {} ✓", p.choice),
            Some(p) => format!("  {predicted_word} {} ✗", p.choice),
            None => String::new(),
        };
        writeln!(
            out,
            "{}  {:<34} {status}  {hint_word} {hints}/{total}{predicted}",
            stage.number(),
            title
        )?;
    }
    match lang {
        Lang::En => writeln!(out, "\n{done}/{} stages done", course.stages.len())?,
        Lang::ZhCn => writeln!(out, "\n已完成 {done}/{} 个阶段", course.stages.len())?,
    }
    Ok(())
}
