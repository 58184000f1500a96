//! Markdown → sections, with pulldown-cmark (CommonMark + GFM tables): each section's heading path,
//! its source markdown, its prose lines (markup stripped) and its raw tables (cell text) — GFM tables and
//! fenced ```` ```csv ```` / ```` ```tsv ```` blocks (read by `delimited`).
//!
//! This module only reads structure. It does not decide what is a number, a fact or a series
//! (that is `extract`), nor how sections are scored (that is `retrieval`).

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::delimited::{self, DelimitedError};

// The types `delimited` builds too live in the parent module, so neither reader imports the other's.
pub(crate) use super::{PREAMBLE, ProseLine, RawTable, Section, UNTITLED};

/// Byte offset → 1-based line number.
struct LineIndex(Vec<usize>);

impl LineIndex {
    fn new(text: &str) -> Self {
        Self(text.match_indices('\n').map(|(i, _)| i).collect())
    }
    fn line(&self, offset: usize) -> usize {
        self.0.partition_point(|&newline| newline < offset) + 1
    }
}

/// Where inline text currently goes.
enum Sink {
    Prose,
    Heading,
    Cell,
}

/// Section under construction.
struct Open {
    title: String,
    level: usize,
    ancestors: Vec<String>,
    line: usize,
    start: usize,
    prose: Vec<ProseLine>,
    tables: Vec<RawTable>,
    errors: Vec<DelimitedError>,
}

/// A fenced CSV/TSV block being read: its delimiter, its first line, its text so far.
struct DelimitedBlock {
    delimiter: u8,
    line: usize,
    text: String,
}

/// Splits `text` into sections. Never fails: anything the parser accepts (all text) has a reading.
/// A heading directly followed by a deeper heading carries nothing of its own and is not a section
/// (its title still appears in its children's paths); an empty preamble is dropped.
pub(crate) fn parse(text: &str) -> Vec<Section> {
    let mut reader = Reader::new(text);
    for (event, range) in Parser::new_ext(text, Options::ENABLE_TABLES).into_offset_iter() {
        reader.event(event, range.start);
    }
    reader.finish()
}

/// The reading of one markdown text while its events go by: the sections so far, the open one, and where
/// inline text goes now.
struct Reader<'t> {
    text: &'t str,
    lines: LineIndex,
    sections: Vec<Section>,
    /// Enclosing headings: (level, title).
    stack: Vec<(usize, String)>,
    open: Open,
    sink: Sink,
    delimited_block: Option<DelimitedBlock>,
    buffer: String,
    buffer_line: usize,
    heading_text: String,
    /// (level, byte start)
    pending_heading: Option<(usize, usize)>,
    table: Option<RawTable>,
    row: Vec<String>,
    cell: String,
    in_code: bool,
    /// Whether the next prose line continues a paragraph (set by line breaks, cleared by blocks).
    continues: bool,
    /// Open lists (their numbers), how many lists have started, and the list whose item starts next.
    lists: Vec<usize>,
    list_count: usize,
    item: Option<usize>,
}

impl<'t> Reader<'t> {
    fn new(text: &'t str) -> Self {
        Reader {
            text,
            lines: LineIndex::new(text),
            sections: Vec::new(),
            stack: Vec::new(),
            open: Open {
                title: PREAMBLE.to_owned(),
                level: 0,
                ancestors: Vec::new(),
                line: 1,
                start: 0,
                prose: Vec::new(),
                tables: Vec::new(),
                errors: Vec::new(),
            },
            sink: Sink::Prose,
            delimited_block: None,
            buffer: String::new(),
            buffer_line: 0,
            heading_text: String::new(),
            pending_heading: None,
            table: None,
            row: Vec::new(),
            cell: String::new(),
            in_code: false,
            continues: false,
            lists: Vec::new(),
            list_count: 0,
            item: None,
        }
    }

    /// One parser event starting at byte `start`.
    fn event(&mut self, event: Event<'_>, start: usize) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                self.end_line();
                self.pending_heading = Some((heading_level(level), start));
                self.heading_text.clear();
                self.sink = Sink::Heading;
            }
            Event::End(TagEnd::Heading(_)) => self.end_heading(),
            Event::Start(Tag::Table(_)) => {
                self.end_line();
                self.table = Some(RawTable {
                    line: self.lines.line(start),
                    header: Vec::new(),
                    rows: Vec::new(),
                });
            }
            Event::End(TagEnd::Table) => self.open.tables.extend(self.table.take()),
            Event::Start(Tag::TableHead | Tag::TableRow) => self.row.clear(),
            Event::End(TagEnd::TableHead) => {
                if let Some(t) = self.table.as_mut() {
                    t.header = std::mem::take(&mut self.row);
                }
            }
            Event::End(TagEnd::TableRow) => {
                if let Some(t) = self.table.as_mut() {
                    t.rows.push(std::mem::take(&mut self.row));
                }
            }
            Event::Start(Tag::TableCell) => {
                self.cell.clear();
                self.sink = Sink::Cell;
            }
            Event::End(TagEnd::TableCell) => {
                self.row.push(collapse_whitespace(&self.cell));
                self.sink = Sink::Prose;
            }
            // A fenced CSV/TSV block is data: read as a table, not kept as code lines.
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info)))
                if delimited::delimiter(&info).is_some() =>
            {
                self.end_line();
                self.delimited_block =
                    delimited::delimiter(&info).map(|delimiter| DelimitedBlock {
                        delimiter,
                        line: self.lines.line(start) + 1,
                        text: String::new(),
                    });
            }
            Event::Text(t) if self.delimited_block.is_some() => {
                if let Some(block) = self.delimited_block.as_mut() {
                    block.text.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) if self.delimited_block.is_some() => {
                self.end_delimited_block()
            }
            Event::Start(Tag::CodeBlock(_)) => {
                self.end_line();
                self.in_code = true;
            }
            Event::End(TagEnd::CodeBlock) => {
                self.end_line();
                self.in_code = false;
            }
            Event::Text(t) if self.in_code => self.code_text(&t, start),
            Event::Text(t) | Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                self.inline_text(&t, start)
            }
            Event::SoftBreak | Event::HardBreak => match self.sink {
                Sink::Heading => self.heading_text.push(' '),
                Sink::Cell => self.cell.push(' '),
                Sink::Prose => {
                    self.flush(self.in_code);
                    self.continues = true;
                }
            },
            Event::Start(Tag::List(_)) => {
                self.end_line();
                self.list_count += 1;
                self.lists.push(self.list_count);
            }
            Event::End(TagEnd::List(_)) => {
                self.end_line();
                self.lists.pop();
                self.item = None;
            }
            Event::Start(Tag::Item) => {
                self.end_line();
                self.item = self.lists.last().copied();
            }
            // Block boundaries end a line; inline markup (emphasis, links) does not.
            Event::Start(
                Tag::Paragraph
                | Tag::BlockQuote(_)
                | Tag::HtmlBlock
                | Tag::FootnoteDefinition(_)
                | Tag::DefinitionList
                | Tag::DefinitionListTitle
                | Tag::DefinitionListDefinition,
            )
            | Event::End(
                TagEnd::Paragraph
                | TagEnd::Item
                | TagEnd::BlockQuote(_)
                | TagEnd::HtmlBlock
                | TagEnd::FootnoteDefinition
                | TagEnd::DefinitionList
                | TagEnd::DefinitionListTitle
                | TagEnd::DefinitionListDefinition,
            )
            | Event::Rule => self.end_line(),
            // Raw HTML, footnote references, task-list boxes and the remaining inline tags carry no text of their own.
            _ => {}
        }
    }

    /// The prose line in the buffer, if it holds any text, onto the open section (`code` when it is a code
    /// line); the buffer is empty afterwards.
    fn flush(&mut self, code: bool) {
        let collapsed = collapse_whitespace(&self.buffer);
        if !collapsed.is_empty() {
            self.open.prose.push(ProseLine {
                text: collapsed,
                line: self.buffer_line,
                code,
                continues: self.continues,
                item: self.item.take(),
            });
        }
        self.buffer.clear();
    }

    /// The end of a fenced CSV/TSV block: its table onto the open section, or the error reading it.
    fn end_delimited_block(&mut self) {
        if let Some(block) = self.delimited_block.take() {
            match delimited::read(&block.text, block.delimiter, block.line) {
                Ok(table) => self.open.tables.push(table),
                Err(error) => self.open.errors.push(error),
            }
        }
    }

    /// A block boundary: the line so far is flushed and the next one starts a new paragraph.
    fn end_line(&mut self) {
        self.flush(self.in_code);
        self.continues = false;
    }

    /// The end of a heading: the open section closes and the heading's section opens.
    fn end_heading(&mut self) {
        self.sink = Sink::Prose;
        let Some((level, start)) = self.pending_heading.take() else {
            return;
        };
        let title = match collapse_whitespace(&self.heading_text) {
            t if t.is_empty() => UNTITLED.to_owned(),
            t => t,
        };
        self.stack.retain(|(l, _)| *l < level);
        let next = Open {
            title: title.clone(),
            level,
            ancestors: self.stack.iter().map(|(_, t)| t.clone()).collect(),
            line: self.lines.line(start),
            start,
            prose: Vec::new(),
            tables: Vec::new(),
            errors: Vec::new(),
        };
        self.stack.push((level, title));
        let previous = std::mem::replace(&mut self.open, next);
        close(previous, self.text, start, Some(level), &mut self.sections);
    }

    /// Text in a code block keeps its line structure: each line is its own prose line.
    fn code_text(&mut self, t: &str, start: usize) {
        let mut offset = start;
        for piece in t.split_inclusive('\n') {
            if self.buffer.is_empty() {
                self.buffer_line = self.lines.line(offset);
            }
            self.buffer.push_str(piece.trim_end_matches('\n'));
            if piece.ends_with('\n') {
                self.flush(true);
                self.continues = true;
            }
            offset += piece.len();
        }
    }

    /// Inline text, into the heading, the cell or the prose line being read.
    fn inline_text(&mut self, t: &str, start: usize) {
        match self.sink {
            Sink::Heading => self.heading_text.push_str(t),
            Sink::Cell => self.cell.push_str(t),
            Sink::Prose => {
                if self.buffer.is_empty() {
                    self.buffer_line = self.lines.line(start);
                }
                self.buffer.push_str(t);
            }
        }
    }

    /// The last line flushed and the last section closed: every section, in order.
    fn finish(mut self) -> Vec<Section> {
        self.flush(self.in_code);
        close(
            self.open,
            self.text,
            self.text.len(),
            None,
            &mut self.sections,
        );
        self.sections
    }
}

/// Finishes `open` (its markdown ends at `end`); `next_level` is the heading that follows, if any.
fn close(
    open: Open,
    text: &str,
    end: usize,
    next_level: Option<usize>,
    sections: &mut Vec<Section>,
) {
    let is_preamble = open.level == 0;
    let is_container = next_level.is_some_and(|next| next > open.level);
    let has_body = !open.prose.is_empty() || !open.tables.is_empty() || !open.errors.is_empty();
    if !has_body && (is_preamble || is_container) {
        return;
    }
    let section = Section {
        title: open.title,
        ancestors: open.ancestors,
        line: open.line,
        markdown: text
            .get(open.start..end)
            .unwrap_or_default()
            .trim()
            .to_owned(),
        prose: open.prose,
        tables: open.tables,
        errors: open.errors,
    };
    debug_assert!(section.has_body() || !is_preamble);
    sections.push(section);
}

fn heading_level(level: HeadingLevel) -> usize {
    level as usize
}

/// Runs of whitespace become one space; leading and trailing whitespace is dropped.
pub(crate) fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn titles(sections: &[Section]) -> Vec<String> {
        sections.iter().map(Section::path).collect()
    }

    #[test]
    fn headings_make_paths_and_containers_are_skipped() {
        let s = parse("intro\n\n# A\n\n## B\n\ntext b\n\n### C\n\ntext c\n\n## D\n");
        assert_eq!(titles(&s), ["(preamble)", "A > B", "A > B > C", "A > D"]);
        assert_eq!(s[1].line, 5);
        assert_eq!(s[1].markdown, "## B\n\ntext b");
    }

    #[test]
    fn code_fences_hide_headings_and_tables() {
        let s = parse("# T\n\n```\n# not a heading\n| a | b |\n|---|---|\n| 1 | 2 |\n```\n");
        assert_eq!(titles(&s), ["T"]);
        assert!(s[0].tables.is_empty());
        assert!(s[0].prose.iter().all(|l| l.code));
        assert_eq!(s[0].prose[0].text, "# not a heading");
        assert_eq!(s[0].prose[0].line, 4);
    }

    #[test]
    fn inline_markup_is_stripped_and_lines_kept() {
        let s = parse(
            "# T\n\n- **Max wait**: 30 min\n- `average_gte`: 78\n\nA [link](http://x) and *stress*\nnext line\n",
        );
        let texts: Vec<&str> = s[0].prose.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Max wait: 30 min",
                "average_gte: 78",
                "A link and stress",
                "next line"
            ]
        );
        assert_eq!(s[0].prose[3].line, 7);
        let continues: Vec<bool> = s[0].prose.iter().map(|l| l.continues).collect();
        assert_eq!(
            continues,
            [false, false, false, true],
            "only the wrapped line continues its paragraph"
        );
    }

    #[test]
    fn tables_are_cells_of_text() {
        let s = parse("## T\n\n| Site | **Wait** (min) |\n|:--|--:|\n| North | 24 |\n| South |\n");
        let t = &s[0].tables[0];
        assert_eq!(t.line, 3);
        assert_eq!(t.header, ["Site", "Wait (min)"]);
        assert_eq!(
            t.rows,
            [
                vec!["North".to_owned(), "24".to_owned()],
                vec!["South".to_owned(), String::new()]
            ]
        );
    }

    #[test]
    fn fenced_csv_and_tsv_blocks_are_tables() {
        let s = parse(
            "# T\n\n```csv\nSite,Wait (min)\nNorth,24\n```\n\n```tsv\nSite\tWait\nSouth\t31\n```\n\n```\na,b\n1,2\n```\n",
        );
        let t = &s[0].tables;
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].line, 4, "the header's own line");
        assert_eq!(t[0].header, ["Site", "Wait (min)"]);
        assert_eq!(t[1].rows, [vec!["South".to_owned(), "31".to_owned()]]);
        let code: Vec<&str> = s[0].prose.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(code, ["a,b", "1,2"], "other fenced blocks stay code");
        let bad = parse("# T\n\n```csv\nSite,Wait\nNorth,24,9\n```\n");
        assert_eq!(
            bad[0].errors,
            [DelimitedError::RaggedRow {
                line: 5,
                header_line: 4,
                found: 3,
                expected: 2
            }]
        );
    }

    #[test]
    fn setext_and_unicode_headings() {
        let s = parse("发布规则\n====\n\n平均值：80\n");
        assert_eq!(titles(&s), ["发布规则"]);
        assert_eq!(s[0].prose[0].text, "平均值：80");
    }
}
