//! The plot tool: renders a bar chart (optional average line) to a PNG with
//! plotters' bitmap backend and a bundled DejaVu Sans font, then stores it
//! through the write-once [`ArtifactStore`]. Bars come from `labels` and `values`, or from one observed
//! table column by reference (`column: "[Wait]"`), resolved like the calculator's references: every row of
//! the column, however many (a long column's chart labels every k-th bar and says so).
//!
//! This is the only module that talks to `plotters`. It works headless (no
//! system fonts, no display). The PNG stays on disk; the result carries only
//! the chart spec and the artifact record.

use std::path::Path;
use std::sync::OnceLock;

use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::{Map, Value, json};

use super::{ArtifactStore, ToolError, ToolOutput, number_value};

pub const TOOL_NAME: &str = "plot";
/// Bars a chart may list in `labels`/`values` (each one a token cost to the model that writes it).
pub const MAX_POINTS: usize = 60;
/// Bars a chart by column reference may have: every row a knowledge table can hold.
pub const MAX_COLUMN_BARS: usize = super::knowledge::MAX_TABLE_ROWS;
/// Past this many bars, only every k-th bar is labelled (the rest would overlap), and the chart says so.
const LABELLED_BARS: usize = 40;
/// The registry's default for `y_label`; applied here too so the Rust API and
/// the JSON path produce the same spec.
pub const DEFAULT_Y_LABEL: &str = "value";
pub const WIDTH: u32 = 800;
pub const HEIGHT: u32 = 480;
pub const MEDIA_TYPE: &str = "image/png";

/// DejaVu Sans 2.37 (Bitstream Vera license, see assets/DejaVuSans.LICENSE).
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
const FONT_FAMILY: &str = "sans-serif";

/// A plot request as the tool sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotRequest {
    pub labels: Vec<String>,
    pub values: Vec<f64>,
    pub title: String,
    pub average: Option<f64>,
    pub y_label: Option<String>,
    /// Where the bars came from when given by reference: the column and the rows it has no value for.
    pub column: Option<ChartColumn>,
}

/// The observed column a chart by reference draws.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartColumn {
    /// The reference as resolved (`[Clinic | Wait]`).
    pub reference: String,
    /// Rows of the column without a value (not drawn).
    pub missing: Vec<String>,
}

impl PlotRequest {
    pub(crate) fn from_arguments(
        arguments: &Map<String, Value>,
        columns: &dyn super::ColumnSource,
    ) -> Result<Self, ToolError> {
        let bad = |field: &str, expected: &str| {
            ToolError::permanent("invalid_arguments", format!("{field}: expected {expected}"))
        };
        let (labels, values, column) = match arguments.get("column") {
            Some(reference) => {
                let text = reference
                    .as_str()
                    .ok_or_else(|| bad("column", "a column reference such as [Wait]"))?;
                let parsed = super::calculator::ColumnRef::parse(text).map_err(|e| {
                    ToolError::permanent("invalid_arguments", format!("column: {e}"))
                })?;
                let resolved = columns
                    .column(&parsed)
                    .map_err(|e| ToolError::permanent(e.code(), format!("column: {e}")))?;
                let reference =
                    super::calculator::ColumnRef::qualified(&resolved.rows_label, &resolved.name);
                let column = ChartColumn {
                    reference: reference.to_string(),
                    missing: resolved.missing,
                };
                (resolved.labels, resolved.values, Some(column))
            }
            None => {
                let labels = arguments
                    .get("labels")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("labels", "an array of strings (or a column reference)"))?
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad("labels", "an array of strings"))?;
                let values = arguments
                    .get("values")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("values", "an array of numbers"))?
                    .iter()
                    .map(Value::as_f64)
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad("values", "an array of numbers"))?;
                (labels, values, None)
            }
        };
        let title = super::string_argument(arguments, "title")?.to_owned();
        let average = match arguments.get("average") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_f64().ok_or_else(|| bad("average", "a number"))?),
        };
        let y_label = match arguments.get("y_label") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_str()
                    .ok_or_else(|| bad("y_label", "a string"))?
                    .to_owned(),
            ),
        };
        Ok(Self {
            labels,
            values,
            title,
            average,
            y_label,
            column,
        })
    }

    /// The most bars this request may have: a listed chart's cap, or every row of a referenced column.
    fn max_bars(&self) -> usize {
        if self.column.is_some() {
            MAX_COLUMN_BARS
        } else {
            MAX_POINTS
        }
    }

    /// Every k-th bar is labelled (1 = all).
    fn label_every(&self) -> usize {
        self.labels.len().div_ceil(LABELLED_BARS).max(1)
    }

    /// Checks what the chart depends on; the Rust API can carry NaN/∞ even
    /// though JSON cannot, so this is not redundant with the registry.
    pub fn validate(&self) -> Result<(), ToolError> {
        let (n_labels, n_values) = (self.labels.len(), self.values.len());
        if n_labels == 0 || n_values == 0 {
            return Err(ToolError::permanent(
                "plot_empty",
                "labels and values need at least one entry each",
            ));
        }
        let max = self.max_bars();
        if n_labels > max || n_values > max {
            let hint = if self.column.is_some() {
                ""
            } else {
                "; chart a long column by reference, e.g. column: \"[Name]\""
            };
            return Err(ToolError::permanent(
                "plot_too_many_points",
                format!("at most {max} bars, got {n_labels} labels and {n_values} values{hint}"),
            ));
        }
        if n_labels != n_values {
            return Err(ToolError::permanent(
                "plot_length_mismatch",
                format!("labels has {n_labels} entries but values has {n_values}"),
            ));
        }
        if let Some((i, v)) = self.values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(ToolError::permanent(
                "plot_non_finite",
                format!("values[{i}] is {v}, not a finite number"),
            ));
        }
        if let Some(avg) = self.average.filter(|a| !a.is_finite()) {
            return Err(ToolError::permanent(
                "plot_non_finite",
                format!("average is {avg}, not a finite number"),
            ));
        }
        if let Some(i) = self.labels.iter().position(|l| l.trim().is_empty()) {
            return Err(ToolError::permanent(
                "plot_empty_label",
                format!("labels[{i}] is empty"),
            ));
        }
        if self.title.trim().is_empty() {
            return Err(ToolError::permanent("plot_empty_title", "title is empty"));
        }
        Ok(())
    }

    fn y_label(&self) -> &str {
        self.y_label.as_deref().unwrap_or(DEFAULT_Y_LABEL)
    }

    /// The normalised chart description (what the repeated-result guard hashes).
    pub fn spec(&self) -> Value {
        let mut spec = json!({
            "kind": "bar",
            "labels": self.labels,
            "values": self.values.iter().map(|v| number_value(*v)).collect::<Vec<_>>(),
            "average": self.average.map(number_value),
            "title": self.title,
            "y_label": self.y_label(),
        });
        if let Some(column) = &self.column {
            spec["column"] = json!(column.reference);
            if !column.missing.is_empty() {
                spec["missing"] = json!(column.missing);
            }
        }
        if self.label_every() > 1 {
            spec["labelled_every"] = json!(self.label_every());
        }
        spec
    }

    /// What the chart leaves out or thins, said in words (empty when it draws and labels everything).
    fn caveats(&self) -> String {
        let mut parts = Vec::new();
        if let Some(column) = self.column.as_ref().filter(|c| !c.missing.is_empty()) {
            parts.push(format!(
                "no bar for {} (no value)",
                column.missing.join(", ")
            ));
        }
        if self.label_every() > 1 {
            parts.push(format!("every {}th bar labelled", self.label_every()));
        }
        parts.join("; ")
    }
}

/// Validates, renders (once per distinct spec) and returns spec + artifact record.
pub fn run(
    request: &PlotRequest,
    artifact_dir: &Path,
    store: &ArtifactStore,
) -> Result<ToolOutput, ToolError> {
    request.validate()?;
    let spec = request.spec();
    let (record, replayed) =
        store.write_once(artifact_dir, TOOL_NAME, &spec, MEDIA_TYPE, "png", || {
            render_png(request)
        })?;
    let caveats = request.caveats();
    let summary = format!(
        "bar chart {:?} with {} bars{}{}{} → {} ({} bytes{})",
        request.title,
        request.labels.len(),
        request
            .column
            .as_ref()
            .map(|c| format!(" of {}", c.reference))
            .unwrap_or_default(),
        request
            .average
            .map(|a| format!(" and average line at {}", number_value(a)))
            .unwrap_or_default(),
        if caveats.is_empty() {
            String::new()
        } else {
            format!(" ({caveats})")
        },
        record.id,
        record.bytes,
        if replayed { ", reused" } else { "" },
    );
    Ok(ToolOutput {
        result: json!({ "spec": spec, "artifact": record, "summary": summary }),
        summary,
        citations: Vec::new(),
        artifacts: vec![record],
        digest_basis: spec,
    })
}

fn ensure_font() -> Result<(), ToolError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(ToolError::permanent(
            "plot_render_failed",
            "the bundled font could not be loaded",
        ))
    }
}

/// Renders the chart to PNG bytes (RGB, [`WIDTH`]×[`HEIGHT`]). Deterministic for a given request.
pub fn render_png(request: &PlotRequest) -> Result<Vec<u8>, ToolError> {
    request.validate()?;
    ensure_font()?;
    let mut pixels = vec![255u8; (WIDTH * HEIGHT * 3) as usize];
    draw_chart(request, &mut pixels).map_err(|e| {
        ToolError::permanent(
            "plot_render_failed",
            format!("drawing the chart failed: {e}"),
        )
    })?;
    encode_png(&pixels)
}

fn draw_chart(request: &PlotRequest, pixels: &mut [u8]) -> Result<(), Box<dyn std::error::Error>> {
    let root = BitMapBackend::with_buffer(pixels, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;

    let n = request.values.len();
    let (y_min, y_max) = y_range(&request.values, request.average);
    let mut chart = ChartBuilder::on(&root)
        .caption(&request.title, (FONT_FAMILY, 24))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(0f64..n as f64, y_min..y_max)?;

    chart
        .configure_mesh()
        .disable_x_mesh()
        .max_light_lines(0)
        .x_labels(0)
        .y_desc(request.y_label())
        .y_label_formatter(&|v| format_tick(*v))
        .label_style((FONT_FAMILY, 14))
        .axis_desc_style((FONT_FAMILY, 15))
        .draw()?;

    let bar_color = RGBColor(66, 114, 196);
    chart.draw_series(request.values.iter().enumerate().map(|(i, v)| {
        let x = i as f64;
        Rectangle::new(
            [(x + 0.15, 0.0f64.clamp(y_min, y_max)), (x + 0.85, *v)],
            bar_color.filled(),
        )
    }))?;

    // Value above each bar and its label below the axis, centred on the bar.
    let small = TextStyle::from((FONT_FAMILY, 13).into_font()).color(&BLACK);
    let plot_bottom = chart.backend_coord(&(0.0, y_min)).1;
    // Crowded axes stagger labels over two rows; each label gets the width of
    // `rows` bars (about 7 px per character at this size) and is clipped to it.
    let bar_px = (chart.backend_coord(&(n as f64, y_min)).0 - chart.backend_coord(&(0.0, y_min)).0)
        / n as i32;
    let rows = if n > 8 { 2 } else { 1 };
    let every = request.label_every();
    let max_label_chars = ((bar_px * rows * every as i32) / 7).max(3) as usize;
    for (i, (label, value)) in request.labels.iter().zip(&request.values).enumerate() {
        // A long column: only every k-th bar gets its value and label (the chart's note says so).
        if i % every != 0 {
            continue;
        }
        let center = i as f64 + 0.5;
        let (bx, by) = chart.backend_coord(&(center, *value));
        let above = if *value >= 0.0 {
            VPos::Bottom
        } else {
            VPos::Top
        };
        let offset = if *value >= 0.0 { -4 } else { 4 };
        root.draw(&Text::new(
            format_tick(*value),
            (bx, by + offset),
            small.pos(Pos::new(HPos::Center, above)),
        ))?;
        let row_offset = 8 + ((i / every) as i32 % rows) * 16;
        let label = shorten(label, max_label_chars);
        root.draw(&Text::new(
            label,
            (bx, plot_bottom + row_offset),
            small.pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }

    let caveats = request.caveats();
    if !caveats.is_empty() {
        root.draw(&Text::new(
            caveats,
            (16, HEIGHT as i32 - 14),
            small.pos(Pos::new(HPos::Left, VPos::Bottom)),
        ))?;
    }
    if let Some(avg) = request.average {
        let line_color = RGBColor(214, 39, 40);
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(0.0, avg), (n as f64, avg)],
                line_color.stroke_width(2),
            )))?
            .label(format!("average = {}", format_tick(avg)))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], line_color.stroke_width(2))
            });
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FONT_FAMILY, 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// Axis range covering zero, every value and the average, with headroom for the value labels.
fn y_range(values: &[f64], average: Option<f64>) -> (f64, f64) {
    let all = values.iter().copied().chain(average);
    let (lo, hi) = all.fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let span = (hi - lo).max(1.0);
    let lo = if lo < 0.0 { lo - span * 0.12 } else { 0.0 };
    // 22% headroom keeps the tallest value label clear of the legend box.
    (lo, hi + span * 0.22)
}

fn format_tick(v: f64) -> String {
    match number_value((v * 100.0).round() / 100.0) {
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

fn shorten(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max_chars - 1).collect();
    out.push('…');
    out
}

/// A horizontal grouped bar chart (one group per label, one bar per series, values 0–100) as PNG bytes —
/// for reports such as the evaluation's success per task and mode, not for the plot tool. The height
/// grows with the number of groups; the series get a legend.
pub fn render_grouped_png(
    title: &str,
    labels: &[String],
    series: &[(String, Vec<f64>)],
    x_label: &str,
) -> Result<Vec<u8>, ToolError> {
    let failed = |message: String| ToolError::permanent("plot_render_failed", message);
    if labels.is_empty() || series.is_empty() || series.iter().any(|(_, v)| v.len() != labels.len())
    {
        return Err(failed(
            "a grouped chart needs labels and series of the same length".into(),
        ));
    }
    if series.iter().flat_map(|(_, v)| v).any(|v| !v.is_finite()) {
        return Err(failed("a grouped chart needs finite values".into()));
    }
    ensure_font()?;
    let width = 1000u32;
    let row_px = 10 + 14 * series.len() as u32;
    let height = 120 + row_px * labels.len() as u32;
    let mut pixels = vec![255u8; (width * height * 3) as usize];
    draw_grouped(title, labels, series, x_label, (width, height), &mut pixels)
        .map_err(|e| failed(format!("drawing the chart failed: {e}")))?;
    encode_rgb_png(&pixels, width, height)
}

fn draw_grouped(
    title: &str,
    labels: &[String],
    series: &[(String, Vec<f64>)],
    x_label: &str,
    size: (u32, u32),
    pixels: &mut [u8],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = BitMapBackend::with_buffer(pixels, size).into_drawing_area();
    root.fill(&WHITE)?;
    let n = labels.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT_FAMILY, 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(260)
        .build_cartesian_2d(0f64..100f64, 0f64..n as f64)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc(x_label)
        .label_style((FONT_FAMILY, 13))
        .axis_desc_style((FONT_FAMILY, 14))
        .draw()?;
    let palette = [
        RGBColor(66, 114, 196),
        RGBColor(237, 125, 49),
        RGBColor(112, 173, 71),
        RGBColor(165, 105, 189),
    ];
    let bar = 0.8 / series.len() as f64;
    for (s, (name, values)) in series.iter().enumerate() {
        let color = palette[s % palette.len()];
        chart
            .draw_series(values.iter().enumerate().map(|(i, v)| {
                // Group i is drawn top-down: label 0 at the top.
                let top = (n - i) as f64 - 0.1 - bar * s as f64;
                Rectangle::new(
                    [(0.0, top - bar), (v.clamp(0.0, 100.0), top)],
                    color.filled(),
                )
            }))?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    let small = TextStyle::from((FONT_FAMILY, 13).into_font()).color(&BLACK);
    for (i, label) in labels.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(0.0, (n - i) as f64 - 0.5));
        root.draw(&Text::new(
            shorten(label, 34),
            (x - 8, y),
            small.pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .label_font((FONT_FAMILY, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

fn encode_png(rgb: &[u8]) -> Result<Vec<u8>, ToolError> {
    encode_rgb_png(rgb, WIDTH, HEIGHT)
}

fn encode_rgb_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, ToolError> {
    let failed = |e: png::EncodingError| {
        ToolError::permanent("plot_render_failed", format!("PNG encoding failed: {e}"))
    };
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, width, height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(failed)?;
        writer.write_image_data(rgb).map_err(failed)?;
        writer.finish().map_err(failed)?;
    }
    Ok(bytes)
}
