//! What each answer slot claims, read from its name and the task's words (an aggregate of a column, the
//! label or value of a column's extreme row, a quantity the tools cannot compute, or nothing checkable),
//! and the value the observed data gives for that claim.
//!
//! The claims gate reads them to check a filled slot; no grammar sees them (the model fills every slot).
//! Aggregate, end and row come from the slot's name and the lexicon, the column from `columns::focus`; when a
//! reading is not certain (two columns tie, "worst" with no rule to say which end) the claim is marked
//! unverified instead of forcing one.

use crate::columns::{ColumnData, naming_score};
use forge_language::lexicon::{self, Aggregate, End};
use forge_language::rules::{Category, some_rows_named};

/// What one slot claims.
#[derive(Debug, Clone, PartialEq)]
pub enum SlotClaim {
    /// An aggregate (mean, total, …) of the column the task is about.
    Aggregate(Aggregate),
    /// The label of the row at one end of the column.
    ExtremeLabel(End),
    /// The value of the row at one end of the column ("<highest peak temperature>").
    ExtremeValue(End),
    /// The label of the row at a rank from one end ("<second-lowest line>": (Lowest, 2)).
    RankedLabel(End, u32),
    /// The value of the row at a rank from one end ("<second-highest score>").
    RankedValue(End, u32),
    /// The labels of the first `n` rows from one end ("<top 3 stores>", "<three lowest lines>").
    EndList(End, u32),
    /// The value of the row an earlier extreme slot named ("<its value>").
    OwnValue,
    /// The label of a row the column has no value for ("<class left out>"): a missing cell.
    ExcludedRow,
    /// A row's label, which row not read ("<coldest house>": the rows named, the word for the end not known).
    Row,
    /// A quantity the tools cannot compute ("<median delay>"): never verifiable.
    Unsupported(String),
    /// A slot whose name says nothing checkable.
    Open,
}

/// Reads what a slot claims from its name; `columns` tell a value slot from a label slot: an extreme
/// slot that names a column's quantity and not its rows is that row's value, otherwise its label.
pub fn classify(name: &str, columns: &[ColumnData]) -> SlotClaim {
    // The quantity's own name says nothing about which aggregate or end: "<average lowest night temperature>"
    // over the column `Lowest night temperature` claims an average, not a lowest row; "<average fill
    // variance>" over `Fill variance` an average, not a variance the tools cannot compute.
    let own_words = without_quantity_names(name, columns);
    // A statistic's word that a column's header also holds names that column, not the statistic: "<lowest-variance
    // fund>" over `Benchmark variance` asks for a fund, whichever of the header's words the slot repeats.
    if let Some(quantity) = lexicon::unsupported_in(&own_words)
        && !columns
            .iter()
            .any(|c| lexicon::unsupported_in(&c.name) == Some(quantity))
    {
        return SlotClaim::Unsupported(quantity.to_owned());
    }
    if let Some((end, n)) = lexicon::list_in(&own_words) {
        return SlotClaim::EndList(end, n);
    }
    if let Some((end, rank)) = lexicon::rank_in(&own_words) {
        return if names_quantity_not_rows(name, columns) {
            SlotClaim::RankedValue(end, rank)
        } else {
            SlotClaim::RankedLabel(end, rank)
        };
    }
    let end = lexicon::end_in(&own_words);
    let aggregates = lexicon::aggregates_in(&own_words);
    if end.is_none()
        && let Some(first) = aggregates.first()
    {
        return SlotClaim::Aggregate(*first);
    }
    if let Some(end) = end {
        return if names_quantity_not_rows(name, columns) {
            SlotClaim::ExtremeValue(end)
        } else {
            SlotClaim::ExtremeLabel(end)
        };
    }
    if lexicon::contains_any(name, &lexicon::lexicon().excluded_rows) {
        return SlotClaim::ExcludedRow;
    }
    if lexicon::contains_any(name, &lexicon::lexicon().own_value) {
        return SlotClaim::OwnValue;
    }
    // A slot naming a column's quantity and neither an aggregate nor an end ("<frost hours of that
    // block>") is that quantity for the row named before it, even when it names the rows too: a label slot
    // has no reason to name the quantity. One naming only the rows ("<coldest house>", with a word the
    // lexicon does not read as an end) is some row's label, which one not read.
    let words = lexicon::content_words(name);
    if columns.iter().any(|c| naming_score(c, &words).0 > 0) {
        return SlotClaim::OwnValue;
    }
    if names_rows(&words, columns) {
        return SlotClaim::Row;
    }
    SlotClaim::Open
}

/// Why a slot's words claim something of only some of the rows, if they do: a word that leaves rows out
/// ("<average excluding the pilot>", "<不含试点的平均…>") or a value of a text column only some rows hold
/// ("<average urban-station NO2>" beside `Setting`: Urban, Rural). Which rows, the runtime does not type, so the
/// value over every row is no check of such a slot.
pub fn rows_picked(name: &str, columns: &[ColumnData], categories: &[Category]) -> Option<String> {
    let own_words = without_quantity_names(name, columns);
    if let Some(word) = lexicon::lexicon()
        .rule_terms
        .row_exclusions
        .iter()
        .find(|w| !lexicon::find(&own_words, w).is_empty())
    {
        return Some(format!("\"{word}\" leaves some rows out"));
    }
    some_rows_named(&own_words, categories).map(|scope| format!("they name {scope}"))
}

/// Whether an end or rank slot's name names a column's quantity and not its rows: then it claims the
/// row's value, otherwise its label. The rows are named by the label column's header, or (a list
/// without one) by the words the row labels share ("Line A", "Line B" → "line").
fn names_quantity_not_rows(name: &str, columns: &[ColumnData]) -> bool {
    let words = lexicon::content_words(name);
    let rows_named = columns.iter().any(|c| {
        lexicon::content_words(&c.rows)
            .iter()
            .any(|r| words.contains(r))
            || c.labels
                .iter()
                .flat_map(|l| lexicon::content_words(l))
                .any(|r| words.contains(&r))
    });
    let names_quantity = columns.iter().any(|c| naming_score(c, &words).0 > 0);
    names_quantity && !rows_named && !names_unnamed_rows(name, &words, columns)
}

/// Whether a slot over rows that have no name (a scorecard turned so that its sites are rows, under no header)
/// adds a word beyond the quantity's own, an end's, a rank's or a count's: "<lowest-rate centre>" — "centre"
/// can only name the rows. Latin script only: CJK content words are overlapping pairs, which always leave some.
fn names_unnamed_rows(name: &str, words: &[String], columns: &[ColumnData]) -> bool {
    let lex = lexicon::lexicon();
    let unnamed = columns.iter().all(|c| {
        forge_tools::knowledge::is_placeholder_header(c.rows.trim())
            || lexicon::content_words(&c.rows).is_empty()
    });
    if !unnamed || name.chars().any(lexicon::is_cjk) {
        return false;
    }
    let quantity_words: Vec<String> = columns
        .iter()
        .flat_map(|c| lexicon::content_words(&c.name))
        .collect();
    words.iter().any(|w| {
        !quantity_words.contains(w)
            && !lex.ranks.ordinals.contains_key(w)
            && !lex.rule_terms.count_words.contains_key(w)
    })
}

/// Whether `words` name the rows of an observed column: its label column's header, or (a list without
/// one) a word the row labels share.
fn names_rows(words: &[String], columns: &[ColumnData]) -> bool {
    columns.iter().any(|c| {
        lexicon::content_words(&c.rows)
            .iter()
            .any(|r| words.contains(r))
            || {
                let label_words: Vec<Vec<String>> =
                    c.labels.iter().map(|l| lexicon::content_words(l)).collect();
                // A word most row labels share ("Line A", "Line B" → line; "Old vine house", "Propagation house" → house).
                words.iter().any(|w| {
                    label_words.len() >= 2
                        && label_words.iter().filter(|l| l.contains(w)).count() * 2
                            > label_words.len()
                })
            }
    })
}

/// `name` without the longest run of two or more words it shares, in order, with an observed column's header
/// (or the whole header, for CJK headers found inside it): what is left is what the slot says about that
/// quantity.
fn without_quantity_names(name: &str, columns: &[ColumnData]) -> String {
    let mut text = name.to_owned();
    for c in columns {
        let header = c.name.split(['(', '（']).next().unwrap_or(&c.name).trim();
        if header.chars().any(lexicon::is_cjk) {
            if !header.is_empty() && text.contains(header) {
                text = text.replacen(header, " ", 1);
            }
            continue;
        }
        let slot = lexicon::words(&text);
        let head: Vec<String> = lexicon::words(header)
            .into_iter()
            .map(|w| w.folded)
            .collect();
        // The whole header (any length), else the longest run of two or more of its words.
        let mut best: Option<(usize, usize)> = None; // (start index in slot, length)
        for i in 0..slot.len() {
            for j in 0..head.len() {
                let mut n = 0;
                while i + n < slot.len() && j + n < head.len() && slot[i + n].folded == head[j + n]
                {
                    n += 1;
                }
                // A one-word header that is itself an aggregate or end word (`Total`, `Max`) is kept: "<total
                // loans>" still claims a total.
                let whole = j == 0
                    && n == head.len()
                    && (n > 1
                        || (lexicon::aggregates_in(header).is_empty()
                            && lexicon::end_in(header).is_none()));
                if (n >= 2 || whole) && best.is_none_or(|(_, m)| n > m) {
                    best = Some((i, n));
                }
            }
        }
        if let Some((i, n)) = best {
            let (from, to) = (slot[i].start, slot[i + n - 1].end);
            text = format!("{} {}", &text[..from], &text[to..]);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, rows: &str, labels: &[&str], values: &[f64]) -> ColumnData {
        ColumnData::example(name, rows, labels, values)
    }

    #[test]
    fn slot_names_say_what_they_claim() {
        let cols = vec![col("Peak temperature", "Fridge", &["A", "B"], &[4.0, 6.5])];
        assert_eq!(
            classify("highest peak temperature", &cols),
            SlotClaim::ExtremeValue(End::Highest)
        );
        assert_eq!(
            classify("highest fridge", &cols),
            SlotClaim::ExtremeLabel(End::Highest)
        );
        assert_eq!(
            classify("lowest", &cols),
            SlotClaim::ExtremeLabel(End::Lowest)
        );
        assert_eq!(
            classify("average", &cols),
            SlotClaim::Aggregate(Aggregate::Mean)
        );
        assert_eq!(
            classify("平均值", &cols),
            SlotClaim::Aggregate(Aggregate::Mean)
        );
        assert_eq!(
            classify("total output", &cols),
            SlotClaim::Aggregate(Aggregate::Sum)
        );
        assert_eq!(
            classify("median delay", &cols),
            SlotClaim::Unsupported("median".into())
        );
        assert_eq!(classify("its value", &cols), SlotClaim::OwnValue);
        assert_eq!(
            classify("worst line", &cols),
            SlotClaim::ExtremeLabel(End::Either)
        );
        assert_eq!(classify("name", &cols), SlotClaim::Open);
        // The quantity's name holds an end word: the slot's own words decide.
        let frost = vec![col(
            "Lowest night temperature",
            "House",
            &["Old vine house", "Propagation house"],
            &[9.0, 12.5],
        )];
        assert_eq!(
            classify("average lowest night temperature", &frost),
            SlotClaim::Aggregate(Aggregate::Mean)
        );
        assert_eq!(
            classify("lowest house", &frost),
            SlotClaim::ExtremeLabel(End::Lowest)
        );
        assert_eq!(
            classify("highest lowest night temperature", &frost),
            SlotClaim::ExtremeValue(End::Highest)
        );
        // The rows named with an end word the lexicon does not know: a label, which one not read.
        assert_eq!(classify("coldest house", &frost), SlotClaim::Row);
        let unlabelled = vec![col(
            "Lowest night temperature",
            "",
            &["Old vine house", "Propagation house", "Cold frame house"],
            &[9.0, 12.5, 10.0],
        )];
        assert_eq!(classify("coldest house", &unlabelled), SlotClaim::Row);
        // A slot naming the quantity and the rows without an end word is the value of the row named before it.
        let blocks = vec![col(
            "Frost hours",
            "Block",
            &["Creek Flat", "Hill Top"],
            &[71.0, 40.0],
        )];
        assert_eq!(
            classify("frost hours of that block", &blocks),
            SlotClaim::OwnValue
        );
        assert_eq!(classify("block frost hours", &blocks), SlotClaim::OwnValue);
        assert_eq!(classify("coldest block", &blocks), SlotClaim::Row);
        // A range names the quantity too, but it is the spread of the rows, not the value of the row named before
        // it (stop 61: "<room temperature range>" after "<coldest estate>" was checked as that estate's value).
        assert_eq!(
            classify("frost hours range", &blocks),
            SlotClaim::Unsupported("range".into())
        );
        let rooms = vec![col(
            "室温",
            "小区",
            &["福安小区", "东湖花园"],
            &[20.4, 18.5],
        )];
        assert_eq!(
            classify("室温极差", &rooms),
            SlotClaim::Unsupported("极差".into())
        );
        // A weighted average in Chinese, as in English (held-out set 17: its mean was verified as the weighted one).
        let beds = vec![col(
            "入住率",
            "机构",
            &["市社会福利院", "康乐养老院"],
            &[69.6, 91.0],
        )];
        assert_eq!(
            classify("加权平均入住率", &beds),
            SlotClaim::Unsupported("加权平均".into())
        );
        // A column named after a statistic the tools cannot compute is still a column: its average is an average.
        let fill = vec![col("Fill variance", "Blend", &["A", "B"], &[-0.9, 1.2])];
        assert_eq!(
            classify("average fill variance", &fill),
            SlotClaim::Aggregate(Aggregate::Mean)
        );
        assert_eq!(
            classify("blend with the lowest fill variance", &fill),
            SlotClaim::ExtremeLabel(End::Lowest)
        );
        assert_eq!(
            classify("median fill variance", &fill),
            SlotClaim::Unsupported("median".into())
        );
        // One word of the header is enough when it is the statistic's: the slot names the column by it.
        let funds = vec![col(
            "Benchmark variance",
            "Fund",
            &["Gilt", "Equity"],
            &[0.2, -1.5],
        )];
        assert_eq!(
            classify("lowest-variance fund", &funds),
            SlotClaim::ExtremeLabel(End::Lowest)
        );
        assert_eq!(
            classify("variance of the funds' returns", &cols),
            SlotClaim::Unsupported("variance".into())
        );
        assert_eq!(
            classify("variance of the waits", &cols),
            SlotClaim::Unsupported("variance".into())
        );
        let clinic = vec![col("Wait", "Clinic", &["A"], &[3.0])];
        assert_eq!(
            classify("longest-wait clinic", &clinic),
            SlotClaim::ExtremeLabel(End::Highest)
        );
        let zh = vec![col("满意度", "医院", &["甲"], &[90.0])];
        assert_eq!(
            classify("最低医院", &zh),
            SlotClaim::ExtremeLabel(End::Lowest)
        );
    }

    #[test]
    fn ranked_slots_name_their_rank() {
        let lines = vec![col("Punctuality", "Line", &["A", "B"], &[91.5, 88.0])];
        assert_eq!(
            classify("second-lowest line", &lines),
            SlotClaim::RankedLabel(End::Lowest, 2)
        );
        assert_eq!(
            classify("3rd highest punctuality", &lines),
            SlotClaim::RankedValue(End::Highest, 3)
        );
        assert_eq!(
            classify("第二低的线路", &lines),
            SlotClaim::RankedLabel(End::Lowest, 2)
        );
        // "seconds" is a unit, not an ordinal before an end word.
        assert_eq!(
            classify("average punctuality in seconds", &lines),
            SlotClaim::Aggregate(Aggregate::Mean)
        );
        assert_eq!(
            classify("lowest line", &lines),
            SlotClaim::ExtremeLabel(End::Lowest)
        );
    }

    #[test]
    fn over_rows_without_a_name_a_word_beyond_the_quantity_names_the_rows() {
        // A scorecard turned so that its sites are rows: the rows' header is empty (`Column 1`).
        let sites = vec![
            col(
                "Recycling rate",
                "Column 1",
                &["Millbrook", "Kelso Road"],
                &[68.0, 54.0],
            ),
            col(
                "Contamination",
                "Column 1",
                &["Millbrook", "Kelso Road"],
                &[6.0, 9.0],
            ),
        ];
        assert_eq!(
            classify("lowest-rate centre", &sites),
            SlotClaim::ExtremeLabel(End::Lowest)
        );
        assert_eq!(
            classify("second-lowest rate centre", &sites),
            SlotClaim::RankedLabel(End::Lowest, 2)
        );
        // The quantity's own words, an end and a rank leave nothing that could name the rows.
        assert_eq!(
            classify("lowest recycling rate", &sites),
            SlotClaim::ExtremeValue(End::Lowest)
        );
        assert_eq!(
            classify("second-lowest recycling rate", &sites),
            SlotClaim::RankedValue(End::Lowest, 2)
        );
        // Rows with a name keep it: a word that is not that name does not make the slot a label.
        let named = vec![col(
            "Recycling rate",
            "Site",
            &["Millbrook", "Kelso Road"],
            &[68.0, 54.0],
        )];
        assert_eq!(
            classify("lowest-rate centre", &named),
            SlotClaim::ExtremeValue(End::Lowest)
        );
    }

    #[test]
    fn lists_from_an_end_take_their_rows_unless_a_tie_straddles_the_last_place() {
        let c = col(
            "Score",
            "Store",
            &["A", "B", "C", "D"],
            &[3.0, 1.0, 2.0, 2.0],
        );
        assert_eq!(c.first_from(End::Highest, 1), Some(vec!["A"]));
        assert_eq!(c.first_from(End::Lowest, 3), Some(vec!["B", "C", "D"]));
        assert_eq!(c.first_from(End::Lowest, 2), None, "C and D tie for second");
        assert_eq!(c.first_from(End::Lowest, 5), None);
        assert_eq!(
            classify("top 3 stores", std::slice::from_ref(&c)),
            SlotClaim::EndList(End::Highest, 3)
        );
        assert_eq!(
            classify("three lowest stores", std::slice::from_ref(&c)),
            SlotClaim::EndList(End::Lowest, 3)
        );
        assert_eq!(
            classify("top store", &[c]),
            SlotClaim::ExtremeLabel(End::Highest)
        );
    }
}
