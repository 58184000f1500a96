//! Three rules every non-test source file keeps, read with `syn`: no function longer than 120 lines, no word list outside the language module, and the knowledge observation's tables read in one place.
//!
//! The files are every `.rs` under `crates/*/src`, `stages/*/src` and `xtask/src`; test code is left out
//! (`#[cfg(test)]` items and modules, `#[test]` functions; `tests/` directories are not under `src`).
//!
//! **Function length**: a function (free, in an `impl`, a trait's default body, or nested in another) runs
//! from the line of its `fn` keyword to the line of its closing brace; more than [`MAX_FUNCTION_LINES`] is a
//! finding. A long function is split into named parts, each saying what it does.
//!
//! **Word lists**: language is data (`crates/language/src/**/*.json`, read by that module), so no other
//! file spells a list of words. A *word list* is three or more *words* side by side in one token sequence:
//! among the elements of one bracket group whose elements are all string literals (an array, a slice, a
//! `vec![…]`, a JSON array in `json!`), or in one pattern alternation `"a" | "b" | "c"` (a `match` arm,
//! `matches!`). A string literal is a *word* when it reads as language: it starts with a letter, holds only
//! letters (any script), spaces and apostrophes, and is
//! - a phrase: it holds a space or an apostrophe (`"at most"`, `"can't be released"`), or
//! - written in a script other than Latin (`"不得"`, `"满足"`), or
//! - a word the language data holds: any string of the language module's JSON files, or a key of one of its
//!   maps from words to numbers (`"one": 1`, `"second": 2`), compared case-insensitively.
//!
//! The language data is the dictionary, so what the product reads as language is what the rule finds; names
//! a program reads — format names (`"csv"`), schema and JSON keys (`"minLength"`, `"type"`), CLI flags
//! (`"--root"`), file extensions, module and directory names — are identifiers, not the language's words,
//! and are left alone. A genuine vocabulary that happens to share the data's words (a programming language's
//! keywords) is listed in [`NOT_LANGUAGE`] with the reason.
//!
//! **One reader of observed tables**: the knowledge tool's `data.tables` is read by one typed reader,
//! [`OBSERVED_TABLES_READER`] (which the tool's writer serialises too); no other file spells the string
//! literal `"tables"` — not as an index (`result["data"]["tables"]`), a `get`/`contains_key`/`insert` key
//! nor a `json!` key — so a consumer cannot grow its own ad-hoc reading of the shape.
//!
//! `no_function_is_longer_than_120_lines`, `no_word_list_outside_the_language_module` and
//! `observed_tables_are_read_in_one_place` run them over the workspace in `cargo test`; `the_test_command_checks_formatting_and_lints_before_it_builds` keeps `rustfmt.toml`
//! and the fmt and clippy steps of `scripts/test-all.sh` ahead of its build.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;
use serde_json::Value;
use syn::visit::Visit;

/// The longest a non-test function may be, in lines from `fn` to its closing brace.
pub const MAX_FUNCTION_LINES: usize = 120;

/// How many words side by side make a word list.
pub const MIN_WORDS: usize = 3;

/// The language module, the one place words live (relative to the workspace root).
pub const LANGUAGE_MODULE: &str = "crates/language/src/";

/// The one file that reads (and, for the knowledge tool, writes) an observation's `data.tables`.
pub const OBSERVED_TABLES_READER: &str = "crates/tools/src/knowledge/observed.rs";

/// The JSON key of an observation's tables, which only [`OBSERVED_TABLES_READER`] spells.
pub const TABLES_KEY: &str = "tables";

/// A function longer than [`MAX_FUNCTION_LINES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LongFunction {
    pub file: String,
    pub name: String,
    pub line: usize,
    pub lines: usize,
}

impl std::fmt::Display for LongFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{} `{}` is {} lines",
            self.file, self.line, self.name, self.lines
        )
    }
}

/// A word list outside the language module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordList {
    pub file: String,
    pub line: usize,
    pub words: Vec<String>,
}

impl std::fmt::Display for WordList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{} [{}]", self.file, self.line, self.words.join(", "))
    }
}

/// Every non-test `.rs` file the rules cover, relative to `root`, in path order.
pub fn source_files(root: &Path) -> anyhow::Result<Vec<String>> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for group in ["crates", "stages"] {
        let dir = root.join(group);
        for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let src = entry?.path().join("src");
            if src.is_dir() {
                dirs.push(src);
            }
        }
    }
    dirs.push(root.join("xtask/src"));
    let mut files = Vec::new();
    for dir in dirs {
        collect_rs(&dir, &mut files)?;
    }
    let mut rel: Vec<String> = files
        .iter()
        .map(|p| {
            p.strip_prefix(root)
                .unwrap_or(p)
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    rel.sort();
    Ok(rel)
}

/// The `.rs` files below `dir`, recursively.
fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            collect_rs(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// One file parsed with its test items taken out.
fn non_test_file(root: &Path, rel: &str) -> anyhow::Result<syn::File> {
    let path = root.join(rel);
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut file = syn::parse_file(&text).map_err(|e| anyhow::anyhow!("{rel}: {e}"))?;
    strip_tests(&mut file.items);
    Ok(file)
}

/// True for `#[cfg(test)]` and `#[test]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg")
                && a.parse_args::<syn::Meta>()
                    .is_ok_and(|m| m.path().is_ident("test")))
    })
}

/// Removes test items from `items`, and from the inline modules and impls among them.
fn strip_tests(items: &mut Vec<syn::Item>) {
    items.retain(|item| {
        let attrs = match item {
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            _ => return true,
        };
        !is_test(attrs)
    });
    for item in items {
        match item {
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &mut m.content {
                    strip_tests(inner);
                }
            }
            syn::Item::Impl(i) => i.items.retain(|it| match it {
                syn::ImplItem::Fn(f) => !is_test(&f.attrs),
                _ => true,
            }),
            _ => {}
        }
    }
}

/// Collects every function body's extent.
struct Functions {
    file: String,
    found: Vec<LongFunction>,
}

impl Functions {
    fn record(&mut self, name: &syn::Ident, fn_token: &syn::token::Fn, block: &syn::Block) {
        let start = fn_token.span.start().line;
        let end = block.brace_token.span.close().end().line;
        let lines = end + 1 - start;
        if lines > MAX_FUNCTION_LINES {
            self.found.push(LongFunction {
                file: self.file.clone(),
                name: name.to_string(),
                line: start,
                lines,
            });
        }
    }
}

impl<'ast> Visit<'ast> for Functions {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.record(&f.sig.ident, &f.sig.fn_token, &f.block);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.record(&f.sig.ident, &f.sig.fn_token, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.record(&f.sig.ident, &f.sig.fn_token, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

/// Every non-test function in `rel` longer than [`MAX_FUNCTION_LINES`].
pub fn long_functions_in(root: &Path, rel: &str) -> anyhow::Result<Vec<LongFunction>> {
    let file = non_test_file(root, rel)?;
    let mut functions = Functions {
        file: rel.to_owned(),
        found: Vec::new(),
    };
    functions.visit_file(&file);
    Ok(functions.found)
}

/// Files whose string lists are a vocabulary other than a human language's, each with why.
pub const NOT_LANGUAGE: &[(&str, &str)] = &[(
    "crates/course/src/grade/tokens.rs",
    "Rust's keywords (`as`, `for`, `in`, `where`): a programming language's vocabulary",
)];

/// The words of the language data: every string in `crates/language/src/**/*.json` and every key of a map
/// from words to numbers, lower-cased.
pub fn language_words(root: &Path) -> anyhow::Result<BTreeSet<String>> {
    fn walk(value: &Value, out: &mut BTreeSet<String>) {
        match value {
            Value::String(s) => {
                out.insert(s.to_lowercase());
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            Value::Object(map) => {
                if !map.is_empty() && map.values().all(Value::is_number) {
                    out.extend(map.keys().map(|k| k.to_lowercase()));
                }
                map.values().for_each(|v| walk(v, out));
            }
            _ => {}
        }
    }
    let mut words = BTreeSet::new();
    let mut dirs = vec![root.join(LANGUAGE_MODULE)];
    let mut files = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    for path in files {
        if path.extension().is_some_and(|e| e == "json") {
            let text = fs::read_to_string(&path)?;
            let value: Value = serde_json::from_str(&text)
                .with_context(|| format!("parsing {}", path.display()))?;
            walk(&value, &mut words);
        }
    }
    Ok(words)
}

/// True when a string literal's text reads as language (the module comment says when).
pub fn is_word(text: &str, dictionary: &BTreeSet<String>) -> bool {
    let Some(first) = text.chars().next() else {
        return false;
    };
    if !first.is_alphabetic()
        || !text
            .chars()
            .all(|c| c.is_alphabetic() || c == ' ' || c == '\'' || c == '’')
    {
        return false;
    }
    let phrase = text.contains([' ', '\'', '’']);
    let other_script = text.chars().any(|c| c.is_alphabetic() && !c.is_ascii());
    phrase || other_script || dictionary.contains(&text.to_lowercase())
}

/// The text of a string literal token, `None` for any other token.
fn string_literal(tree: &TokenTree) -> Option<String> {
    let TokenTree::Literal(lit) = tree else {
        return None;
    };
    match syn::parse_str::<syn::Lit>(&lit.to_string()) {
        Ok(syn::Lit::Str(s)) => Some(s.value()),
        _ => None,
    }
}

/// True for a punctuation token `c`.
fn is_punct(tree: &TokenTree, c: char) -> bool {
    matches!(tree, TokenTree::Punct(p) if p.as_char() == c)
}

/// The literals of `tokens` when they are string literals separated by `sep` (a trailing one allowed).
fn literal_run(tokens: &[TokenTree], sep: char) -> Option<Vec<String>> {
    let mut words = Vec::new();
    for (i, tree) in tokens.iter().enumerate() {
        if i % 2 == 0 {
            words.push(string_literal(tree)?);
        } else if !is_punct(tree, sep) {
            return None;
        }
    }
    Some(words)
}

/// Walks a token stream for word lists: bracket groups of string literals and `|` alternations of them.
fn scan_tokens(stream: TokenStream, scan: &Scan<'_>, found: &mut Vec<WordList>) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        if let TokenTree::Group(group) = &tokens[i] {
            let inner: Vec<TokenTree> = group.stream().into_iter().collect();
            if group.delimiter() == Delimiter::Bracket
                && let Some(literals) = literal_run(&inner, ',')
            {
                push_if_words(literals, group.span().start().line, scan, found);
            }
            scan_tokens(group.stream(), scan, found);
            i += 1;
            continue;
        }
        // a pattern alternation: "a" | "b" | … as long as it runs
        let mut end = i;
        while end < tokens.len() && string_literal(&tokens[end]).is_some() {
            if end + 2 < tokens.len()
                && is_punct(&tokens[end + 1], '|')
                && string_literal(&tokens[end + 2]).is_some()
            {
                end += 2;
            } else {
                break;
            }
        }
        if end > i {
            let literals = literal_run(&tokens[i..=end], '|').unwrap_or_default();
            push_if_words(literals, tokens[i].span().start().line, scan, found);
            i = end + 1;
        } else {
            i += 1;
        }
    }
}

/// Records `literals` as a word list when at least [`MIN_WORDS`] of them are words.
fn push_if_words(literals: Vec<String>, line: usize, scan: &Scan<'_>, found: &mut Vec<WordList>) {
    let words: Vec<String> = literals
        .into_iter()
        .filter(|l| is_word(l, scan.dictionary))
        .collect();
    if words.len() >= MIN_WORDS {
        found.push(WordList {
            file: scan.file.to_owned(),
            line,
            words,
        });
    }
}

/// The file being scanned for word lists and the dictionary it is read with.
struct Scan<'a> {
    file: &'a str,
    dictionary: &'a BTreeSet<String>,
}

/// Every word list in the non-test code of `rel`, words read with `dictionary` ([`language_words`]).
pub fn word_lists_in(
    root: &Path,
    rel: &str,
    dictionary: &BTreeSet<String>,
) -> anyhow::Result<Vec<WordList>> {
    let file = non_test_file(root, rel)?;
    let mut found = Vec::new();
    let scan = Scan {
        file: rel,
        dictionary,
    };
    scan_tokens(file.into_token_stream(), &scan, &mut found);
    Ok(found)
}

/// The lines of the non-test code of `rel` that spell the string literal [`TABLES_KEY`] (in an
/// expression or inside a macro such as `json!`).
pub fn tables_key_uses_in(root: &Path, rel: &str) -> anyhow::Result<Vec<usize>> {
    fn walk(stream: TokenStream, found: &mut Vec<usize>) {
        for tree in stream {
            if let TokenTree::Group(group) = &tree {
                walk(group.stream(), found);
            } else if string_literal(&tree).as_deref() == Some(TABLES_KEY) {
                found.push(tree.span().start().line);
            }
        }
    }
    let file = non_test_file(root, rel)?;
    let mut found = Vec::new();
    walk(file.into_token_stream(), &mut found);
    Ok(found)
}

/// This file, which spells [`TABLES_KEY`] to look for it.
const THIS_FILE: &str = "xtask/src/source_rules.rs";

/// Every `file:line` outside [`OBSERVED_TABLES_READER`] (and this rule's own file) that spells [`TABLES_KEY`].
pub fn tables_key_readers(root: &Path) -> anyhow::Result<Vec<String>> {
    let mut found = Vec::new();
    for rel in source_files(root)? {
        if rel != OBSERVED_TABLES_READER && rel != THIS_FILE {
            let lines = tables_key_uses_in(root, &rel)?;
            found.extend(lines.into_iter().map(|line| format!("{rel}:{line}")));
        }
    }
    Ok(found)
}

/// Both rules over the workspace at `root`: long functions, and word lists outside [`LANGUAGE_MODULE`] (and
/// the files of [`NOT_LANGUAGE`]).
pub fn workspace_findings(root: &Path) -> anyhow::Result<(Vec<LongFunction>, Vec<WordList>)> {
    let dictionary = language_words(root)?;
    let mut long = Vec::new();
    let mut words = Vec::new();
    for rel in source_files(root)? {
        long.extend(long_functions_in(root, &rel)?);
        let other_vocabulary = NOT_LANGUAGE.iter().any(|(file, _)| *file == rel);
        if !rel.starts_with(LANGUAGE_MODULE) && !other_vocabulary {
            words.extend(word_lists_in(root, &rel, &dictionary)?);
        }
    }
    Ok((long, words))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn a_long_function_is_found_with_its_length_and_test_code_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let body = "    let _ = 1;\n".repeat(MAX_FUNCTION_LINES - 2);
        let long = "    let _ = 1;\n".repeat(MAX_FUNCTION_LINES - 1);
        let text = format!(
            "fn fits() {{\n{body}}}\nstruct S;\nimpl S {{\n    fn method() {{\n{long}    }}\n}}\n\
             #[cfg(test)]\nmod tests {{\n    fn helper() {{\n{long}}}\n}}\n#[test]\nfn t() {{\n{long}}}\n"
        );
        write(dir.path(), "src/lib.rs", &text);
        let found = long_functions_in(dir.path(), "src/lib.rs").unwrap();
        let found: Vec<(String, usize)> = found.into_iter().map(|f| (f.name, f.lines)).collect();
        assert_eq!(found, [("method".to_owned(), MAX_FUNCTION_LINES + 1)]);
    }

    #[test]
    fn word_lists_are_three_words_side_by_side_and_names_are_not_words() {
        let dir = tempfile::tempdir().unwrap();
        let text = r#"
            const A: [&str; 3] = ["not", "Never", "no longer"];
            fn f(x: &str) -> bool {
                let _ = vec!["eligible", "met", "满足"];
                let _ = ["csv", "tsv", "md", "type", "status"];
                let _ = ["x-grammar", "minLength", "--root", "a.b", "2024", "no_value"];
                let _ = ["not", "never", "csv"];
                matches!(x, "first" | "second" | "third") || ["not", "never", 3].is_empty()
            }
            #[cfg(test)]
            mod tests { const B: [&str; 3] = ["not", "never", "none"]; }
        "#;
        write(dir.path(), "src/lib.rs", text);
        let dictionary: BTreeSet<String> = [
            "not", "never", "first", "second", "third", "eligible", "met",
        ]
        .map(String::from)
        .into();
        let found: Vec<Vec<String>> = word_lists_in(dir.path(), "src/lib.rs", &dictionary)
            .unwrap()
            .into_iter()
            .map(|w| w.words)
            .collect();
        assert_eq!(
            found,
            [
                vec!["not", "Never", "no longer"],
                vec!["eligible", "met", "满足"],
                vec!["first", "second", "third"],
            ]
        );
    }

    #[test]
    fn the_dictionary_is_the_language_datas_strings_and_number_map_keys() {
        let words = language_words(&crate::workspace_root()).unwrap();
        for word in ["never", "between", "second"] {
            assert!(words.contains(word), "{word} is language data");
        }
        for name in ["aggregates", "rule_terms", "csv"] {
            assert!(
                !words.contains(name),
                "{name} is a key or a name, not a word"
            );
        }
    }

    #[test]
    fn the_test_command_checks_formatting_and_lints_before_it_builds() {
        let root = crate::workspace_root();
        assert!(
            root.join("rustfmt.toml").is_file(),
            "rustfmt.toml writes the formatting settings down"
        );
        let script = fs::read_to_string(root.join("scripts/test-all.sh")).unwrap();
        let at = |command: &str| {
            script
                .lines()
                .position(|l| l.trim() == command)
                .unwrap_or_else(|| panic!("scripts/test-all.sh runs `{command}`"))
        };
        let fmt = at("cargo fmt --all -- --check");
        let clippy = at("cargo clippy --workspace --all-targets -- -D warnings");
        let build = at("cargo build --workspace --all-targets");
        assert!(
            fmt < clippy && clippy < build,
            "formatting, then lints, then the build"
        );
    }

    #[test]
    fn the_tables_key_is_found_as_an_index_a_method_key_and_a_json_key_but_not_in_test_code() {
        let dir = tempfile::tempdir().unwrap();
        let text = r#"
            fn f(result: &Value, data: &Map<String, Value>) -> bool {
                let _ = &result["data"]["tables"];
                let _ = data.get("tables");
                let _ = json!({ "tables": [], "facts": [] });
                let _ = ["table", "tables_json", "data.tables"];
                data.contains_key("rows")
            }
            #[cfg(test)]
            mod tests { fn t() { let _ = json!({"data": {"tables": []}}); } }
            #[test]
            fn t() { let _ = "tables"; }
        "#;
        write(dir.path(), "src/lib.rs", text);
        assert_eq!(
            tables_key_uses_in(dir.path(), "src/lib.rs").unwrap(),
            [3, 4, 5]
        );
    }

    #[test]
    fn observed_tables_are_read_in_one_place() {
        let root = crate::workspace_root();
        assert!(
            !tables_key_uses_in(&root, OBSERVED_TABLES_READER)
                .unwrap()
                .is_empty(),
            "{OBSERVED_TABLES_READER} is the reader of the tables key"
        );
        let others = tables_key_readers(&root).unwrap();
        assert!(
            others.is_empty(),
            "read an observation's tables with forge_tools::knowledge::observed, not by the key {TABLES_KEY:?}:\n  {}",
            others.join("\n  ")
        );
    }

    #[test]
    fn no_function_is_longer_than_120_lines() {
        let (long, _) = workspace_findings(&crate::workspace_root()).unwrap();
        let long: Vec<String> = long.iter().map(ToString::to_string).collect();
        assert!(
            long.is_empty(),
            "functions over {MAX_FUNCTION_LINES} lines (split each into named parts):\n  {}",
            long.join("\n  ")
        );
    }

    #[test]
    fn no_word_list_outside_the_language_module() {
        let (_, words) = workspace_findings(&crate::workspace_root()).unwrap();
        let words: Vec<String> = words.iter().map(ToString::to_string).collect();
        assert!(
            words.is_empty(),
            "word lists outside {LANGUAGE_MODULE} (move them into its data):\n  {}",
            words.join("\n  ")
        );
    }
}
