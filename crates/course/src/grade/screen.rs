//! What a stage's source may not name: the course's stages are pure (no I/O, no processes, no unsafe), so a
//! learner's `src/` that names files, the network, processes, the environment, raw OS access, `unsafe` or a
//! macro that reads the build is refused with the place named. This explains a refusal; the box is what
//! contains the code (a screen can be evaded, the box cannot), and the code still runs in it.

use super::tokens::{Token, tokens};

/// The std modules a stage never needs, and what naming them means.
const MODULES: &[(&str, &str)] = &[
    ("fs", "reads or writes files"),
    ("net", "opens network sockets"),
    ("process", "starts processes"),
    ("env", "reads the environment"),
    ("os", "uses raw OS access"),
];

/// Macros that read the build or the environment.
const MACROS: &[&str] = &[
    "include_str",
    "include_bytes",
    "include",
    "env",
    "option_env",
    "asm",
    "global_asm",
];

/// One thing a source names that a stage's code may not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub file: String,
    pub line: usize,
    pub what: String,
    pub means: &'static str,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{} names `{}` ({})",
            self.file, self.line, self.what, self.means
        )
    }
}

/// Everything the files name that a stage's code may not, in file and line order.
pub fn screen(files: &[(String, Vec<u8>)]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (file, bytes) in files {
        let source = String::from_utf8_lossy(bytes);
        let Some(tokens) = tokens(&source) else {
            continue; // does not lex: the build says so
        };
        findings.extend(screen_tokens(file, &tokens));
    }
    findings
}

fn screen_tokens(file: &str, t: &[Token]) -> Vec<Finding> {
    let mut found = Vec::new();
    let mut add = |line: usize, what: String, means: &'static str| {
        found.push(Finding {
            file: file.to_owned(),
            line,
            what,
            means,
        })
    };
    let text = |i: usize| t.get(i).map(|t| t.text.as_str()).unwrap_or_default();
    for (i, tok) in t.iter().enumerate() {
        let word = tok.text.as_str();
        // `std::fs`, `core::…`, `::std::net`, and `std::{fs, …}`.
        if matches!(word, "std" | "core" | "alloc") && text(i + 1) == ":" && text(i + 2) == ":" {
            let next = text(i + 3);
            if let Some((module, means)) = MODULES.iter().find(|(m, _)| *m == next) {
                add(tok.line, format!("{word}::{module}"), means);
            } else if next == "{" {
                let mut depth = 0;
                for inner in &t[i + 3..] {
                    match inner.text.as_str() {
                        "{" => depth += 1,
                        "}" => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        m => {
                            if let Some((module, means)) = MODULES.iter().find(|(n, _)| *n == m) {
                                add(inner.line, format!("{word}::{module}"), means);
                            }
                        }
                    }
                }
            }
        }
        // `use std as s;` / `extern crate std as s;`: a renamed std hides every path above.
        if matches!(word, "std" | "core") && text(i + 1) == "as" {
            add(
                tok.line,
                format!("{word} as {}", text(i + 2)),
                "renames std",
            );
        }
        if word == "extern" && tok.is_ident {
            add(tok.line, "extern".into(), "links outside Rust");
        }
        if word == "unsafe" && tok.is_ident {
            add(tok.line, "unsafe".into(), "unchecked memory access");
        }
        if tok.is_ident && text(i + 1) == "!" && MACROS.contains(&word) {
            add(
                tok.line,
                format!("{word}!"),
                "reads the build or the environment",
            );
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(source: &str) -> Vec<String> {
        screen(&[("src/x.rs".into(), source.as_bytes().to_vec())])
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn io_names_are_found_with_their_place() {
        assert_eq!(
            findings("pub fn f() {\n    let _ = std::net::TcpStream::connect(\"1.1.1.1:80\");\n}"),
            ["src/x.rs:2 names `std::net` (opens network sockets)"]
        );
        assert_eq!(
            findings("use std::{collections::BTreeMap, fs};")[0],
            "src/x.rs:1 names `std::fs` (reads or writes files)"
        );
        assert_eq!(
            findings("use std as s;\nfn f() { s::fs::read(\"/x\"); }")[0],
            "src/x.rs:1 names `std as s` (renames std)"
        );
        assert!(findings("fn f() { unsafe { } }")[0].contains("`unsafe`"));
        assert!(
            findings("const X: &str = include_str!(\"/etc/passwd\");")[0].contains("include_str!")
        );
    }

    #[test]
    fn pure_code_and_mentions_in_strings_or_comments_pass() {
        assert!(findings("// std::fs is not used\nuse std::collections::BTreeMap;\npub fn f() -> &'static str { \"std::net\" }\nfn env() {}\nfn g() { env(); }").is_empty());
    }
}
