//! CSV and TSV data read as tables, with the `csv` crate (RFC 4180: quoted fields, `""` escapes, commas
//! inside quotes): fenced ```` ```csv ```` / ```` ```tsv ```` blocks in markdown, bare comma-separated
//! blocks (a paragraph of three or more lines with one field count, a header of names and a column of
//! numbers), and whole `.csv` / `.tsv` knowledge files. Each becomes the same raw table a GFM table
//! gives, so `extract` reads it the same way.
//!
//! A malformed block or file (a row with more or fewer fields than the header, a broken quote) is a
//! [`DelimitedError`] naming the line: reading the other rows would average a table with a row
//! silently lost. A bare block that does not fit the shape is prose, not an error.

use std::ops::Range;

use super::{ProseLine, RawTable, Section};

/// Why delimited data cannot be read; becomes a `knowledge_corrupt` tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DelimitedError {
    #[error(
        "CSV/TSV row at line {line} has {found} fields; its header (line {header_line}) has {expected}"
    )]
    RaggedRow {
        line: usize,
        header_line: usize,
        found: usize,
        expected: usize,
    },
    #[error("CSV/TSV data at line {line} cannot be read: {message}")]
    Malformed { line: usize, message: String },
    #[error("CSV/TSV block at line {line} has no header row")]
    NoHeader { line: usize },
}

/// The field delimiter a fenced block's info string or a file name asks for (`csv` → `,`, `tsv` → tab).
pub(crate) fn delimiter(kind: &str) -> Option<u8> {
    let kind = kind.split_whitespace().next().unwrap_or("");
    match kind.to_ascii_lowercase().as_str() {
        "csv" => Some(b','),
        "tsv" => Some(b'\t'),
        _ => None,
    }
}

/// The delimiter of a `.csv` / `.tsv` knowledge file name; `None` for any other file.
pub(crate) fn file_delimiter(name: &str) -> Option<u8> {
    delimiter(name.rsplit_once('.')?.1)
}

/// Reads `text` (its first line is line `first_line` of the file): the first record is the header, every
/// other record a row of exactly as many fields. Blank lines are skipped.
pub(crate) fn read(
    text: &str,
    delimiter: u8,
    first_line: usize,
) -> Result<RawTable, DelimitedError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut header: Option<(usize, Vec<String>)> = None;
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| DelimitedError::Malformed {
            line: first_line
                + e.position()
                    .map_or(0, |p| p.line() as usize)
                    .saturating_sub(1),
            message: e.to_string(),
        })?;
        let line = first_line + record.position().map_or(1, |p| p.line() as usize) - 1;
        let fields: Vec<String> = record
            .iter()
            .map(|f| f.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        if fields.iter().all(String::is_empty) {
            continue;
        }
        match &header {
            None => header = Some((line, fields)),
            Some((header_line, names)) if fields.len() != names.len() => {
                return Err(DelimitedError::RaggedRow {
                    line,
                    header_line: *header_line,
                    found: fields.len(),
                    expected: names.len(),
                });
            }
            Some(_) => rows.push(fields),
        }
    }
    let (line, header) = header.ok_or(DelimitedError::NoHeader { line: first_line })?;
    Ok(RawTable { line, header, rows })
}

/// A whole `.csv` / `.tsv` file as one section: titled after the file (`school_bus_times.csv` → `school
/// bus times`), its text the section's markdown, its table the only content.
pub(crate) fn file_section(
    name: &str,
    text: &str,
    delimiter: u8,
) -> Result<Section, DelimitedError> {
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    let title = stem.replace(['_', '-'], " ");
    let table = read(text, delimiter, 1)?;
    Ok(Section {
        title,
        ancestors: Vec::new(),
        line: 1,
        markdown: text.trim().to_owned(),
        prose: Vec::new(),
        tables: vec![table],
        errors: Vec::new(),
    })
}

/// Fewest lines of a bare comma-separated block (a header and two rows): two lines with commas are
/// as often a sentence wrapped after a list.
const MIN_BARE_LINES: usize = 3;

/// Bare comma-separated blocks among a section's prose lines: a paragraph (its first line and the lines
/// continuing it) of at least [`MIN_BARE_LINES`] lines, outside code and lists, that splits into one
/// field count (two or more) on every line, whose first line is all names (none empty, none a number)
/// and where at least one column below is all numbers. Returned with the prose lines each takes.
pub(crate) fn bare_tables(lines: &[ProseLine]) -> Vec<(Range<usize>, RawTable)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < lines.len() {
        let mut end = start + 1;
        while end < lines.len() && lines[end].continues {
            end += 1;
        }
        let block = &lines[start..end];
        let plain = block.iter().all(|l| !l.code && l.item.is_none());
        if plain && block.len() >= MIN_BARE_LINES {
            let text: String = block.iter().map(|l| format!("{}\n", l.text)).collect();
            if let Ok(table) = read(&text, b',', block[0].line)
                && looks_like_data(&table)
            {
                out.push((start..end, table));
            }
        }
        start = end;
    }
    out
}

/// A header of names over at least one all-number column, in two or more columns.
fn looks_like_data(table: &RawTable) -> bool {
    let is_number = |cell: &str| {
        let (value, _) = forge_language::numbers::split_note_marker(cell);
        forge_language::numbers::parse_quantity(value).is_some()
    };
    table.header.len() >= 2
        && table.rows.len() >= 2
        && table.header.iter().all(|h| !h.is_empty() && !is_number(h))
        && (0..table.header.len()).any(|c| table.rows.iter().all(|r| is_number(&r[c])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_fields_and_tabs_read_as_cells() {
        let t = read(
            "Site,\"Visits, total\",Wait (min)\nNorth,\"1,250\",31\n\n\"South \"\"B\"\"\",980,28\n",
            b',',
            7,
        )
        .unwrap();
        assert_eq!(t.line, 7);
        assert_eq!(t.header, ["Site", "Visits, total", "Wait (min)"]);
        assert_eq!(t.rows[0], ["North", "1,250", "31"]);
        assert_eq!(t.rows[1], ["South \"B\"", "980", "28"]);
        let tabs = read("Site\tWait\nNorth\t31\n", b'\t', 1).unwrap();
        assert_eq!(tabs.rows, [vec!["North".to_owned(), "31".to_owned()]]);
    }

    #[test]
    fn a_ragged_row_is_an_error_naming_its_line() {
        assert_eq!(
            read("Site,Wait\nNorth,31\nSouth,28,extra\n", b',', 10),
            Err(DelimitedError::RaggedRow {
                line: 12,
                header_line: 10,
                found: 3,
                expected: 2
            })
        );
        assert_eq!(
            read("\n\n", b',', 4),
            Err(DelimitedError::NoHeader { line: 4 })
        );
        let message = read("a,b\n1\n", b',', 1).unwrap_err().to_string();
        assert!(
            message.contains("line 2") && message.contains("1 fields"),
            "{message}"
        );
    }

    fn prose(texts: &[&str]) -> Vec<ProseLine> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| ProseLine {
                text: (*t).to_owned(),
                line: i + 1,
                code: false,
                continues: i > 0 && !t.is_empty(),
                item: None,
            })
            .collect()
    }

    #[test]
    fn bare_blocks_need_names_over_a_numeric_column() {
        let found = bare_tables(&prose(&[
            "Site,Uptime,Owner",
            "North,99.2,Ana",
            "South,98.1*,Bo",
        ]));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, 0..3);
        assert_eq!(found[0].1.rows[1], ["South", "98.1*", "Bo"]);
        for text in [
            &[
                "Apples, pears, plums",
                "red, green, purple",
                "sweet, soft, sour",
            ][..],
            &[
                "We met on 5 May, 2024, at noon",
                "and on 6 May, 2024, again",
            ][..],
            &["Site,Uptime", "North,99.2", "South,98.1,extra"][..],
            &["Site,Uptime", "North,99.2"][..],
        ] {
            assert!(bare_tables(&prose(text)).is_empty(), "{text:?}");
        }
    }

    #[test]
    fn delimiters_come_from_the_block_or_the_file_name() {
        assert_eq!(delimiter("csv"), Some(b','));
        assert_eq!(delimiter("TSV title=x"), Some(b'\t'));
        assert_eq!(delimiter("rust"), None);
        assert_eq!(file_delimiter("a.csv"), Some(b','));
        assert_eq!(file_delimiter("a.md"), None);
    }
}
