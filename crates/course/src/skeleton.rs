//! Scratch-mode skeletons: a Rust source file with every function body replaced by `todo!()`.
//!
//! Types, signatures, doc comments and everything outside function bodies stay byte for byte, so
//! the stage tests still compile against the skeleton (and fail until the learner fills it in).
//! The file is parsed with `syn` (spans with byte ranges): every function with a body — free,
//! in an `impl`, a trait's default — has the text between its braces replaced; a function nested in
//! a body goes with that body.

use syn::visit::Visit;

/// Comment put above the skeleton's `#![allow(unused)]`.
const HEADER: &str = "\
// Scratch mode: every function body in this file is `todo!()`. Build them from the
// implementation steps in README.md; the same tests judge your version. Delete the next
// line once you are done: it only quiets the warnings about parameters, imports and helpers
// that the empty bodies do not use yet.
#![allow(unused)]
";

/// Returns `source` with each function body replaced by `todo!()`, plus the allow header. A file that
/// does not parse is an error naming where.
pub fn todo_bodies(source: &str) -> anyhow::Result<String> {
    let file = syn::parse_file(source).map_err(|e| {
        let at = e.span().start();
        anyhow::anyhow!("not a Rust file ({}:{}): {e}", at.line, at.column + 1)
    })?;
    let mut bodies = Bodies::default();
    bodies.visit_file(&file);
    let mut out = String::with_capacity(source.len());
    let mut at = 0;
    for (fn_start, body) in bodies.found {
        let indent = line_indent(source, fn_start);
        out.push_str(&source[at..body.start]);
        out.push_str(&format!("{{\n{indent}    todo!()\n{indent}}}"));
        at = body.end;
    }
    out.push_str(&source[at..]);
    Ok(insert_header(&out))
}

/// Functions with a body, outermost only, in source order: the byte offset of the `fn` keyword and the
/// byte range of the body, braces included.
#[derive(Default)]
struct Bodies {
    found: Vec<(usize, std::ops::Range<usize>)>,
}

impl Bodies {
    fn push(&mut self, sig: &syn::Signature, block: &syn::Block) {
        let open = block.brace_token.span.open().byte_range();
        let close = block.brace_token.span.close().byte_range();
        self.found
            .push((sig.fn_token.span.byte_range().start, open.start..close.end));
    }
}

impl<'ast> Visit<'ast> for Bodies {
    // Not descending into a body: what it holds (nested functions too) is replaced with it.
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.push(&f.sig, &f.block);
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.push(&f.sig, &f.block);
    }
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.push(&f.sig, block);
        }
    }
}

/// Puts the header after the leading `//!` lines (inner attributes must precede every item).
fn insert_header(source: &str) -> String {
    let mut offset = 0;
    for line in source.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//!") || (offset > 0 && trimmed.is_empty()) {
            offset += line.len();
            if trimmed.is_empty() {
                break;
            }
        } else {
            break;
        }
    }
    let (head, tail) = source.split_at(offset);
    let separator = if head.is_empty() || head.ends_with("\n\n") {
        ""
    } else {
        "\n"
    };
    format!("{head}{separator}{HEADER}\n{tail}")
}

/// The spaces and tabs that open the line holding byte `at`.
fn line_indent(source: &str, at: usize) -> &str {
    let start = source[..at].rfind('\n').map_or(0, |p| p + 1);
    let line = &source[start..at];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r##"//! A module.
//! Second line.

use std::fmt;

/// Doc stays.
pub fn braces_in_literals<'a>(x: &'a str) -> Result<char, String> {
    let _ = "}{"; let _ = '{'; let _ = '\''; let _ = r#"}"#; // }
    /* { nested /* } */ */
    Err(format!("{x}}}"))
}

pub trait Named {
    fn name(&self) -> &str;
    fn shout(&self) -> String {
        self.name().to_uppercase()
    }
}

impl fmt::Display for Thing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn inner() -> u8 { 1 }
        write!(f, "{}", inner())
    }
}

pub fn takes_pointer(f: fn(u32) -> u32, g: impl FnMut(u32)) -> [u8; 2] where u32: Copy {
    [0, 1]
}
"##;

    #[test]
    fn bodies_become_todo_and_everything_else_stays() {
        let skeleton = todo_bodies(SAMPLE).unwrap();
        let expected = r##"//! A module.
//! Second line.

// Scratch mode: every function body in this file is `todo!()`. Build them from the
// implementation steps in README.md; the same tests judge your version. Delete the next
// line once you are done: it only quiets the warnings about parameters, imports and helpers
// that the empty bodies do not use yet.
#![allow(unused)]

use std::fmt;

/// Doc stays.
pub fn braces_in_literals<'a>(x: &'a str) -> Result<char, String> {
    todo!()
}

pub trait Named {
    fn name(&self) -> &str;
    fn shout(&self) -> String {
        todo!()
    }
}

impl fmt::Display for Thing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        todo!()
    }
}

pub fn takes_pointer(f: fn(u32) -> u32, g: impl FnMut(u32)) -> [u8; 2] where u32: Copy {
    todo!()
}
"##;
        pretty_assertions::assert_eq!(skeleton, expected);
    }

    #[test]
    fn a_file_without_module_docs_gets_the_header_first() {
        let skeleton = todo_bodies("fn a() -> u8 { 1 }\n").unwrap();
        assert!(skeleton.starts_with("// Scratch mode"), "{skeleton}");
        assert!(
            skeleton.ends_with("fn a() -> u8 {\n    todo!()\n}\n"),
            "{skeleton}"
        );
    }

    #[test]
    fn a_file_that_does_not_parse_is_an_error_naming_the_place() {
        let err = todo_bodies("fn a() {\n    let x = ;\n}\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a Rust file (2:"), "{err}");
    }
}
