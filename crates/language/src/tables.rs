//! Table vocabulary as data (`tables.json`, per language): the row labels that mark a summary row
//! (`Total`, `Average`, `合计`, …) by kind, the cell texts that mark a missing value (`n/a`, `—`, `暂无`, …),
//! and what marks a table laid out one row per measure: label headers (`Metric`, `指标`) and period names
//! (`Jan`, `Q3`, `3月`) as column headers.
//!
//! Matching is whole-text and case-insensitive: a bold `**Sum**` and `Sum:` are summary labels, `Total Care
//! Clinic` is not. The file is parsed once; a malformed file is a build-time bug caught by the unit tests.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

/// The vocabulary file, one source of truth for table words.
pub const TABLES_JSON: &str = include_str!("tables.json");

/// What a summary row states about the rows above or below it; in JSON `sum`, `mean` or `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SummaryKind {
    /// `Total`, `Sum`, `合计`: the column's sum as the document states it.
    Sum,
    /// `Average`, `Mean`, `平均`: the column's mean as the document states it.
    Mean,
    /// `All`, `Overall`, `全部`: a whole-table figure of unstated kind.
    Other,
}

impl SummaryKind {
    /// `sum`, `mean`, `other` (the JSON spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sum => "sum",
            Self::Mean => "mean",
            Self::Other => "other",
        }
    }
}

/// Words per language code (`en`, `zh`).
type PerLanguage = BTreeMap<String, Vec<String>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SummaryWords {
    sum: PerLanguage,
    mean: PerLanguage,
    other: PerLanguage,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Vocabulary {
    summary_rows: SummaryWords,
    missing_cells: PerLanguage,
    metric_headers: PerLanguage,
    /// Period kind (its label column's name, `Month`) → the header cells that name one such period.
    periods: BTreeMap<String, PerLanguage>,
    /// The label column's name for headers that are years (`2023`, `2024`).
    year_label: String,
}

/// The vocabulary, lower-cased, read once.
struct Words {
    summary: Vec<(String, SummaryKind)>,
    missing: Vec<String>,
    metric_headers: Vec<String>,
    periods: Vec<(String, String)>,
    year_label: String,
}

static WORDS: LazyLock<Words> = LazyLock::new(|| {
    let vocabulary: Vocabulary = serde_json::from_str(TABLES_JSON)
        .expect("language/tables.json is valid (checked by its unit tests)");
    let flat = |words: &PerLanguage| -> Vec<String> {
        words
            .values()
            .flatten()
            .map(|w| w.trim().to_lowercase())
            .filter(|w| !w.is_empty())
            .collect()
    };
    let mut summary = Vec::new();
    for (words, kind) in [
        (&vocabulary.summary_rows.sum, SummaryKind::Sum),
        (&vocabulary.summary_rows.mean, SummaryKind::Mean),
        (&vocabulary.summary_rows.other, SummaryKind::Other),
    ] {
        summary.extend(flat(words).into_iter().map(|w| (w, kind)));
    }
    let periods = vocabulary
        .periods
        .iter()
        .flat_map(|(kind, words)| flat(words).into_iter().map(|w| (w, kind.clone())))
        .collect();
    Words {
        summary,
        missing: flat(&vocabulary.missing_cells),
        metric_headers: flat(&vocabulary.metric_headers),
        periods,
        year_label: vocabulary.year_label,
    }
});

/// The label without emphasis markers, surrounding whitespace or one trailing colon, lower-cased.
fn normalized(label: &str) -> String {
    let text = label.trim().trim_matches(|c| matches!(c, '*' | '_')).trim();
    let text = text.strip_suffix([':', '：']).unwrap_or(text);
    text.trim()
        .trim_matches(|c| matches!(c, '*' | '_'))
        .trim()
        .to_lowercase()
}

/// The kind of summary a row label marks, when the WHOLE label is a summary word (`Total`, `**Average**`,
/// `Grand total:`, `合计`); `None` for any other label (`Total Care Clinic`, `North`).
pub fn summary_kind(label: &str) -> Option<SummaryKind> {
    let label = normalized(label);
    WORDS
        .summary
        .iter()
        .find(|(word, _)| *word == label)
        .map(|(_, kind)| *kind)
}

/// Whether a cell says "no value here": empty, or a whole missing marker (`n/a`, `N/A`, `—`, `-`, `TBD`, `?`, `暂无`).
pub fn is_missing_marker(cell: &str) -> bool {
    let cell = cell.trim().trim_matches(|c| matches!(c, '*' | '_')).trim();
    if cell.is_empty() {
        return true;
    }
    let cell = cell.to_lowercase();
    WORDS.missing.contains(&cell)
}

/// Whether a label column's header says its rows are measures (`Metric`, `Measure`, `KPI`, `指标`): a table
/// laid out one row per measure, one column per period or site.
pub fn is_metric_header(header: &str) -> bool {
    let header = normalized(header);
    WORDS.metric_headers.contains(&header)
}

/// The kind of period a header cell names (`Jan` → `Month`, `Q3` → `Quarter`, `2024` → `Year`), as the
/// name of the label column those periods make.
pub fn period_kind(header: &str) -> Option<&'static str> {
    let text = normalized(header);
    let text = text.trim_end_matches('.');
    if text.len() == 4
        && text.chars().all(|c| c.is_ascii_digit())
        && (1900..=2100).contains(&text.parse::<u32>().unwrap_or(0))
    {
        return Some(WORDS.year_label.as_str());
    }
    WORDS
        .periods
        .iter()
        .find(|(word, _)| word == text)
        .map(|(_, kind)| kind.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vocabulary_file_parses_and_has_every_kind_in_english_and_chinese() {
        let vocabulary: Vocabulary = serde_json::from_str(TABLES_JSON).unwrap();
        for words in [
            &vocabulary.summary_rows.sum,
            &vocabulary.summary_rows.mean,
            &vocabulary.summary_rows.other,
            &vocabulary.missing_cells,
        ] {
            for language in ["en", "zh"] {
                assert!(
                    words.get(language).is_some_and(|w| !w.is_empty()),
                    "{language} words"
                );
            }
        }
        // No word is two kinds at once, and no summary word is a missing marker.
        for (i, (a, _)) in WORDS.summary.iter().enumerate() {
            assert!(
                WORDS.summary[i + 1..].iter().all(|(b, _)| a != b),
                "{a} listed twice"
            );
            assert!(!is_missing_marker(a), "{a}");
        }
    }

    #[test]
    fn whole_summary_labels_only() {
        for (label, kind) in [
            ("Total", SummaryKind::Sum),
            ("TOTAL", SummaryKind::Sum),
            ("**Sum**", SummaryKind::Sum),
            ("Total:", SummaryKind::Sum),
            ("Grand total", SummaryKind::Sum),
            ("Sum", SummaryKind::Sum),
            ("合计", SummaryKind::Sum),
            ("总计", SummaryKind::Sum),
            ("总和：", SummaryKind::Sum),
            ("Average", SummaryKind::Mean),
            ("mean", SummaryKind::Mean),
            ("平均", SummaryKind::Mean),
            ("All", SummaryKind::Other),
            ("Overall", SummaryKind::Other),
            ("全部", SummaryKind::Other),
        ] {
            assert_eq!(summary_kind(label), Some(kind), "{label}");
        }
        for label in [
            "Total Care Clinic",
            "North",
            "Averages Inc",
            "Total score",
            "",
            "Allentown",
            "合计门店",
        ] {
            assert_eq!(summary_kind(label), None, "{label}");
        }
    }

    #[test]
    fn periods_and_metric_headers() {
        for (header, kind) in [
            ("Jan", "Month"),
            ("Sept.", "Month"),
            ("March", "Month"),
            ("3月", "Month"),
            ("Q3", "Quarter"),
            ("2024", "Year"),
            ("Mon", "Day"),
        ] {
            assert_eq!(period_kind(header), Some(kind), "{header}");
        }
        for header in ["North", "1850", "Wait (min)", "Q5", ""] {
            assert_eq!(period_kind(header), None, "{header}");
        }
        assert!(is_metric_header("Measure"));
        assert!(is_metric_header("**KPI**"));
        assert!(is_metric_header("指标"));
        assert!(!is_metric_header("Site"));
    }

    #[test]
    fn missing_markers() {
        for cell in [
            "", " ", "n/a", "N/A", "NA", "—", "–", "-", "TBD", "tbc", "?", "无", "缺", "暂无",
            "**n/a**",
        ] {
            assert!(is_missing_marker(cell), "{cell:?}");
        }
        for cell in ["0", "North", "n/a yet", "-3", "none of them", "Total"] {
            assert!(!is_missing_marker(cell), "{cell:?}");
        }
    }
}
