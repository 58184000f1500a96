//! Structured data read from parsed markdown, the same way for every file: each table becomes a
//! label column plus numeric series (missing cells as gaps, `Total`/`Average` rows kept apart as
//! summary rows) and the rows' cells in its other text columns, a bullet list of `label: number` items that states no rule becomes a table too, and
//! each other `key: number` line becomes a fact.
//!
//! Every number goes through [`forge_language::numbers::parse_quantity`] (per column: footnote markers, decimal
//! commas and cell units are read by `cells`; a table laid out one row per measure is turned by
//! `transpose`); numbers inside sentences stay prose. This module knows no task, heading or column name;
//! the few words it reads (summary labels, missing markers, period names) are data in
//! [`forge_language::tables`].
//!
//! Caps (rows, columns, facts) make the whole file `knowledge_corrupt` instead of truncating it: an
//! average over a silently cut table is a wrong answer that looks right, while the error names the
//! table's line and the limit, and `Task::load` can report it before any run.

use forge_language::numbers::{self, Quantity};
use forge_language::{tables, units};

pub use super::cells::ColumnError;
use super::cells::{self, split_unit};
use super::markdown::{ProseLine, RawTable};
use super::transpose;

/// Most body rows read from one table; a longer table makes the file `knowledge_corrupt`.
pub const MAX_TABLE_ROWS: usize = 200;
/// Most columns read from one table; a wider table makes the file `knowledge_corrupt`.
pub const MAX_TABLE_COLUMNS: usize = 32;
/// Most `key: number` facts in one file; more make the file `knowledge_corrupt`.
pub const MAX_FACTS_PER_FILE: usize = 100;
/// Longest fact key: a longer text before the colon is a sentence, not a key.
const MAX_FACT_KEY_CHARS: usize = 80;

/// Why a file's data cannot be read; becomes a `knowledge_corrupt` tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    #[error(
        "table at line {line} has {rows} rows; at most {MAX_TABLE_ROWS} are read (split it into smaller tables)"
    )]
    TooManyRows { line: usize, rows: usize },
    #[error("table at line {line} has {columns} columns; at most {MAX_TABLE_COLUMNS} are read")]
    TooManyColumns { line: usize, columns: usize },
    #[error(
        "{facts} `key: number` lines; at most {MAX_FACTS_PER_FILE} are read per file (the line after the limit is line {line})"
    )]
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

/// One body row: its label and one value per numeric column (`None` for a missing cell: empty or a
/// missing marker such as `n/a`, `—`, `TBD`, `暂无`).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    pub values: Vec<Option<f64>>,
    /// Footnote markers written after this row's numbers (`91.4*`), one per marked cell of a series.
    pub notes: Vec<CellNote>,
    /// The row's non-empty cells in the table's text columns other than the label column (`Region`:
    /// `North`), by column name: what a rule may name some of the rows by.
    pub texts: Vec<(String, String)>,
}

/// A footnote marker after a number (`91.4*`, `12.4¹`, `12.4[a]`): the number is read, the marker kept.
#[derive(Debug, Clone, PartialEq)]
pub struct CellNote {
    /// The series the marked cell belongs to.
    pub column: String,
    /// The marker as written (`*`, `¹`, `[a]`, `†`).
    pub marker: String,
    /// The footnote's text, when a line of the same section starts with the marker.
    pub text: Option<String>,
}

impl Row {
    /// Whether the row has no value in numeric column `index` (its cell is empty or a missing marker).
    pub fn is_missing(&self, index: usize) -> bool {
        self.values.get(index).is_some_and(Option::is_none)
    }
}

pub use forge_language::tables::SummaryKind;

/// A row that states a figure about the other rows (`Total`, `Average`, `合计`, first or last in the
/// table): kept apart from [`Table::rows`], so it is never a data row nor part of any statistic.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// The label as written, markup stripped (`Total`, `Grand total:`).
    pub label: String,
    pub kind: SummaryKind,
    /// One value per numeric column, like [`Row::values`].
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
    /// 1-based line of the header row (of the first item for a bullet list read as a table).
    pub line: usize,
    /// Header name of the label column (`""` for a bullet list).
    pub label_column: String,
    /// Numeric series in header order.
    pub columns: Vec<Column>,
    /// Rows with a non-empty label, in file order; summary rows excluded.
    pub rows: Vec<Row>,
    /// Leading and trailing rows labelled `Total`, `Average`, `合计`, … in file order.
    pub summary_rows: Vec<SummaryRow>,
    /// Columns of numbers that could not be read exactly (an ambiguous decimal mark, units that cannot be
    /// compared): not series, named so a claim about them stays unverified.
    pub unread: Vec<ColumnError>,
    /// Whether the table was written one row per measure and one column per period or site, and read
    /// turned (the column headers are the row labels).
    pub transposed: bool,
}

impl Table {
    pub fn has_numeric_column(&self) -> bool {
        !self.columns.is_empty()
    }

    /// Fills each note's text from the section's prose: a line that starts with the note's marker
    /// (`* Audit repeated in week 3`, `¹ Includes night shifts`, `[a] Closed for five days`).
    pub(crate) fn attach_note_texts(&mut self, prose: &[ProseLine]) {
        for note in self.rows.iter_mut().flat_map(|r| r.notes.iter_mut()) {
            note.text = prose
                .iter()
                .filter(|l| !l.code)
                .find_map(|l| l.text.strip_prefix(note.marker.as_str()))
                .map(str::trim)
                .filter(|t| !t.is_empty() && !t.starts_with(|c: char| c.is_ascii_digit()))
                .map(str::to_owned);
        }
    }

    /// Labels of the rows without a value in column `index`, in row order.
    pub fn missing(&self, index: usize) -> Vec<&str> {
        self.rows
            .iter()
            .filter(|r| r.is_missing(index))
            .map(|r| r.label.as_str())
            .collect()
    }

    /// Count, lowest and highest of column `index` over the data rows; `None` when it has no value.
    pub fn stats(&self, index: usize) -> Option<ColumnStats> {
        let mut stats: Option<ColumnStats> = None;
        for row in &self.rows {
            let Some(value) = row.values.get(index).copied().flatten() else {
                continue;
            };
            let entry = (row.label.clone(), value);
            match stats.as_mut() {
                None => {
                    stats = Some(ColumnStats {
                        count: 1,
                        lowest: entry.clone(),
                        highest: entry,
                    })
                }
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

pub(crate) fn table(raw: &RawTable) -> Result<Table, ExtractError> {
    check_caps(raw)?;
    // One row per measure, one column per period or site: read turned, so each measure is a series.
    if let Some(turned) = transpose::reoriented(raw) {
        check_caps(&turned)?;
        let mut table = read_table(&turned);
        table.transposed = true;
        return Ok(table);
    }
    Ok(read_table(raw))
}

fn check_caps(raw: &RawTable) -> Result<(), ExtractError> {
    if raw.header.len() > MAX_TABLE_COLUMNS {
        return Err(ExtractError::TooManyColumns {
            line: raw.line,
            columns: raw.header.len(),
        });
    }
    if raw.rows.len() > MAX_TABLE_ROWS {
        return Err(ExtractError::TooManyRows {
            line: raw.line,
            rows: raw.rows.len(),
        });
    }
    Ok(())
}

/// Which rows are data and which summary rows, and which column labels them.
struct Layout {
    /// Body rows (not summary rows), in order.
    body: Vec<usize>,
    /// Per raw row: its summary label and kind, when it is a summary row.
    summary: Vec<Option<(String, SummaryKind)>>,
    label_index: usize,
}

/// Summary rows: the leading and trailing runs of rows whose first text cell is a summary word; the label
/// column: the first holding a text cell over the other rows (else the first column).
fn layout(grid: &cells::Grid, width: usize, is_text_cell: impl Fn(usize, usize) -> bool) -> Layout {
    let rows = grid.text.len();
    let summary_label = |r: usize| -> Option<(String, SummaryKind)> {
        let first_text = (0..width).find(|&c| is_text_cell(r, c))?;
        let label = grid.text[r][first_text].as_str();
        tables::summary_kind(label).map(|kind| {
            (
                label
                    .trim_matches(|c| matches!(c, '*' | '_'))
                    .trim()
                    .to_owned(),
                kind,
            )
        })
    };
    let summary: Vec<Option<(String, SummaryKind)>> = (0..rows).map(summary_label).collect();
    let leading = summary.iter().take_while(|s| s.is_some()).count();
    let trailing = summary[leading..]
        .iter()
        .rev()
        .take_while(|s| s.is_some())
        .count();
    let body: Vec<usize> = (leading..rows - trailing).collect();
    // A table of nothing but summary rows has no other rows to summarize: its rows are its data.
    let (body, summary) = if body.is_empty() {
        ((0..rows).collect(), vec![None; rows])
    } else {
        (body, summary)
    };
    let label_index = (0..width)
        .find(|&c| body.iter().any(|&r| is_text_cell(r, c)))
        .unwrap_or(0);
    Layout {
        body,
        summary,
        label_index,
    }
}

/// Reads one table (caps already checked). Rows: a leading or trailing run of rows whose first text cell
/// is a whole summary word (`Total`, `**Average**`, `合计`; [`forge_language::tables`]) are summary rows,
/// kept apart. Columns, over the other rows: the label column is the first one holding a text cell
/// (neither a number nor a missing marker), wherever it stands (else the first column); every other
/// column whose cells are all numbers or missing (empty, `n/a`, `—`, `TBD`, …), with at least one number,
/// is a series once its decimal mark and units are read ([`cells`]); a column of numbers that cannot be
/// read exactly is listed in [`Table::unread`]. Footnote markers after numbers become row notes. Rows
/// with an empty label are skipped.
fn read_table(raw: &RawTable) -> Table {
    let width = raw.header.len();
    let grid = cells::Grid::new(&raw.rows, width);
    let looks_numeric: Vec<Vec<bool>> = grid
        .text
        .iter()
        .map(|row| {
            row.iter()
                .map(|c| cells::reads_as_number(c) || units::clock::is_clock_cell(c))
                .collect()
        })
        .collect();
    let is_text_cell =
        |r: usize, c: usize| !looks_numeric[r][c] && !tables::is_missing_marker(&grid.text[r][c]);
    let Layout {
        mut body,
        mut summary,
        label_index,
    } = layout(&grid, width, is_text_cell);
    let names = column_names(&raw.header);
    let candidates: Vec<usize> = (0..width)
        .filter(|&c| c != label_index)
        .filter(|&c| !body.iter().any(|&r| is_text_cell(r, c)))
        .filter(|&c| body.iter().any(|&r| looks_numeric[r][c]))
        .collect();
    let (series, unread) = read_series(&grid, &body, &names, &candidates);
    if let Some(r) = total_by_arithmetic(&series, &body) {
        // A last row that is the sum of the rows above in every numeric column is a total, whatever its label
        // says ("全区", "Σ", "Network"): as a data row it would double every statistic.
        body.retain(|&b| b != r);
        summary[r] = Some((raw_label(raw, r, label_index), SummaryKind::Sum));
    }
    let text_columns: Vec<usize> = (0..width)
        .filter(|&c| c != label_index && !candidates.contains(&c))
        .filter(|&c| body.iter().any(|&r| is_text_cell(r, c)))
        .collect();
    let values = |r: usize| -> Vec<Option<f64>> { series.iter().map(|(_, _, v)| v[r]).collect() };
    let notes = |r: usize| -> Vec<CellNote> {
        series
            .iter()
            .filter_map(|(c, column, _)| {
                Some(CellNote {
                    column: column.name.clone(),
                    marker: grid.markers[r][*c].clone()?,
                    text: None,
                })
            })
            .collect()
    };
    let rows = body
        .iter()
        .filter(|&&r| !grid.text[r][label_index].is_empty())
        .map(|&r| Row {
            label: raw_label(raw, r, label_index),
            values: values(r),
            notes: notes(r),
            texts: text_cells(&grid, &names, &text_columns, r),
        })
        .collect();
    let summary_rows = (0..raw.rows.len())
        .filter(|r| !body.contains(r))
        .filter_map(|r| {
            let (label, kind) = summary[r].clone()?;
            Some(SummaryRow {
                label,
                kind,
                values: values(r),
            })
        })
        .collect();
    Table {
        line: raw.line,
        label_column: names
            .get(label_index)
            .map(|(n, _)| n.clone())
            .unwrap_or_default(),
        columns: series.into_iter().map(|(_, column, _)| column).collect(),
        rows,
        summary_rows,
        unread,
        transposed: false,
    }
}

/// The last body row when, in at least two numeric columns and in every one where it has a value (shares
/// aside: a total row states the overall share), it holds the sum of the other body rows (to a relative 1e-9), over at least two other rows; `None` otherwise. Two columns
/// are asked for because one column's last value can equal the sum above it by chance (10, 20, 30).
fn total_by_arithmetic(series: &[Series], body: &[usize]) -> Option<usize> {
    let (&last, others) = body.split_last()?;
    if others.len() < 2 {
        return None;
    }
    let mut agreeing = 0;
    for (_, column, values) in series {
        // A total row's share is the overall share (`All rinks … 60 %`), never a sum of shares: it neither
        // agrees nor disagrees (held-out set 9: "All rinks" was read as a sixth rink).
        let share = forge_language::units::is_share(column.unit.as_deref());
        let (Some(stated), false) = (values[last], share) else {
            continue;
        };
        let sum: f64 = others.iter().filter_map(|&r| values[r]).sum();
        if (stated - sum).abs() > 1e-9 * sum.abs().max(1.0) {
            return None;
        }
        agreeing += 1;
    }
    (agreeing >= 2).then_some(last)
}

/// Row `r`'s non-empty cells in `columns` (text columns), by column name.
fn text_cells(
    grid: &cells::Grid,
    names: &[(String, Option<String>)],
    columns: &[usize],
    r: usize,
) -> Vec<(String, String)> {
    columns
        .iter()
        .filter(|&&c| !grid.text[r][c].trim().is_empty())
        .map(|&c| (names[c].0.clone(), grid.text[r][c].trim().to_owned()))
        .collect()
}

/// A numeric series: its raw column index, its name and unit, and one value per raw row.
type Series = (usize, Column, Vec<Option<f64>>);

/// Reads the `candidates` (columns of numbers and missing markers) as series, each with its decimal mark
/// and in one unit; a column that cannot be read exactly is returned as its [`ColumnError`] instead.
fn read_series(
    grid: &cells::Grid,
    body: &[usize],
    names: &[(String, Option<String>)],
    candidates: &[usize],
) -> (Vec<Series>, Vec<ColumnError>) {
    let plain_names: Vec<String> = names.iter().map(|(n, _)| n.clone()).collect();
    let marks = cells::decimal_marks(grid, body, &plain_names);
    let mut series = Vec::new();
    let mut unread = Vec::new();
    for &c in candidates {
        let (name, header_unit) = &names[c];
        // Durations on a clock face (`1:12` under `Turnaround (h:mm)`): read in the header's layout, in its
        // smallest unit, or refused by name; never a text column the slots and rules could not see.
        match cells::clock_column(grid, c, body, name, header_unit.as_deref()) {
            Ok(Some(quantities)) => {
                let unit = quantities.iter().flatten().find_map(|q| q.unit.clone());
                series.push((
                    c,
                    Column {
                        name: name.clone(),
                        unit,
                    },
                    quantities.into_iter().map(|q| q.map(|q| q.value)).collect(),
                ));
                continue;
            }
            Ok(None) => {}
            Err(error) => {
                unread.push(error);
                continue;
            }
        }
        let mark = match &marks[c] {
            Ok(mark) => *mark,
            Err(error) => {
                unread.push(error.clone());
                continue;
            }
        };
        let mut quantities: Vec<Option<Quantity>> = grid
            .text
            .iter()
            .map(|row| numbers::parse_quantity_with(&row[c], mark))
            .collect();
        match cells::one_unit(name, header_unit.as_deref(), &mut quantities) {
            Ok(unit) => series.push((
                c,
                Column {
                    name: name.clone(),
                    unit,
                },
                quantities.into_iter().map(|q| q.map(|q| q.value)).collect(),
            )),
            Err(error) => unread.push(error),
        }
    }
    (series, unread)
}

/// A row's label as written (a label keeps any marker it carries: it is a name, not a number).
fn raw_label(raw: &RawTable, row: usize, label_index: usize) -> String {
    cell(&raw.rows[row], label_index).to_owned()
}

fn cell(row: &[String], column: usize) -> &str {
    row.get(column).map_or("", |c| c.trim())
}

/// The name an empty header gets: its place (`Column 3`), no word of what the column holds.
fn placeholder_header(index: usize) -> String {
    format!("Column {}", index + 1)
}

/// Whether `name` is the name an empty header got ([`placeholder_header`]): a column nobody named.
pub fn is_placeholder_header(name: &str) -> bool {
    name.strip_prefix("Column ")
        .is_some_and(|n| n.parse::<usize>().is_ok_and(|n| n > 0))
}

/// Header cells → unique (name, unit): `Wait (min)` → (`Wait`, `min`); an empty header is
/// `Column <n>`; a repeated name gets ` (2)`, ` (3)`, ….
fn column_names(header: &[String]) -> Vec<(String, Option<String>)> {
    let mut out: Vec<(String, Option<String>)> = Vec::with_capacity(header.len());
    for (index, text) in header.iter().enumerate() {
        let (mut name, unit) = split_unit(text);
        if name.is_empty() {
            name = placeholder_header(index);
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
    let key = text[..colon]
        .trim()
        .trim_matches(|c| matches!(c, '*' | '_' | '`'))
        .trim();
    if key.is_empty()
        || key.chars().count() > MAX_FACT_KEY_CHARS
        || !key.chars().any(char::is_alphabetic)
    {
        return None;
    }
    let value = text[colon + width..]
        .trim()
        .trim_end_matches(['.', '。', ';', '；', ','])
        .trim_matches(|c| matches!(c, '*' | '_' | '`'));
    let quantity = fact_quantity(value)?;
    Some(Fact {
        line: line.line,
        key: key.to_owned(),
        value: quantity.value,
        unit: quantity.unit,
    })
}

/// A fact's value: a quantity as [`numbers::parse_quantity`] reads it, or one written with a decimal comma
/// that only a decimal comma reads (`7,0 t/ha`; `1,250` stays 1250).
fn fact_quantity(value: &str) -> Option<Quantity> {
    numbers::parse_quantity(value).or_else(|| {
        (numbers::decimal_evidence(value) == numbers::DecimalEvidence::Comma)
            .then(|| numbers::parse_quantity_with(value, numbers::DecimalMark::Comma))
            .flatten()
    })
}

/// The `key`, value text and quantity of a list item written `key: number`, `key — number` or
/// `key = number` (key rules as for [`fact`]). Code lines are never items.
fn list_item(line: &ProseLine) -> Option<(String, String, Quantity)> {
    if line.code || line.item.is_none() {
        return None;
    }
    let text = line.text.as_str();
    let colon = text.char_indices().find_map(|(i, c)| match c {
        ':' if text[i + 1..].chars().next().is_none_or(char::is_whitespace) => Some((i, 1)),
        '：' => Some((i, c.len_utf8())),
        _ => None,
    });
    let (at, width) = colon.or_else(|| {
        text.char_indices()
            .find(|(_, c)| matches!(c, '—' | '='))
            .map(|(i, c)| (i, c.len_utf8()))
    })?;
    let key = text[..at]
        .trim()
        .trim_matches(|c| matches!(c, '*' | '_' | '`'))
        .trim();
    if key.is_empty()
        || key.chars().count() > MAX_FACT_KEY_CHARS
        || !key.chars().any(char::is_alphabetic)
    {
        return None;
    }
    let value = text[at + width..]
        .trim()
        .trim_end_matches(['.', '。', ';', '；', ','])
        .trim_matches(|c| matches!(c, '*' | '_' | '`'))
        .trim();
    let quantity = numbers::parse_quantity(value)?;
    Some((key.to_owned(), value.to_owned(), quantity))
}

/// Bullet lists that are data: a run of two or more consecutive items of one list, each `label: number`
/// (or `label — number`, `label = number`), all with one unit (or none), in a list where no item's key
/// reads as a rule ([`forge_language::rules::understand`]: such a list states rules, and stays facts). Each
/// run becomes a raw table (`""` | the section title, `Output per line (units)` → column
/// `Output per line`, unit `units`; `Value` for the preamble) to be read by [`table`]; returned with
/// the indexes of the prose lines it takes, which are then neither facts nor prose.
pub(crate) fn bullet_tables(
    title: &str,
    lines: &[ProseLine],
) -> Vec<(std::ops::Range<usize>, RawTable)> {
    let items: Vec<Option<(String, String, Quantity)>> = lines.iter().map(list_item).collect();
    let states_a_rule = |list: usize| {
        lines.iter().zip(&items).any(|(line, item)| {
            line.item == Some(list)
                && item.as_ref().is_some_and(|(key, _, q)| {
                    forge_language::rules::understand(key, q.value).is_some()
                })
        })
    };
    let header = if title == super::markdown::PREAMBLE
        || title == super::markdown::UNTITLED
        || title.trim().is_empty()
    {
        "Value".to_owned()
    } else {
        title.to_owned()
    };
    let mut out = Vec::new();
    let mut start = 0;
    while start < lines.len() {
        let Some(list) = lines[start].item.filter(|_| items[start].is_some()) else {
            start += 1;
            continue;
        };
        let unit = items[start].as_ref().and_then(|(_, _, q)| q.unit.clone());
        let mut end = start + 1;
        while end < lines.len()
            && lines[end].item == Some(list)
            && items[end].as_ref().is_some_and(|(_, _, q)| q.unit == unit)
        {
            end += 1;
        }
        if end - start >= 2 && !states_a_rule(list) {
            let rows = items[start..end]
                .iter()
                .flatten()
                .map(|(key, value, _)| vec![key.clone(), value.clone()])
                .collect();
            out.push((
                start..end,
                RawTable {
                    line: lines[start].line,
                    header: vec![String::new(), header.clone()],
                    rows,
                },
            ));
        }
        start = end;
    }
    out
}

/// Checks the per-file fact cap over all sections' facts, in file order.
pub(crate) fn check_fact_count<'a>(
    facts: impl Iterator<Item = &'a Fact>,
) -> Result<(), ExtractError> {
    let facts: Vec<&Fact> = facts.collect();
    match facts.get(MAX_FACTS_PER_FILE) {
        Some(first_over) => Err(ExtractError::TooManyFacts {
            facts: facts.len(),
            line: first_over.line,
        }),
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
            rows: rows
                .iter()
                .map(|r| r.iter().map(|s| (*s).to_owned()).collect())
                .collect(),
        }
    }

    fn line(text: &str) -> ProseLine {
        ProseLine {
            text: text.to_owned(),
            line: 1,
            code: false,
            continues: false,
            item: None,
        }
    }

    #[test]
    fn units_come_from_headers() {
        let s = |h: &str| split_unit(h);
        assert_eq!(
            s("Task Success (%)"),
            ("Task Success".into(), Some("%".into()))
        );
        assert_eq!(s("Uptime %"), ("Uptime".into(), Some("%".into())));
        assert_eq!(s("Energy [kWh]"), ("Energy".into(), Some("kWh".into())));
        assert_eq!(s("Revenue ($k)"), ("Revenue".into(), Some("$k".into())));
        assert_eq!(
            s("等待时间（分钟）"),
            ("等待时间".into(), Some("分钟".into()))
        );
        assert_eq!(s("New loans (Q3)"), ("New loans (Q3)".into(), None));
        assert_eq!(
            s("Weekly footfall ('000)"),
            ("Weekly footfall".into(), Some("'000".into()))
        );
        assert_eq!(s("Score"), ("Score".into(), None));
        assert_eq!(s("Wait, minutes"), ("Wait".into(), Some("minutes".into())));
        assert_eq!(s("Sales, North"), ("Sales, North".into(), None));
        assert_eq!(s("(%)"), ("(%)".into(), None));
    }

    #[test]
    fn label_column_is_the_first_text_column() {
        let t = table(&raw(
            &["Year", "Region", "Sales"],
            &[&["2023", "North", "1,250"], &["2024", "South", "980"]],
        ))
        .unwrap();
        assert_eq!(t.label_column, "Region");
        let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Year", "Sales"]);
        assert_eq!(t.rows[0].values, [Some(2023.0), Some(1250.0)]);

        let years = table(&raw(
            &["Year", "Revenue ($)"],
            &[&["2023", "$4.50"], &["2024", "$5"]],
        ))
        .unwrap();
        assert_eq!(years.label_column, "Year");
        assert_eq!(years.rows[1].label, "2024");
        assert_eq!(years.columns[0].unit.as_deref(), Some("$"));
    }

    #[test]
    fn cells_decide_series_and_units() {
        let t = table(&raw(
            &["Site", "Uptime", "Note", "Score", "Score", "Mixed"],
            &[
                &["A", "99.2%", "ok", "1", "", "30 min"],
                &["B", "98%", "", "2", "3", "2 kg"],
                &["", "1%", "x", "9", "9", "1 h"],
            ],
        ))
        .unwrap();
        let columns: Vec<(&str, Option<&str>)> = t
            .columns
            .iter()
            .map(|c| (c.name.as_str(), c.unit.as_deref()))
            .collect();
        assert_eq!(
            columns,
            [("Uptime", Some("%")), ("Score", None), ("Score (2)", None)]
        );
        assert_eq!(t.rows.len(), 2, "the row without a label is skipped");
        assert_eq!(t.rows[0].values, [Some(99.2), Some(1.0), None]);
        let stats = t.stats(0).unwrap();
        assert_eq!(
            (stats.count, stats.lowest, stats.highest),
            (2, ("B".into(), 98.0), ("A".into(), 99.2))
        );
        assert_eq!(t.stats(2).unwrap().count, 1);
        // `30 min` beside `2 kg`: not one series, and named as unread.
        assert_eq!(t.unread.len(), 1);
        assert_eq!(t.unread[0].column(), "Mixed");
    }

    #[test]
    fn cells_in_two_units_of_one_kind_are_converted() {
        let t = table(&raw(
            &["Desk", "Wait", "Wait (s)"],
            &[&["A", "4 min", "270"], &["B", "270 s", "4 min"]],
        ))
        .unwrap();
        assert_eq!(t.columns[0].unit.as_deref(), Some("min"));
        assert_eq!(values(&t, 0), [Some(4.0), Some(4.5)]);
        assert_eq!(t.columns[1].unit.as_deref(), Some("s"));
        assert_eq!(values(&t, 1), [Some(270.0), Some(240.0)]);
    }

    #[test]
    fn footnoted_cells_are_read_with_their_marker_as_a_row_note() {
        let t = table(&raw(
            &["Ward", "Compliance (%)"],
            &[
                &["Ash", "94.5"],
                &["Beech", "91.4*"],
                &["Cedar", "88.0¹"],
                &["Dove", "96.2[a]"],
            ],
        ))
        .unwrap();
        assert_eq!(
            values(&t, 0),
            [Some(94.5), Some(91.4), Some(88.0), Some(96.2)]
        );
        let notes: Vec<(&str, &str)> = t
            .rows
            .iter()
            .flat_map(|r| {
                r.notes
                    .iter()
                    .map(move |n| (r.label.as_str(), n.marker.as_str()))
            })
            .collect();
        assert_eq!(notes, [("Beech", "*"), ("Cedar", "¹"), ("Dove", "[a]")]);
        assert_eq!(t.rows[1].notes[0].column, "Compliance");
    }

    #[test]
    fn clock_cells_read_in_the_layout_the_header_states_or_the_column_is_unread_by_name() {
        // Held-out set 16: `1:12` cells were a text column, and "average turnaround" was checked on
        // `Turnarounds`, a count of flights, and certified.
        let rows: &[&[&str]] = &[
            &["Northwind", "412", "1:12"],
            &["Baltic Air", "286", "1:21"],
            &["Corrie", "198", "n/a"],
        ];
        let t = table(&raw(&["Airline", "Turnarounds", "Turnaround (h:mm)"], rows)).unwrap();
        assert_eq!(t.columns[1].name, "Turnaround");
        assert_eq!(t.columns[1].unit.as_deref(), Some("min"));
        assert_eq!(values(&t, 1), [Some(72.0), Some(81.0), None]);
        let t = table(&raw(
            &["Airline", "Turnarounds", "Turnaround (mm:ss)"],
            rows,
        ))
        .unwrap();
        assert_eq!(t.columns[1].unit.as_deref(), Some("s"));
        assert_eq!(values(&t, 1), [Some(72.0), Some(81.0), None]);
        // No layout stated: hours or minutes, not known; the column is unread, by name, and the table loads.
        let t = table(&raw(&["Airline", "Turnarounds", "Turnaround"], rows)).unwrap();
        assert_eq!(t.columns.len(), 1);
        assert_eq!(
            t.unread,
            [ColumnError::ClockLayoutUnstated {
                column: "Turnaround".into(),
                cell: "1:12".into()
            }]
        );
        // A cell outside the stated layout leaves the column unread too.
        let t = table(&raw(
            &["Airline", "Turnarounds", "Turnaround (h:mm)"],
            &[
                &["Northwind", "412", "1:12"],
                &["Baltic Air", "286", "1:21:30"],
            ],
        ))
        .unwrap();
        assert!(
            matches!(&t.unread[..], [ColumnError::ClockCell { cell, .. }] if cell == "1:21:30"),
            "{:?}",
            t.unread
        );
    }

    #[test]
    fn decimal_commas_are_read_per_column_and_ambiguous_columns_named() {
        let t = table(&raw(
            &["Plot", "Area (ha)", "Vines", "Rain (mm)", "Yield (t/ha)"],
            &[
                &["Nord", "2,4", "9,600", "412", "7,4"],
                &["Sud", "1,8", "7,200", "398", "6,1"],
            ],
        ))
        .unwrap();
        let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Area", "Rain", "Yield"]);
        assert_eq!(values(&t, 2), [Some(7.4), Some(6.1)]);
        assert_eq!(
            t.unread,
            [ColumnError::AmbiguousDecimalMark {
                column: "Vines".into(),
                cell: "9,600".into()
            }]
        );
    }

    #[test]
    fn a_table_one_row_per_measure_is_read_turned() {
        let t = table(&raw(
            &["Measure", "Jan", "Feb", "Mar"],
            &[
                &["Calls offered", "4,210", "3,980", "4,650"],
                &["Abandonment rate (%)", "6.2", "5.8", "7.4"],
            ],
        ))
        .unwrap();
        assert!(t.transposed);
        assert_eq!(t.label_column, "Month");
        let labels: Vec<&str> = t.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["Jan", "Feb", "Mar"]);
        assert_eq!(t.columns[1].name, "Abandonment rate");
        assert_eq!(t.columns[1].unit.as_deref(), Some("%"));
        assert_eq!(t.stats(1).unwrap().highest, ("Mar".into(), 7.4));
    }

    #[test]
    fn facts_are_whole_quantities_after_a_key() {
        let f = |s: &str| fact(&line(s)).map(|f| (f.key, f.value, f.unit));
        assert_eq!(
            f("average_gte: 78"),
            Some(("average_gte".into(), 78.0, None))
        );
        assert_eq!(
            f("Minimum average uptime: 99.5%"),
            Some(("Minimum average uptime".into(), 99.5, Some("%".into())))
        );
        assert_eq!(
            f("Maximum wait: 30 min."),
            Some(("Maximum wait".into(), 30.0, Some("min".into())))
        );
        assert_eq!(f("最低平均值：80"), Some(("最低平均值".into(), 80.0, None)));
        assert_eq!(
            f("Minimum average yield: 7,0 t/ha"),
            Some(("Minimum average yield".into(), 7.0, Some("t/ha".into())))
        );
        assert_eq!(
            f("Budget: $1,250"),
            Some(("Budget".into(), 1250.0, Some("$".into())))
        );
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
        assert_eq!(
            fact(&ProseLine {
                text: "x: 1".into(),
                line: 1,
                code: true,
                continues: false,
                item: None
            }),
            None
        );
    }

    #[test]
    fn caps_are_typed_errors() {
        let wide: Vec<String> = (0..=MAX_TABLE_COLUMNS).map(|i| format!("c{i}")).collect();
        let t = RawTable {
            line: 4,
            header: wide,
            rows: Vec::new(),
        };
        assert_eq!(
            table(&t),
            Err(ExtractError::TooManyColumns {
                line: 4,
                columns: 33
            })
        );
        let long = RawTable {
            line: 2,
            header: vec!["a".into()],
            rows: vec![vec!["x".into()]; MAX_TABLE_ROWS + 1],
        };
        assert_eq!(
            table(&long),
            Err(ExtractError::TooManyRows { line: 2, rows: 201 })
        );
        let facts: Vec<Fact> = (0..=MAX_FACTS_PER_FILE)
            .map(|i| Fact {
                line: i + 1,
                key: "k".into(),
                value: 1.0,
                unit: None,
            })
            .collect();
        assert_eq!(
            check_fact_count(facts.iter()),
            Err(ExtractError::TooManyFacts {
                facts: 101,
                line: 101
            })
        );
        assert_eq!(check_fact_count(facts[..100].iter()), Ok(()));
    }

    fn values(t: &Table, column: usize) -> Vec<Option<f64>> {
        t.rows.iter().map(|r| r.values[column]).collect()
    }

    #[test]
    fn summary_rows_are_kept_apart_first_or_last() {
        let t = table(&raw(
            &["Store", "Sales ($)", "Staff"],
            &[
                &["Total", "3,000", "9"],
                &["North", "1,000", "3"],
                &["South", "2,000", "6"],
                &["**Average**", "1,500", ""],
                &["Overall:", "", "4.5"],
            ],
        ))
        .unwrap();
        let labels: Vec<&str> = t.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["North", "South"]);
        let summary: Vec<(&str, SummaryKind, Vec<Option<f64>>)> = t
            .summary_rows
            .iter()
            .map(|s| (s.label.as_str(), s.kind, s.values.clone()))
            .collect();
        assert_eq!(
            summary,
            [
                ("Total", SummaryKind::Sum, vec![Some(3000.0), Some(9.0)]),
                ("Average", SummaryKind::Mean, vec![Some(1500.0), None]),
                ("Overall:", SummaryKind::Other, vec![None, Some(4.5)]),
            ]
        );
        let stats = t.stats(0).unwrap();
        assert_eq!(
            (stats.count, stats.highest),
            (2, ("South".into(), 2000.0)),
            "summary rows are never in stats"
        );
    }

    #[test]
    fn only_whole_summary_words_at_the_ends_are_summary_rows() {
        let t = table(&raw(
            &["Clinic", "Wait (min)"],
            &[
                &["Total Care Clinic", "30"],
                &["Mean Street", "20"],
                &["Total", "12"],
                &["East", "40"],
                &["合计", "102"],
            ],
        ))
        .unwrap();
        let labels: Vec<&str> = t.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            ["Total Care Clinic", "Mean Street", "Total", "East"],
            "a Total in the middle is a row as written"
        );
        assert_eq!(t.summary_rows.len(), 1);
        assert_eq!(
            (t.summary_rows[0].label.as_str(), t.summary_rows[0].kind),
            ("合计", SummaryKind::Sum)
        );
        // The first text cell names the summary even in front of the label column.
        let t = table(&raw(
            &["Week", "Depot", "Late"],
            &[
                &["1", "North", "4"],
                &["2", "South", "6"],
                &["Total", "", "10"],
            ],
        ))
        .unwrap();
        assert_eq!(t.label_column, "Depot");
        assert_eq!(
            t.columns
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["Week", "Late"]
        );
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.summary_rows[0].values, [None, Some(10.0)]);
        // A table of nothing but a summary row keeps it as data.
        let only = table(&raw(&["Item", "Cost"], &[&["Total", "12"]])).unwrap();
        assert_eq!((only.rows.len(), only.summary_rows.len()), (1, 0));
    }

    #[test]
    fn missing_cells_keep_a_column_numeric() {
        let markers = [
            "n/a", "N/A", "NA", "—", "–", "-", "", "TBD", "tbc", "?", "无", "缺", "暂无",
        ];
        let rows: Vec<Vec<String>> = markers
            .iter()
            .enumerate()
            .map(|(i, m)| vec![format!("Site {i}"), (*m).to_owned(), format!("{i}")])
            .chain([vec!["Last".to_owned(), "7.5".to_owned(), "1".to_owned()]])
            .collect();
        let t = table(&RawTable {
            line: 1,
            header: vec!["Site".into(), "Uptime (%)".into(), "Staff".into()],
            rows,
        })
        .unwrap();
        assert_eq!(
            t.columns
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["Uptime", "Staff"]
        );
        assert_eq!(t.missing(0).len(), markers.len());
        assert!(
            t.rows[..markers.len()]
                .iter()
                .all(|r| r.is_missing(0) && !r.is_missing(1))
        );
        assert_eq!(t.stats(0).unwrap().count, 1);
        assert!(t.missing(1).is_empty());
        // Any other text means the column is not a series.
        let t = table(&raw(
            &["Site", "Uptime"],
            &[&["A", "99"], &["B", "down"], &["C", "n/a"]],
        ))
        .unwrap();
        assert!(t.columns.is_empty());
        // A column of nothing but markers is not a series either.
        let t = table(&raw(
            &["Site", "Uptime", "Staff"],
            &[&["A", "n/a", "3"], &["B", "—", "4"]],
        ))
        .unwrap();
        assert_eq!(
            t.columns
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["Staff"]
        );
    }

    #[test]
    fn negative_cells_in_every_form() {
        let t = table(&raw(
            &["Account", "Change"],
            &[
                &["a", "-3.1"],
                &["b", "\u{2212}3.1"],
                &["c", "\u{2013}3.1"],
                &["d", "(3.1)"],
                &["e", "-3.1"],
                &["f", "2"],
            ],
        ))
        .unwrap();
        assert_eq!(
            values(&t, 0),
            [
                Some(-3.1),
                Some(-3.1),
                Some(-3.1),
                Some(-3.1),
                Some(-3.1),
                Some(2.0)
            ]
        );
        let money = table(&raw(
            &["Account", "Net"],
            &[
                &["a", "($3.10)"],
                &["b", "-$3.10"],
                &["c", "$-3.10"],
                &["d", "$4.50"],
            ],
        ))
        .unwrap();
        assert_eq!(
            values(&money, 0),
            [Some(-3.1), Some(-3.1), Some(-3.1), Some(4.5)]
        );
        assert_eq!(money.columns[0].unit.as_deref(), Some("$"));
        let pct = table(&raw(
            &["Site", "Growth"],
            &[&["a", "-3.1%"], &["b", "(2%)"], &["c", "4%"]],
        ))
        .unwrap();
        assert_eq!(values(&pct, 0), [Some(-3.1), Some(-2.0), Some(4.0)]);
        assert_eq!(pct.stats(0).unwrap().lowest, ("a".into(), -3.1));
    }

    #[test]
    fn thousands_separators_and_units_stay_with_their_cells() {
        let t = table(&raw(
            &["Plant", "Output", "Distance", "Price", "Share", "Wait"],
            &[
                &["A", "12,400", "1.2 km", "$4.50", "12%", "42 min"],
                &["B", "12 400", "3 km", "$5", "8%", "30 min"],
                &["C", "12\u{00A0}400", "0.5 km", "$0.75", "1.5%", "5 min"],
                &["D", "12\u{202F}400", "2 km", "$1", "0%", "1 min"],
                &["E", "12\u{2009}400", "1 km", "$2", "3%", "2 min"],
            ],
        ))
        .unwrap();
        let columns: Vec<(&str, Option<&str>)> = t
            .columns
            .iter()
            .map(|c| (c.name.as_str(), c.unit.as_deref()))
            .collect();
        assert_eq!(
            columns,
            [
                ("Output", None),
                ("Distance", Some("km")),
                ("Price", Some("$")),
                ("Share", Some("%")),
                ("Wait", Some("min"))
            ]
        );
        assert_eq!(values(&t, 0), [Some(12400.0); 5]);
        assert_eq!(
            t.rows[0].values,
            [Some(12400.0), Some(1.2), Some(4.5), Some(12.0), Some(42.0)]
        );
        // European `12.400,5`: a column that only a decimal comma reads is read with one.
        let eu = table(&raw(
            &["Plant", "Output"],
            &[&["A", "12.400,5"], &["B", "9.100,0"]],
        ))
        .unwrap();
        assert_eq!(values(&eu, 0), [Some(12400.5), Some(9100.0)]);
    }

    #[test]
    fn tables_of_26_and_200_rows_parse() {
        for n in [26, MAX_TABLE_ROWS] {
            let rows: Vec<Vec<String>> = (0..n)
                .map(|i| vec![format!("Row {i}"), format!("{}", i * 10)])
                .collect();
            let t = table(&RawTable {
                line: 3,
                header: vec!["Name".into(), "Score".into()],
                rows,
            })
            .unwrap();
            assert_eq!(t.rows.len(), n);
            assert_eq!(
                t.stats(0).unwrap().highest,
                (format!("Row {}", n - 1), ((n - 1) * 10) as f64)
            );
        }
    }

    fn item(text: &str, line_no: usize, list: usize) -> ProseLine {
        ProseLine {
            text: text.to_owned(),
            line: line_no,
            code: false,
            continues: false,
            item: Some(list),
        }
    }

    #[test]
    fn bullet_lists_of_numbers_are_tables_unless_they_state_rules() {
        let lines = [
            line("Each line's output:"),
            item("Line A: 120", 3, 1),
            item("Line B — 95", 4, 1),
            item("Line C = 130", 5, 1),
            item("Total: 345", 6, 1),
        ];
        let found = bullet_tables("Output per line (units)", &lines);
        assert_eq!(found.len(), 1);
        let (range, raw) = &found[0];
        assert_eq!(range.clone(), 1..5);
        assert_eq!(raw.line, 3);
        let t = table(raw).unwrap();
        assert_eq!(
            t.columns,
            [Column {
                name: "Output per line".into(),
                unit: Some("units".into())
            }]
        );
        assert_eq!(
            t.rows
                .iter()
                .map(|r| (r.label.as_str(), r.values[0]))
                .collect::<Vec<_>>(),
            [
                ("Line A", Some(120.0)),
                ("Line B", Some(95.0)),
                ("Line C", Some(130.0))
            ]
        );
        assert_eq!(t.summary_rows[0].values, [Some(345.0)]);

        // A list holding a rule stays facts.
        let rules = [
            item("Maximum average wait: 30 min", 1, 1),
            item("North: 24 min", 2, 1),
            item("South: 31 min", 3, 1),
        ];
        assert!(bullet_tables("Clinic waits", &rules).is_empty());
        // One item, mixed units, two lists, a paragraph between, or a line that is not an item: no table.
        assert!(bullet_tables("T", &[item("A: 1", 1, 1)]).is_empty());
        assert!(bullet_tables("T", &[item("A: 1 min", 1, 1), item("B: 2 h", 2, 1)]).is_empty());
        assert!(bullet_tables("T", &[item("A: 1", 1, 1), item("B: 2", 2, 2)]).is_empty());
        assert!(bullet_tables("T", &[item("A: 1", 1, 1), line("B: 2")]).is_empty());
        let with_prose = [
            item("A: 1", 1, 1),
            item("see the note", 2, 1),
            item("B: 2", 3, 1),
            item("C: 3", 4, 1),
        ];
        let found = bullet_tables("T", &with_prose);
        let ranges: Vec<(usize, usize)> = found.iter().map(|(r, _)| (r.start, r.end)).collect();
        assert_eq!(ranges, [(2, 4)]);
        // The preamble has no heading: the column is `Value`.
        let (_, raw) = &bullet_tables(
            super::super::markdown::PREAMBLE,
            &[item("A: $1", 1, 1), item("B: $2", 2, 1)],
        )[0];
        let t = table(raw).unwrap();
        assert_eq!(
            t.columns,
            [Column {
                name: "Value".into(),
                unit: Some("$".into())
            }]
        );
    }
}
