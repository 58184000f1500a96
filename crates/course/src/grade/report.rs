//! What `grade` writes: `grades.json` (validated against `schemas/grades.schema.json` before it is written),
//! `grades.md`, and the summary both share — pass rate per stage, the tests that fail most, the time to a first
//! pass where a learner's progress log records it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use super::copies::CopyFlag;
use crate::course;

#[derive(Debug, Clone, Serialize)]
pub struct Grades {
    pub format_version: u32,
    pub generator: String,
    pub generated_at: String,
    pub class: String,
    #[serde(rename = "box")]
    pub sandbox: BoxReport,
    pub stages: Vec<StageInfo>,
    pub learners: Vec<LearnerGrades>,
    pub copies: Vec<CopyFlag>,
    pub summary: Summary,
    pub charts: Vec<String>,
    pub timing: Timing,
}

#[derive(Debug, Clone, Serialize)]
pub struct BoxReport {
    pub mechanism: String,
    pub network: bool,
    pub test_timeout_s: u64,
    pub cpu_s: u64,
    pub memory_bytes: u64,
    pub processes: u64,
    pub file_bytes: u64,
    pub tmp_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct StageInfo {
    pub id: String,
    pub title_en: String,
    pub title_zh: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct LearnerGrades {
    pub name: String,
    pub source: String,
    pub notes: Vec<String>,
    pub stages: Vec<StageGrade>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StageGrade {
    pub stage_id: String,
    /// `passed`, `failed`, `unviable`, `transfer_missing`, `transfer_not_caught`, `refused` or `not_submitted`.
    pub outcome: String,
    pub reason: String,
    /// `target::test` of every failing test on the learner's code.
    pub failing_tests: Vec<String>,
    pub passed_tests: u32,
    pub ms: u64,
    /// From the learner's own progress log (a claim, shown as such), when it records both times.
    pub minutes_to_first_pass: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Summary {
    pub per_stage: Vec<StageSummary>,
    pub failing_tests: Vec<FailingTest>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StageSummary {
    pub stage_id: String,
    pub submitted: u32,
    pub passed: u32,
    pub refused: u32,
    pub pass_rate: Option<f64>,
    pub median_minutes_to_first_pass: Option<f64>,
    pub first_pass_times: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct FailingTest {
    pub stage_id: String,
    pub test: String,
    pub learners: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct Timing {
    pub total_ms: u64,
    pub seed_ms: u64,
    pub submissions: u32,
    pub per_submission_ms: Option<u64>,
    pub jobs: u32,
}

/// The class summary from the grades.
pub fn summarise(stages: &[StageInfo], learners: &[LearnerGrades]) -> Summary {
    let mut per_stage = Vec::new();
    let mut failing: BTreeMap<(String, String), u32> = BTreeMap::new();
    for stage in stages {
        let grades: Vec<&StageGrade> = learners
            .iter()
            .flat_map(|l| l.stages.iter())
            .filter(|g| g.stage_id == stage.id && g.outcome != "not_submitted")
            .collect();
        let passed = grades.iter().filter(|g| g.outcome == "passed").count() as u32;
        let mut times: Vec<f64> = grades
            .iter()
            .filter_map(|g| g.minutes_to_first_pass)
            .collect();
        times.sort_by(f64::total_cmp);
        for g in &grades {
            for test in &g.failing_tests {
                *failing
                    .entry((g.stage_id.clone(), test.clone()))
                    .or_default() += 1;
            }
        }
        per_stage.push(StageSummary {
            stage_id: stage.id.clone(),
            submitted: grades.len() as u32,
            passed,
            refused: grades.iter().filter(|g| g.outcome == "refused").count() as u32,
            pass_rate: (!grades.is_empty()).then(|| round3(passed as f64 / grades.len() as f64)),
            median_minutes_to_first_pass: median(&times),
            first_pass_times: times.len() as u32,
        });
    }
    let mut failing_tests: Vec<FailingTest> = failing
        .into_iter()
        .map(|((stage_id, test), learners)| FailingTest {
            stage_id,
            test,
            learners,
        })
        .collect();
    failing_tests.sort_by(|a, b| b.learners.cmp(&a.learners).then(a.test.cmp(&b.test)));
    failing_tests.truncate(20);
    Summary {
        per_stage,
        failing_tests,
    }
}

fn median(sorted: &[f64]) -> Option<f64> {
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(round3(sorted[n / 2])),
        n => Some(round3((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0)),
    }
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Validates `grades` against the schema, then writes `grades.json` and `grades.md` into `out`.
pub fn write(grades: &Grades, out: &Path) -> anyhow::Result<()> {
    let value = serde_json::to_value(grades)?;
    let validator = course::compile_schema("grades.schema.json")?;
    let errors = course::schema_errors(&validator, &value);
    anyhow::ensure!(
        errors.is_empty(),
        "grades.json does not match schemas/grades.schema.json:\n{}",
        errors.join("\n")
    );
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    std::fs::write(
        out.join("grades.json"),
        serde_json::to_string_pretty(&value)? + "\n",
    )?;
    std::fs::write(out.join("grades.md"), markdown(grades))?;
    Ok(())
}

/// `grades.md`: stages × learners, the reasons, the copies, the tests that fail most.
pub fn markdown(g: &Grades) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Grades: {}\n", g.class);
    let _ = writeln!(
        md,
        "{} learner(s), {} stage(s), generated {} by `{}`. Every build and test ran in a box ({}, no network; \
         per process {} s CPU, {} MiB memory, {} processes, {} MiB files; tests {} s).\n",
        g.learners.len(),
        g.stages.len(),
        g.generated_at,
        g.generator,
        g.sandbox.mechanism,
        g.sandbox.cpu_s,
        g.sandbox.memory_bytes >> 20,
        g.sandbox.processes,
        g.sandbox.file_bytes >> 20,
        g.sandbox.test_timeout_s
    );
    let _ = write!(md, "| learner |");
    for s in &g.stages {
        let _ = write!(md, " {} |", s.id);
    }
    let _ = write!(md, "\n|---|");
    for _ in &g.stages {
        let _ = write!(md, "---|");
    }
    md.push('\n');
    learner_rows(g, &mut md);
    details(g, &mut md);
    md
}

fn learner_rows(g: &Grades, md: &mut String) {
    for l in &g.learners {
        let _ = write!(md, "| {} |", l.name);
        for s in &g.stages {
            let cell = l
                .stages
                .iter()
                .find(|x| x.stage_id == s.id)
                .map_or("—", |x| x.outcome.as_str());
            let _ = write!(md, " {cell} |");
        }
        md.push('\n');
    }
}

/// Pass rates, the reasons, the copies and the failing tests.
fn details(g: &Grades, md: &mut String) {
    let _ = writeln!(md, "\n## Pass rate per stage\n");
    for s in &g.summary.per_stage {
        let rate = s
            .pass_rate
            .map_or("—".to_owned(), |r| format!("{:.0}%", r * 100.0));
        let _ = writeln!(
            md,
            "- {}: {rate} ({} of {} submitted; {} refused)",
            s.stage_id, s.passed, s.submitted, s.refused
        );
    }
    let _ = writeln!(md, "\n## Why not passed\n");
    for l in &g.learners {
        for s in l.stages.iter().filter(|s| s.outcome != "passed") {
            let _ = writeln!(
                md,
                "- {} / {}: {} — {}",
                l.name, s.stage_id, s.outcome, s.reason
            );
        }
    }
    let _ = writeln!(md, "\n## Copies (flagged, not failed)\n");
    if g.copies.is_empty() {
        let _ = writeln!(md, "None found.");
    }
    for c in &g.copies {
        let _ = writeln!(
            md,
            "- {}: {} — {} (similarity {:.2})",
            c.stage_id,
            c.kind,
            c.learners.join(" & "),
            c.similarity
        );
    }
    let _ = writeln!(md, "\n## Tests that fail most\n");
    for f in &g.summary.failing_tests {
        let _ = writeln!(md, "- {} {}: {} learner(s)", f.stage_id, f.test, f.learners);
    }
    let _ = writeln!(
        md,
        "\nTime to a first pass comes from each learner's own `progress.json` (a claim): medians per stage are \
         in grades.json.\n\nCharts: {}",
        g.charts.join(", ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page's browser test loads `tests/ui/grades.sample.json` (a real `grade` output of the synthetic
    /// class): it must stay what the schema says.
    #[test]
    fn the_pages_sample_matches_the_schema() {
        let path = course::repo_root().join("tests/ui/grades.sample.json");
        let sample: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let validator = course::compile_schema("grades.schema.json").unwrap();
        assert_eq!(
            course::schema_errors(&validator, &sample),
            Vec::<String>::new()
        );
        let mut bad = sample.clone();
        bad["learners"][0]["stages"][0]["outcome"] = "cheated".into();
        assert!(!course::schema_errors(&validator, &bad).is_empty());
    }

    #[test]
    fn the_summary_counts_what_was_submitted() {
        let grade = |stage: &str, outcome: &str, fails: &[&str], minutes: Option<f64>| StageGrade {
            stage_id: stage.into(),
            outcome: outcome.into(),
            reason: String::new(),
            failing_tests: fails.iter().map(|s| s.to_string()).collect(),
            passed_tests: 0,
            ms: 0,
            minutes_to_first_pass: minutes,
        };
        let learner = |name: &str, stages| LearnerGrades {
            name: name.into(),
            source: "folder".into(),
            notes: vec![],
            stages,
        };
        let stages = vec![StageInfo {
            id: "01-a".into(),
            title_en: "A".into(),
            title_zh: "甲".into(),
        }];
        let learners = vec![
            learner("x", vec![grade("01-a", "passed", &[], Some(10.0))]),
            learner("y", vec![grade("01-a", "failed", &["stage::t"], None)]),
            learner("z", vec![grade("01-a", "not_submitted", &[], None)]),
            learner("w", vec![grade("01-a", "passed", &[], Some(30.0))]),
        ];
        let summary = summarise(&stages, &learners);
        let s = &summary.per_stage[0];
        assert_eq!((s.submitted, s.passed, s.pass_rate), (3, 2, Some(0.667)));
        assert_eq!(s.median_minutes_to_first_pass, Some(20.0));
        assert_eq!(summary.failing_tests[0].test, "stage::t");
    }
}
