//! The runner chapter as data: `docs/chapter/chapter.json` (Forge's own text for the specification's sections
//! 1–21, the course frame, the trace walk-through and the source orientation, in English and Chinese), compiled
//! in and served by `GET /course/chapter`; axum-free.
//!
//! The page places each section beside the live element it explains (`anchor`, an element id of the page);
//! the tests below keep every section in both languages and every anchor and link real.

use std::sync::OnceLock;

use serde_json::Value;

/// The chapter file, compiled in like the schemas.
const CHAPTER_JSON: &str = include_str!("../../../docs/chapter/chapter.json");

/// The languages every piece of chapter text exists in.
pub const LANGUAGES: [&str; 2] = ["en", "zh"];

/// The parsed chapter. The file is compiled in: a broken one fails the tests before it ships.
pub fn chapter() -> &'static Value {
    static CHAPTER: OnceLock<Value> = OnceLock::new();
    CHAPTER.get_or_init(|| {
        serde_json::from_str(CHAPTER_JSON).expect("docs/chapter/chapter.json parses")
    })
}

/// Every place in the chapter that must hold text in both languages, named by its path, with the problems
/// found (a missing language, an empty text, a language holding fields the other lacks).
pub fn bilingual_problems(chapter: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    walk(chapter, "chapter", &mut problems);
    problems
}

fn walk(value: &Value, at: &str, problems: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let langs: Vec<&str> = LANGUAGES
                .iter()
                .copied()
                .filter(|l| map.contains_key(*l))
                .collect();
            if !langs.is_empty() {
                check_pair(map.get("en"), map.get("zh"), at, problems);
            }
            for (key, child) in map {
                walk(child, &format!("{at}.{key}"), problems);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                walk(child, &format!("{at}[{i}]"), problems);
            }
        }
        _ => {}
    }
}

/// One bilingual pair: both present, the same shape (same keys, same list lengths), no empty text.
fn check_pair(en: Option<&Value>, zh: Option<&Value>, at: &str, problems: &mut Vec<String>) {
    match (en, zh) {
        (Some(en), Some(zh)) => same_shape(en, zh, at, problems),
        (None, _) => problems.push(format!("{at}: no English text")),
        (_, None) => problems.push(format!("{at}: no Chinese text")),
    }
}

fn same_shape(en: &Value, zh: &Value, at: &str, problems: &mut Vec<String>) {
    match (en, zh) {
        (Value::String(a), Value::String(b)) => {
            if a.trim().is_empty() || b.trim().is_empty() {
                problems.push(format!("{at}: an empty text"));
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() || a.is_empty() {
                problems.push(format!(
                    "{at}: {} English items, {} Chinese",
                    a.len(),
                    b.len()
                ));
            }
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                same_shape(x, y, &format!("{at}[{i}]"), problems);
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            let keys_a: Vec<&String> = a.keys().collect();
            let keys_b: Vec<&String> = b.keys().collect();
            if keys_a != keys_b {
                problems.push(format!("{at}: English keys {keys_a:?}, Chinese {keys_b:?}"));
            }
            for (key, x) in a {
                if let Some(y) = b.get(key) {
                    same_shape(x, y, &format!("{at}.{key}"), problems);
                }
            }
        }
        _ => problems.push(format!("{at}: English and Chinese differ in kind")),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn root() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
    }

    #[test]
    fn every_specification_section_is_in_the_chapter_once_in_both_languages() {
        let sections = chapter()["sections"].as_array().expect("sections");
        let ids: Vec<u64> = sections.iter().filter_map(|s| s["id"].as_u64()).collect();
        assert_eq!(
            ids,
            (1..=21).collect::<Vec<u64>>(),
            "one section per specification section, in order"
        );
        for s in sections {
            for lang in LANGUAGES {
                let text = &s[lang];
                assert!(
                    text["title"].as_str().is_some_and(|t| !t.is_empty()),
                    "§{} {lang}: title",
                    s["id"]
                );
                assert!(
                    text["body"].as_array().is_some_and(|b| !b.is_empty()),
                    "§{} {lang}: body",
                    s["id"]
                );
            }
        }
        let problems = bilingual_problems(chapter());
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn a_missing_or_uneven_language_is_named() {
        let broken = serde_json::json!({ "sections": [
            { "id": 1, "en": { "title": "T", "body": ["a", "b"] }, "zh": { "title": "题", "body": ["甲"] } },
            { "id": 2, "en": { "title": "T", "body": ["a"] } },
            { "id": 3, "en": { "title": "", "body": ["a"] }, "zh": { "title": "题", "body": ["甲"] } }
        ]});
        let problems = bilingual_problems(&broken);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(
            problems[0].contains("sections[0].body: 2 English items, 1 Chinese"),
            "{problems:?}"
        );
        assert!(
            problems[1].contains("sections[1]: no Chinese text"),
            "{problems:?}"
        );
        assert!(
            problems[2].contains("sections[2].title: an empty text"),
            "{problems:?}"
        );
    }

    /// A section sits beside a live element of the page, and links only to files that exist and tests that exist.
    #[test]
    fn every_anchor_is_an_element_of_the_page_and_every_link_resolves() {
        let page = include_str!("../web/index.html");
        for s in chapter()["sections"].as_array().unwrap() {
            let anchor = s["anchor"].as_str().expect("anchor");
            assert!(
                page.contains(&format!("id=\"{anchor}\"")),
                "§{}: no element id {anchor:?} in index.html",
                s["id"]
            );
            for path in s["sources"].as_array().into_iter().flatten() {
                let path = path.as_str().unwrap();
                assert!(
                    root().join(path).is_file(),
                    "§{}: {path} is not a file",
                    s["id"]
                );
            }
            for test in s["tests"].as_array().into_iter().flatten() {
                let (file, name) = test.as_str().unwrap().split_once("::").expect("file::test");
                let text = std::fs::read_to_string(root().join(file)).unwrap_or_default();
                assert!(
                    text.contains(&format!("fn {name}(")),
                    "§{}: no test {name} in {file}",
                    s["id"]
                );
            }
        }
    }
}
