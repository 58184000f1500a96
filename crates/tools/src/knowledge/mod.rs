//! The knowledge_search tool: BM25 over the heading-delimited sections of the task's allowed
//! `knowledge/*.md` files (and `*.csv` / `*.tsv` files, one table each), returning the best passages
//! (text + citations), the tables and `key: number` facts found in them, and a compact text view for
//! the model.
//!
//! The model only sends a query. Which files may be read comes from the task (`allowed_sources`,
//! plain file names); each is resolved inside the knowledge directory and refused if it is
//! path-like or resolves outside it (symlinks). Any markdown is a source: a file without tables is
//! prose, not an error. The result shape is `schemas/knowledge_result.schema.json`.
//! Full-width digits (`１２．５`) are folded to ASCII before anything is read.
//! Submodules: `markdown` (parsing), `delimited` (CSV/TSV), `extract` (tables and facts), `cells`
//! (cell values), `transpose` (tables one row per measure), `retrieval` (BM25), `view` (text), `observed`
//! (the typed `data` this tool writes and every consumer reads back).

mod cells;
mod delimited;
mod extract;
mod markdown;
pub mod observed;
mod retrieval;
mod transpose;
mod view;

/// The retrieval tokenizer, shared with the grounding so that "which column is this text about" and
/// "which passage answers this query" read words the same way.
use std::fs;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{ToolError, ToolOutput};

pub use delimited::DelimitedError;
pub use extract::{
    CellNote, Column, ColumnError, ColumnStats, ExtractError, Fact, MAX_FACTS_PER_FILE,
    MAX_TABLE_COLUMNS, MAX_TABLE_ROWS, Row, SummaryKind, SummaryRow, Table, is_placeholder_header,
};
pub use observed::{
    LabelledValue, Observed, ObservedColumn, ObservedError, ObservedFact, ObservedNote,
    ObservedRow, ObservedStats, ObservedSummaryRow, ObservedTable, UnreadColumn, facts_in,
    tables_in,
};
pub use view::MAX_PROSE_CHARS;

// What `markdown` and `delimited` both read a file into (sections, prose lines, raw tables): here, so
// neither reader imports the other's types.

/// Heading shown for text that comes before the first heading.
pub(crate) const PREAMBLE: &str = "(preamble)";
/// Title of a heading with no text (`#` alone).
pub(crate) const UNTITLED: &str = "(untitled)";

/// One line of prose as the reader sees it (markup stripped), with where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProseLine {
    pub text: String,
    /// 1-based line in the file.
    pub line: usize,
    /// Inside a code block: shown and searched, never read as a fact.
    pub code: bool,
    /// Continues the previous line's paragraph (a wrapped line), rather than starting a block.
    pub continues: bool,
    /// The first line of a list item: the list's number within the file (items of one list share it;
    /// a nested list has its own). `None` for every other line, the item's own later lines included.
    pub item: Option<usize>,
}

/// A table as written: header and body cells as plain text. Rows are as long as the header
/// (the GFM parser pads short rows and drops cells beyond the header).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawTable {
    /// 1-based line of the header row.
    pub line: usize,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// One heading-delimited part of a file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Section {
    /// The section's own heading text (`Release rule`), or [`PREAMBLE`].
    pub title: String,
    /// Titles of the enclosing headings, outermost first.
    pub ancestors: Vec<String>,
    /// 1-based line of the heading (1 for the preamble).
    pub line: usize,
    /// The section's markdown source, heading line included, trimmed.
    pub markdown: String,
    pub prose: Vec<ProseLine>,
    pub tables: Vec<RawTable>,
    /// CSV/TSV blocks that could not be read (the file is then corrupt: a row would be lost).
    pub errors: Vec<DelimitedError>,
}

impl Section {
    /// `AgentEval Mini > Release rule`.
    pub fn path(&self) -> String {
        let mut parts: Vec<&str> = self.ancestors.iter().map(String::as_str).collect();
        parts.push(&self.title);
        parts.join(" > ")
    }

    fn has_body(&self) -> bool {
        !self.prose.is_empty() || !self.tables.is_empty()
    }
}

pub const TOOL_NAME: &str = "knowledge_search";
pub const DEFAULT_TOP_K: usize = 3;
pub const MAX_TOP_K: usize = 4;
pub const MAX_QUERY_CHARS: usize = 500;
/// Larger files are refused as corrupt: knowledge files are short notes.
pub const MAX_SOURCE_BYTES: u64 = 1024 * 1024;
/// Longest passage markdown returned per citation (the observation must stay small).
pub const MAX_CITATION_CHARS: usize = 900;
/// The result schema, one source of truth for the shape this module returns.
pub const RESULT_SCHEMA: &str = include_str!("../../../../schemas/knowledge_result.schema.json");

/// A validated search request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    pub query: String,
    pub top_k: usize,
}

impl SearchRequest {
    pub fn new(query: impl Into<String>, top_k: usize) -> Result<Self, ToolError> {
        let query = query.into();
        let chars = query.chars().count();
        if query.trim().is_empty() || chars > MAX_QUERY_CHARS {
            return Err(ToolError::permanent(
                "invalid_arguments",
                format!("query must have 1..={MAX_QUERY_CHARS} characters, got {chars}"),
            ));
        }
        if !(1..=MAX_TOP_K).contains(&top_k) {
            return Err(ToolError::permanent(
                "invalid_arguments",
                format!("top_k must be 1..={MAX_TOP_K}, got {top_k}"),
            ));
        }
        Ok(Self { query, top_k })
    }

    pub(crate) fn from_arguments(arguments: &Map<String, Value>) -> Result<Self, ToolError> {
        let query = super::string_argument(arguments, "query")?;
        let top_k = match arguments.get("top_k") {
            None => DEFAULT_TOP_K,
            Some(v) => v.as_u64().ok_or_else(|| {
                ToolError::permanent(
                    "invalid_arguments",
                    format!("top_k: expected an integer, got {v}"),
                )
            })? as usize,
        };
        Self::new(query, top_k)
    }
}

/// One retrieved passage, attributable to a file version.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Citation {
    /// `kb-<source_id>-<chunk_id>`: deterministic for the same file content.
    pub id: String,
    /// The file stem, e.g. `quarterly_sales`.
    pub source_id: String,
    /// Slug of the section heading, unique within the source.
    pub chunk_id: String,
    /// Heading path, e.g. `AgentEval Mini > Release rule`.
    pub heading: String,
    /// The section's markdown (clipped to [`MAX_CITATION_CHARS`]).
    pub text: String,
    /// blake3 of the whole source file, hex.
    pub source_blake3: String,
    /// BM25 score, rounded to 4 decimals.
    pub score: f64,
}

/// One section of a source with what was read from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    citation_id: String,
    chunk_id: String,
    heading: String,
    markdown: String,
    /// Prose without tables and fact lines, markup stripped, one line.
    prose: String,
    tables: Vec<Table>,
    /// The tables' cells as written, parallel to `tables` (the view lists text-only tables from them).
    raw_tables: Vec<markdown::RawTable>,
    facts: Vec<Fact>,
    terms: retrieval::Terms,
}

impl Passage {
    /// `kb-<source_id>-<chunk_id>`.
    pub fn citation_id(&self) -> &str {
        &self.citation_id
    }
    pub fn chunk_id(&self) -> &str {
        &self.chunk_id
    }
    /// Heading path, `A > B`.
    pub fn heading(&self) -> &str {
        &self.heading
    }
    /// The section's markdown source.
    pub fn markdown(&self) -> &str {
        &self.markdown
    }
    /// Prose with tables and `key: number` lines removed, markup stripped, whitespace collapsed.
    pub fn prose(&self) -> &str {
        &self.prose
    }
    pub fn tables(&self) -> &[Table] {
        &self.tables
    }
    pub fn facts(&self) -> &[Fact] {
        &self.facts
    }
}

/// One knowledge file, parsed once: its passages with their tables and facts. Used by the search
/// and, without a query, to validate a task's knowledge when the task is loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedSource {
    source_id: String,
    blake3: String,
    passages: Vec<Passage>,
}

impl ParsedSource {
    /// The file stem, e.g. `quarterly_sales`.
    pub fn source_id(&self) -> &str {
        &self.source_id
    }
    /// blake3 of the file's bytes, hex.
    pub fn blake3(&self) -> &str {
        &self.blake3
    }
    pub fn passages(&self) -> &[Passage] {
        &self.passages
    }
    /// Every table, in file order, with the passage holding it.
    pub fn tables(&self) -> impl Iterator<Item = (&Passage, &Table)> {
        self.passages
            .iter()
            .flat_map(|p| p.tables.iter().map(move |t| (p, t)))
    }
    /// Whether any table has at least one numeric column.
    pub fn has_numeric_table(&self) -> bool {
        self.tables().any(|(_, t)| t.has_numeric_column())
    }
    /// Every `key: number` fact, in file order, with the passage holding it.
    pub fn facts(&self) -> impl Iterator<Item = (&Passage, &Fact)> {
        self.passages
            .iter()
            .flat_map(|p| p.facts.iter().map(move |f| (p, f)))
    }
}

/// Reads and parses one allowed source (`name` is a plain `*.md`, `*.csv` or `*.tsv` file name inside
/// `knowledge_dir`).
pub fn parse_source(knowledge_dir: &Path, name: &str) -> Result<ParsedSource, ToolError> {
    let path = resolve(knowledge_dir, name)?;
    let text = read_source(&path, name)?;
    parse_text(name, &text)
}

/// Parses `text` as the source `name` (a `*.md` file name, or `*.csv` / `*.tsv` for one table; its stem
/// is the source id). Errors are `knowledge_corrupt`, with the file name first and the line of the
/// offending part.
pub fn parse_text(name: &str, text: &str) -> Result<ParsedSource, ToolError> {
    let corrupt =
        |reason: String| ToolError::permanent("knowledge_corrupt", format!("{name}: {reason}"));
    let source_id = name
        .rsplit_once('.')
        .filter(|(_, ext)| matches!(*ext, "md" | "csv" | "tsv"))
        .map_or(name, |(stem, _)| stem)
        .to_owned();
    let blake3 = blake3::hash(text.as_bytes()).to_hex().to_string();
    let text = forge_language::numbers::fold_full_width(text);
    let sections = match delimited::file_delimiter(name) {
        Some(delimiter) => vec![
            delimited::file_section(name, &text, delimiter).map_err(|e| corrupt(e.to_string()))?,
        ],
        None => markdown::parse(&text),
    };
    if let Some(error) = sections.iter().flat_map(|s| &s.errors).next() {
        return Err(corrupt(error.to_string()));
    }
    if sections.is_empty() {
        return Err(corrupt(
            "no section with content (the file has no text)".into(),
        ));
    }
    let mut used_ids: Vec<String> = Vec::new();
    let mut passages = Vec::with_capacity(sections.len());
    for section in sections {
        let chunk_id = unique_slug(&section, &mut used_ids);
        let mut tables: Vec<(Table, markdown::RawTable)> = section
            .tables
            .iter()
            .map(|raw| extract::table(raw).map(|t| (t, raw.clone())))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| corrupt(e.to_string()))?;
        // Bullet lists of `label: number` items are tables; their lines are then neither facts nor prose.
        let mut taken = vec![false; section.prose.len()];
        for (lines, raw) in extract::bullet_tables(&section.title, &section.prose) {
            let mut table = extract::table(&raw).map_err(|e| corrupt(e.to_string()))?;
            if !table.has_numeric_column() {
                continue; // not data after all: the items stay facts
            }
            table.label_column = String::new();
            taken[lines].fill(true);
            tables.push((table, raw));
        }
        // Comma-separated lines pasted as a paragraph (a header of names over a column of numbers).
        for (lines, raw) in delimited::bare_tables(&section.prose) {
            if taken[lines.clone()].iter().any(|t| *t) {
                continue;
            }
            let table = extract::table(&raw).map_err(|e| corrupt(e.to_string()))?;
            taken[lines].fill(true);
            tables.push((table, raw));
        }
        for (table, _) in &mut tables {
            table.attach_note_texts(&section.prose);
        }
        tables.sort_by_key(|(t, _)| t.line);
        let (tables, raw_tables): (Vec<Table>, Vec<markdown::RawTable>) =
            tables.into_iter().unzip();
        let mut facts = Vec::new();
        let mut prose_lines = Vec::new();
        for (line, _) in section
            .prose
            .iter()
            .zip(&taken)
            .filter(|(_, taken)| !**taken)
        {
            match extract::fact(line) {
                Some(fact) => facts.push(fact),
                None => prose_lines.push(line),
            }
        }
        let prose = view::join_prose(&prose_lines);
        let terms = passage_terms(&section);
        passages.push(Passage {
            citation_id: format!("kb-{source_id}-{chunk_id}"),
            chunk_id,
            heading: section.path(),
            markdown: section.markdown,
            prose,
            tables,
            raw_tables,
            facts,
            terms,
        });
    }
    extract::check_fact_count(passages.iter().flat_map(|p| p.facts.iter()))
        .map_err(|e| corrupt(e.to_string()))?;
    Ok(ParsedSource {
        source_id,
        blake3,
        passages,
    })
}

/// What BM25 sees of a section: its own heading and the tables' column headers count
/// [`retrieval::HEADING_WEIGHT`] times (both say what the section holds); prose and the tables'
/// text cells (row labels) count once. Numeric cells are left out: a table of 40 numbers would
/// otherwise look like a long, diluted section. Enclosing headings are left out too: the file's
/// title sits above every section, so it would only blur the scores.
fn passage_terms(section: &markdown::Section) -> retrieval::Terms {
    let title = if section.title == markdown::PREAMBLE {
        ""
    } else {
        section.title.as_str()
    };
    let prose: Vec<&str> = section.prose.iter().map(|l| l.text.as_str()).collect();
    let headers: Vec<&str> = section
        .tables
        .iter()
        .flat_map(|t| &t.header)
        .map(String::as_str)
        .collect();
    let text_cells: Vec<&str> = section
        .tables
        .iter()
        .flat_map(|t| t.rows.iter().flatten())
        .map(String::as_str)
        .filter(|cell| forge_language::numbers::parse_quantity(cell).is_none())
        .collect();
    let (prose, headers, text_cells) =
        (prose.join("\n"), headers.join("\n"), text_cells.join("\n"));
    retrieval::Terms::of(&[
        (title, retrieval::HEADING_WEIGHT),
        (&headers, retrieval::HEADING_WEIGHT),
        (&prose, 1),
        (&text_cells, 1),
    ])
}

/// Runs one search over the allowed sources.
pub fn search(
    request: &SearchRequest,
    knowledge_dir: &Path,
    allowed_sources: &[String],
) -> Result<ToolOutput, ToolError> {
    if allowed_sources.is_empty() {
        return Err(ToolError::permanent(
            "knowledge_no_sources",
            "this task allows no knowledge files",
        ));
    }
    let sources = allowed_sources
        .iter()
        .map(|name| parse_source(knowledge_dir, name))
        .collect::<Result<Vec<_>, _>>()?;
    search_sources(request, &sources)
}

/// The top `top_k` of `ranked`, except that data is never crowded out by prose: when no hit holds a
/// table (or no hit holds `key: number` facts) but a lower-ranked matching passage does, it takes the
/// place of the lowest-ranked prose-only hit. BM25 favours short prose over long numeric tables, yet a
/// table or a stated rule is what the tools compute on. When no matching passage holds a table at all,
/// the first table of the best hit's own document stands in: a query worded after the document's
/// subject ("Northfield trust literacy target") shares no word with a table headed "School | Reading",
/// yet that table is what the question is about. Hits stay in score order.
fn keep_data_in_view<'a>(
    ranked: &[(usize, f64)],
    top_k: usize,
    passage_count: usize,
    passage: impl Fn(usize) -> &'a Passage,
    same_source: impl Fn(usize, usize) -> bool,
) -> Vec<(usize, f64)> {
    let mut hits: Vec<(usize, f64)> = ranked.iter().take(top_k).copied().collect();
    if top_k < 2 {
        return hits;
    }
    let has_table = |i: usize| !passage(i).tables.is_empty();
    let has_facts = |i: usize| !passage(i).facts.is_empty();
    for (wants_table, wants) in [
        (true, &has_table as &dyn Fn(usize) -> bool),
        (false, &has_facts),
    ] {
        if hits.iter().any(|(i, _)| wants(*i)) {
            continue;
        }
        let extra = ranked.iter().skip(top_k).find(|(i, _)| wants(*i)).copied();
        // No matching passage holds a table: the best hit's document may still hold one. It ranks
        // below every matching hit (score 0), so it goes last.
        let extra = extra.or_else(|| {
            if !wants_table {
                return None;
            }
            let best = hits.first()?.0;
            (0..passage_count)
                .find(|&i| same_source(i, best) && has_table(i))
                .map(|i| (i, 0.0))
        });
        let Some(extra) = extra else { continue };
        if hits.len() < top_k {
            hits.push(extra);
        } else if let Some(slot) = hits
            .iter()
            .rposition(|(i, _)| !has_table(*i) && !has_facts(*i))
        {
            hits[slot] = extra;
        }
    }
    hits.sort_by(|a, b| b.1.total_cmp(&a.1));
    hits
}

/// The search itself, over sources already parsed.
pub fn search_sources(
    request: &SearchRequest,
    sources: &[ParsedSource],
) -> Result<ToolOutput, ToolError> {
    let all: Vec<(&ParsedSource, &Passage)> = sources
        .iter()
        .flat_map(|s| s.passages.iter().map(move |p| (s, p)))
        .collect();
    let terms: Vec<&retrieval::Terms> = all.iter().map(|(_, p)| &p.terms).collect();
    let ranked = retrieval::rank(&terms, &request.query);
    if ranked.is_empty() {
        return Err(ToolError::permanent(
            "knowledge_no_match",
            format!(
                "no section of the allowed knowledge matches the query {:?}; try other words",
                clip(&request.query, 80)
            ),
        ));
    }
    let hits: Vec<(&ParsedSource, &Passage, f64)> = keep_data_in_view(
        &ranked,
        request.top_k,
        all.len(),
        |i| all[i].1,
        |i, j| std::ptr::eq(all[i].0, all[j].0),
    )
    .into_iter()
    .map(|(i, score)| (all[i].0, all[i].1, score))
    .collect();
    let citations: Vec<Citation> = hits
        .iter()
        .map(|(source, passage, score)| Citation {
            id: passage.citation_id.clone(),
            source_id: source.source_id.clone(),
            chunk_id: passage.chunk_id.clone(),
            heading: passage.heading.clone(),
            text: clip(&passage.markdown, MAX_CITATION_CHARS),
            source_blake3: source.blake3.clone(),
            score: (score * 10_000.0).round() / 10_000.0,
        })
        .collect();
    let passages: Vec<&Passage> = hits.iter().map(|(_, p, _)| *p).collect();
    let data = data_json(&passages);
    let summary = summarize(&passages);
    let result = json!({
        "query": request.query,
        "top_k": request.top_k,
        "citations": citations,
        "source_blake3": aggregate_hash(sources),
        "data": data,
        "summary": summary,
        "view": view::render(&passages),
    });
    Ok(ToolOutput {
        result,
        summary,
        citations,
        artifacts: Vec::new(),
        digest_basis: data,
    })
}

/// `data`: the tables and facts of the returned passages, in rank order. Passages are distinct
/// sections, so a table appears once; a fact repeated verbatim (same key, value, unit) in a
/// lower-ranked passage is dropped. Written from the [`Observed`] type its readers read it with.
fn data_json(passages: &[&Passage]) -> Value {
    let mut tables = Vec::new();
    let mut facts: Vec<(&Passage, &Fact)> = Vec::new();
    for passage in passages {
        tables.extend(passage.tables.iter().map(|t| observed_table(passage, t)));
        for fact in &passage.facts {
            let seen = facts
                .iter()
                .any(|(_, f)| f.key == fact.key && f.value == fact.value && f.unit == fact.unit);
            if !seen {
                facts.push((passage, fact));
            }
        }
    }
    let facts = facts
        .into_iter()
        .map(|(p, f)| ObservedFact {
            citation_id: p.citation_id.clone(),
            key: f.key.clone(),
            value: f.value,
            unit: f.unit.clone(),
        })
        .collect();
    serde_json::to_value(Observed { tables, facts })
        .expect("an observation is plain data: strings, numbers and lists")
}

/// One table: `columns` (`name`, `unit`, `count` of rows with a value, `missing` row labels), `rows`
/// (`label`, `values`, `missing` column names when the row lacks some, `notes` when its numbers carry
/// footnote markers), `summary_rows` (`label`, `kind` `sum`|`mean`|`other`, `values`) kept out of `rows`
/// and `stats`, `stats`, and when they apply `unread_columns` (`name`, `reason`) and `transposed`.
fn observed_table(passage: &Passage, table: &Table) -> ObservedTable {
    let columns = table
        .columns
        .iter()
        .enumerate()
        .map(|(index, c)| ObservedColumn {
            name: c.name.clone(),
            unit: c.unit.clone(),
            count: table.rows.iter().filter(|r| !r.is_missing(index)).count(),
            missing: table
                .missing(index)
                .into_iter()
                .map(str::to_owned)
                .collect(),
        })
        .collect();
    let summary_rows = table
        .summary_rows
        .iter()
        .map(|s| ObservedSummaryRow {
            label: s.label.clone(),
            kind: s.kind,
            values: named_values(table, &s.values),
        })
        .collect();
    ObservedTable {
        citation_id: passage.citation_id.clone(),
        heading: passage.heading.clone(),
        label_column: table.label_column.clone(),
        columns,
        rows: table
            .rows
            .iter()
            .map(|row| observed_row(table, row))
            .collect(),
        summary_rows,
        stats: observed_stats(table),
        unread_columns: table
            .unread
            .iter()
            .map(|e| UnreadColumn {
                name: e.column().to_owned(),
                reason: e.to_string(),
            })
            .collect(),
        transposed: table.transposed,
    }
}

/// A row's values by column name, the columns it has no value in left out.
fn named_values(table: &Table, values: &[Option<f64>]) -> Vec<(String, f64)> {
    table
        .columns
        .iter()
        .zip(values)
        .filter_map(|(column, value)| Some((column.name.clone(), (*value)?)))
        .collect()
}

/// One data row with its footnote notes and the columns it lacks.
fn observed_row(table: &Table, row: &Row) -> ObservedRow {
    ObservedRow {
        label: row.label.clone(),
        values: named_values(table, &row.values),
        notes: row
            .notes
            .iter()
            .map(|n| ObservedNote {
                column: n.column.clone(),
                marker: n.marker.clone(),
                text: n.text.clone(),
            })
            .collect(),
        missing: table
            .columns
            .iter()
            .enumerate()
            .filter(|(index, _)| row.is_missing(*index))
            .map(|(_, c)| c.name.clone())
            .collect(),
        texts: row.texts.clone(),
    }
}

/// Count, lowest and highest of every column with a value, in column order.
fn observed_stats(table: &Table) -> Vec<(String, ObservedStats)> {
    let labelled = |(label, value): (String, f64)| Some(LabelledValue { label, value });
    table
        .columns
        .iter()
        .enumerate()
        .filter_map(|(index, column)| {
            let s = table.stats(index)?;
            Some((
                column.name.clone(),
                ObservedStats {
                    count: s.count,
                    lowest: labelled(s.lowest),
                    highest: labelled(s.highest),
                },
            ))
        })
        .collect()
}

/// `3 passage(s): kb-a-x, kb-a-y, kb-a-z; 1 table(s) (4 rows), 2 fact(s)`.
fn summarize(passages: &[&Passage]) -> String {
    let ids: Vec<&str> = passages.iter().map(|p| p.citation_id.as_str()).collect();
    let tables = passages.iter().map(|p| p.tables.len()).sum::<usize>();
    let rows = passages
        .iter()
        .flat_map(|p| &p.tables)
        .map(|t| t.rows.len())
        .sum::<usize>();
    let facts = passages.iter().map(|p| p.facts.len()).sum::<usize>();
    format!(
        "{} passage(s): {}; {tables} table(s) ({rows} rows), {facts} fact(s)",
        passages.len(),
        ids.join(", ")
    )
}

/// blake3 over `source_id NUL blake3 LF` for every searched source, sorted by id.
fn aggregate_hash(sources: &[ParsedSource]) -> String {
    let mut entries: Vec<(&str, &str)> = sources
        .iter()
        .map(|s| (s.source_id.as_str(), s.blake3.as_str()))
        .collect();
    entries.sort();
    let mut hasher = blake3::Hasher::new();
    for (id, hash) in entries {
        hasher.update(id.as_bytes());
        hasher.update(b"\0");
        hasher.update(hash.as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize().to_hex().to_string()
}

/// The section's slug, made unique within the file with `-2`, `-3`, ….
fn unique_slug(section: &markdown::Section, used: &mut Vec<String>) -> String {
    let base = if section.title == markdown::PREAMBLE {
        "preamble".to_owned()
    } else {
        slug(&section.title)
    };
    let mut id = base.clone();
    let mut n = 2;
    while used.contains(&id) {
        id = format!("{base}-{n}");
        n += 1;
    }
    used.push(id.clone());
    id
}

/// Slug of a heading: Unicode letters and digits lower-cased, every other run of characters one
/// `-`: `Task Success by batch` → `task-success-by-batch`, `发布规则` → `发布规则`.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        "section".to_owned()
    } else {
        out.to_owned()
    }
}

/// A plain `*.md`, `*.csv` or `*.tsv` file name: no separators, no leading dot, no `..`.
fn is_plain_source_name(name: &str) -> bool {
    let stem_len = [".md", ".csv", ".tsv"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .map_or(0, str::len);
    name.len() <= 128
        && stem_len > 0
        && !name.starts_with('.')
        && !name.contains("..")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Resolves `name` inside `knowledge_dir`, refusing anything that escapes it.
fn resolve(knowledge_dir: &Path, name: &str) -> Result<PathBuf, ToolError> {
    if !is_plain_source_name(name) {
        return Err(ToolError::permanent(
            "knowledge_source_invalid",
            format!(
                "knowledge source {:?} is not a plain .md, .csv or .tsv file name",
                clip(name, 80)
            ),
        ));
    }
    let root = knowledge_dir.canonicalize().map_err(|e| {
        ToolError::permanent(
            "knowledge_missing",
            format!("the knowledge directory cannot be opened: {}", e.kind()),
        )
    })?;
    let resolved = root.join(name).canonicalize().map_err(|e| match e.kind() {
        ErrorKind::NotFound => ToolError::permanent(
            "knowledge_missing",
            format!("knowledge file {name} does not exist"),
        ),
        kind => ToolError::transient(
            "knowledge_read_failed",
            format!("knowledge file {name} cannot be resolved: {kind}"),
        ),
    })?;
    // canonicalize() followed every symlink, so this also catches links pointing out.
    if resolved.parent() != Some(root.as_path()) {
        return Err(ToolError::permanent(
            "knowledge_source_outside",
            format!("knowledge file {name} resolves outside the knowledge directory"),
        ));
    }
    Ok(resolved)
}

/// Reads a resolved source: a regular file of at most [`MAX_SOURCE_BYTES`] bytes of UTF-8.
fn read_source(path: &Path, name: &str) -> Result<String, ToolError> {
    let read_failed = |e: std::io::Error| {
        ToolError::transient(
            "knowledge_read_failed",
            format!("knowledge file {name} cannot be read: {}", e.kind()),
        )
    };
    let meta = fs::metadata(path).map_err(read_failed)?;
    if !meta.is_file() {
        return Err(ToolError::permanent(
            "knowledge_corrupt",
            format!("{name}: not a regular file"),
        ));
    }
    let mut bytes = Vec::new();
    fs::File::open(path)
        .and_then(|file| file.take(MAX_SOURCE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(read_failed)?;
    if bytes.len() as u64 > MAX_SOURCE_BYTES {
        return Err(ToolError::permanent(
            "knowledge_corrupt",
            format!("{name}: larger than {MAX_SOURCE_BYTES} bytes"),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        ToolError::permanent(
            "knowledge_corrupt",
            format!(
                "{name}: not UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

fn clip(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut clipped: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    clipped.push('…');
    clipped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_only() {
        for bad in [
            "../x.md",
            "a/b.md",
            ".hidden.md",
            "x.txt",
            "/etc/passwd",
            "a..md",
            "kb\\x.md",
            ".md",
        ] {
            assert!(!is_plain_source_name(bad), "{bad}");
        }
        assert!(is_plain_source_name("quarterly_sales.md"));
        assert!(is_plain_source_name("route_times.csv"));
        assert!(is_plain_source_name("route_times.tsv"));
        assert!(!is_plain_source_name(".csv"));
    }

    #[test]
    fn slugs_keep_unicode_letters() {
        assert_eq!(slug("Task Success by batch"), "task-success-by-batch");
        assert_eq!(slug("发布规则"), "发布规则");
        assert_eq!(slug("  Ünïcode & Co. (2024)  "), "ünïcode-co-2024");
        assert_eq!(slug("***"), "section");
    }

    #[test]
    fn duplicate_headings_get_numbered_ids() {
        let parsed = parse_text("d.md", "# Notes\n\na\n\n# Notes\n\nb\n\n# Notes\n\nc\n").unwrap();
        let ids: Vec<&str> = parsed.passages().iter().map(Passage::chunk_id).collect();
        assert_eq!(ids, ["notes", "notes-2", "notes-3"]);
    }
}
