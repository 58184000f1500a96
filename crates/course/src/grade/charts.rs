//! The class's charts as PNG files (plotters' bitmap backend, the plot tool's bundled DejaVu Sans font, so no
//! system fonts are needed): pass rate per stage, the tests that fail most, and the median time to a first
//! pass per stage where learners' progress logs record it. Each chart says how many submissions it rests on.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::Context;
use plotters::prelude::*;
use plotters::style::FontStyle;

use super::report::Summary;

static FONT: &[u8] = include_bytes!("../../../tools/assets/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";
const WIDTH: u32 = 900;
const HEIGHT: u32 = 480;

fn ensure_font() -> anyhow::Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED
        .get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    anyhow::ensure!(ok, "the bundled chart font could not be loaded");
    Ok(())
}

/// One horizontal-label bar chart: `bars` (label, value), values from 0 to `max`.
fn bars(
    path: &Path,
    title: &str,
    y_label: &str,
    bars: &[(String, f64)],
    max: f64,
) -> anyhow::Result<()> {
    ensure_font()?;
    let mut pixels = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    draw_bars(&mut pixels, title, y_label, bars, max)?;
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, WIDTH, HEIGHT);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.write_header()?.write_image_data(&pixels)?;
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

fn draw_bars(
    pixels: &mut [u8],
    title: &str,
    y_label: &str,
    bars: &[(String, f64)],
    max: f64,
) -> anyhow::Result<()> {
    let root = BitMapBackend::with_buffer(pixels, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
    let n = bars.len().max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FAMILY, 20))
        .margin(14)
        .x_label_area_size(70)
        .y_label_area_size(60)
        .build_cartesian_2d((0..n - 1).into_segmented(), 0.0..max.max(1e-9) * 1.05)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let labels: Vec<String> = bars.iter().map(|(l, _)| l.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(y_label)
        // Counts and minutes read as whole numbers once the axis reaches a few of them.
        .y_label_formatter(&|v| {
            if max >= 5.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.1}")
            }
        })
        .x_labels(n)
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .label_style((FAMILY, 12))
        .axis_desc_style((FAMILY, 14))
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
            let mut bar = Rectangle::new(
                [
                    (SegmentValue::Exact(i), 0.0),
                    (SegmentValue::Exact(i + 1), *v),
                ],
                RGBColor(54, 110, 180).filled(),
            );
            bar.set_margin(0, 0, 8, 8);
            bar
        }))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(())
}

/// Writes the three charts into `out`; returns their file names.
pub fn draw(summary: &Summary, out: &Path) -> anyhow::Result<Vec<String>> {
    std::fs::create_dir_all(out)?;
    let short = |id: &str| id.get(..2).unwrap_or(id).to_owned();
    let submitted: u32 = summary.per_stage.iter().map(|s| s.submitted).sum();
    let rates: Vec<(String, f64)> = summary
        .per_stage
        .iter()
        .map(|s| (short(&s.stage_id), s.pass_rate.unwrap_or(0.0) * 100.0))
        .collect();
    bars(
        &out.join("pass_rate.png"),
        &format!("Pass rate per stage ({submitted} submissions)"),
        "% passed",
        &rates,
        100.0,
    )?;
    let failing: Vec<(String, f64)> = summary
        .failing_tests
        .iter()
        .take(8)
        .map(|f| {
            let name = f.test.rsplit("::").next().unwrap_or(&f.test);
            let name: String = name.chars().take(22).collect();
            (
                format!("{} {name}", short(&f.stage_id)),
                f64::from(f.learners),
            )
        })
        .collect();
    let most = failing.iter().map(|(_, v)| *v).fold(1.0, f64::max);
    bars(
        &out.join("failing_tests.png"),
        "Tests that fail most (learners failing each)",
        "learners",
        &failing,
        most,
    )?;
    let times: Vec<(String, f64)> = summary
        .per_stage
        .iter()
        .map(|s| {
            (
                format!("{} (n={})", short(&s.stage_id), s.first_pass_times),
                s.median_minutes_to_first_pass.unwrap_or(0.0),
            )
        })
        .collect();
    let longest = times.iter().map(|(_, v)| *v).fold(1.0, f64::max);
    bars(
        &out.join("time_to_first_pass.png"),
        "Median minutes to a first pass (learners' own progress logs)",
        "minutes",
        &times,
        longest,
    )?;
    Ok(vec![
        "pass_rate.png".into(),
        "failing_tests.png".into(),
        "time_to_first_pass.png".into(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::report::{FailingTest, StageSummary};

    #[test]
    fn three_real_pngs_for_one_stage_or_seven() {
        for stages in [1, 7] {
            let summary = Summary {
                per_stage: (1..=stages)
                    .map(|k| StageSummary {
                        stage_id: format!("{k:02}-x"),
                        submitted: 10,
                        passed: k as u32,
                        refused: 0,
                        pass_rate: Some(k as f64 / 10.0),
                        median_minutes_to_first_pass: (k % 2 == 1).then_some(k as f64 * 7.5),
                        first_pass_times: k as u32,
                    })
                    .collect(),
                failing_tests: vec![FailingTest {
                    stage_id: "01-x".into(),
                    test: "stage::a_long_test_name_that_is_cut".into(),
                    learners: 6,
                }],
            };
            let dir = tempfile::tempdir().unwrap();
            let names = draw(&summary, dir.path()).unwrap();
            assert_eq!(names.len(), 3);
            for name in names {
                let png = std::fs::read(dir.path().join(&name)).unwrap();
                assert!(
                    png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 2000,
                    "{name}"
                );
            }
        }
    }
}
