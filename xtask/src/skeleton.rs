//! Scratch-mode skeletons: a Rust source file with every function body replaced by `todo!()`.
//!
//! Types, signatures, doc comments and everything outside function bodies stay byte for byte, so
//! the stage tests still compile against the skeleton (and fail until the learner fills it in).
//! It is a small lexer (comments, strings, raw strings, chars versus lifetimes), not a parser:
//! it only needs to find `fn` items and their matching braces.

/// Comment put above the skeleton's `#![allow(unused)]`.
const HEADER: &str = "\
// Scratch mode: every function body in this file is `todo!()`. Build them from the
// implementation steps in README.md; the same tests judge your version. Delete the next
// line once you are done: it only quiets the warnings about parameters, imports and helpers
// that the empty bodies do not use yet.
#![allow(unused)]
";

/// Returns `source` with each function body replaced by `todo!()`, plus the allow header.
pub fn todo_bodies(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        if let Some(end) = skip_literal_or_comment(&chars, i) {
            out.extend(&chars[i..end]);
            i = end;
            continue;
        }
        if is_fn_item(&chars, i)
            && let Some((open, close)) = body_of(&chars, i)
        {
            out.extend(&chars[i..open]);
            let indent = line_indent(&chars, i);
            out.push_str(&format!("{{\n{indent}    todo!()\n{indent}}}"));
            i = close + 1;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    insert_header(&out)
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

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `fn` as a keyword followed by a name (not `FnMut`, not the `fn(u32)` pointer type).
fn is_fn_item(chars: &[char], i: usize) -> bool {
    if chars.get(i) != Some(&'f') || chars.get(i + 1) != Some(&'n') {
        return false;
    }
    if i > 0 && is_ident(chars[i - 1]) {
        return false;
    }
    let mut j = i + 2;
    if !chars.get(j).is_some_and(|c| c.is_whitespace()) {
        return false;
    }
    while chars.get(j).is_some_and(|c| c.is_whitespace()) {
        j += 1;
    }
    chars.get(j).is_some_and(|c| is_ident(*c))
}

/// The positions of the body's `{` and its matching `}`; None for a declaration ending in `;`.
fn body_of(chars: &[char], fn_at: usize) -> Option<(usize, usize)> {
    let mut i = fn_at + 2;
    let mut depth = 0i32; // parentheses and brackets in the signature
    let open = loop {
        if let Some(end) = skip_literal_or_comment(chars, i) {
            i = end;
            continue;
        }
        match chars.get(i)? {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ';' if depth == 0 => return None,
            '{' if depth == 0 => break i,
            _ => {}
        }
        i += 1;
    };
    let mut braces = 0i32;
    let mut j = open;
    while j < chars.len() {
        if let Some(end) = skip_literal_or_comment(chars, j) {
            j = end;
            continue;
        }
        match chars[j] {
            '{' => braces += 1,
            '}' => {
                braces -= 1;
                if braces == 0 {
                    return Some((open, j));
                }
            }
            _ => {}
        }
        j += 1;
    }
    None
}

fn line_indent(chars: &[char], i: usize) -> String {
    let start = chars[..i]
        .iter()
        .rposition(|c| *c == '\n')
        .map_or(0, |p| p + 1);
    chars[start..i]
        .iter()
        .take_while(|c| **c == ' ' || **c == '\t')
        .collect()
}

/// If a comment, string, raw string or char literal starts at `i`, the index just after it.
fn skip_literal_or_comment(chars: &[char], i: usize) -> Option<usize> {
    let at = |k: usize| chars.get(k).copied();
    match (at(i)?, at(i + 1)) {
        ('/', Some('/')) => {
            let end = chars[i..].iter().position(|c| *c == '\n');
            Some(end.map_or(chars.len(), |p| i + p))
        }
        ('/', Some('*')) => {
            let mut depth = 0;
            let mut j = i;
            while j + 1 < chars.len() {
                if chars[j] == '/' && chars[j + 1] == '*' {
                    depth += 1;
                    j += 2;
                } else if chars[j] == '*' && chars[j + 1] == '/' {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        return Some(j);
                    }
                } else {
                    j += 1;
                }
            }
            Some(chars.len())
        }
        ('"', _) => Some(skip_quoted(chars, i + 1)),
        ('b', Some('"')) if i == 0 || !is_ident(chars[i - 1]) => Some(skip_quoted(chars, i + 2)),
        ('r' | 'b', _) if i == 0 || !is_ident(chars[i - 1]) => skip_raw_string(chars, i),
        ('\'', _) => skip_char_literal(chars, i),
        _ => None,
    }
}

/// After an opening `"`: the index after the closing one, honouring backslash escapes.
fn skip_quoted(chars: &[char], mut j: usize) -> usize {
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 2,
            '"' => return j + 1,
            _ => j += 1,
        }
    }
    chars.len()
}

/// `r"…"`, `r#"…"#`, `br##"…"##`: None when `i` does not start one.
fn skip_raw_string(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(chars.len())
}

/// `'x'`, `'\n'`, `'\u{7b}'` are char literals; `'a` in `&'a str` is a lifetime (None).
fn skip_char_literal(chars: &[char], i: usize) -> Option<usize> {
    match chars.get(i + 1)? {
        '\\' => {
            let close = chars[i + 2..].iter().position(|c| *c == '\'')?;
            Some(i + 2 + close + 1)
        }
        _ if chars.get(i + 2) == Some(&'\'') => Some(i + 3),
        _ => None,
    }
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
        let skeleton = todo_bodies(SAMPLE);
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
        let skeleton = todo_bodies("fn a() -> u8 { 1 }\n");
        assert!(skeleton.starts_with("// Scratch mode"), "{skeleton}");
        assert!(
            skeleton.ends_with("fn a() -> u8 {\n    todo!()\n}\n"),
            "{skeleton}"
        );
    }
}
