//! The source browser's explanations: each Rust file's public items (read by `syn`), each file's stage in the decision → validate → tool → observation chain, and a finished run's events linked to the files that produced them.
//!
//! The chain is data (`crates/server/chain.toml`, compiled in) so the page, the API and the completeness test
//! read one table; nothing here names a file. Axum-free: `http/` shapes the responses.

use std::sync::OnceLock;
use syn::ext::IdentExt;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The mapping as written in the repository; parsed once.
const CHAIN_TOML: &str = include_str!("../chain.toml");

/// A stage of the decision → validate → tool → observation chain (`[[stage]]` in chain.toml): not a course
/// stage under `stages/`, which `course` reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainStage {
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
    pub stages: Vec<ChainStage>,
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
        let chain: Chain =
            toml::from_str(text).map_err(|e| ChainError::Invalid(e.message().to_owned()))?;
        let mut seen = std::collections::HashSet::new();
        for s in &chain.stages {
            if !seen.insert(s.id.as_str()) {
                return Err(ChainError::DuplicateStage(s.id.clone()));
            }
        }
        for e in &chain.events {
            if !seen.contains(e.stage.as_str()) {
                return Err(ChainError::UnknownStage {
                    phase: e.phase.clone(),
                    stage: e.stage.clone(),
                });
            }
        }
        Ok(chain)
    }

    /// The stage of a path: an exact entry wins over any pattern; patterns in file order.
    pub fn stage_of(&self, path: &str) -> Option<&ChainStage> {
        self.stages
            .iter()
            .find(|s| s.files.iter().any(|f| f == path))
            .or_else(|| {
                self.stages
                    .iter()
                    .find(|s| s.patterns.iter().any(|p| glob_match(p, path)))
            })
    }

    pub fn stage(&self, id: &str) -> Option<&ChainStage> {
        self.stages.iter().find(|s| s.id == id)
    }

    pub fn event(&self, phase: &str) -> Option<&EventSource> {
        self.events.iter().find(|e| e.phase == phase)
    }
}

/// The compiled-in chain (parsed on first use; an invalid table is a typed 500, and a test keeps it valid).
pub fn chain() -> Result<&'static Chain, ChainError> {
    static CHAIN: OnceLock<Result<Chain, ChainError>> = OnceLock::new();
    CHAIN
        .get_or_init(|| Chain::parse(CHAIN_TOML))
        .as_ref()
        .map_err(Clone::clone)
}

/// `*` matches within one `/`-segment, `**` matches any number of whole segments (zero included).
pub fn glob_match(pattern: &str, path: &str) -> bool {
    fn segs(p: &[&str], s: &[&str]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((&"**", rest)) => (0..=s.len()).any(|i| segs(rest, &s[i..])),
            Some((first, rest)) => {
                !s.is_empty() && seg(first.as_bytes(), s[0].as_bytes()) && segs(rest, &s[1..])
            }
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

/// The public items (`pub` exactly, not `pub(crate)`) at module level, in inline modules and in impl
/// blocks, in line order, read by `syn`: a `pub fn` inside a comment, a doc example, a string or a function
/// body is never listed. A file that does not parse lists nothing (the page then shows the file without
/// its outline, never a guess).
pub fn public_items(text: &str) -> Vec<Item> {
    let Ok(file) = syn::parse_file(text) else {
        return Vec::new();
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut items = Vec::new();
    collect(&file.items, None, &lines, &mut items);
    items.sort_by_key(|i| i.line);
    items
}

fn collect(list: &[syn::Item], parent: Option<&str>, lines: &[&str], out: &mut Vec<Item>) {
    for item in list {
        if let Some((kind, vis, name)) = kind_of(item) {
            push(out, lines, kind, vis, name, parent);
        }
        match item {
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    collect(inner, Some(&format!("mod {}", m.ident)), lines, out);
                }
            }
            syn::Item::Impl(block) => {
                let parent = format!("impl {}", self_type(&block.self_ty));
                for member in &block.items {
                    let (kind, vis, name) = match member {
                        syn::ImplItem::Fn(f) => ("fn", &f.vis, &f.sig.ident),
                        syn::ImplItem::Const(c) => ("const", &c.vis, &c.ident),
                        syn::ImplItem::Type(t) => ("type", &t.vis, &t.ident),
                        _ => continue,
                    };
                    push(out, lines, kind, vis, name, Some(&parent));
                }
            }
            _ => {}
        }
    }
}

/// An item's kind, visibility and name (items without a name of their own, such as `impl`, are None).
fn kind_of(item: &syn::Item) -> Option<(&'static str, &syn::Visibility, &syn::Ident)> {
    Some(match item {
        syn::Item::Fn(f) => ("fn", &f.vis, &f.sig.ident),
        syn::Item::Struct(x) => ("struct", &x.vis, &x.ident),
        syn::Item::Enum(x) => ("enum", &x.vis, &x.ident),
        syn::Item::Trait(x) => ("trait", &x.vis, &x.ident),
        syn::Item::Const(x) => ("const", &x.vis, &x.ident),
        syn::Item::Static(x) => ("static", &x.vis, &x.ident),
        syn::Item::Type(x) => ("type", &x.vis, &x.ident),
        syn::Item::Mod(x) => ("mod", &x.vis, &x.ident),
        syn::Item::Union(x) => ("union", &x.vis, &x.ident),
        _ => return None,
    })
}

fn push(
    out: &mut Vec<Item>,
    lines: &[&str],
    kind: &'static str,
    vis: &syn::Visibility,
    name: &syn::Ident,
    parent: Option<&str>,
) {
    let syn::Visibility::Public(token) = vis else {
        return;
    };
    let line = token.span.start().line;
    let original = lines
        .get(line.saturating_sub(1))
        .copied()
        .unwrap_or("")
        .trim();
    let body = original.find(" {").map_or(original, |i| &original[..i]);
    out.push(Item {
        kind,
        name: name.unraw().to_string(),
        line,
        parent: parent.map(str::to_owned),
        signature: body.trim_end().chars().take(160).collect(),
    });
}

/// `impl<'a, T> Trait<T> for path::Type<'a>` → `Type`: the last segment of a path type, else the type as
/// written.
fn self_type(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.unraw().to_string())
            .unwrap_or_default(),
        syn::Type::Reference(r) => self_type(&r.elem),
        other => quote::ToTokens::to_token_stream(other).to_string(),
    }
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
        public_items(text)
            .into_iter()
            .map(|i| (i.kind.to_string(), i.name, i.line, i.parent))
            .collect()
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
            (
                "static".into(),
                "COUNT".into(),
                26,
                Some("mod inner".into()),
            ),
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
    fn impl_blocks_name_their_self_type_and_a_file_that_does_not_parse_lists_nothing() {
        let src = "impl<'s> Tracer<'s> { pub fn a() {} }\nimpl From<E> for ApiError { pub fn b() {} }\nimpl<T: Clone> crate::a::B<T> where T: Send { pub fn c() {} }\n";
        let parents: Vec<Option<String>> =
            public_items(src).into_iter().map(|i| i.parent).collect();
        assert_eq!(
            parents,
            vec![
                Some("impl Tracer".into()),
                Some("impl ApiError".into()),
                Some("impl B".into())
            ]
        );
        assert_eq!(public_items("pub fn broken( {"), Vec::<Item>::new());
    }

    #[test]
    fn globs_match_within_and_across_segments() {
        assert!(glob_match(
            "crates/*/tests/**",
            "crates/server/tests/common/mod.rs"
        ));
        assert!(glob_match("crates/*/Cargo.toml", "crates/llama/Cargo.toml"));
        assert!(glob_match(
            "crates/server/web/*",
            "crates/server/web/app.js"
        ));
        assert!(!glob_match(
            "crates/server/web/*",
            "crates/server/web/x/app.js"
        ));
        assert!(!glob_match("crates/*/tests/**", "crates/server/src/lib.rs"));
        assert!(glob_match("a/**/b.rs", "a/b.rs"));
    }

    #[test]
    fn the_compiled_in_chain_parses_and_refuses_bad_references() {
        let c = chain().expect("chain.toml parses");
        assert!(c.stages.iter().any(|s| !s.chain), "a support stage exists");
        assert_eq!(
            c.stage_of("crates/server/tests/http_api.rs")
                .map(|s| s.id.as_str()),
            Some("support")
        );
        assert_eq!(
            c.stage_of("crates/runtime/src/decision.rs")
                .map(|s| s.id.as_str()),
            Some("validate")
        );
        assert_eq!(c.stage_of("README.md"), None);
        let bad = "[[stage]]\nid='a'\ntitle='A'\nchain=true\nsummary=''\n[[event]]\nphase='x'\nstage='b'\nemitted_by='f'\n";
        assert!(matches!(
            Chain::parse(bad),
            Err(ChainError::UnknownStage { .. })
        ));
        assert!(matches!(
            Chain::parse("[[stage]]\nid=1"),
            Err(ChainError::Invalid(_))
        ));
    }
}
