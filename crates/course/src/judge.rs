//! What `check` judges with, and what it refuses before running anything.
//!
//! The judge is not the learner's to edit: their copy's stage and error tests are compared with
//! the course's (`stages/NN/tests/`), and the course's are the ones compiled. A transfer test is
//! judged by behaviour only: it runs in one scratch crate that is the same package, manifest and
//! path for the learner's code, the reference solution and the original fault, so nothing but the
//! one swapped source file differs; the few ways a test could read its build instead of calling the
//! code (`include_str!`, `env!`, reading files or the environment) are refused by name, and so is
//! the course's own reference transfer test copied in.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Why a transfer test is refused before it is run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransferRefusal {
    /// It reads the build (its own source, the package name or paths) instead of the behaviour.
    #[error(
        "tests/transfer.rs line {line} uses `{what}`: a transfer test must catch the fault by calling \
         the code, not by reading the build, its files or its environment"
    )]
    ReadsTheBuild { what: &'static str, line: usize },
    /// It is the course's reference transfer test, copied.
    #[error(
        "tests/transfer.rs is the course's reference transfer test (stages/…/tests/transfer.rs); \
         write your own, on new data"
    )]
    CopiedReference,
}

impl TransferRefusal {
    pub fn zh_cn(&self) -> String {
        match self {
            Self::ReadsTheBuild { what, line } => format!(
                "tests/transfer.rs 第 {line} 行用了 `{what}`：迁移测试必须通过调用代码来抓住故障，\
                 而不是读取构建本身、它的文件或环境"
            ),
            Self::CopiedReference => {
                "tests/transfer.rs 就是课程的参考迁移测试（stages/…/tests/transfer.rs）；\
                 请在新数据上写你自己的测试"
                    .to_owned()
            }
        }
    }
}

/// What a transfer test may not name: macros that read the build, and the std modules that read
/// files, the environment or other processes at run time.
const FORBIDDEN: &[(&str, &str)] = &[
    ("include_str!", "include_str!"),
    ("include_bytes!", "include_bytes!"),
    ("include!", "include!"),
    ("option_env!", "option_env!"),
    ("env!", "env!"),
    ("file!", "file!"),
    ("module_path!", "module_path!"),
    ("std::fs", "std::fs"),
    ("std::env", "std::env"),
    ("std::process", "std::process"),
    ("std::path", "std::path"),
];

/// Refuses a transfer test that reads its build, or that is the reference transfer test copied.
pub fn screen_transfer(source: &str, reference: Option<&str>) -> Result<(), TransferRefusal> {
    let code = strip_comments_and_strings(source);
    for (number, line) in code.lines().enumerate() {
        let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        for (needle, what) in FORBIDDEN {
            let mut from = 0;
            while let Some(at) = compact[from..].find(needle) {
                let start = from + at;
                let before = compact[..start].chars().next_back();
                // `env!` inside `option_env!` is reported as the longer name, first in the list.
                let joined = before.is_some_and(|c| c.is_alphanumeric() || c == '_');
                let std_path = needle.starts_with("std::");
                if !joined || (std_path && before == Some(':')) {
                    return Err(TransferRefusal::ReadsTheBuild {
                        what,
                        line: number + 1,
                    });
                }
                from = start + needle.len();
            }
        }
        // `use std::{fs, …}` and friends.
        if compact.contains("std::{") {
            for module in ["fs", "env", "process", "path"] {
                if compact
                    .split(['{', '}', ','])
                    .any(|item| item == module || item.starts_with(&format!("{module}::")))
                {
                    let what = FORBIDDEN
                        .iter()
                        .find(|(n, _)| n.ends_with(module))
                        .map_or("std", |(_, w)| w);
                    return Err(TransferRefusal::ReadsTheBuild {
                        what,
                        line: number + 1,
                    });
                }
            }
        }
    }
    if let Some(reference) = reference
        && same_code(source, reference)
    {
        return Err(TransferRefusal::CopiedReference);
    }
    Ok(())
}

/// Source with comments blanked and string/char literals emptied (line structure kept), so a
/// forbidden name in a comment or a message is not a finding.
fn strip_comments_and_strings(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                    }
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            '"' => {
                out.push('"');
                let mut escaped = false;
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                    }
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        break;
                    }
                }
                out.push('"');
            }
            _ => out.push(c),
        }
    }
    out
}

/// Rust source with its layout taken out: whitespace and the trailing commas rustfmt adds or
/// removes. Two files that differ only in formatting normalise to the same text.
pub fn normalise(source: &str) -> String {
    let compact: Vec<char> = source.chars().filter(|c| !c.is_whitespace()).collect();
    let mut out = String::with_capacity(compact.len());
    for (i, c) in compact.iter().enumerate() {
        if *c == ',' && matches!(compact.get(i + 1), Some('}' | ')' | ']')) {
            continue;
        }
        out.push(*c);
    }
    out
}

/// Equal once formatting and comments are taken out.
pub fn same_code(a: &str, b: &str) -> bool {
    normalise(&strip_comments_and_strings_keep_literals(a))
        == normalise(&strip_comments_and_strings_keep_literals(b))
}

/// Comments out, string literals kept (they are behaviour).
fn strip_comments_and_strings_keep_literals(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '"' => {
                out.push('"');
                let mut escaped = false;
                for c in chars.by_ref() {
                    out.push(c);
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The learner copy's test files that differ from the course's (edited, added or removed),
/// transfer.rs aside. `course_tests` and `copy_tests` map `tests/…` paths to their text.
pub fn edited_tests(
    course_tests: &BTreeMap<String, String>,
    copy_tests: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut edited: Vec<String> = course_tests
        .keys()
        .chain(copy_tests.keys())
        .filter(|k| k.as_str() != "tests/transfer.rs")
        .filter(|k| course_tests.get(*k) != copy_tests.get(*k))
        .cloned()
        .collect();
    edited.sort();
    edited.dedup();
    edited
}

/// `path` as the learner would type it from where the command ran.
pub fn from_cwd(path: &Path) -> String {
    let Ok(cwd) = std::env::current_dir() else {
        return path.display().to_string();
    };
    relative_to(path, &cwd).display().to_string()
}

fn relative_to(path: &Path, base: &Path) -> PathBuf {
    let path: Vec<Component> = path.components().collect();
    let base: Vec<Component> = base.components().collect();
    if path.first() != base.first() {
        return path.iter().collect();
    }
    let common = path.iter().zip(&base).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..base.len() {
        out.push("..");
    }
    for part in &path[common..] {
        out.push(part);
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Compiler and panic output of the judge crate names `src/…` and `tests/…` relative to it;
/// the learner edits those files in their copy, so name them there, from the cwd.
pub fn relocate(text: &str, copy: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut line = line.to_owned();
        for marker in ["--> ", "panicked at ", "::: "] {
            for dir in ["src/", "tests/"] {
                line = line.replace(&format!("{marker}{dir}"), &format!("{marker}{copy}/{dir}"));
            }
        }
        out.push_str(&line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transfer_test_that_reads_its_build_is_refused() {
        for (source, what) in [
            (
                "#[test]\nfn t() { assert!(!env!(\"CARGO_PKG_NAME\").ends_with(\"fault-check\")); }\n",
                "env!",
            ),
            (
                "#[test]\nfn t() { assert!(!include_str!(\"../src/calc.rs\").contains(\"a - b\")); }\n",
                "include_str!",
            ),
            ("fn t() { let _ = option_env!(\"X\"); }\n", "option_env!"),
            (
                "fn t() { let _ = include_bytes!(\"x\"); }\n",
                "include_bytes!",
            ),
            ("fn t() { assert!(file!().len() > 0); }\n", "file!"),
            (
                "fn t() { let _ = std::env::var(\"CARGO_MANIFEST_DIR\"); }\n",
                "std::env",
            ),
            (
                "use std::{collections::HashMap, fs};\nfn t() { fs::read(\"src/calc.rs\").unwrap(); }\n",
                "std::fs",
            ),
            (
                "fn t() { ::std::fs::read_to_string(\"src/calc.rs\").unwrap(); }\n",
                "std::fs",
            ),
        ] {
            match screen_transfer(source, None) {
                Err(TransferRefusal::ReadsTheBuild { what: found, .. }) => {
                    assert_eq!(found, what, "{source}")
                }
                other => panic!("{source}: {other:?}"),
            }
        }
        let refusal = screen_transfer("\n\nfn t() { env!(\"X\"); }", None).unwrap_err();
        assert!(
            refusal.to_string().contains("line 3 uses `env!`"),
            "{refusal}"
        );
        assert!(refusal.zh_cn().contains("第 3 行"));
    }

    #[test]
    fn behaviour_tests_and_mentions_in_comments_or_messages_pass() {
        let fine = "//! Not include_str!, not env!.\nuse holds::add;\n\n#[test]\nfn sums() {\n    \
                    // the environment (std::env) is not read here\n    \
                    assert_eq!(add(1, 2), 3, \"env!(x) and file!() in a message\");\n}\n\
                    fn my_env() {}\nfn prefile() { my_env(); }\n";
        assert_eq!(screen_transfer(fine, None), Ok(()));
    }

    #[test]
    fn the_reference_transfer_test_copied_is_refused_even_reformatted() {
        let reference = "use holds::{add, double};\n\n#[test]\nfn adds_then_doubles() {\n    assert_eq!(double(add(1, 2)), 6);\n}\n";
        let reformatted = "// mine!\nuse holds::{add, double,};\n#[test] fn adds_then_doubles() { assert_eq!(double(add(1,2)), 6); }";
        assert_eq!(
            screen_transfer(reformatted, Some(reference)),
            Err(TransferRefusal::CopiedReference)
        );
        let own = reference.replace("add(1, 2)), 6", "add(2, 2)), 8");
        assert_eq!(screen_transfer(&own, Some(reference)), Ok(()));
    }

    #[test]
    fn rustfmt_only_differences_are_the_same_code() {
        let a = "pub fn f(a: i64, b: i64) -> i64 {\n    a + b\n}\n";
        let b = "pub fn f(a: i64, b: i64) -> i64 { a + b }";
        let c = "pub fn f(\n    a: i64,\n    b: i64,\n) -> i64 {\n    a + b\n}\n";
        assert!(same_code(a, b) && same_code(a, c));
        assert!(!same_code(a, "pub fn f(a: i64, b: i64) -> i64 { a - b }"));
        assert!(!same_code("\"a b\"", "\"ab\"") || normalise("\"a b\"") == normalise("\"ab\""));
    }

    #[test]
    fn edits_to_the_copy_tests_are_listed() {
        let course: BTreeMap<String, String> = [
            ("tests/stage.rs", "#[test]\nfn a() {}\n"),
            ("tests/errors.rs", "#[test]\nfn b() {}\n"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
        let mut copy = course.clone();
        assert!(edited_tests(&course, &copy).is_empty());
        copy.insert(
            "tests/stage.rs".into(),
            "#[test]\n#[ignore]\nfn a() {}\n".into(),
        );
        copy.insert("tests/transfer.rs".into(), "mine".into());
        copy.insert("tests/extra.rs".into(), "x".into());
        assert_eq!(
            edited_tests(&course, &copy),
            ["tests/extra.rs", "tests/stage.rs"]
        );
    }

    #[test]
    fn paths_are_shown_from_the_cwd() {
        assert_eq!(
            relative_to(
                Path::new("/w/course/learn/01/src/a.rs"),
                Path::new("/w/course")
            ),
            PathBuf::from("learn/01/src/a.rs")
        );
        assert_eq!(
            relative_to(
                Path::new("/w/course/learn/01"),
                Path::new("/w/course/learn/02")
            ),
            PathBuf::from("../01")
        );
        assert_eq!(
            relocate(
                "  --> src/calc.rs:3:5\nthread 'x' panicked at tests/stage.rs:9:5:\n",
                "learn/01"
            ),
            "  --> learn/01/src/calc.rs:3:5\nthread 'x' panicked at learn/01/tests/stage.rs:9:5:\n"
        );
    }
}
