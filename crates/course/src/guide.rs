//! Stage guides (`README.md`, `README.zh-CN.md`): their one set of sections, and the parts a
//! learner may see before a stage passes.
//!
//! Both languages use the same seventeen `##` sections in the same order (`Section::ALL`, headings
//! from `schemas/guide_sections.json`), so a section can be looked up by meaning in either file. This module only reads and reassembles
//! markdown; it never decides what a learner has earned (see `check.rs`).

use std::fs;
use std::sync::OnceLock;

use anyhow::{Context, bail};
use serde::Deserialize;

use crate::course::{Lang, Stage};

/// The `##` sections of every guide, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    PlaceInTheChapter,
    Problem,
    PredictFirst,
    WhatItIs,
    WhatItIsNot,
    Neighbours,
    BoundaryDecision,
    WorkedExample,
    WhyThisWay,
    ImplementationSteps,
    GuidedExercise,
    Hints,
    FaultLab,
    TransferChallenge,
    DesignQuestion,
    AfterItPasses,
    MasteryEvidence,
}

impl Section {
    pub const ALL: [Section; 17] = [
        Section::PlaceInTheChapter,
        Section::Problem,
        Section::PredictFirst,
        Section::WhatItIs,
        Section::WhatItIsNot,
        Section::Neighbours,
        Section::BoundaryDecision,
        Section::WorkedExample,
        Section::WhyThisWay,
        Section::ImplementationSteps,
        Section::GuidedExercise,
        Section::Hints,
        Section::FaultLab,
        Section::TransferChallenge,
        Section::DesignQuestion,
        Section::AfterItPasses,
        Section::MasteryEvidence,
    ];

    /// The key of this section in `schemas/guide_sections.json`.
    pub fn key(self) -> &'static str {
        match self {
            Section::PlaceInTheChapter => "place_in_the_chapter",
            Section::Problem => "problem",
            Section::PredictFirst => "predict_first",
            Section::WhatItIs => "what_it_is",
            Section::WhatItIsNot => "what_it_is_not",
            Section::Neighbours => "neighbours",
            Section::BoundaryDecision => "boundary_decision",
            Section::WorkedExample => "worked_example",
            Section::WhyThisWay => "why_this_way",
            Section::ImplementationSteps => "implementation_steps",
            Section::GuidedExercise => "guided_exercise",
            Section::Hints => "hints",
            Section::FaultLab => "fault_lab",
            Section::TransferChallenge => "transfer_challenge",
            Section::DesignQuestion => "design_question",
            Section::AfterItPasses => "after_it_passes",
            Section::MasteryEvidence => "mastery_evidence",
        }
    }

    /// The heading text in a language (without `## `), from `schemas/guide_sections.json`.
    pub fn heading(self, lang: Lang) -> &'static str {
        let entry = sections()
            .iter()
            .find(|s| s.key == self.key())
            .expect("every Section has an entry (checked by a test)");
        match lang {
            Lang::En => &entry.en,
            Lang::ZhCn => &entry.zh_cn,
        }
    }
}

#[derive(Debug, Deserialize)]
struct SectionEntry {
    key: String,
    en: String,
    #[serde(rename = "zh-CN")]
    zh_cn: String,
}

#[derive(Debug, Deserialize)]
struct SectionsFile {
    sections: Vec<SectionEntry>,
}

/// The section list, parsed once. The file is compiled in: a broken one fails the first use.
fn sections() -> &'static [SectionEntry] {
    static SECTIONS: OnceLock<Vec<SectionEntry>> = OnceLock::new();
    SECTIONS.get_or_init(|| {
        serde_json::from_str::<SectionsFile>(include_str!("../../../schemas/guide_sections.json"))
            .expect("schemas/guide_sections.json parses")
            .sections
    })
}

/// A guide split at its `##` headings (headings inside code fences do not count).
#[derive(Debug, Clone)]
pub struct Guide {
    /// The `# ` line, without the `# `.
    pub title: String,
    /// Everything between the title and the first section.
    pub intro: String,
    /// `(heading, body)` in file order.
    pub sections: Vec<(String, String)>,
}

impl Guide {
    pub fn parse(text: &str) -> Guide {
        let mut title = String::new();
        let mut intro = String::new();
        let mut sections: Vec<(String, String)> = Vec::new();
        let mut in_fence = false;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                in_fence = !in_fence;
            }
            if !in_fence {
                if let Some(heading) = line.strip_prefix("## ") {
                    sections.push((heading.trim().to_owned(), String::new()));
                    continue;
                }
                if title.is_empty()
                    && sections.is_empty()
                    && let Some(t) = line.strip_prefix("# ")
                {
                    title = t.trim().to_owned();
                    continue;
                }
            }
            let body = match sections.last_mut() {
                Some((_, body)) => body,
                None => &mut intro,
            };
            body.push_str(line);
            body.push('\n');
        }
        Guide {
            title,
            intro,
            sections,
        }
    }

    pub fn load(stage: &Stage, lang: Lang) -> anyhow::Result<Guide> {
        let path = stage.dir.join(lang.guide_file());
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        Ok(Guide::parse(&text))
    }

    /// The body of a section, trimmed; an error names the guide and the missing heading.
    pub fn section(&self, section: Section, lang: Lang) -> anyhow::Result<&str> {
        let heading = section.heading(lang);
        self.sections
            .iter()
            .find(|(h, _)| h == heading)
            .map(|(_, body)| body.trim())
            .with_context(|| {
                format!(
                    "the {} guide `{}` has no `## {heading}` section",
                    lang.code(),
                    self.title
                )
            })
    }

    /// Problems with the structure: every canonical heading, once, in order, nothing else; and a
    /// link to the guide in the other language before the first section.
    pub fn structure_problems(&self, lang: Lang) -> Vec<String> {
        let mut problems = Vec::new();
        let found: Vec<&str> = self.sections.iter().map(|(h, _)| h.as_str()).collect();
        let wanted: Vec<&str> = Section::ALL.iter().map(|s| s.heading(lang)).collect();
        if found != wanted {
            problems.push(format!(
                "sections are {found:?}; a {} guide has exactly {wanted:?}",
                lang.code()
            ));
        }
        let link = match lang {
            Lang::En => "[中文](README.zh-CN.md)",
            Lang::ZhCn => "[English](README.md)",
        };
        if !self.intro.contains(link) {
            problems.push(format!(
                "the intro does not link the other language ({link})"
            ));
        }
        problems
    }
}

/// Which exercise the learner's copy holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exercise {
    /// The faulty file in place of the solution: find and repair the defect.
    Repair,
    /// The module with `todo!()` bodies: build it from the implementation steps.
    Scratch,
}

impl Exercise {
    pub fn as_str(self) -> &'static str {
        match self {
            Exercise::Repair => "repair",
            Exercise::Scratch => "scratch",
        }
    }
}

/// The README of a learner's copy: the problem, the prediction without its answer, the boundary,
/// the fault lab (repair) or the implementation steps (scratch: they state the rule, so a repair
/// copy never gets them) and the transfer challenge, plus what to run. Nothing from the hints,
/// the answer, the diagnosis or the repair (those live in sections this never copies).
pub fn learner_readme(
    stage: &Stage,
    source_file: &str,
    exercise: Exercise,
    lang: Lang,
) -> anyhow::Result<String> {
    let guide = Guide::load(stage, lang)?;
    let problems = guide.structure_problems(lang);
    if !problems.is_empty() {
        bail!(
            "{}/{}: {}",
            stage.id,
            lang.guide_file(),
            problems.join("; ")
        );
    }
    let n = stage.number();
    let other = match lang {
        Lang::En => "[中文](README.zh-CN.md)",
        Lang::ZhCn => "[English](README.md)",
    };
    let mut out = String::new();
    let copy_title = match lang {
        Lang::En => format!("# {} · your copy\n\n{other}\n\n", guide.title),
        Lang::ZhCn => format!("# {} · 你的练习副本\n\n{other}\n\n", guide.title),
    };
    out.push_str(&copy_title);
    let task = match (exercise, lang) {
        (Exercise::Repair, Lang::En) => format!(
            "`{source_file}` holds one deliberate defect; the tests in `tests/` describe correct behaviour."
        ),
        (Exercise::Scratch, Lang::En) => format!(
            "`{source_file}` keeps its types and signatures, but every function body is `todo!()`: \
             build it from the implementation steps below. The same tests judge it."
        ),
        (Exercise::Repair, Lang::ZhCn) => {
            format!("`{source_file}` 里有一处故意埋下的缺陷；`tests/` 里的测试描述了正确行为。")
        }
        (Exercise::Scratch, Lang::ZhCn) => format!(
            "`{source_file}` 保留了类型和函数签名，但每个函数体都是 `todo!()`：请按下面的实现步骤把它写出来。判定它的是同一组测试。"
        ),
    };
    out.push_str(&task);
    out.push_str("\n\n");
    let proof = match (exercise, lang) {
        (Exercise::Repair, Lang::En) => {
            "and on the original faulty code, where it must fail: it has to catch the bug"
        }
        (Exercise::Scratch, Lang::En) => {
            "on the reference solution, where it must pass too, and on a faulty version of this \
             file the course keeps (you never see it), where it must fail: it has to catch a real bug"
        }
        (Exercise::Repair, Lang::ZhCn) => {
            "也会在原来的故障代码上运行它（必须失败）：它得能抓住这个缺陷"
        }
        (Exercise::Scratch, Lang::ZhCn) => {
            "也会在参考实现上运行它（同样必须通过），以及在课程保留的这个文件的一个故障版本上运行它\
             （你看不到它，必须失败）：它得能抓住真实的缺陷"
        }
    };
    let work = match (exercise, lang) {
        (Exercise::Repair, Lang::En) => format!("Work on `{source_file}`"),
        (Exercise::Scratch, Lang::En) => format!("Fill in the bodies in `{source_file}`"),
        (Exercise::Repair, Lang::ZhCn) => format!("修改 `{source_file}`"),
        (Exercise::Scratch, Lang::ZhCn) => format!("写出 `{source_file}` 里的函数体"),
    };
    let steps = match lang {
        Lang::En => format!(
            "1. Commit a prediction first: `cargo xtask predict {n} <A-D>` (it is final; you learn why right away).\n\
             2. {work} until `cargo xtask check {n}` passes, or let `cargo xtask watch` re-check on every save.\n\
             3. Write your transfer test in `tests/transfer.rs` (see *Transfer challenge*). `check` runs it on your code, where it must pass, \
             {proof}. It must call the code: a test that reads its own build (`include_str!`, `env!`, files, the environment) is refused.\n\
             4. Stuck? `cargo xtask hint {n}` gives one hint at a time.\n\n\
             The course's tests judge your code: edits to `tests/stage.rs` or `tests/errors.rs` here are reported and ignored, and `#[ignore]`d tests run anyway.\n\
             The reference solution, the diagnosis and the repair principle are shown once the stage passes.\n"
        ),
        Lang::ZhCn => format!(
            "1. 先提交预测：`cargo xtask predict {n} <A-D>`（提交后不能更改，随即告诉你原因）。\n\
             2. {work}，直到 `cargo xtask check {n}` 通过；也可以用 `cargo xtask watch`，每次保存自动重新检查。\n\
             3. 在 `tests/transfer.rs` 里写你的迁移测试（见“迁移挑战”）。`check` 会在你的代码上运行它（必须通过），\
             {proof}。它必须调用代码：读取自身构建（`include_str!`、`env!`、文件、环境变量）的测试会被拒绝。\n\
             4. 卡住了？`cargo xtask hint {n}` 每次给一条提示。\n\n\
             评判你代码的是课程自己的测试：这里对 `tests/stage.rs` 或 `tests/errors.rs` 的修改会被报告并忽略，标了 `#[ignore]` 的测试照样运行。\n\
             参考答案、诊断过程和修复原则会在本阶段通过之后显示。\n"
        ),
    };
    out.push_str(&steps);
    let mut shown = vec![
        Section::Problem,
        Section::PredictFirst,
        Section::BoundaryDecision,
    ];
    // The steps build the module, so they state the rule the fault breaks: a repair copy would
    // read its fix there. Only a scratch copy, which has no fault to find, gets them.
    match exercise {
        Exercise::Repair => shown.push(Section::FaultLab),
        Exercise::Scratch => shown.push(Section::ImplementationSteps),
    }
    shown.push(Section::TransferChallenge);
    for section in shown {
        let body = guide.section(section, lang)?;
        out.push_str(&format!("\n## {}\n\n{body}\n", section.heading(lang)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_inside_code_fences_do_not_split_sections() {
        let guide = Guide::parse(
            "# Stage 1\n\nintro\n\n## The problem\n\ntext\n```sh\n## not a heading\n```\n## Predict first\nq\n",
        );
        assert_eq!(guide.title, "Stage 1");
        assert_eq!(guide.intro.trim(), "intro");
        let headings: Vec<&str> = guide.sections.iter().map(|(h, _)| h.as_str()).collect();
        assert_eq!(headings, ["The problem", "Predict first"]);
        assert!(guide.sections[0].1.contains("## not a heading"));
        assert_eq!(guide.section(Section::PredictFirst, Lang::En).unwrap(), "q");
        assert!(
            guide
                .section(Section::Hints, Lang::En)
                .unwrap_err()
                .to_string()
                .contains("has no `## Hints` section")
        );
    }

    /// A learner copy's README never sends the learner to an answer: not to `cargo xtask fault`
    /// (the diagnosis), not to the full guide; a scratch copy never asks about code it never saw.
    #[test]
    fn learner_readmes_point_to_no_answer() {
        let course = crate::course::Course::open(&crate::args::Args::default()).unwrap();
        for stage in &course.stages {
            for lang in [Lang::En, Lang::ZhCn] {
                for exercise in [Exercise::Repair, Exercise::Scratch] {
                    let readme = learner_readme(stage, "src/x.rs", exercise, lang).unwrap();
                    let at = format!("{} {lang:?} {exercise:?}", stage.id);
                    assert!(!readme.contains("xtask fault"), "{at}:\n{readme}");
                    assert!(!readme.contains("After it passes"), "{at}");
                    assert!(!readme.contains("通过之后\n"), "{at}");
                    let steps = Section::ImplementationSteps.heading(lang);
                    assert_eq!(
                        readme.contains(&format!("## {steps}")),
                        exercise == Exercise::Scratch,
                        "{at}: the implementation steps state the fix, so a repair copy has none"
                    );
                    if exercise == Exercise::Scratch {
                        assert!(!readme.contains("original faulty code"), "{at}:\n{readme}");
                        assert!(!readme.contains("原来的故障代码"), "{at}:\n{readme}");
                    }
                }
            }
        }
    }

    /// The full guides hold the answers under *After it passes*; that section opens with a
    /// spoiler guard, so a learner reading the guide before the pass is warned first.
    #[test]
    fn every_answer_section_opens_with_a_spoiler_guard() {
        let course = crate::course::Course::open(&crate::args::Args::default()).unwrap();
        for stage in &course.stages {
            for (lang, guard) in [
                (Lang::En, "> **Spoilers below:**"),
                (Lang::ZhCn, "> **以下是剧透：**"),
            ] {
                let guide = Guide::load(stage, lang).unwrap();
                let after = guide.section(Section::AfterItPasses, lang).unwrap();
                assert!(
                    after.trim_start().starts_with(guard),
                    "{} {lang:?}: *After it passes* must open with {guard:?}",
                    stage.id
                );
            }
        }
    }

    /// The seven real guides: the one set of sections, a link to the other language, options
    /// labelled A-D, and an answer (under "After it passes") that matches stage.toml.
    #[test]
    fn every_stage_guide_has_the_sections_links_and_labels() {
        let course = crate::course::Course::open(&crate::args::Args::default()).unwrap();
        let mut problems = Vec::new();
        for stage in &course.stages {
            let meta = crate::course::load_meta(stage).unwrap();
            for (lang, answer) in [
                (Lang::En, format!("**Answer: {}.**", meta.prediction.answer)),
                (
                    Lang::ZhCn,
                    format!("**答案是 {}。**", meta.prediction.answer),
                ),
            ] {
                let at = format!("{}/{}", stage.id, lang.guide_file());
                let guide = Guide::load(stage, lang).unwrap();
                problems.extend(
                    guide
                        .structure_problems(lang)
                        .into_iter()
                        .map(|p| format!("{at}: {p}")),
                );
                let predict = guide
                    .section(Section::PredictFirst, lang)
                    .unwrap_or_default();
                let labels: Vec<&str> = predict
                    .lines()
                    .filter_map(|l| l.strip_prefix("- **"))
                    .filter_map(|l| l.split_once(".**").map(|(label, _)| label))
                    .collect();
                if labels != ["A", "B", "C", "D"] {
                    problems.push(format!(
                        "{at}: prediction options are labelled {labels:?}, not A-D"
                    ));
                }
                if predict.contains("**Answer") || predict.contains("**答案") {
                    problems.push(format!("{at}: the answer is printed under the question"));
                }
                let after = guide
                    .section(Section::AfterItPasses, lang)
                    .unwrap_or_default();
                if !after.contains(&answer) {
                    problems.push(format!(
                        "{at}: \"After it passes\" lacks `{answer}` (stage.toml)"
                    ));
                }
            }
        }
        assert!(
            problems.is_empty(),
            "guide problems:\n{}",
            problems.join("\n")
        );
    }

    /// Each guide's *Place in the chapter* holds the header fields (experiment id and evidence folder from
    /// stage.toml's `experiment_id`) and repeats the stage's line of the chapter's capability chain and
    /// navigation exactly as docs/chapter/chapter.json (the one source the course page reads) states it.
    #[test]
    fn every_guide_places_its_stage_in_the_chapter_as_the_chapter_file_says() {
        let chapter: serde_json::Value =
            serde_json::from_str(include_str!("../../../docs/chapter/chapter.json")).unwrap();
        let chain = chapter["frame"]["chain"].as_array().unwrap();
        let course = crate::course::Course::open(&crate::args::Args::default()).unwrap();
        assert_eq!(
            chain.len(),
            course.stages.len(),
            "one chain entry per stage"
        );
        let mut problems = Vec::new();
        for (stage, entry) in course.stages.iter().zip(chain) {
            let meta = crate::course::load_meta(stage).unwrap();
            assert_eq!(
                entry["id"],
                stage.id.as_str(),
                "the chain follows the stages in order"
            );
            for (lang, key) in [(Lang::En, "en"), (Lang::ZhCn, "zh")] {
                let guide = Guide::load(stage, lang).unwrap();
                let place = guide
                    .section(Section::PlaceInTheChapter, lang)
                    .unwrap_or_default();
                let mut wanted = vec![
                    format!("`{}`", meta.experiment_id),
                    format!("`evidence/single-agent-loop/{}/`", stage.id),
                ];
                for field in [
                    "capability",
                    "layer",
                    "depends_on",
                    "provides",
                    "constrained_by",
                ] {
                    wanted.push(entry[key][field].as_str().unwrap().to_owned());
                }
                for text in wanted {
                    if !place.contains(&text) {
                        problems.push(format!(
                            "{} {lang:?}: *Place in the chapter* lacks {text:?}",
                            stage.id
                        ));
                    }
                }
                for section in [Section::WhyThisWay, Section::GuidedExercise] {
                    if guide.section(section, lang).unwrap_or_default().len() < 200 {
                        problems.push(format!(
                            "{} {lang:?}: {:?} is missing or a stub",
                            stage.id, section
                        ));
                    }
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn the_section_enum_and_the_schema_list_agree() {
        let keys: Vec<&str> = sections().iter().map(|s| s.key.as_str()).collect();
        let ours: Vec<&str> = Section::ALL.iter().map(|s| s.key()).collect();
        assert_eq!(keys, ours);
    }

    #[test]
    fn structure_problems_name_the_found_and_wanted_headings() {
        let guide = Guide::parse("# T\n## The problem\n");
        let problems = guide.structure_problems(Lang::En);
        assert_eq!(problems.len(), 2);
        assert!(
            problems[1].contains("does not link the other language"),
            "{problems:?}"
        );
        assert!(problems[0].contains("[\"The problem\"]"), "{problems:?}");
        assert!(problems[0].contains("Mastery evidence"), "{problems:?}");
    }
}
