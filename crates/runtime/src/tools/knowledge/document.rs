//! A knowledge document's parts as the readers produce them: sections with their heading path, prose
//! lines and raw tables (cell text), and why delimited data in one could not be read. `markdown` and
//! `delimited` build them; `extract`, `transpose` and `view` read them. Types only: no reading here.

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

    pub(crate) fn has_body(&self) -> bool {
        !self.prose.is_empty() || !self.tables.is_empty()
    }
}

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
