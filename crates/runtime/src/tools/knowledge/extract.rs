//! Structured data read from parsed markdown, the same way for every file: each table becomes a
//! label column plus numeric series, and each `key: number` line becomes a fact.
//!
//! Every number goes through [`crate::numbers::parse_quantity`]; numbers inside sentences stay prose.
//! This module knows no task, heading or column name: nothing here looks for particular words.
//!
//! Caps (rows, columns, facts) make the whole file `knowledge_corrupt` instead of truncating it: an
//! average over a silently cut table is a wrong answer that looks right, while the error names the
//! table's line and the limit, and `Task::load` can report it before any run.

use crate::numbers::{self, Quantity};

use super::markdown::{ProseLine, RawTable};

/// Most body rows read from one table; a longer table makes the file `knowledge_corrupt`.
pub const MAX_TABLE_ROWS: usize = 200;
/// Most columns read from one table; a wider table makes the file `knowledge_corrupt`.
pub const MAX_TABLE_COLUMNS: usize = 32;
/// Most `key: number` facts in one file; more make the file `knowledge_corrupt`.
pub const MAX_FACTS_PER_FILE: usize = 100;
/// Longest fact key: a longer text before the colon is a sentence, not a key.
const MAX_FACT_KEY_CHARS: usize = 80;
/// Longest header suffix read as a unit (`(min)`, `[kWh]`, `（分钟）`).
const MAX_UNIT_CHARS: usize = 12;

/// Why a file's data cannot be read; becomes a `knowledge_corrupt` tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    #[error("table at line {line} has {rows} rows; at most {MAX_TABLE_ROWS} are read (split it into smaller tables)")]
    TooManyRows { line: usize, rows: usize },
    #[error("table at line {line} has {columns} columns; at most {MAX_TABLE_COLUMNS} are read")]
    TooManyColumns { line: usize, columns: usize },
    #[error("{facts} `key: number` lines; at most {MAX_FACTS_PER_FILE} are read per file (the line after the limit is line {line})")]
    TooManyFacts { facts: usize, line: usize },
}

/// A numeric series of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Header text without its unit; unique within the table (`Score`, `Score (2)`).
    pub name: String,
    /// `%`, `$`, `min`, … from the header or, failing that, from the cells.
    pub unit: Option<String>,
}

/// One body row: its label and one value per numeric column (`None` for an empty cell).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    pub values: Vec<Option<f64>>,
}

/// Lowest and highest value of one column (first row wins a tie).
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStats {
    pub count: usize,
    pub lowest: (String, f64),
    pub highest: (String, f64),
}

/// A table read generically: which column labels the rows, which columns are numeric series.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// 1-based line of the header row.
    pub line: usize,
    /// Header name of the label column.
    pub label_column: String,
    /// Numeric series in header order.
    pub columns: Vec<Column>,
    /// Rows with a non-empty label, in file order.
    pub rows: Vec<Row>,
}

impl Table {
    pub fn has_numeric_column(&self) -> bool {
        !self.columns.is_empty()
    }

    /// Count, lowest and highest of column `index`; `None` when it has no value.
    pub fn stats(&self, index: usize) -> Option<ColumnStats> {
        let mut stats: Option<ColumnStats> = None;
        for row in &self.rows {
            let Some(value) = row.values.get(index).copied().flatten() else { continue };
            let entry = (row.label.clone(), value);
            match stats.as_mut() {
                None => stats = Some(ColumnStats { count: 1, lowest: entry.clone(), highest: entry }),
                Some(s) => {
                    s.count += 1;
                    if value < s.lowest.1 {
                        s.lowest = entry.clone();
                    }
                    if value > s.highest.1 {
                        s.highest = entry;
                    }
                }
            }
        }
        stats
    }
}

/// A `key: number` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    /// 1-based line in the file.
    pub line: usize,
    /// The key as written, markup stripped (`Minimum average uptime`, `average_gte`, `最低平均值`).
    pub key: String,
    pub value: f64,
    pub unit: Option<String>,
}

/// Reads one table. Columns: the label column is the first one holding a non-numeric cell (else
/// the first column); every other column whose non-empty cells are all quantities with one unit
/// is a series. Rows with an empty label are skipped.
pub(crate) fn table(raw: &RawTable) -> Result<Table, ExtractError> {
    if raw.header.len() > MAX_TABLE_COLUMNS {
        return Err(ExtractError::TooManyColumns { line: raw.line, columns: raw.header.len() });
    }
    if raw.rows.len() > MAX_TABLE_ROWS {
        return Err(ExtractError::TooManyRows { line: raw.line, rows: raw.rows.len() });
    }
    let width = raw.header.len();
    let parsed: Vec<Vec<Option<Quantity>>> = raw
        .rows
        .iter()
        .map(|row| (0..width).map(|c| numbers::parse_quantity(cell(row, c))).collect())
        .collect();
    let is_text_cell = |r: usize, c: usize| !cell(&raw.rows[r], c).is_empty() && parsed[r][c].is_none();

    let label_index = (0..width).find(|&c| (0..raw.rows.len()).any(|r| is_text_cell(r, c))).unwrap_or(0);
    let names = column_names(&raw.header);

    let mut series: Vec<(usize, Column)> = Vec::new();
    for c in (0..width).filter(|&c| c != label_index) {
        let filled: Vec<&Quantity> = (0..raw.rows.len()).filter_map(|r| parsed[r][c].as_ref()).collect();
        let all_numbers = (0..raw.rows.len()).all(|r| !is_text_cell(r, c));
        if filled.is_empty() || !all_numbers {
            continue;
        }
        let mut cell_units: Vec<&str> = filled.iter().filter_map(|q| q.unit.as_deref()).collect();
        cell_units.sort_unstable();
        cell_units.dedup();
        if cell_units.len() > 1 {
            continue; // `30 min` next to `2 h`: not one series
        }
        let (name, header_unit) = &names[c];
        let unit = header_unit.clone().or_else(|| cell_units.first().map(|u| (*u).to_owned()));
        series.push((c, Column { name: name.clone(), unit }));
    }

    let rows = raw
        .rows
        .iter()
        .enumerate()
        .filter(|(_, row)| !cell(row, label_index).is_empty())
        .map(|(r, row)| Row {
            label: cell(row, label_index).to_owned(),
            values: series.iter().map(|(c, _)| parsed[r][*c].as_ref().map(|q| q.value)).collect(),
        })
        .collect();
    Ok(Table {
        line: raw.line,
        label_column: names.get(label_index).map(|(n, _)| n.clone()).unwrap_or_default(),
        columns: series.into_iter().map(|(_, column)| column).collect(),
        rows,
    })
}

fn cell(row: &[String], column: usize) -> &str {
    row.get(column).map_or("", |c| c.trim())
}

/// Header cells → unique (name, unit): `Wait (min)` → (`Wait`, `min`); an empty header is
/// `Column <n>`; a repeated name gets ` (2)`, ` (3)`, ….
fn column_names(header: &[String]) -> Vec<(String, Option<String>)> {
    let mut out: Vec<(String, Option<String>)> = Vec::with_capacity(header.len());
    for (index, text) in header.iter().enumerate() {
        let (mut name, unit) = split_unit(text);
        if name.is_empty() {
            name = format!("Column {}", index + 1);
        }
        let base = name.clone();
        let mut n = 2;
        while out.iter().any(|(taken, _)| *taken == name) {
            name = format!("{base} ({n})");
            n += 1;
        }
        out.push((name, unit));
    }
    out
}

/// `Task Success (%)` → (`Task Success`, `%`); `Uptime %` → (`Uptime`, `%`); `Energy [kWh]` →
/// (`Energy`, `kWh`). A bracketed suffix with digits (`New loans (Q3)`) is part of the name.
pub(crate) fn split_unit(header: &str) -> (String, Option<String>) {
    let header = header.trim();
    for (open, close) in [('(', ')'), ('[', ']'), ('（', '）')] {
        if let Some(inner_end) = header.strip_suffix(close)
            && let Some(start) = inner_end.rfind(open)
        {
            let name = inner_end[..start].trim();
            let unit = inner_end[start + open.len_utf8()..].trim();
            let unit_like = !unit.is_empty()
                && unit.chars().count() <= MAX_UNIT_CHARS
                && !unit.chars().any(|c| c.is_ascii_digit());
            if unit_like && !name.is_empty() {
                return (name.to_owned(), Some(unit.to_owned()));
            }
        }
    }
    if let Some(name) = header.strip_suffix('%').map(str::trim)
        && !name.is_empty()
    {
        return (name.to_owned(), Some("%".to_owned()));
    }
    (header.to_owned(), None)
}

/// The fact on one prose line, if the line is `key: number` (ASCII colon followed by a space, or a
/// full-width `：`) and the whole value is one quantity. Code lines are never facts.
pub(crate) fn fact(line: &ProseLine) -> Option<Fact> {
    if line.code {
        return None;
    }
    let text = line.text.as_str();
    let (colon, width) = text.char_indices().find_map(|(i, c)| match c {
        ':' if text[i + 1..].chars().next().is_none_or(char::is_whitespace) => Some((i, 1)),
        '：' => Some((i, c.len_utf8())),
        _ => None,
    })?;
    let key = text[..colon].trim().trim_matches(|c| matches!(c, '*' | '_' | '`')).trim();
    if key.is_empty() || key.chars().count() > MAX_FACT_KEY_CHARS || !key.chars().any(char::is_alphabetic) {
        return None;
    }
    let value = text[colon + width..]
        .trim()
        .trim_end_matches(['.', '。', ';', '；', ','])
        .trim_matches(|c| matches!(c, '*' | '_' | '`'));
    let quantity = numbers::parse_quantity(value)?;
    Some(Fact { line: line.line, key: key.to_owned(), value: quantity.value, unit: quantity.unit })
}

/// Checks the per-file fact cap over all sections' facts, in file order.
pub(crate) fn check_fact_count<'a>(facts: impl Iterator<Item = &'a Fact>) -> Result<(), ExtractError> {
    let facts: Vec<&Fact> = facts.collect();
    match facts.get(MAX_FACTS_PER_FILE) {
        Some(first_over) => Err(ExtractError::TooManyFacts { facts: facts.len(), line: first_over.line }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(header: &[&str], rows: &[&[&str]]) -> RawTable {
        RawTable {
            line: 1,
            header: header.iter().map(|s| (*s).to_owned()).collect(),
            rows: rows.iter().map(|r| r.iter().map(|s| (*s).to_owned()).collect()).collect(),
        }
    }

    fn line(text: &str) -> ProseLine {
        ProseLine { text: text.to_owned(), line: 1, code: false, continues: false }
    }

    #[test]
    fn units_come_from_headers() {
        let s = |h: &str| split_unit(h);
        assert_eq!(s("Task Success (%)"), ("Task Success".into(), Some("%".into())));
        assert_eq!(s("Uptime %"), ("Uptime".into(), Some("%".into())));
        assert_eq!(s("Energy [kWh]"), ("Energy".into(), Some("kWh".into())));
        assert_eq!(s("Revenue ($k)"), ("Revenue".into(), Some("$k".into())));
        assert_eq!(s("等待时间（分钟）"), ("等待时间".into(), Some("分钟".into())));
        assert_eq!(s("New loans (Q3)"), ("New loans (Q3)".into(), None));
        assert_eq!(s("Score"), ("Score".into(), None));
        assert_eq!(s("(%)"), ("(%)".into(), None));
    }

    #[test]
    fn label_column_is_the_first_text_column() {
        let t = table(&raw(&["Year", "Region", "Sales"], &[&["2023", "North", "1,250"], &["2024", "South", "980"]])).unwrap();
        assert_eq!(t.label_column, "Region");
        let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Year", "Sales"]);
        assert_eq!(t.rows[0].values, [Some(2023.0), Some(1250.0)]);

        let years = table(&raw(&["Year", "Revenue ($)"], &[&["2023", "$4.50"], &["2024", "$5"]])).unwrap();
        assert_eq!(years.label_column, "Year");
        assert_eq!(years.rows[1].label, "2024");
        assert_eq!(years.columns[0].unit.as_deref(), Some("$"));
    }

    #[test]
    fn cells_decide_series_and_units() {
        let t = table(&raw(
            &["Site", "Uptime", "Note", "Score", "Score", "Mixed"],
            &[&["A", "99.2%", "ok", "1", "", "30 min"], &["B", "98%", "", "2", "3", "2 h"], &["", "1%", "x", "9", "9", "1 h"]],
        ))
        .unwrap();
        let columns: Vec<(&str, Option<&str>)> = t.columns.iter().map(|c| (c.name.as_str(), c.unit.as_deref())).collect();
        assert_eq!(columns, [("Uptime", Some("%")), ("Score", None), ("Score (2)", None)]);
        assert_eq!(t.rows.len(), 2, "the row without a label is skipped");
        assert_eq!(t.rows[0].values, [Some(99.2), Some(1.0), None]);
        let stats = t.stats(0).unwrap();
        assert_eq!((stats.count, stats.lowest, stats.highest), (2, ("B".into(), 98.0), ("A".into(), 99.2)));
        assert_eq!(t.stats(2).unwrap().count, 1);
    }

    #[test]
    fn facts_are_whole_quantities_after_a_key() {
        let f = |s: &str| fact(&line(s)).map(|f| (f.key, f.value, f.unit));
        assert_eq!(f("average_gte: 78"), Some(("average_gte".into(), 78.0, None)));
        assert_eq!(f("Minimum average uptime: 99.5%"), Some(("Minimum average uptime".into(), 99.5, Some("%".into()))));
        assert_eq!(f("Maximum wait: 30 min."), Some(("Maximum wait".into(), 30.0, Some("min".into()))));
        assert_eq!(f("最低平均值：80"), Some(("最低平均值".into(), 80.0, None)));
        assert_eq!(f("Budget: $1,250"), Some(("Budget".into(), 1250.0, Some("$".into()))));
        for prose in [
            "1.2: Batch D added, with harder tasks.",
            "Clinics open from 08:00 to 20:00",
            "Mock tests: 4 to 8 March",
            "Ratio 3:2",
            "The average must be at least 70: see below",
            "42: 7",
        ] {
            assert_eq!(f(prose), None, "{prose}");
        }
        assert_eq!(fact(&ProseLine { text: "x: 1".into(), line: 1, code: true, continues: false }), None);
    }

    #[test]
    fn caps_are_typed_errors() {
        let wide: Vec<String> = (0..=MAX_TABLE_COLUMNS).map(|i| format!("c{i}")).collect();
        let t = RawTable { line: 4, header: wide, rows: Vec::new() };
        assert_eq!(table(&t), Err(ExtractError::TooManyColumns { line: 4, columns: 33 }));
        let long = RawTable { line: 2, header: vec!["a".into()], rows: vec![vec!["x".into()]; MAX_TABLE_ROWS + 1] };
        assert_eq!(table(&long), Err(ExtractError::TooManyRows { line: 2, rows: 201 }));
        let facts: Vec<Fact> =
            (0..=MAX_FACTS_PER_FILE).map(|i| Fact { line: i + 1, key: "k".into(), value: 1.0, unit: None }).collect();
        assert_eq!(check_fact_count(facts.iter()), Err(ExtractError::TooManyFacts { facts: 101, line: 101 }));
        assert_eq!(check_fact_count(facts[..100].iter()), Ok(()));
    }
}
