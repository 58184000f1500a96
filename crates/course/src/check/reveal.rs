//! After a pass: the reference repair revealed (the diff of the faulty file against the solution, the
//! guide's repair section) and the next stage named.

use std::fs;
use std::io::Write;

use crate::course::{Contract, Course, Lang, Stage};
use crate::guide::{Guide, Section};
use crate::judge;
use crate::learner::{self, copy_dir};
use crate::progress::Progress;

/// What a pass earns: the reference repair as a diff, the repair principle, the transfer and design
/// questions, and the next stage.
pub fn reveal(
    course: &Course,
    stage: &Stage,
    contract: &Contract,
    lang: Lang,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let n = stage.number();
    let fault = fs::read_to_string(stage.dir.join(&contract.fault_file))?;
    let solution = fs::read_to_string(stage.dir.join(&contract.faulty_source_path))?;
    let reference = format!("stages/{}/{}", stage.id, contract.faulty_source_path);
    let faulty = format!("stages/{}/{}", stage.id, contract.fault_file);
    let diff = similar::TextDiff::from_lines(&fault, &solution)
        .unified_diff()
        .context_radius(2)
        .header(&faulty, &reference)
        .to_string();
    let mine = fs::read_to_string(copy_dir(course, stage).join(&contract.faulty_source_path))
        .unwrap_or_default();
    let guide = Guide::load(stage, lang)?;
    let design = guide
        .section(Section::DesignQuestion, lang)
        .unwrap_or_default();
    let after = Section::AfterItPasses.heading(lang);
    let next = next_stage(course, stage)?;
    match lang {
        Lang::En => {
            writeln!(out, "\nStage {n} passes.")?;
            writeln!(out, "\nThe reference repair ({faulty} → {reference}):")?;
        }
        Lang::ZhCn => {
            writeln!(out, "\n阶段 {n} 通过。")?;
            writeln!(out, "\n参考修复（{faulty} → {reference}）：")?;
        }
    }
    for line in diff.lines() {
        writeln!(out, "  {line}")?;
    }
    let same = judge::same_code(&mine, &solution);
    let mine_path = judge::from_cwd(&copy_dir(course, stage).join(&contract.faulty_source_path));
    match lang {
        Lang::En => {
            if same {
                writeln!(
                    out,
                    "Your file is now the reference's code (formatting and comments aside)."
                )?;
            } else {
                writeln!(
                    out,
                    "Your version differs from the reference; compare them: diff {mine_path} {reference}"
                )?;
            }
            writeln!(out, "\nRepair principle: {}", contract.repair)?;
            writeln!(
                out,
                "\nYour transfer test catches the original fault. Compare it with the reference: \
                 stages/{}/tests/transfer.rs",
                stage.id
            )?;
            writeln!(out, "\nDesign question: {design}")?;
            writeln!(
                out,
                "(a strong answer, the diagnosis and the prediction's explanation: stages/{}/README.md, \"{after}\")",
                stage.id
            )?;
        }
        Lang::ZhCn => {
            if same {
                writeln!(out, "你的文件现在与参考实现的代码一致（格式和注释不计）。")?;
            } else {
                writeln!(
                    out,
                    "你的版本与参考实现不同，可以对比：diff {mine_path} {reference}"
                )?;
            }
            let principle = subsection(
                guide
                    .section(Section::AfterItPasses, lang)
                    .unwrap_or_default(),
                "修复原则",
            )
            .unwrap_or_else(|| contract.repair.clone());
            writeln!(out, "\n修复原则：{principle}")?;
            writeln!(
                out,
                "\n你的迁移测试能抓住原来的故障。可以和参考版本对比：stages/{}/tests/transfer.rs",
                stage.id
            )?;
            writeln!(out, "\n设计思考题：{design}")?;
            writeln!(
                out,
                "（参考答案、诊断过程和预测题解析见 stages/{}/README.zh-CN.md 的“{after}”）",
                stage.id
            )?;
        }
    }
    write_next(out, course, next.as_ref(), lang)
}

/// The last line of a reveal: the command for the next stage, or that every stage is passed.
fn write_next(
    out: &mut dyn Write,
    course: &Course,
    next: Option<&Stage>,
    lang: Lang,
) -> anyhow::Result<()> {
    match lang {
        Lang::En => match next {
            Some(next) => writeln!(
                out,
                "\nNext: cargo xtask {} {}",
                next_verb(course, next),
                next.number()
            )?,
            None => writeln!(
                out,
                "\nEvery stage is passed now. `cargo xtask progress` shows the course."
            )?,
        },
        Lang::ZhCn => match next {
            Some(next) => writeln!(
                out,
                "\n下一步：cargo xtask {} {}",
                next_verb(course, next),
                next.number()
            )?,
            None => writeln!(
                out,
                "\n所有阶段都已通过。`cargo xtask progress` 查看全部进度。"
            )?,
        },
    }
    Ok(())
}

/// The next stage to work on after `stage`: the first one after it not yet passed, else the first
/// one before it not yet passed; `None` when every stage is passed.
pub fn next_stage(course: &Course, stage: &Stage) -> anyhow::Result<Option<Stage>> {
    let progress = Progress::open(course)?;
    let at = course
        .stages
        .iter()
        .position(|s| s.id == stage.id)
        .unwrap_or(0);
    let after = course.stages.iter().skip(at + 1);
    let before = course.stages.iter().take(at);
    Ok(after
        .chain(before)
        .find(|s| s.id != stage.id && !progress.passed(s))
        .cloned())
}

/// `learn` for a stage without a copy yet, `check` for one already started.
pub(super) fn next_verb(course: &Course, stage: &Stage) -> &'static str {
    if learner::has_copy(course, stage) {
        "check"
    } else {
        "learn"
    }
}

/// The body of `### heading` inside a guide section, trimmed (the Chinese guide's own words for
/// what failure.json holds in English).
pub(super) fn subsection(section: &str, heading: &str) -> Option<String> {
    let mut lines = section.lines();
    lines.find(|l| l.trim() == format!("### {heading}"))?;
    let body: Vec<&str> = lines.take_while(|l| !l.starts_with("### ")).collect();
    let text = body.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}
