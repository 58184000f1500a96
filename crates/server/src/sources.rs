//! The source browser's explanations: each Rust file's public items (a small lexer, not a parser), each file's stage in the decision → validate → tool → observation chain, and a finished run's events linked to the files that produced them.
//!
//! The chain is data (`crates/server/chain.toml`, compiled in) so the page, the API and the completeness test
//! read one table; nothing here names a file. Axum-free: `http.rs` shapes the responses.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The mapping as written in the repository; parsed once.
const CHAIN_TOML: &str = include_str!("../chain.toml");

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    pub id: String,
    pub title: String,
    /// False for `support`: files outside the chain, drawn apart from the strip.
    pub chain: bool,
    pub summary: String,
    /// Exact paths (the only way a file under `crates/*/src/` may be placed).
    #[serde(default)]
    pub files: Vec<String>,
    /// Globs for files outside `crates/*/src/`: `*` within a segment, `**` any number of segments.
    #[serde(default)]
    pub patterns: Vec<String>,
}

/// Where one trace phase comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventSource {
    pub phase: String,
    pub stage: String,
    /// The file that emits the phase (it contains the phase's string literal; a test checks it).
    pub emitted_by: String,
    /// Files that explain what the event records.
    #[serde(default)]
    pub explained_by: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Chain {
    #[serde(rename = "stage")]
    pub stages: Vec<Stage>,
    #[serde(rename = "event")]
    pub events: Vec<EventSource>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    #[error("chain.toml is not valid: {0}")]
    Invalid(String),
    #[error("chain.toml: event {phase:?} names unknown stage {stage:?}")]
    UnknownStage { phase: String, stage: String },
    #[error("chain.toml: stage {0:?} is defined twice")]
    DuplicateStage(String),
}

impl From<ChainError> for crate::ApiError {
    fn from(e: ChainError) -> Self {
        crate::ApiError::internal(e.to_string())
    }
}

impl Chain {
    /// Parse and check the references inside the table (file existence is the tests' business: the
    /// served tree may be another root).
    pub fn parse(text: &str) -> Result<Chain, ChainError> {
        let chain: Chain = toml::from_str(text).map_err(|e| ChainError::Invalid(e.message().to_owned()))?;
        let mut seen = std::collections::HashSet::new();
        for s in &chain.stages {
            if !seen.insert(s.id.as_str()) {
                return Err(ChainError::DuplicateStage(s.id.clone()));
            }
        }
        for e in &chain.events {
            if !seen.contains(e.stage.as_str()) {
                return Err(ChainError::UnknownStage { phase: e.phase.clone(), stage: e.stage.clone() });
            }
        }
        Ok(chain)
    }

    /// The stage of a path: an exact entry wins over any pattern; patterns in file order.
    pub fn stage_of(&self, path: &str) -> Option<&Stage> {
        self.stages
            .iter()
            .find(|s| s.files.iter().any(|f| f == path))
            .or_else(|| self.stages.iter().find(|s| s.patterns.iter().any(|p| glob_match(p, path))))
    }

    pub fn stage(&self, id: &str) -> Option<&Stage> {
        self.stages.iter().find(|s| s.id == id)
    }

    pub fn event(&self, phase: &str) -> Option<&EventSource> {
        self.events.iter().find(|e| e.phase == phase)
    }
}

/// The compiled-in chain (parsed on first use; an invalid table is a typed 500, and a test keeps it valid).
pub fn chain() -> Result<&'static Chain, ChainError> {
    static CHAIN: OnceLock<Result<Chain, ChainError>> = OnceLock::new();
    CHAIN.get_or_init(|| Chain::parse(CHAIN_TOML)).as_ref().map_err(Clone::clone)
}

/// `*` matches within one `/`-segment, `**` matches any number of whole segments (zero included).
pub fn glob_match(pattern: &str, path: &str) -> bool {
    fn segs(p: &[&str], s: &[&str]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((&"**", rest)) => (0..=s.len()).any(|i| segs(rest, &s[i..])),
            Some((first, rest)) => !s.is_empty() && seg(first.as_bytes(), s[0].as_bytes()) && segs(rest, &s[1..]),
        }
    }
    fn seg(p: &[u8], s: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((b'*', rest)) => (0..=s.len()).any(|i| seg(rest, &s[i..])),
            Some((c, rest)) => s.first() == Some(c) && seg(rest, &s[1..]),
        }
    }
    let p: Vec<&str> = pattern.split('/').collect();
    let s: Vec<&str> = path.split('/').collect();
    segs(&p, &s)
}

/// One public item of a Rust file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    /// `fn`, `struct`, `enum`, `trait`, `const`, `static`, `type`, `mod`, `union`.
    pub kind: &'static str,
    pub name: String,
    /// 1-based line of the `pub` keyword.
    pub line: usize,
    /// `impl Type` for a method or associated item, `mod name` inside an inline module, else absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The declaration's first line, up to its body (at most 160 characters).
    pub signature: String,
}

/// What kind of block the scanner is inside.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Block {
    Impl(String),
    Mod(String),
    /// A trait or extern block: their items carry no `pub`, but a `pub` inside is still not a field.
    Container,
    /// A function body, a struct/enum body, an expression: `pub` there is a field or nothing public.
    Other,
}

/// The public items (`pub` exactly, not `pub(crate)`) at module level, in inline modules and in impl
/// blocks, in line order. Comments, strings and char literals are blanked first, so a `pub fn` inside a
/// doc example or a string is never listed, and braces inside them never confuse the nesting.
pub fn public_items(text: &str) -> Vec<Item> {
    let blank = blank_comments_and_strings(text);
    let originals: Vec<&str> = text.lines().collect();
    let mut stack: Vec<Block> = Vec::new();
    let mut header = String::new();
    let mut items = Vec::new();
    for (index, line) in blank.lines().enumerate() {
        let inside_items = stack.iter().all(|b| matches!(b, Block::Impl(_) | Block::Mod(_)));
        if inside_items && let Some((kind, name)) = item_of(line.trim_start()) {
            let parent = match stack.last() {
                Some(Block::Impl(t)) => Some(format!("impl {t}")),
                Some(Block::Mod(m)) => Some(format!("mod {m}")),
                _ => None,
            };
            let original = originals.get(index).copied().unwrap_or("").trim();
            let body = original.find(" {").map_or(original, |i| &original[..i]);
            items.push(Item { kind, name, line: index + 1, parent, signature: body.trim_end().chars().take(160).collect() });
        }
        for c in line.chars() {
            match c {
                '{' => {
                    stack.push(classify(&header));
                    header.clear();
                }
                '}' => {
                    stack.pop();
                    header.clear();
                }
                ';' => header.clear(),
                _ => header.push(c),
            }
        }
        header.push(' ');
    }
    items
}

/// `pub [const|async|unsafe|extern "…"]* KIND NAME` → (kind, name).
fn item_of(line: &str) -> Option<(&'static str, String)> {
    let rest = line.strip_prefix("pub ")?;
    let mut words = rest.split_whitespace().peekable();
    const KINDS: [&str; 9] = ["fn", "struct", "enum", "trait", "const", "static", "type", "mod", "union"];
    while let Some(word) = words.next() {
        match word {
            "async" | "unsafe" | "default" | "extern" => continue,
            // The ABI string of `extern "C"` is blanked to spaces between quotes.
            w if w.starts_with('"') => continue,
            // `const fn` is a function; `const NAME` a constant.
            "const" if words.peek().is_some_and(|n| matches!(*n, "fn" | "unsafe" | "async" | "extern")) => continue,
            "static" if words.peek() == Some(&"mut") => {
                words.next();
                return name_of(words.next()?).map(|n| ("static", n));
            }
            w => {
                let kind = KINDS.iter().find(|k| **k == w)?;
                return name_of(words.next()?).map(|n| (*kind, n));
            }
        }
    }
    None
}

fn name_of(word: &str) -> Option<String> {
    let word = word.strip_prefix("r#").unwrap_or(word);
    let name: String = word.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then_some(name)
}

/// What block a `{` opens, from the text since the previous `;`, `{` or `}` (attributes skipped).
fn classify(header: &str) -> Block {
    let mut h = header.trim();
    // Leading attributes `#[…]` / `#![…]`, bracket-balanced.
    while let Some(rest) = h.strip_prefix("#!").or_else(|| h.strip_prefix('#')) {
        let Some(body) = rest.trim_start().strip_prefix('[') else { break };
        let mut depth = 1usize;
        let mut end = None;
        for (i, c) in body.char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { break };
        h = body[end..].trim_start();
    }
    let mut words: Vec<&str> = h.split_whitespace().collect();
    while let Some(first) = words.first() {
        if *first == "pub" || first.starts_with("pub(") || matches!(*first, "unsafe" | "default") {
            words.remove(0);
        } else {
            break;
        }
    }
    match words.first().copied() {
        Some(w) if w == "impl" || w.starts_with("impl<") => Block::Impl(impl_type(&words.join(" "))),
        Some("mod") => Block::Mod(words.get(1).and_then(|w| name_of(w)).unwrap_or_default()),
        Some("trait" | "extern") => Block::Container,
        _ => Block::Other,
    }
}

/// `impl<'a, T> Trait<T> for path::Type<'a> where …` → `Type`.
fn impl_type(header: &str) -> String {
    let mut h = header.trim_start_matches("impl");
    if h.starts_with('<') {
        let mut depth = 0i32;
        for (i, c) in h.char_indices() {
            match c {
                '<' => depth += 1,
                '>' => {
                    depth -= 1;
                    if depth == 0 {
                        h = &h[i + 1..];
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    let h = h.split(" where ").next().unwrap_or(h);
    let ty = h.rsplit_once(" for ").map_or(h, |(_, t)| t).trim();
    let ty = ty.split('<').next().unwrap_or(ty);
    ty.rsplit("::").next().unwrap_or(ty).trim().to_string()
}

/// The text with the contents of comments, string literals and char literals replaced by spaces
/// (newlines kept, so line numbers stay). Lifetimes (`'a`) are left alone.
fn blank_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            // Block comments nest in Rust.
            let mut depth = 0usize;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (i == 0 || !is_ident(chars[i - 1]) || (chars[i - 1] == 'b' && (i < 2 || !is_ident(chars[i - 2]))))
            && matches!(next, Some('"') | Some('#'))
            && {
                let mut j = i + 1;
                while chars.get(j) == Some(&'#') {
                    j += 1;
                }
                chars.get(j) == Some(&'"')
            }
        {
            // Raw string r#"…"#: ends at a quote followed by as many hashes.
            let mut hashes = 0;
            out.push('r');
            i += 1;
            while chars[i] == '#' {
                hashes += 1;
                out.push('#');
                i += 1;
            }
            out.push('"');
            i += 1;
            while i < chars.len() {
                if chars[i] == '"' && (0..hashes).all(|k| chars.get(i + 1 + k) == Some(&'#')) {
                    out.push('"');
                    out.extend(std::iter::repeat_n('#', hashes));
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() {
                if chars[i] == '\\' {
                    out.push(' ');
                    if let Some(&e) = chars.get(i + 1) {
                        out.push(blank(e));
                    }
                    i += 2;
                } else if chars[i] == '"' {
                    out.push('"');
                    i += 1;
                    break;
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A char literal ('{', '\n', '\''); anything else after a quote is a lifetime or label.
            out.push('\'');
            i += 1;
            if chars.get(i) == Some(&'\\') {
                // The escaped character itself may be a quote: it is part of the literal.
                out.push(' ');
                if let Some(&e) = chars.get(i + 1) {
                    out.push(blank(e));
                }
                i += 2;
            }
            while i < chars.len() && chars[i] != '\'' {
                out.push(blank(chars[i]));
                i += 1;
            }
            if i < chars.len() {
                out.push('\'');
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// A finished run's events in order, each with its stage, the file that emitted it and the files that
/// explain it. A phase the chain does not know keeps `stage: null` and no files (shown, not hidden).
pub fn follow(chain: &Chain, events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .map(|e| {
            let phase = e.get("phase").and_then(Value::as_str).unwrap_or("");
            let source = chain.event(phase);
            let mut files: Vec<&str> = Vec::new();
            if let Some(s) = source {
                for f in std::iter::once(&s.emitted_by).chain(&s.explained_by) {
                    if !files.contains(&f.as_str()) {
                        files.push(f);
                    }
                }
            }
            json!({
                "seq": e.get("seq"),
                "step": e.get("step"),
                "attempt": e.get("attempt"),
                "phase": phase,
                "stage": source.map(|s| s.stage.as_str()),
                "emitted_by": source.map(|s| s.emitted_by.as_str()),
                "files": files,
                "data": e.get("data"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<(String, String, usize, Option<String>)> {
        public_items(text).into_iter().map(|i| (i.kind.to_string(), i.name, i.line, i.parent)).collect()
    }

    #[test]
    fn public_items_are_listed_with_lines_and_parents() {
        let src = r##"//! A file.
use std::fmt;

pub const LIMIT: usize = 3;
pub(crate) fn hidden() {}
/// Docs: pub fn in_doc() {}
pub struct Point { pub x: i32, y: i32 }
pub enum Kind {
    A,
}
impl<'a> fmt::Display for Wrapper<'a> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "pub fn in_string() {{") }
}
impl Point {
    pub const fn new() -> Self { Point { x: 0, y: 0 } }
    pub fn brace(&self) -> char { '{' }
    fn private(&self) {}
    pub async fn later(&self) {}
}
fn body() {
    let s = r#"pub fn raw() { "#;
    pub fn nested() {}
}
pub mod inner {
    pub type Alias = u8;
    pub static mut COUNT: u32 = 0;
}
/* pub fn commented() {} /* nested */ pub fn still() {} */
pub unsafe extern "C" fn ffi() {}
pub trait Shape<'a> {}
pub fn quote() -> char { '\'' }
pub fn after_quote() {}
"##;
        let expected: Vec<(String, String, usize, Option<String>)> = vec![
                ("const".into(), "LIMIT".into(), 4, None),
                ("struct".into(), "Point".into(), 7, None),
                ("enum".into(), "Kind".into(), 8, None),
                ("fn".into(), "new".into(), 15, Some("impl Point".into())),
                ("fn".into(), "brace".into(), 16, Some("impl Point".into())),
                ("fn".into(), "later".into(), 18, Some("impl Point".into())),
                ("mod".into(), "inner".into(), 24, None),
                ("type".into(), "Alias".into(), 25, Some("mod inner".into())),
                ("static".into(), "COUNT".into(), 26, Some("mod inner".into())),
                ("fn".into(), "ffi".into(), 29, None),
                ("trait".into(), "Shape".into(), 30, None),
                ("fn".into(), "quote".into(), 31, None),
                ("fn".into(), "after_quote".into(), 32, None),
        ];
        assert_eq!(names(src), expected);
        let sig = &public_items(src)[3].signature;
        assert_eq!(sig, "pub const fn new() -> Self");
    }

    #[test]
    fn impl_headers_name_their_self_type() {
        assert_eq!(impl_type("impl<'s> Tracer<'s>"), "Tracer");
        assert_eq!(impl_type("impl From<ExampleError> for ApiError"), "ApiError");
        assert_eq!(impl_type("impl<T: Clone> crate::a::B<T> where T: Send"), "B");
    }

    #[test]
    fn globs_match_within_and_across_segments() {
        assert!(glob_match("crates/*/tests/**", "crates/server/tests/common/mod.rs"));
        assert!(glob_match("crates/*/Cargo.toml", "crates/llama/Cargo.toml"));
        assert!(glob_match("crates/server/web/*", "crates/server/web/app.js"));
        assert!(!glob_match("crates/server/web/*", "crates/server/web/x/app.js"));
        assert!(!glob_match("crates/*/tests/**", "crates/server/src/lib.rs"));
        assert!(glob_match("a/**/b.rs", "a/b.rs"));
    }

    #[test]
    fn the_compiled_in_chain_parses_and_refuses_bad_references() {
        let c = chain().expect("chain.toml parses");
        assert!(c.stages.iter().any(|s| !s.chain), "a support stage exists");
        assert_eq!(c.stage_of("crates/server/tests/http_api.rs").map(|s| s.id.as_str()), Some("support"));
        assert_eq!(c.stage_of("crates/runtime/src/decision.rs").map(|s| s.id.as_str()), Some("validate"));
        assert_eq!(c.stage_of("README.md"), None);
        let bad = "[[stage]]\nid='a'\ntitle='A'\nchain=true\nsummary=''\n[[event]]\nphase='x'\nstage='b'\nemitted_by='f'\n";
        assert!(matches!(Chain::parse(bad), Err(ChainError::UnknownStage { .. })));
        assert!(matches!(Chain::parse("[[stage]]\nid=1"), Err(ChainError::Invalid(_))));
    }
}
