//! The knowledge_search tool: BM25 retrieval over heading-delimited sections of
//! the task's allowed `knowledge/*.md` files, with structured data (per-batch
//! values, release rule) parsed from the sections it returns.
//!
//! The model only sends a query. Which files may be read comes from the task
//! (`allowed_sources`, plain file names); each is resolved inside the knowledge
//! directory and refused if it is path-like or resolves outside it (symlinks).
//! This module is not an index: it rereads and rescores the files on each call,
//! which is cheap for the handful of small files a task allows.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{ToolError, ToolOutput, number_value};

pub const TOOL_NAME: &str = "knowledge_search";
pub const DEFAULT_TOP_K: usize = 3;
pub const MAX_TOP_K: usize = 4;
pub const MAX_QUERY_CHARS: usize = 500;
/// Larger files are refused as corrupt: knowledge files are short notes.
pub const MAX_SOURCE_BYTES: u64 = 1024 * 1024;
/// Longest passage text returned per citation (the observation must stay small).
pub const MAX_CITATION_CHARS: usize = 900;

// BM25 parameters (the usual defaults).
const BM25_K1: f64 = 1.2;
const BM25_B: f64 = 0.75;

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
    /// The file stem, e.g. `agent_eval_mini`.
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

/// Per-batch values parsed from a `| Batch | <metric> |` table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchValue {
    pub label: String,
    pub value: f64,
}

/// Structured facts found in one section.
#[derive(Debug, Clone, PartialEq, Default)]
struct SectionData {
    /// Metric name and unit from the table header, e.g. ("Task Success", "%").
    metric: Option<(String, Option<String>)>,
    batches: Vec<BatchValue>,
    /// `- key: number` lines under a "Release rule" heading, in file order.
    release_rule: Vec<(String, f64)>,
}

impl SectionData {
    fn is_empty(&self) -> bool {
        self.batches.is_empty() && self.release_rule.is_empty()
    }
}

#[derive(Debug, Clone)]
struct Chunk {
    chunk_id: String,
    heading: String,
    text: String,
    /// Term frequencies over heading path + body.
    terms: HashMap<String, u32>,
    length: u32,
    data: SectionData,
}

#[derive(Debug, Clone)]
struct Source {
    source_id: String,
    blake3: String,
    chunks: Vec<Chunk>,
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
        .map(|name| load_source(knowledge_dir, name))
        .collect::<Result<Vec<_>, _>>()?;

    let ranked = rank(&sources, &request.query);
    if ranked.is_empty() {
        return Err(ToolError::permanent(
            "knowledge_no_match",
            format!(
                "no section of the allowed knowledge matches the query {:?}; try other words",
                clip(&request.query, 80)
            ),
        ));
    }

    let hits: Vec<(&Source, &Chunk, f64)> = ranked.into_iter().take(request.top_k).collect();
    let citations: Vec<Citation> = hits
        .iter()
        .map(|(source, chunk, score)| Citation {
            id: format!("kb-{}-{}", source.source_id, chunk.chunk_id),
            source_id: source.source_id.clone(),
            chunk_id: chunk.chunk_id.clone(),
            heading: chunk.heading.clone(),
            text: clip(&chunk.text, MAX_CITATION_CHARS),
            source_blake3: source.blake3.clone(),
            score: (score * 10_000.0).round() / 10_000.0,
        })
        .collect();

    let data = merge_data(hits.iter().map(|(_, chunk, _)| &chunk.data));
    let aggregate = aggregate_hash(&sources);
    let summary = summarize(&citations, &data);
    let result = json!({
        "query": request.query,
        "top_k": request.top_k,
        "citations": citations,
        "source_blake3": aggregate,
        "data": data,
        "summary": summary,
    });
    Ok(ToolOutput {
        result,
        summary,
        citations,
        artifacts: Vec::new(),
        digest_basis: data,
    })
}

/// A plain `*.md` file name: no separators, no leading dot, no `..`.
fn is_plain_markdown_name(name: &str) -> bool {
    name.len() <= 128
        && name.ends_with(".md")
        && name.len() > 3
        && !name.starts_with('.')
        && !name.contains("..")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Resolves `name` inside `knowledge_dir`, refusing anything that escapes it.
fn resolve(knowledge_dir: &Path, name: &str) -> Result<PathBuf, ToolError> {
    if !is_plain_markdown_name(name) {
        return Err(ToolError::permanent(
            "knowledge_source_invalid",
            format!(
                "knowledge source {:?} is not a plain .md file name",
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

fn load_source(knowledge_dir: &Path, name: &str) -> Result<Source, ToolError> {
    let path = resolve(knowledge_dir, name)?;
    let read_failed = |e: std::io::Error| {
        ToolError::transient(
            "knowledge_read_failed",
            format!("knowledge file {name} cannot be read: {}", e.kind()),
        )
    };
    let meta = fs::metadata(&path).map_err(read_failed)?;
    if !meta.is_file() {
        return Err(ToolError::permanent(
            "knowledge_corrupt",
            format!("{name}: not a regular file"),
        ));
    }
    let mut bytes = Vec::new();
    fs::File::open(&path)
        .and_then(|file| file.take(MAX_SOURCE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(read_failed)?;
    if bytes.len() as u64 > MAX_SOURCE_BYTES {
        return Err(ToolError::permanent(
            "knowledge_corrupt",
            format!("{name}: larger than {MAX_SOURCE_BYTES} bytes"),
        ));
    }
    let blake3 = blake3::hash(&bytes).to_hex().to_string();
    let text = String::from_utf8(bytes).map_err(|e| {
        ToolError::permanent(
            "knowledge_corrupt",
            format!(
                "{name}: not UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    let source_id = name.trim_end_matches(".md").to_owned();
    let chunks = parse_sections(&text)
        .map_err(|e| ToolError::permanent("knowledge_corrupt", format!("{name}: {e}")))?;
    if chunks.is_empty() {
        return Err(ToolError::permanent(
            "knowledge_corrupt",
            format!("{name}: no section with content"),
        ));
    }
    if chunks.iter().all(|c| c.data.is_empty()) {
        return Err(ToolError::permanent(
            "knowledge_corrupt",
            format!(
                "{name}: no structured data (neither a `| Batch | … |` table nor a release rule)"
            ),
        ));
    }
    let batch_tables = chunks.iter().filter(|c| !c.data.batches.is_empty()).count();
    let rule_sections = chunks
        .iter()
        .filter(|c| !c.data.release_rule.is_empty())
        .count();
    if batch_tables > 1 || rule_sections > 1 {
        return Err(ToolError::permanent(
            "knowledge_corrupt",
            format!(
                "{name}: ambiguous data ({batch_tables} batch tables, {rule_sections} release rules; at most one each)"
            ),
        ));
    }
    Ok(Source {
        source_id,
        blake3,
        chunks,
    })
}

/// Splits markdown into sections at ATX headings (`#`..`######`) outside code
/// fences and parses each section's data. Errors carry 1-based line numbers.
fn parse_sections(text: &str) -> Result<Vec<Chunk>, String> {
    struct Open {
        heading: String,
        path: String,
        start_line: usize,
        lines: Vec<String>,
    }
    let mut chunks = Vec::new();
    let mut used_ids: HashSet<String> = HashSet::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut open = Open {
        heading: String::new(),
        path: String::new(),
        start_line: 1,
        lines: Vec::new(),
    };
    let mut in_fence = false;

    let mut close = |open: Open, chunks: &mut Vec<Chunk>| -> Result<(), String> {
        let has_heading = !open.heading.is_empty();
        let body: String = open
            .lines
            .iter()
            .skip(usize::from(has_heading))
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n");
        if body.trim().is_empty() {
            return Ok(()); // a heading directly followed by a sub-heading carries nothing to cite
        }
        let body_start = if has_heading {
            open.start_line + 1
        } else {
            open.start_line
        };
        let data = parse_section_data(
            &open.heading,
            &open.lines[usize::from(has_heading)..],
            body_start,
        )?;
        let base = slug(if has_heading {
            &open.heading
        } else {
            "preamble"
        });
        let mut chunk_id = base.clone();
        let mut n = 2;
        while !used_ids.insert(chunk_id.clone()) {
            chunk_id = format!("{base}-{n}");
            n += 1;
        }
        let full_text = open.lines.join("\n").trim().to_owned();
        let heading = if has_heading {
            open.path.clone()
        } else {
            "(preamble)".to_owned()
        };
        let tokens: Vec<String> = tokenize(&format!("{heading}\n{body}"));
        let mut terms = HashMap::new();
        for token in &tokens {
            *terms.entry(token.clone()).or_insert(0) += 1;
        }
        chunks.push(Chunk {
            chunk_id,
            heading,
            text: full_text,
            terms,
            length: tokens.len() as u32,
            data,
        });
        Ok(())
    };

    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        let heading = if in_fence { None } else { heading_of(line) };
        if let Some((level, title)) = heading {
            let previous = std::mem::replace(
                &mut open,
                Open {
                    heading: String::new(),
                    path: String::new(),
                    start_line: line_no,
                    lines: Vec::new(),
                },
            );
            close(previous, &mut chunks)?;
            stack.retain(|(l, _)| *l < level);
            stack.push((level, title.clone()));
            open.path = stack
                .iter()
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join(" > ");
            open.heading = title;
        }
        open.lines.push(line.to_owned());
    }
    close(open, &mut chunks)?;
    Ok(chunks)
}

/// `## Title` → (2, "Title").
fn heading_of(line: &str) -> Option<(usize, String)> {
    let level = line.bytes().take_while(|b| *b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    if !rest.starts_with(' ') && !rest.is_empty() {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim().to_owned();
    (!title.is_empty()).then_some((level, title))
}

/// Parses the batch table and release-rule lines of one section.
fn parse_section_data(
    heading: &str,
    lines: &[String],
    first_line: usize,
) -> Result<SectionData, String> {
    let mut data = SectionData::default();
    let is_rule_section = heading.to_lowercase().contains("release rule");
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if line.starts_with('|') {
            // A table: header, separator, rows.
            let start = i;
            while i < lines.len() && lines[i].trim().starts_with('|') {
                i += 1;
            }
            parse_table(&lines[start..i], first_line + start, &mut data)?;
            continue;
        }
        if let Some((key, value_text)) = rule_line(line).filter(|_| is_rule_section) {
            let value = parse_value(value_text).ok_or_else(|| {
                format!(
                    "line {}: release rule {key} has a non-numeric value {value_text:?}",
                    first_line + i
                )
            })?;
            if data.release_rule.iter().any(|(k, _)| k == key) {
                return Err(format!(
                    "line {}: release rule {key} is defined twice",
                    first_line + i
                ));
            }
            data.release_rule.push((key.to_owned(), value));
        }
        i += 1;
    }
    if is_rule_section && data.release_rule.is_empty() {
        return Err(format!(
            "section {heading:?} (line {}) has no `- key: number` rule lines",
            first_line.saturating_sub(1)
        ));
    }
    Ok(data)
}

/// `- average_gte: 78` → ("average_gte", "78"); keys are snake_case, backticks allowed.
fn rule_line(line: &str) -> Option<(&str, &str)> {
    let rest = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))?;
    let (key, value) = rest.split_once(':')?;
    let key = key.trim().trim_matches('`');
    let is_key = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    is_key.then(|| (key, value.trim().trim_matches('`')))
}

fn table_cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split('|').map(|c| c.trim().to_owned()).collect()
}

/// Only tables whose first header cell is `Batch` carry data; others are prose.
fn parse_table(lines: &[String], first_line: usize, data: &mut SectionData) -> Result<(), String> {
    let header = table_cells(&lines[0]);
    if !header
        .first()
        .is_some_and(|h| h.eq_ignore_ascii_case("batch"))
    {
        return Ok(());
    }
    if header.len() < 2 {
        return Err(format!(
            "line {first_line}: batch table needs a value column"
        ));
    }
    if !data.batches.is_empty() {
        return Err(format!(
            "line {first_line}: a second batch table in the same section"
        ));
    }
    let separator_ok = lines
        .get(1)
        .map(|l| {
            table_cells(l)
                .iter()
                .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')))
        })
        .unwrap_or(false);
    if !separator_ok {
        return Err(format!(
            "line {}: batch table lacks its `|---|---|` separator row",
            first_line + 1
        ));
    }
    let (metric, unit) = split_unit(&header[1]);
    data.metric = Some((metric, unit));
    for (offset, line) in lines.iter().enumerate().skip(2) {
        let line_no = first_line + offset;
        let cells = table_cells(line);
        if cells.len() != header.len() {
            return Err(format!(
                "line {line_no}: row has {} cells, the header has {}",
                cells.len(),
                header.len()
            ));
        }
        if cells[0].is_empty() {
            return Err(format!("line {line_no}: batch label is empty"));
        }
        let value = parse_value(&cells[1]).ok_or_else(|| {
            format!(
                "line {line_no}: value {:?} for {} is not a finite number",
                cells[1], cells[0]
            )
        })?;
        if data.batches.iter().any(|b| b.label == cells[0]) {
            return Err(format!(
                "line {line_no}: batch {} is listed twice",
                cells[0]
            ));
        }
        data.batches.push(BatchValue {
            label: cells[0].clone(),
            value,
        });
    }
    if data.batches.is_empty() {
        return Err(format!("line {first_line}: batch table has no rows"));
    }
    Ok(())
}

/// `Task Success (%)` → ("Task Success", Some("%")).
fn split_unit(header: &str) -> (String, Option<String>) {
    if let (Some(open), true) = (header.rfind('('), header.ends_with(')')) {
        let unit = header[open + 1..header.len() - 1].trim();
        return (
            header[..open].trim().to_owned(),
            (!unit.is_empty()).then(|| unit.to_owned()),
        );
    }
    (header.trim().to_owned(), None)
}

/// A finite decimal, optionally followed by `%`.
fn parse_value(text: &str) -> Option<f64> {
    let text = text.trim().trim_end_matches('%').trim();
    if text.is_empty()
        || !text
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+'))
    {
        return None;
    }
    text.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// The facts of the returned sections, merged in rank order.
fn merge_data<'a>(sections: impl Iterator<Item = &'a SectionData>) -> Value {
    let mut metric: Option<&(String, Option<String>)> = None;
    let mut batches: Vec<&BatchValue> = Vec::new();
    let mut rule: Map<String, Value> = Map::new();
    for section in sections {
        if metric.is_none() {
            metric = section.metric.as_ref();
        }
        for batch in &section.batches {
            if !batches.iter().any(|b| b.label == batch.label) {
                batches.push(batch);
            }
        }
        for (key, value) in &section.release_rule {
            rule.entry(key.clone())
                .or_insert_with(|| number_value(*value));
        }
    }
    json!({
        "metric": metric.map(|(name, _)| name.clone()),
        "unit": metric.and_then(|(_, unit)| unit.clone()),
        "batches": batches.iter().map(|b| json!({ "label": b.label, "value": number_value(b.value) })).collect::<Vec<_>>(),
        "release_rule": if rule.is_empty() { Value::Null } else { Value::Object(rule) },
    })
}

fn summarize(citations: &[Citation], data: &Value) -> String {
    let sections: Vec<&str> = citations.iter().map(|c| c.chunk_id.as_str()).collect();
    let mut parts = vec![format!(
        "{} section(s): {}",
        citations.len(),
        sections.join(", ")
    )];
    if let Some(batches) = data["batches"].as_array().filter(|b| !b.is_empty()) {
        let listed: Vec<String> = batches
            .iter()
            .map(|b| format!("{}={}", b["label"].as_str().unwrap_or(""), b["value"]))
            .collect();
        let metric = data["metric"].as_str().unwrap_or("value");
        parts.push(format!("{metric}: {}", listed.join(", ")));
    }
    if let Some(rule) = data["release_rule"].as_object() {
        let listed: Vec<String> = rule.iter().map(|(k, v)| format!("{k}={v}")).collect();
        parts.push(format!("release rule: {}", listed.join(", ")));
    }
    if data["batches"].as_array().is_none_or(Vec::is_empty) && data["release_rule"].is_null() {
        parts.push("no structured data in these sections".to_owned());
    }
    parts.join("; ")
}

/// blake3 over `source_id NUL blake3 LF` for every searched source, sorted by id.
fn aggregate_hash(sources: &[Source]) -> String {
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

/// BM25 over every section of every source; only sections sharing at least one
/// query term are returned, best first (ties keep file order).
fn rank<'a>(sources: &'a [Source], query: &str) -> Vec<(&'a Source, &'a Chunk, f64)> {
    let all: Vec<(&Source, &Chunk)> = sources
        .iter()
        .flat_map(|s| s.chunks.iter().map(move |c| (s, c)))
        .collect();
    let n = all.len() as f64;
    if all.is_empty() {
        return Vec::new();
    }
    let average_length = all.iter().map(|(_, c)| f64::from(c.length)).sum::<f64>() / n;
    let mut query_terms: Vec<String> = tokenize(query);
    query_terms.sort();
    query_terms.dedup();
    let document_frequency: BTreeMap<&str, f64> = query_terms
        .iter()
        .map(|t| {
            (
                t.as_str(),
                all.iter().filter(|(_, c)| c.terms.contains_key(t)).count() as f64,
            )
        })
        .collect();

    let mut scored: Vec<(&Source, &Chunk, f64)> = all
        .into_iter()
        .map(|(source, chunk)| {
            let length_norm =
                1.0 - BM25_B + BM25_B * f64::from(chunk.length) / average_length.max(1.0);
            let score = query_terms
                .iter()
                .filter_map(|term| {
                    let tf = f64::from(*chunk.terms.get(term)?);
                    let df = document_frequency[term.as_str()];
                    let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                    Some(idf * tf * (BM25_K1 + 1.0) / (tf + BM25_K1 * length_norm))
                })
                .sum::<f64>();
            (source, chunk, score)
        })
        .filter(|(_, _, score)| *score > 0.0)
        .collect();
    // Stable sort: equal scores keep source/file order.
    scored.sort_by(|a, b| b.2.total_cmp(&a.2));
    scored
}

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i", "in",
    "is", "it", "its", "me", "of", "on", "or", "the", "this", "that", "to", "what", "when",
    "which", "with",
];

/// Lower-cased alphanumeric runs, stop words dropped, light plural folding
/// (`batches` → `batch`, `rules` → `rule`) so queries need not match inflection.
pub(crate) fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| fold_plural(&w.to_lowercase()))
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect()
}

fn fold_plural(word: &str) -> String {
    let n = word.len();
    if !word.is_ascii()
        || n <= 3
        || word.ends_with("ss")
        || word.ends_with("us")
        || word.ends_with("is")
    {
        return word.to_owned();
    }
    if n > 4 && word.ends_with("ies") {
        return format!("{}y", &word[..n - 3]);
    }
    if n > 4
        && ["ches", "shes", "xes", "sses"]
            .iter()
            .any(|s| word.ends_with(s))
    {
        return word[..n - 2].to_owned();
    }
    if word.ends_with('s') {
        return word[..n - 1].to_owned();
    }
    word.to_owned()
}

/// Lower-case ASCII slug of a heading: `Task Success by batch` → `task-success-by-batch`.
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_owned();
    if out.is_empty() {
        "section".to_owned()
    } else {
        out
    }
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
    fn plural_folding_keeps_short_and_latin_words() {
        assert_eq!(
            tokenize("Batches rules success status average"),
            ["batch", "rule", "success", "status", "average"]
        );
    }

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
            assert!(!is_plain_markdown_name(bad), "{bad}");
        }
        assert!(is_plain_markdown_name("agent_eval_mini.md"));
    }

    #[test]
    fn unit_split() {
        assert_eq!(
            split_unit("Task Success (%)"),
            ("Task Success".into(), Some("%".into()))
        );
        assert_eq!(split_unit("Score"), ("Score".into(), None));
    }
}
