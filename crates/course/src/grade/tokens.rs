//! Rust source as a flat token list (proc-macro2's lexer, so layout and comments are gone), for the two
//! readings `grade` makes of a learner's code: which I/O it names (`screen`), and its fingerprint with
//! identifiers numbered by first use, so a copy that was reformatted or had its names changed still matches
//! (`copies`).

use std::str::FromStr;

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// One token: its text, and the line it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub text: String,
    pub line: usize,
    pub is_ident: bool,
}

/// The tokens of `source`, doc comments (`#[doc = …]`) left out; `None` when it does not lex.
pub fn tokens(source: &str) -> Option<Vec<Token>> {
    let stream = TokenStream::from_str(source).ok()?;
    let mut out = Vec::new();
    flatten(stream, &mut out);
    Some(out)
}

fn flatten(stream: TokenStream, out: &mut Vec<Token>) {
    let trees: Vec<TokenTree> = stream.into_iter().collect();
    let mut i = 0;
    while i < trees.len() {
        let tree = &trees[i];
        // `#[doc = "…"]` / `#![doc = …]`: a comment, not code.
        if let TokenTree::Punct(p) = tree
            && p.as_char() == '#'
        {
            let bang = matches!(trees.get(i + 1), Some(TokenTree::Punct(b)) if b.as_char() == '!');
            let group_at = i + 1 + usize::from(bang);
            if let Some(TokenTree::Group(g)) = trees.get(group_at)
                && g.delimiter() == Delimiter::Bracket
                && g.stream()
                    .into_iter()
                    .next()
                    .is_some_and(|t| t.to_string() == "doc")
            {
                i = group_at + 1;
                continue;
            }
        }
        let line = tree.span().start().line;
        match tree {
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::None => ("", ""),
                };
                if !open.is_empty() {
                    out.push(token(open, line, false));
                }
                flatten(g.stream(), out);
                if !close.is_empty() {
                    out.push(token(close, g.span_close().start().line, false));
                }
            }
            TokenTree::Ident(id) => out.push(token(&id.to_string(), line, true)),
            TokenTree::Punct(p) => out.push(token(&p.as_char().to_string(), line, false)),
            TokenTree::Literal(l) => out.push(token(&l.to_string(), line, false)),
        }
        i += 1;
    }
}

fn token(text: &str, line: usize, is_ident: bool) -> Token {
    Token {
        text: text.to_owned(),
        line,
        is_ident,
    }
}

/// Rust's keywords: kept as they are by [`normalise`]; every other identifier is renamed.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while",
];

/// Identifiers replaced by their order of first use (`$0`, `$1`, …), everything else kept: renaming
/// variables, functions or types and reformatting do not change the result.
pub fn normalise(tokens: &[Token]) -> Vec<String> {
    let mut names: Vec<&str> = Vec::new();
    tokens
        .iter()
        .map(|t| {
            if !t.is_ident || KEYWORDS.contains(&t.text.as_str()) {
                return t.text.clone();
            }
            let index = match names.iter().position(|n| *n == t.text) {
                Some(i) => i,
                None => {
                    names.push(&t.text);
                    names.len() - 1
                }
            };
            format!("${index}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(source: &str) -> Vec<String> {
        normalise(&tokens(source).unwrap())
    }

    #[test]
    fn renaming_and_reformatting_do_not_change_the_normal_form() {
        let a = "/// Sums.\npub fn add(a: i64, b: i64) -> i64 {\n    a + b // plus\n}\n";
        let b = "pub fn sum( x:i64,y:i64 )->i64{x+y}";
        assert_eq!(norm(a), norm(b));
        assert_ne!(norm(a), norm("pub fn add(a: i64, b: i64) -> i64 { a - b }"));
        assert_ne!(norm(a), norm("pub fn add(a: i64, b: i64) -> i64 { b + a }"));
    }

    #[test]
    fn lines_are_kept_and_bad_source_is_none() {
        let t = tokens("fn a() {}\n\nuse std::net;").unwrap();
        assert_eq!(t.iter().find(|t| t.text == "net").unwrap().line, 3);
        assert!(tokens("fn a() { \"unclosed").is_none());
    }
}
