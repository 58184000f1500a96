//! The `view`: the text the model reads from a knowledge_search result, printed verbatim by the
//! prompt code. Per passage, in rank order: `[<citation id>] <heading path>`, the prose (tables and
//! fact lines removed, clipped), one `Table:` line and one line per numeric column with every row
//! as `label = value` plus count/rows without a value/lowest/highest, a `Notes:` line for footnoted
//! cells and a `Not read:` line per column that could not be read exactly, a `Stated <label> (<kind>):`
//! line per summary row (`Total`, `Average`; kept out of the column lines), and a `Facts:` line.
//!
//! It must stay compact (every character is prompt tokens on a small CPU) and print numbers with
//! [`forge_language::numbers::canonical`], the form grounding and the claims gate compare against.

use std::fmt::Write as _;

use forge_language::numbers::canonical;

use super::Passage;
use super::extract::Table;
use super::markdown::{ProseLine, RawTable};

/// Prose characters shown per passage; longer prose is cut at a word boundary.
pub const MAX_PROSE_CHARS: usize = 400;
/// Rows listed per column line; the count, lowest and highest still cover every row.
const MAX_LISTED_ROWS: usize = 60;
/// Characters of the row list of a table without numeric columns.
const MAX_TEXT_TABLE_CHARS: usize = 300;

pub(crate) fn render(passages: &[&Passage]) -> String {
    let mut out = String::new();
    for passage in passages {
        let _ = writeln!(out, "[{}] {}", passage.citation_id, passage.heading);
        if !passage.prose.is_empty() {
            let _ = writeln!(out, "{}", clip_at_word(&passage.prose, MAX_PROSE_CHARS));
        }
        for (table, raw) in passage.tables.iter().zip(&passage.raw_tables) {
            render_table(&mut out, table, raw);
        }
        if !passage.facts.is_empty() {
            let facts: Vec<String> = passage
                .facts
                .iter()
                .map(|f| format!("{} = {}", f.key, quantity(f.value, f.unit.as_deref())))
                .collect();
            let _ = writeln!(out, "Facts: {}", facts.join("; "));
        }
    }
    out.truncate(out.trim_end().len());
    out
}

fn render_table(out: &mut String, table: &Table, raw: &RawTable) {
    // A bullet list read as a table has no label column header.
    let mut header: Vec<String> = Some(table.label_column.clone())
        .filter(|h| !h.is_empty())
        .into_iter()
        .collect();
    header.extend(
        table
            .columns
            .iter()
            .map(|c| with_unit(&c.name, c.unit.as_deref())),
    );
    let _ = writeln!(out, "Table: {}", header.join(" | "));
    if !table.has_numeric_column() {
        // Nothing to compute with: show the rows as written, briefly.
        let rows: Vec<String> = raw.rows.iter().map(|r| r.join(" | ")).collect();
        let _ = writeln!(
            out,
            "Rows: {}",
            clip_at_word(&rows.join("; "), MAX_TEXT_TABLE_CHARS)
        );
        render_notes_and_unread(out, table);
        return;
    }
    for (index, column) in table.columns.iter().enumerate() {
        let Some(stats) = table.stats(index) else {
            continue;
        };
        let listed: Vec<String> = table
            .rows
            .iter()
            .filter_map(|row| Some(format!("{} = {}", row.label, canonical(row.values[index]?))))
            .collect();
        let mut line = listed
            .iter()
            .take(MAX_LISTED_ROWS)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if listed.len() > MAX_LISTED_ROWS {
            let _ = write!(line, ", … ({} more)", listed.len() - MAX_LISTED_ROWS);
        }
        let missing = table.missing(index);
        let missing = if missing.is_empty() {
            String::new()
        } else {
            format!("; no value: {}", missing.join(", "))
        };
        // A column's ends are shown only when rows are left out of the line: where every row is listed, ends
        // of columns the task does not ask about were rows a small model copied into its answer (stop 49:
        // the 1.5B named the right row in 10 of 21 replayed final steps with them, 17 of 21 without), and the
        // calculator states the ends of the column it reads.
        let ends = if listed.len() > MAX_LISTED_ROWS {
            format!(
                "; lowest {} = {}; highest {} = {}",
                stats.lowest.0,
                canonical(stats.lowest.1),
                stats.highest.0,
                canonical(stats.highest.1),
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{}: {line} ({} rows{missing}{ends})",
            with_unit(&column.name, column.unit.as_deref()),
            stats.count,
        );
    }
    render_text_columns(out, table);
    render_notes_and_unread(out, table);
    // Stated totals and averages: shown apart, never part of the column lines above.
    for summary in &table.summary_rows {
        let values: Vec<String> = table
            .columns
            .iter()
            .zip(&summary.values)
            .filter_map(|(c, v)| Some(format!("{} = {}", c.name, canonical((*v)?))))
            .collect();
        if !values.is_empty() {
            let _ = writeln!(
                out,
                "Stated {} ({}): {}",
                summary.label,
                summary.kind.as_str(),
                values.join(", ")
            );
        }
    }
}

/// `Text column <name>: <label> = <cell>, …` per text column besides the labels (`Region`, `片区`): a rule
/// may name some of the rows by these cells, and the model reads the same table the rule reader does.
fn render_text_columns(out: &mut String, table: &Table) {
    let mut names: Vec<&str> = Vec::new();
    for (name, _) in table.rows.iter().flat_map(|r| &r.texts) {
        if !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    for name in names {
        let listed: Vec<String> = table
            .rows
            .iter()
            .filter_map(|row| {
                let (_, cell) = row.texts.iter().find(|(column, _)| column == name)?;
                Some(format!("{} = {cell}", row.label))
            })
            .collect();
        let mut line = listed[..listed.len().min(MAX_LISTED_ROWS)].join(", ");
        if listed.len() > MAX_LISTED_ROWS {
            let _ = write!(line, ", … ({} more)", listed.len() - MAX_LISTED_ROWS);
        }
        let _ = writeln!(out, "Text column {name}: {line}");
    }
}

/// `Notes: <row> <column> <marker> (<footnote text>)` for footnoted cells, and `Not read: <reason>` per column
/// of numbers that could not be read exactly, so the model never computes on a guess of its own.
fn render_notes_and_unread(out: &mut String, table: &Table) {
    let notes: Vec<String> = table
        .rows
        .iter()
        .flat_map(|row| row.notes.iter().map(move |n| (row, n)))
        .map(|(row, n)| match &n.text {
            Some(text) => format!(
                "{} {} {} ({})",
                row.label,
                n.column,
                n.marker,
                clip_at_word(text, 60)
            ),
            None => format!("{} {} {}", row.label, n.column, n.marker),
        })
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(out, "Notes: {}", notes.join("; "));
    }
    for error in &table.unread {
        let _ = writeln!(out, "Not read: {error}");
    }
}

/// Prose lines as one line: a wrapped line continues with a space; a new block (list item,
/// paragraph) after a line without closing punctuation gets `; ` so items do not run together.
pub(crate) fn join_prose(lines: &[&ProseLine]) -> String {
    let mut out = String::new();
    for line in lines {
        if !out.is_empty() {
            let closed = out.ends_with([
                '.', '!', '?', ':', ';', ',', '…', '。', '！', '？', '：', '；', '，',
            ]);
            out.push_str(if line.continues || closed { " " } else { "; " });
        }
        out.push_str(&line.text);
    }
    out
}

/// `Wait (min)`, `Score`.
fn with_unit(name: &str, unit: Option<&str>) -> String {
    match unit {
        Some(unit) => format!("{name} ({unit})"),
        None => name.to_owned(),
    }
}

/// `78%`, `$4.5`, `30 min`, `79`.
fn quantity(value: f64, unit: Option<&str>) -> String {
    let number = canonical(value);
    match unit {
        None => number,
        Some("%") => format!("{number}%"),
        Some(u) if u.chars().count() == 1 && !u.chars().all(char::is_alphanumeric) => {
            format!("{u}{number}")
        }
        Some(u) => format!("{number} {u}"),
    }
}

/// `text` cut to at most `max_chars` characters at a word boundary, with `…` when cut.
fn clip_at_word(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let cut = text
        .char_indices()
        .nth(max_chars.saturating_sub(1))
        .map_or(text.len(), |(i, _)| i);
    let head = &text[..cut];
    // CJK text has no spaces: when there is no word boundary in the second half, cut at the character.
    let head = match head.rfind(char::is_whitespace) {
        Some(space) if space >= cut / 2 => &head[..space],
        _ => head,
    };
    format!("{}…", head.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_print_like_people_write_them() {
        assert_eq!(quantity(78.0, Some("%")), "78%");
        assert_eq!(quantity(4.5, Some("$")), "$4.5");
        assert_eq!(quantity(30.0, Some("min")), "30 min");
        assert_eq!(quantity(80.0, Some("分")), "80 分");
        assert_eq!(quantity(79.0, None), "79");
    }

    #[test]
    fn clipping_stops_at_a_word() {
        assert_eq!(clip_at_word("short", 10), "short");
        assert_eq!(clip_at_word("alpha beta gamma delta", 14), "alpha beta…");
        assert_eq!(clip_at_word("一二三四五六七八九十", 5), "一二三四…");
    }
}
