//! Table vocabulary as data (`tables.json`, per language): the row labels that mark a summary row
//! (`Total`, `Average`, `合计`, …) by kind, the cell texts that mark a missing value (`n/a`, `—`, `暂无`, …),
//! and what marks a table laid out one row per measure: label headers (`Metric`, `指标`) and period names
//! (`Jan`, `Q3`, `3月`) as column headers. The same period names, with the words for a whole year (`annual`,
//! `全年`), say which span of time a text is about ([`periods_in`]).
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
    /// Words that say a figure covers a whole year (`annual`, `全年`), as against a month or a quarter.
    whole_year: PerLanguage,
}

/// The vocabulary, lower-cased, read once.
struct Words {
    summary: Vec<(String, SummaryKind)>,
    missing: Vec<String>,
    metric_headers: Vec<String>,
    periods: Vec<(String, String)>,
    year_label: String,
    whole_year: Vec<String>,
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
        whole_year: flat(&vocabulary.whole_year),
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

/// A span of time a text names: a period of a kind (`Month` `mar`, `Quarter` `第三季度`), a year (`2025`), or a
/// whole year without its number (`annual`, `全年`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Period {
    Part { kind: &'static str, word: String },
    Year(String),
    WholeYear,
}

/// The periods `text` names, each once: Latin words matched whole (`Q3`, `March`, `2025`, `annual`), CJK
/// entries as substrings not glued to a digit before them (`第三季度`, `9月` but not the `1月` of `11月`).
pub fn periods_in(text: &str) -> Vec<Period> {
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut out: Vec<Period> = Vec::new();
    let found = named_periods(&words)
        .chain(cjk_periods(&text.to_lowercase()))
        .chain(names_whole_year(text, &words).then_some(Period::WholeYear));
    for period in found {
        if !out.contains(&period) {
            out.push(period);
        }
    }
    out
}

/// Latin period names among `words`: proper nouns (`March`, `Q3`, `2025`), so a lower-case `may` is a verb,
/// not the month.
fn named_periods<'w>(words: &'w [&'w str]) -> impl Iterator<Item = Period> + 'w {
    words
        .iter()
        .filter(|w| {
            w.chars()
                .next()
                .is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        })
        .filter_map(|w| {
            let word = w.to_lowercase();
            let kind = period_kind(&word)?;
            Some(if kind == WORDS.year_label {
                Period::Year(word)
            } else {
                Period::Part { kind, word }
            })
        })
}

/// CJK period names written in `lower` (`第三季度`, `9月`), none read inside a longer number (`11月`).
fn cjk_periods(lower: &str) -> Vec<Period> {
    let glued_to_digit = |at: usize| {
        lower[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_digit())
    };
    WORDS
        .periods
        .iter()
        .filter(|(word, _)| word.chars().any(crate::lexicon::is_cjk))
        .filter(|(word, _)| {
            lower
                .match_indices(word.as_str())
                .any(|(at, _)| !glued_to_digit(at))
        })
        .filter_map(|(word, _)| {
            Some(Period::Part {
                kind: period_kind(word)?,
                word: word.clone(),
            })
        })
        .collect()
}

/// Whether `text` says its figures cover a whole year (`annual`, `full-year`, `全年`).
fn names_whole_year(text: &str, words: &[&str]) -> bool {
    let spaced = format!(" {} ", words.join(" ").to_lowercase());
    let lower = text.to_lowercase();
    WORDS.whole_year.iter().any(|w| {
        if w.chars().any(crate::lexicon::is_cjk) {
            lower.contains(w.as_str())
        } else {
            spaced.contains(&format!(" {w} "))
                || spaced.contains(&format!(" {} ", w.replace('-', " ")))
        }
    })
}

/// Whether a figure about the periods `about` cannot be read from data about the periods `data`: a whole year
/// from a month's or a quarter's data (or the reverse), two different months or quarters, two different
/// years. Where either names none, or they share one, nothing is known to differ.
pub fn periods_differ(about: &[Period], data: &[Period]) -> bool {
    let parts = |ps: &[Period]| -> Vec<(&'static str, String)> {
        ps.iter()
            .filter_map(|p| match p {
                Period::Part { kind, word } => Some((*kind, word.clone())),
                _ => None,
            })
            .collect()
    };
    let years = |ps: &[Period]| -> Vec<String> {
        ps.iter()
            .filter_map(|p| match p {
                Period::Year(y) => Some(y.clone()),
                _ => None,
            })
            .collect()
    };
    let whole = |ps: &[Period]| ps.contains(&Period::WholeYear);
    let (about_parts, data_parts) = (parts(about), parts(data));
    let whole_against_part = whole(about) && !whole(data) && !data_parts.is_empty()
        || !about_parts.is_empty() && whole(data) && data_parts.is_empty();
    let other_part = about_parts.iter().any(|(kind, word)| {
        data_parts.iter().any(|(k, _)| k == kind)
            && !data_parts.iter().any(|(k, w)| k == kind && w == word)
    });
    let (about_years, data_years) = (years(about), years(data));
    let other_year = !about_years.is_empty()
        && !data_years.is_empty()
        && !about_years.iter().any(|y| data_years.contains(y));
    whole_against_part || other_part || other_year
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_year_is_not_read_from_a_quarter_nor_one_month_from_another() {
        let differ = |a: &str, b: &str| periods_differ(&periods_in(a), &periods_in(b));
        assert!(differ(
            "the annual average leakage",
            "First quarter (Q1) leakage by district"
        ));
        assert!(differ(
            "各法庭全年结案率的平均值",
            "各人民法庭第三季度结案情况 > 第三季度各法庭结案"
        ));
        assert!(differ("the average March wait", "April waits by clinic"));
        assert!(differ("the 2024 average", "2025 results"));
        // Nothing known to differ: one side names no period, or both name the same.
        assert!(!differ("the average wait", "Q1 waits by clinic"));
        assert!(!differ("the annual average", "Results by branch"));
        assert!(!differ("the annual average", "2025 results by branch"));
        assert!(!differ(
            "本年度各站点日均借车量的平均值",
            "各站点借车情况（本年度） > 站点借车量"
        ));
        assert!(!differ("the Q3 average", "Q3 and Q4 results"));
        // "may" written small is a verb: "no line may exceed" names no month.
        assert!(!differ("no line may exceed", "quality report, November"));
        // A month glued to a digit is not read inside another: 11月 is not 1月.
        assert_eq!(
            periods_in("11月各站"),
            [Period::Part {
                kind: "Month",
                word: "11月".into()
            }]
        );
    }

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
