//! The observed numeric columns, and the one rule for which of them a text means (`focus`): a text names a
//! column by its header's words, never by the words that name its rows, and a single column counts only when
//! some text names it.

use serde_json::Value;

use crate::ledger::ObservationRecord;
use forge_language::lexicon::{self, End};

/// One observed numeric column (a table's series), with its rows.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnData {
    pub name: String,
    /// The header of the table's label column (`Clinic`): what the rows are.
    pub rows: String,
    pub labels: Vec<String>,
    pub values: Vec<f64>,
    /// Labels of rows with no value in this column (a missing cell).
    pub missing: Vec<String>,
    /// The unit its header or cells write (`%`, `min`), as the knowledge tool read it.
    pub unit: Option<String>,
    /// Rows whose cell in this column carries a footnote that leaves the row out ("* not included in the
    /// audit", "*本年度不纳入考核"), with the marker and the footnote: which rows count, the reader does not type.
    pub noted_out: Vec<NotedOut>,
}

/// A row a footnote on its cell leaves out: its label, the marker and the footnote's text.
#[derive(Debug, Clone, PartialEq)]
pub struct NotedOut {
    pub label: String,
    pub marker: String,
    pub note: String,
}

impl std::fmt::Display for NotedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is marked \"{}\", and its footnote says \"{}\"",
            self.label, self.marker, self.note
        )
    }
}

/// The rows of `table` whose cell in `column` carries a footnote that leaves the row out (a row-exclusion
/// word of the lexicon in the footnote's text).
pub fn noted_out(table: &forge_tools::knowledge::ObservedTable, column: &str) -> Vec<NotedOut> {
    table
        .rows
        .iter()
        .flat_map(|row| {
            row.notes
                .iter()
                .filter(|n| n.column == column)
                .filter_map(|n| {
                    let text = n.text.as_deref()?;
                    forge_language::rules::clause::rows_left_out(&text.to_lowercase())?;
                    Some(NotedOut {
                        label: row.label.clone(),
                        marker: n.marker.clone(),
                        note: text.trim().to_owned(),
                    })
                })
        })
        .collect()
}

impl ColumnData {
    /// A column with every row holding a value, for tests.
    #[cfg(test)]
    pub(crate) fn example(name: &str, rows: &str, labels: &[&str], values: &[f64]) -> ColumnData {
        ColumnData {
            name: name.into(),
            rows: rows.into(),
            labels: labels.iter().map(|s| s.to_string()).collect(),
            values: values.to_vec(),
            missing: Vec::new(),
            unit: None,
            noted_out: Vec::new(),
        }
    }

    /// Whether its values are shares (`%`, `‰`): each row's share of its own base, which no total of the
    /// rows adds up to a quantity (2.6% of 10,000 eggs and 1.5% of 40,000 are not 4.1% of anything).
    pub fn is_share(&self) -> bool {
        forge_language::units::is_share(self.unit.as_deref())
    }

    /// The row at `end` (`Lowest`/`Highest`) and its value; `None` on a tie or an empty column.
    pub fn extreme(&self, end: End) -> Option<(&str, f64)> {
        let best = match end {
            End::Lowest => self.values.iter().copied().fold(f64::INFINITY, f64::min),
            End::Highest => self
                .values
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max),
            End::Either => return None,
        };
        let at: Vec<usize> = (0..self.values.len())
            .filter(|&i| self.values[i] == best)
            .collect();
        match at.as_slice() {
            [only] => Some((self.labels[*only].as_str(), best)),
            _ => None,
        }
    }

    /// The rows at `rank` (1 = the end itself) from `end`, with their shared value: one row, or every row
    /// tied there. `None` for an empty column, too few rows, or a tie that reaches over from a better rank
    /// (three rows at 84 have no second-lowest of their own).
    pub fn ranked(&self, end: End, rank: u32) -> Option<(Vec<&str>, f64)> {
        let mut order: Vec<usize> = (0..self.values.len()).collect();
        match end {
            End::Lowest => order.sort_by(|&a, &b| self.values[a].total_cmp(&self.values[b])),
            End::Highest => order.sort_by(|&a, &b| self.values[b].total_cmp(&self.values[a])),
            End::Either => return None,
        }
        let at = usize::try_from(rank).ok()?.checked_sub(1)?;
        let value = self.values[*order.get(at)?];
        if at > 0 && self.values[order[at - 1]] == value {
            return None;
        }
        let labels = (0..self.values.len())
            .filter(|&i| self.values[i] == value)
            .map(|i| self.labels[i].as_str())
            .collect();
        Some((labels, value))
    }

    /// The first `n` rows from `end`; `None` when a tie straddles the list's last place (which rows
    /// belong in it is then not one answer) or the column has fewer rows.
    pub fn first_from(&self, end: End, n: u32) -> Option<Vec<&str>> {
        let n = usize::try_from(n).ok()?;
        let mut order: Vec<usize> = (0..self.values.len()).collect();
        match end {
            End::Lowest => order.sort_by(|&a, &b| self.values[a].total_cmp(&self.values[b])),
            End::Highest => order.sort_by(|&a, &b| self.values[b].total_cmp(&self.values[a])),
            End::Either => return None,
        }
        if n == 0 || n > order.len() {
            return None;
        }
        if let Some(&next) = order.get(n)
            && self.values[next] == self.values[order[n - 1]]
        {
            return None;
        }
        Some(
            order[..n]
                .iter()
                .map(|&i| self.labels[i].as_str())
                .collect(),
        )
    }

    pub fn value_of(&self, label: &str) -> Option<f64> {
        self.labels
            .iter()
            .position(|l| l == label)
            .map(|i| self.values[i])
    }
}

/// The numeric columns of successful knowledge results in `records`, in order (a column seen twice once).
pub fn columns_in<'a>(records: impl IntoIterator<Item = &'a ObservationRecord>) -> Vec<ColumnData> {
    let mut out: Vec<ColumnData> = Vec::new();
    for record in records.into_iter().filter(|r| r.ok) {
        let Some(result) = &record.result else {
            continue;
        };
        for column in columns_of(result) {
            if !out.iter().any(|c| {
                c.name == column.name && c.rows == column.rows && c.labels == column.labels
            }) {
                out.push(column);
            }
        }
    }
    out
}

/// The numeric columns of one result's tables.
pub fn columns_of(result: &Value) -> Vec<ColumnData> {
    let mut out = Vec::new();
    for table in forge_tools::knowledge::tables_in(result) {
        for column in &table.columns {
            let mut data = ColumnData {
                name: column.name.clone(),
                rows: table.label_column.clone(),
                labels: Vec::new(),
                values: Vec::new(),
                missing: Vec::new(),
                unit: column.unit.clone(),
                noted_out: noted_out(&table, &column.name),
            };
            for row in &table.rows {
                match row.value(&column.name) {
                    Some(v) => {
                        data.labels.push(row.label.clone());
                        data.values.push(v);
                    }
                    None => data.missing.push(row.label.clone()),
                }
            }
            if !data.values.is_empty() {
                out.push(data);
            }
        }
    }
    out
}

/// A column of numbers an observed table could not read exactly (`unread_columns`): its name, its rows and
/// why, as the knowledge tool said.
#[derive(Debug, Clone, PartialEq)]
pub struct UnreadColumn {
    pub name: String,
    pub rows: String,
    pub reason: String,
}

/// The unread columns of the successful `records`' tables, once each.
pub fn unread_in<'a>(
    records: impl IntoIterator<Item = &'a ObservationRecord>,
) -> Vec<UnreadColumn> {
    let mut out: Vec<UnreadColumn> = Vec::new();
    for result in records
        .into_iter()
        .filter(|r| r.ok)
        .filter_map(|r| r.result.as_ref())
    {
        for column in unread_of(result) {
            if !out.contains(&column) {
                out.push(column);
            }
        }
    }
    out
}

/// The unread columns of one result's tables.
pub fn unread_of(result: &Value) -> Vec<UnreadColumn> {
    forge_tools::knowledge::tables_in(result)
        .into_iter()
        .flat_map(|table| {
            let rows = table.label_column.clone();
            table.unread_columns.into_iter().map(move |c| UnreadColumn {
                name: c.name,
                rows: rows.clone(),
                reason: c.reason,
            })
        })
        .collect()
}

/// The unread column `texts` name at least as well as any readable column, by the one column-choice rule
/// ([`focus`] over both): a text about a column the tool could not read is about no column it could — the
/// nearest readable name (`Turnarounds`, a count of flights, for "average turnaround" over an unread
/// `Turnaround (h:mm)`: held-out set 16) is another quantity. `None` when a readable column is named alone.
pub fn names_unread<'u>(
    columns: &[ColumnData],
    unread: &'u [UnreadColumn],
    texts: &[&str],
) -> Option<&'u UnreadColumn> {
    if unread.is_empty() {
        return None;
    }
    let mut all: Vec<ColumnData> = columns.to_vec();
    all.extend(unread.iter().map(|u| ColumnData {
        name: u.name.clone(),
        rows: u.rows.clone(),
        labels: Vec::new(),
        values: Vec::new(),
        missing: Vec::new(),
        unit: None,
        noted_out: Vec::new(),
    }));
    let named = focus(&all, texts).candidates();
    named.iter().find_map(|c| {
        let index = all.iter().position(|a| std::ptr::eq(a, *c))?;
        index.checked_sub(columns.len()).and_then(|i| unread.get(i))
    })
}

/// Which column a text is about.
#[derive(Debug, Clone, PartialEq)]
pub enum Focus<'a> {
    One(&'a ColumnData),
    /// Several columns fit equally: the candidates.
    Tie(Vec<&'a ColumnData>),
    /// No column fits.
    None,
}

impl<'a> Focus<'a> {
    pub fn candidates(&self) -> Vec<&'a ColumnData> {
        match self {
            Focus::One(c) => vec![c],
            Focus::Tie(list) => list.clone(),
            Focus::None => Vec::new(),
        }
    }
}

/// The content words of column `c`'s header, sorted and once each, without the words that name its rows
/// (`row_words`).
fn header_words(c: &ColumnData, row_words: &[String]) -> Vec<String> {
    let mut header = lexicon::content_words(&c.name);
    header.sort();
    header.dedup();
    header.retain(|w| !row_words.contains(w));
    header
}

/// How well `text` names column `c`: occurrences in the text of the column header's content words,
/// leaving out words that also name the rows ("sample points" names the rows of `Sample point`, not the
/// column `Samples`); then whether the text names the rows at all (two tables with one column name).
pub(crate) fn naming_score(c: &ColumnData, text_words: &[String]) -> (usize, usize) {
    let row_words = lexicon::content_words(&c.rows);
    let header = header_words(c, &row_words);
    let text_rowless: Vec<&String> = text_words
        .iter()
        .filter(|w| !row_words.contains(w))
        .collect();
    let named = header
        .iter()
        .map(|h| text_rowless.iter().filter(|w| **w == h).count())
        .sum();
    let rows = row_words.iter().filter(|r| text_words.contains(r)).count();
    (named, rows)
}

/// How many headers of `columns` `text_words` name whole — every content word of the header, rows' words
/// aside; a name two tables share counted once — not counting a header whose words are part of another's it
/// names ("pit stop time" names `Pit stop`; `Stops` is only its part).
fn names_whole(columns: &[ColumnData], text_words: &[String]) -> usize {
    let named: Vec<Vec<String>> = columns
        .iter()
        .map(|c| header_words(c, &lexicon::content_words(&c.rows)))
        .filter(|h| !h.is_empty() && h.iter().all(|w| text_words.contains(w)))
        .collect();
    // Two tables' `Occupancy` are one name: which table the rows' words decide.
    let mut named = named;
    named.sort();
    named.dedup();
    named
        .iter()
        .filter(|h| {
            !named
                .iter()
                .any(|other| other.len() > h.len() && h.iter().all(|w| other.contains(w)))
        })
        .count()
}

/// The column the first of `texts` that decides names (each text is tried in turn: a slot's own name,
/// the step hints, the task); a single column only when one of them names it.
pub fn focus<'a>(columns: &'a [ColumnData], texts: &[&str]) -> Focus<'a> {
    match columns {
        [] => return Focus::None,
        // A single observed column is the one meant only when some text names it: a lookup that found
        // another table (finance figures where the task asks about tariffs) must not be read as the answer.
        [only] => {
            let named = texts
                .iter()
                .any(|t| naming_score(only, &lexicon::content_words(t)).0 > 0);
            return if named { Focus::One(only) } else { Focus::None };
        }
        _ => {}
    }
    let mut last = Focus::None;
    for (i, text) in texts.iter().enumerate() {
        let words = lexicon::content_words(text);
        // A later text that names several columns whole ("all breakages divided by all eggs laid, the overall
        // breakage rate") speaks of each of them: it does not say which one the first text means.
        if i > 0 && names_whole(columns, &words) > 1 {
            continue;
        }
        let scored: Vec<((usize, usize), &ColumnData)> = columns
            .iter()
            .map(|c| (naming_score(c, &words), c))
            .collect();
        let top = scored.iter().map(|(s, _)| *s).max().unwrap_or((0, 0));
        if top.0 == 0 {
            continue;
        }
        let at_top: Vec<&ColumnData> = scored
            .iter()
            .filter(|(s, _)| *s == top)
            .map(|(_, c)| *c)
            .collect();
        if let [only] = at_top.as_slice() {
            return Focus::One(only);
        }
        let headers: Vec<&str> = at_top.iter().map(|c| c.name.as_str()).collect();
        if let Some(i) = lexicon::named_whole(&headers, text) {
            return Focus::One(at_top[i]);
        }
        last = Focus::Tie(at_top);
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, rows: &str, labels: &[&str], values: &[f64]) -> ColumnData {
        ColumnData::example(name, rows, labels, values)
    }

    #[test]
    fn the_rows_words_do_not_pick_a_column() {
        let cols = vec![
            col("Samples", "Sample point", &["A", "B"], &[12.0, 16.0]),
            col("Turbidity", "Sample point", &["A", "B"], &[0.8, 1.1]),
        ];
        let f = focus(&cols, &["compute the mean turbidity of all sample points"]);
        assert_eq!(f, Focus::One(&cols[1]));
        assert!(matches!(
            focus(&cols, &["compute the mean of all sample points"]),
            Focus::None
        ));
    }

    #[test]
    fn a_text_naming_several_columns_whole_does_not_say_which_one_a_slot_means() {
        // Held-out set 5: the first calculator hint of a ratio task names its numerator, its denominator and
        // the rate; the row slot <最高鸡舍> was checked on the numerator (breakages, not the breakage rate).
        let cols = vec![
            col("产蛋数", "鸡舍", &["一号", "四号"], &[40000.0, 8000.0]),
            col("破蛋数", "鸡舍", &["一号", "四号"], &[600.0, 224.0]),
            col("破蛋率", "鸡舍", &["一号", "四号"], &[1.5, 2.8]),
        ];
        let texts = [
            "最高鸡舍",
            "按定义用破蛋数合计和产蛋数合计计算全场总体破蛋率",
            "用一个比较表达式检验收购标准：总体破蛋率对照上限，破蛋率最高的鸡舍对照单个鸡舍的上限",
        ];
        assert_eq!(focus(&cols, &texts), Focus::One(&cols[2]));
        let english = vec![
            col("Tests", "Centre", &["A", "B"], &[400.0, 300.0]),
            col("Passes", "Centre", &["A", "B"], &[200.0, 138.0]),
            col("Pass rate", "Centre", &["A", "B"], &[50.0, 46.0]),
        ];
        let texts = [
            "lowest centre",
            "compute the overall pass rate: all passes divided by all tests",
            "check the rule: the overall pass rate and the lowest centre's pass rate against their minimums",
        ];
        assert_eq!(focus(&english, &texts), Focus::One(&english[2]));
        // A header that is part of another named whole ("pit stop time": `Pit stop`, not `Stops`) and a name two
        // tables share are one column named, not several.
        let pits = vec![
            col("Stops", "Crew", &["A", "B"], &[38.0, 35.0]),
            col("Pit stop", "Crew", &["A", "B"], &[2.4, 3.0]),
        ];
        assert_eq!(
            focus(
                &pits,
                &[
                    "highest crew",
                    "compute the average pit stop time of all crews"
                ]
            ),
            Focus::One(&pits[1])
        );
    }

    #[test]
    fn a_column_named_whole_beats_one_named_in_part() {
        let cols = vec![
            col("Trips run", "Operator", &["A", "B"], &[212.0, 180.0]),
            col("Ratings received", "Operator", &["A", "B"], &[640.0, 400.0]),
            col("Rating", "Operator", &["A", "B"], &[4.6, 4.1]),
        ];
        assert_eq!(
            focus(&cols, &["compute the average rating of all operators"]),
            Focus::One(&cols[2])
        );
        assert_eq!(
            focus(&cols, &["the ratings received by each operator"]),
            Focus::One(&cols[1])
        );
        // Named by different words, each in part or whole, two columns still tie.
        let staff = vec![
            col("Staff", "Site", &["A"], &[1.0]),
            col("Wait time", "Site", &["A"], &[2.0]),
        ];
        assert!(matches!(focus(&staff, &["staff and wait"]), Focus::Tie(_)));
    }

    #[test]
    fn a_single_column_no_text_names_is_not_the_one_meant() {
        // The lookup found only a finance table; the task asks about tariffs.
        let cols = vec![col(
            "Finance",
            "Item",
            &["Concession fee", "Rates"],
            &[18000.0, 0.21],
        )];
        assert_eq!(
            focus(
                &cols,
                &["average tariff", "compute the average tariff of all sites"]
            ),
            Focus::None
        );
        assert_eq!(
            focus(&cols, &["total finance figures"]),
            Focus::One(&cols[0])
        );
    }

    #[test]
    fn extremes_refuse_ties() {
        let c = col("Score", "Team", &["A", "B", "C"], &[3.0, 1.0, 3.0]);
        assert_eq!(c.extreme(End::Lowest), Some(("B", 1.0)));
        assert_eq!(c.extreme(End::Highest), None);
    }

    #[test]
    fn ranks_count_from_an_end_and_keep_their_ties() {
        let c = col(
            "Score",
            "Team",
            &["A", "B", "C", "D"],
            &[3.0, 1.0, 3.0, 2.0],
        );
        assert_eq!(c.ranked(End::Lowest, 1), Some((vec!["B"], 1.0)));
        assert_eq!(c.ranked(End::Lowest, 2), Some((vec!["D"], 2.0)));
        // A and C tie at the top: both are the highest, and neither is a second-highest of its own.
        assert_eq!(c.ranked(End::Highest, 1), Some((vec!["A", "C"], 3.0)));
        assert_eq!(c.ranked(End::Highest, 2), None);
        assert_eq!(c.ranked(End::Highest, 3), Some((vec!["D"], 2.0)));
        assert_eq!(c.ranked(End::Lowest, 5), None, "too few rows");
        assert_eq!(c.ranked(End::Lowest, 0), None, "no rank 0");
        assert_eq!(c.ranked(End::Either, 1), None);
    }

    fn focused<'a>(columns: &'a [ColumnData], text: &str) -> Option<&'a ColumnData> {
        match focus(columns, &[text]) {
            Focus::One(c) => Some(c),
            _ => None,
        }
    }

    #[test]
    fn focus_is_the_column_a_text_names_most_and_nothing_on_a_tie() {
        let staff = columns_of(
            &serde_json::json!({"data": {"tables": [{"label_column": "Clinic",
            "columns": [{"name": "Staff"}, {"name": "Wait time"}, {"name": "候诊人数"}],
            "rows": [{"label": "North", "values": {"Staff": 12, "Wait time": 31.5, "候诊人数": 4}},
                     {"label": "South", "values": {"Staff": 9, "Wait time": 18, "候诊人数": 7}},
                     {"label": "East", "values": {"Staff": 15, "Wait time": 44, "候诊人数": 2}}]}]}}),
        );
        let wait = focused(&staff, "compute the average wait time of all sites").unwrap();
        assert_eq!(wait.name, "Wait time");
        assert_eq!(wait.labels, ["North", "South", "East"]);
        assert_eq!(
            focused(&staff, "计算平均候诊人数").unwrap().name,
            "候诊人数"
        );
        // No header word in the text, or a tie: no focus.
        assert_eq!(
            focused(&staff, "compute the average of the retrieved values"),
            None
        );
        assert!(matches!(focus(&staff, &["staff and wait"]), Focus::Tie(_)));
        // The column the text keeps coming back to wins over one it mentions in passing.
        assert_eq!(
            focused(
                &staff,
                "the staff wait standard: look up the wait, average the wait"
            )
            .unwrap()
            .name,
            "Wait time"
        );
    }

    #[test]
    fn between_columns_of_one_name_the_rows_the_text_names_decide() {
        // Occupancy by hotel and by month: "average occupancy of all hotels" means the hotels' column,
        // not the first table's and not every column (a 0.5B model once averaged `Rooms`).
        let both = columns_of(&serde_json::json!({"data": {"tables": [
            {"label_column": "Hotel", "columns": [{"name": "Rooms"}, {"name": "Occupancy"}],
             "rows": [{"label": "Quayside", "values": {"Rooms": 120, "Occupancy": 82}},
                      {"label": "Parkside", "values": {"Rooms": 64, "Occupancy": 63.5}}]},
            {"label_column": "Month", "columns": [{"name": "Occupancy"}],
             "rows": [{"label": "July", "values": {"Occupancy": 84.5}},
                      {"label": "August", "values": {"Occupancy": 88}}]}]}}));
        let by_hotel = focused(&both, "compute the average occupancy of all hotels").unwrap();
        assert_eq!(
            (by_hotel.name.as_str(), by_hotel.rows.as_str()),
            ("Occupancy", "Hotel")
        );
        assert_eq!(
            focused(&both, "occupancy in each month").unwrap().rows,
            "Month"
        );
        // A possessive names the rows too.
        assert_eq!(
            focused(
                &both,
                "chart each hotel's occupancy with the computed average as a line"
            )
            .unwrap()
            .rows,
            "Hotel"
        );
        // Named neither way: still a tie, so no focus.
        assert_eq!(focused(&both, "compute the average occupancy"), None);
    }
}
