//! `cargo xtask code-map`: ARCHITECTURE.md's code map checked against the source files and their `//!` lines.
//!
//! The rule, in one place: the code map (from `## Code map` to the next `## ` heading) has one line per Rust
//! file under `crates/*/src/`, `crates/*/examples/` and `xtask/src/`, written `` - `PATH` — SENTENCE ``, where
//! SENTENCE is exactly the first sentence of the file's opening `//!` paragraph ([`doc_sentence`]). Every file
//! is listed once, every listed path exists (other lines may name any existing file or folder, such as a JSON
//! vocabulary or `crates/server/web/`), and a `//!` line edited without the map — or the map without the file —
//! fails naming the file and both texts. `the_code_map_lists_every_source_file_with_its_doc_sentence` runs it
//! in `cargo test`; the verb prints the line the map should hold for each file that disagrees.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use forge_course::args::{Args, Verb};

pub const CODE_MAP: Verb = Verb {
    name: "code-map",
    about: "Check ARCHITECTURE.md's code map: one line per source file, each the first sentence of its //! line",
    positionals: "",
    flags: &[],
};

/// The document holding the map, relative to the workspace root.
pub const DOCUMENT: &str = "ARCHITECTURE.md";

/// The first sentence of the opening `//!` paragraph of a Rust file: the leading `//!` lines up to the first
/// empty one, joined with spaces, cut after the first `.` that ends a sentence — followed by a space or the
/// end, outside backticks and brackets. `None` when the file does not open with `//!`.
pub fn doc_sentence(source: &str) -> Option<String> {
    let mut lines = Vec::new();
    for line in source.lines() {
        let Some(body) = line.trim().strip_prefix("//!") else {
            break;
        };
        let body = body.trim();
        if body.is_empty() {
            break;
        }
        lines.push(body);
    }
    if lines.is_empty() {
        return None;
    }
    let paragraph = lines.join(" ");
    let chars: Vec<(usize, char)> = paragraph.char_indices().collect();
    let (mut code, mut depth) = (false, 0usize);
    for (i, &(at, c)) in chars.iter().enumerate() {
        match c {
            '`' => code = !code,
            _ if code => {}
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            '.' if depth == 0 && chars.get(i + 1).is_none_or(|&(_, next)| next == ' ') => {
                return Some(paragraph[..=at].to_owned());
            }
            _ => {}
        }
    }
    Some(paragraph)
}

/// The map's entries: `` - `PATH` — TEXT `` lines between `## Code map` and the next `## ` heading, as
/// (path, text, line number).
pub fn map_entries(document: &str) -> Vec<(String, String, usize)> {
    let mut entries = Vec::new();
    let mut inside = false;
    for (index, line) in document.lines().enumerate() {
        if let Some(heading) = line.strip_prefix("## ") {
            inside = heading.trim() == "Code map";
            continue;
        }
        if !inside {
            continue;
        }
        let Some(rest) = line.strip_prefix("- `") else {
            continue;
        };
        let Some((path, text)) = rest.split_once('`') else {
            continue;
        };
        let text = text.strip_prefix(" — ").unwrap_or(text).trim();
        entries.push((path.to_owned(), text.to_owned(), index + 1));
    }
    entries
}

/// Every Rust file the map must list, relative to `root`, sorted: `crates/*/src/**`, `crates/*/examples/**`,
/// `xtask/src/**`.
pub fn mapped_files(root: &Path) -> anyhow::Result<Vec<String>> {
    let mut dirs: Vec<PathBuf> = vec![root.join("xtask/src")];
    let crates = root.join("crates");
    for entry in fs::read_dir(&crates).with_context(|| format!("reading {}", crates.display()))? {
        let path = entry?.path();
        dirs.push(path.join("src"));
        dirs.push(path.join("examples"));
    }
    let mut files = Vec::new();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        collect_rust(dir, &mut files)?;
    }
    let mut relative: Vec<String> = files
        .iter()
        .map(|f| {
            f.strip_prefix(root)
                .expect("below the root")
                .to_string_lossy()
                .replace('\\', "/")
        })
        .collect();
    relative.sort();
    Ok(relative)
}

fn collect_rust(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            collect_rust(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// What is wrong with the map at `root`: one message per problem, each naming the file (empty: the map holds).
pub fn problems(root: &Path) -> anyhow::Result<Vec<String>> {
    let document =
        fs::read_to_string(root.join(DOCUMENT)).with_context(|| format!("reading {DOCUMENT}"))?;
    let entries = map_entries(&document);
    let mut found = Vec::new();
    let mut listed: BTreeMap<&str, usize> = BTreeMap::new();
    for (path, text, line) in &entries {
        if let Some(first) = listed.insert(path, *line) {
            found.push(format!(
                "{DOCUMENT}:{line}: `{path}` is listed twice (also line {first})"
            ));
        }
        let file = root.join(path);
        if !file.exists() {
            found.push(format!("{DOCUMENT}:{line}: `{path}` does not exist"));
            continue;
        }
        if file.is_file() && path.ends_with(".rs") {
            let source = fs::read_to_string(&file).with_context(|| format!("reading {path}"))?;
            match doc_sentence(&source) {
                None => found.push(format!("{path}: does not open with a `//!` line")),
                Some(sentence) if sentence != *text => found.push(format!(
                    "{DOCUMENT}:{line}: `{path}`: the map says\n      {text}\n    its //! line's first sentence is\n      {sentence}\n    the line should be\n      - `{path}` — {sentence}"
                )),
                Some(_) => {}
            }
        }
    }
    for path in mapped_files(root)? {
        if !listed.contains_key(path.as_str()) {
            let source = fs::read_to_string(root.join(&path)).unwrap_or_default();
            let sentence = doc_sentence(&source).unwrap_or_else(|| "(no //! line)".to_owned());
            found.push(format!(
                "`{path}` is not in the code map; add\n      - `{path}` — {sentence}"
            ));
        }
    }
    Ok(found)
}

pub fn cmd_code_map(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(0, "cargo xtask code-map [--root DIR]")?;
    let root = args.path("root").unwrap_or_else(crate::workspace_root);
    let found = problems(&root)?;
    if found.is_empty() {
        println!(
            "{DOCUMENT}'s code map lists all {} source files, each with its //! sentence",
            mapped_files(&root)?.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    for problem in &found {
        println!("{problem}");
    }
    println!("{} problem(s) in the code map", found.len());
    Ok(ExitCode::FAILURE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_map_lists_every_source_file_with_its_doc_sentence() {
        let found = problems(&crate::workspace_root()).unwrap();
        assert!(
            found.is_empty(),
            "{DOCUMENT}'s code map disagrees with the files (`cargo xtask code-map`):\n  {}",
            found.join("\n  ")
        );
    }

    #[test]
    fn the_first_sentence_ends_outside_code_and_brackets() {
        let source = "//! Numbers (`1.5`, e.g. `3.`) as people print them. More here.\n//! And here.\n\nuse x;";
        assert_eq!(
            doc_sentence(source).as_deref(),
            Some("Numbers (`1.5`, e.g. `3.`) as people print them.")
        );
        let wrapped = "//! One sentence\n//! over two lines: `a.b`.\n//!\n//! Second paragraph.";
        assert_eq!(
            doc_sentence(wrapped).as_deref(),
            Some("One sentence over two lines: `a.b`.")
        );
        assert_eq!(
            doc_sentence("//! No full stop"),
            Some("No full stop".to_owned())
        );
        assert_eq!(doc_sentence("use x;\n//! late"), None);
    }

    #[test]
    fn a_missing_file_an_unlisted_file_and_a_drifted_line_are_each_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |path: &str, text: &str| {
            let file = root.join(path);
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(file, text).unwrap();
        };
        write("crates/a/src/lib.rs", "//! The a crate. Details.\n");
        write("crates/a/src/old.rs", "//! What it holds now.\n");
        write("crates/a/src/new.rs", "//! Not yet mapped.\n");
        write("xtask/src/main.rs", "//! The tasks.\n");
        write(
            DOCUMENT,
            "# A\n\n## Code map\n\n- `crates/a/src/lib.rs` — The a crate.\n- `crates/a/src/old.rs` — What it held once.\n\
             - `crates/a/src/gone.rs` — Removed.\n- `xtask/src/main.rs` — The tasks.\n\n## Invariants\n\n- `not/a/path` — outside the map.\n",
        );
        let found = problems(root).unwrap();
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(
            found[0].contains("`crates/a/src/old.rs`: the map says")
                && found[0].contains("What it holds now.")
        );
        assert!(found[1].contains("`crates/a/src/gone.rs` does not exist"));
        assert!(found[2].contains("`crates/a/src/new.rs` is not in the code map"));
    }
}
