//! knowledge_search over markdown written the way people write it: arbitrary table headers,
//! several numeric columns, two tables in a section, numeric first columns, units in headers and
//! cells, rules as bullets and as sentences, prose-only files, Chinese, duplicate headings, code
//! fences, malformed tables — sensible data or typed errors, never a panic. Every result is checked
//! against `schemas/knowledge_result.schema.json`; one full result and its view are snapshots.

use std::fs;

use forge_tools::knowledge::{self, SearchRequest};
use forge_tools::{ToolError, ToolOutput};
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::{Value, json};

fn schema() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(knowledge::RESULT_SCHEMA).unwrap();
    assert!(
        jsonschema::meta::is_valid(&schema),
        "the result schema is a valid JSON Schema"
    );
    jsonschema::validator_for(&schema).expect("knowledge result schema compiles")
}

/// Writes `files` into a fresh knowledge directory and searches all of them; every successful
/// result must match the schema.
fn search_in(files: &[(&str, &str)], query: &str, top_k: usize) -> Result<ToolOutput, ToolError> {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        fs::write(dir.path().join(name), text).unwrap();
    }
    let names: Vec<String> = files.iter().map(|(n, _)| (*n).to_owned()).collect();
    let out = knowledge::search(
        &SearchRequest::new(query, top_k).unwrap(),
        dir.path(),
        &names,
    )?;
    assert_valid(&out.result);
    Ok(out)
}

fn search_one(text: &str, query: &str) -> ToolOutput {
    search_in(&[("note.md", text)], query, 4).unwrap_or_else(|e| panic!("{e}"))
}

fn assert_valid(result: &Value) {
    let validator = schema();
    let errors: Vec<String> = validator
        .iter_errors(result)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "result does not match the schema: {errors:?}\n{result:#}"
    );
}

fn view(out: &ToolOutput) -> &str {
    out.result["view"].as_str().unwrap()
}

fn table_values(table: &Value, column: &str) -> Vec<(String, Value)> {
    table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["values"][column].is_null())
        .map(|r| {
            (
                r["label"].as_str().unwrap().to_owned(),
                r["values"][column].clone(),
            )
        })
        .collect()
}

const CLINICS: &str = "\
# Westshire clinics

Walk-in waits in October, in minutes.

## Wait times by clinic

| Clinic | Visits | Wait (min) | Uptime % | Cost |
|:--|--:|--:|--:|--:|
| Abbey Road | 1,140 | 28 | 99.2% | $4.50 |
| Bridgend | 865 | 35 | 98.1% | $5 |
| Castle Hill | 1,020 | 31.5 | 97% | $3.75 |

## Wait-time standard

- **Maximum average wait**: 30 min
- Maximum wait at any clinic: 40 min
- Opening hours: 08:00 to 20:00

The board reviews the standard every 12 months; until June the average target was 35 minutes.
";

#[test]
fn a_table_with_any_header_gives_every_numeric_column() {
    let out = search_one(CLINICS, "wait of each clinic");
    let table = &out.result["data"]["tables"][0];
    assert_eq!(table["citation_id"], "kb-note-wait-times-by-clinic");
    assert_eq!(table["label_column"], "Clinic");
    assert_eq!(
        table["columns"],
        json!([
            { "name": "Visits", "unit": null, "count": 3, "missing": [] },
            { "name": "Wait", "unit": "min", "count": 3, "missing": [] },
            { "name": "Uptime", "unit": "%", "count": 3, "missing": [] },
            { "name": "Cost", "unit": "$", "count": 3, "missing": [] },
        ])
    );
    assert_eq!(
        table["rows"][0],
        json!({ "label": "Abbey Road", "values": { "Visits": 1140, "Wait": 28, "Uptime": 99.2, "Cost": 4.5 } })
    );
    assert_eq!(
        table["stats"]["Wait"],
        json!({ "count": 3, "lowest": { "label": "Abbey Road", "value": 28 }, "highest": { "label": "Bridgend", "value": 35 } })
    );
    let v = view(&out);
    assert!(
        v.contains("Table: Clinic | Visits | Wait (min) | Uptime (%) | Cost ($)"),
        "{v}"
    );
    assert!(
        v.contains("Wait (min): Abbey Road = 28, Bridgend = 35, Castle Hill = 31.5 (3 rows)"),
        "{v}"
    );
    assert!(v.contains("Visits: Abbey Road = 1140,"), "{v}");
    // The table itself is not repeated as prose.
    assert!(
        !v.contains('|') || v.lines().all(|l| !l.starts_with('|')),
        "{v}"
    );
}

#[test]
fn rules_as_bullets_become_facts_and_sentences_stay_prose() {
    let out = search_one(CLINICS, "wait-time standard");
    assert_eq!(out.citations[0].chunk_id, "wait-time-standard");
    assert_eq!(
        out.result["data"]["facts"],
        json!([
            { "citation_id": "kb-note-wait-time-standard", "key": "Maximum average wait", "value": 30, "unit": "min" },
            { "citation_id": "kb-note-wait-time-standard", "key": "Maximum wait at any clinic", "value": 40, "unit": "min" },
        ])
    );
    let v = view(&out);
    assert!(
        v.contains("Facts: Maximum average wait = 30 min; Maximum wait at any clinic = 40 min"),
        "{v}"
    );
    // A time is not one quantity, and a sentence with numbers is prose the model reads.
    assert!(v.contains("Opening hours: 08:00 to 20:00"), "{v}");
    assert!(
        v.contains("until June the average target was 35 minutes"),
        "{v}"
    );
}

#[test]
fn a_sentence_rule_is_a_passage_without_facts() {
    let text = "# Trust results\n\n## Results by school\n\n| School | Math | Reading |\n|---|---|---|\n| Ashgrove | 66 | 72 |\n| Dunmore | 61 | 64 |\n\n## Literacy target\n\nThe trust meets its literacy target when the average reading score is at least 70 and no school scores below 60 in reading.\n";
    let out = search_one(text, "literacy target reading");
    assert_eq!(out.citations[0].chunk_id, "literacy-target");
    assert_eq!(out.result["data"]["facts"], json!([]));
    assert!(
        view(&out).contains("at least 70 and no school scores below 60"),
        "{}",
        view(&out)
    );
    let table = &out.result["data"]["tables"][0];
    assert_eq!(
        table_values(table, "Reading"),
        [
            ("Ashgrove".into(), json!(72)),
            ("Dunmore".into(), json!(64))
        ]
    );
}

#[test]
fn two_tables_in_one_section_and_a_numeric_first_column() {
    let text = "\
# Revenue

## Figures

| Year | Revenue ($k) | Growth % |
|---|---|---|
| 2022 | 1,250 | 4.5 |
| 2023 | 1,310 | 4.8 |

| Quarter | Region | Spend ($) |
|---|---|---|
| 1 | North | 84,500 |
| 2 | South | 61,200 |
";
    let out = search_one(text, "figures");
    let tables = out.result["data"]["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 2);
    // All-numeric table: the first column labels the rows.
    assert_eq!(tables[0]["label_column"], "Year");
    assert_eq!(
        tables[0]["columns"],
        json!([{ "name": "Revenue", "unit": "$k", "count": 2, "missing": [] }, { "name": "Growth", "unit": "%", "count": 2, "missing": [] }])
    );
    assert_eq!(
        tables[0]["rows"][0],
        json!({ "label": "2022", "values": { "Revenue": 1250, "Growth": 4.5 } })
    );
    // A text column further right labels the rows; the numeric first column is a series.
    assert_eq!(tables[1]["label_column"], "Region");
    assert_eq!(
        tables[1]["columns"],
        json!([{ "name": "Quarter", "unit": null, "count": 2, "missing": [] }, { "name": "Spend", "unit": "$", "count": 2, "missing": [] }])
    );
    assert_eq!(
        out.summary,
        "1 passage(s): kb-note-figures; 2 table(s) (4 rows), 0 fact(s)"
    );
    let v = view(&out);
    assert_eq!(v.matches("Table: ").count(), 2, "{v}");
    assert!(v.contains("Revenue ($k): 2022 = 1250, 2023 = 1310"), "{v}");
}

#[test]
fn malformed_tables_give_sensible_data() {
    let text = "\
# Data

## Ragged

| Site | Score | Note |
|---|---|---|
| North | 72 |
| South | 81 | ok | extra |
|  | 90 | no label |
| East |  | missing |

## Mixed

| Team | Score | Units |
|---|---|---|
| A | 72 | 30 min |
| B | n/a | 2 kg |
| C | 75 (est.) | 1 h |

## Duplicate names

| Name | Score | Score | Score |
|---|---|---|---|
| A | 1 | 2 | 3 |

## No separator

| Batch | Score |
| Batch A | 72 |
";
    let out = search_one(text, "ragged mixed duplicate names separator");
    let tables: Vec<&Value> = out.result["data"]["tables"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    let by_heading = |h: &str| {
        *tables
            .iter()
            .find(|t| t["heading"].as_str().unwrap().ends_with(h))
            .unwrap()
    };
    let ragged = by_heading("Ragged");
    assert_eq!(
        ragged["columns"],
        json!([{ "name": "Score", "unit": null, "count": 2, "missing": ["East"] }])
    );
    // Short rows are padded, extra cells dropped, unlabelled rows skipped, empty cells absent and listed as
    // missing; a text column's cells are the rows' `texts`, an empty one left out.
    assert_eq!(
        ragged["rows"],
        json!([
            { "label": "North", "values": { "Score": 72 } },
            { "label": "South", "values": { "Score": 81 }, "texts": { "Note": "ok" } },
            { "label": "East", "values": {}, "missing": ["Score"], "texts": { "Note": "missing" } },
        ])
    );
    assert_eq!(ragged["stats"]["Score"]["count"], 2);
    // Units of different kinds (`30 min`, `2 kg`): not a series, named as unread. Words in brackets after a
    // number (`75 (est.)`) are a note on the row: the number counts.
    assert_eq!(
        by_heading("Mixed")["columns"],
        json!([{ "name": "Score", "unit": null, "count": 2, "missing": ["B"] }])
    );
    assert_eq!(by_heading("Mixed")["unread_columns"][0]["name"], "Units");
    assert_eq!(
        by_heading("Duplicate names")["columns"],
        json!([
            { "name": "Score", "unit": null, "count": 1, "missing": [] },
            { "name": "Score (2)", "unit": null, "count": 1, "missing": [] },
            { "name": "Score (3)", "unit": null, "count": 1, "missing": [] },
        ])
    );
    // Without its separator row a table is a paragraph of text.
    assert_eq!(tables.len(), 3);
    let v = view(&out);
    assert!(v.contains("| Batch | Score | | Batch A | 72 |"), "{v}");
    assert!(
        v.contains("Score: A = 72, C = 75 (2 rows; no value: B)")
            && v.contains("Notes: C Score (est.)"),
        "{v}"
    );
    assert!(v.contains("Not read: column \"Units\""), "{v}");
}

#[test]
fn prose_only_files_are_sources_not_errors() {
    let text = "Some notes without any heading.\n\nThe review happens every 6 months and costs 1,200 dollars.\n";
    let out = search_one(text, "review months");
    assert_eq!(out.citations[0].chunk_id, "preamble");
    assert_eq!(out.citations[0].heading, "(preamble)");
    assert_eq!(out.result["data"], json!({ "tables": [], "facts": [] }));
    assert!(
        view(&out).starts_with(
            "[kb-note-preamble] (preamble)\nSome notes without any heading. The review"
        ),
        "{}",
        view(&out)
    );

    let headings_only = search_one("# Only a title\n", "title");
    assert_eq!(headings_only.citations[0].chunk_id, "only-a-title");
}

#[test]
fn chinese_headings_labels_and_queries() {
    let text = "\
# 滨江区医院满意度报告

本报告汇总第三季度五家医院的满意度。

## 各医院满意度

| 医院 | 门诊量 | 满意度 (%) |
|---|---|---|
| 东区医院 | 12,480 | 92.5 |
| 西区医院 | 9,860 | 88.5 |

## 满意度考核标准

- 平均满意度下限：90%
- **单家医院满意度下限**：85%

## 人员与经费

五家医院共有医生1,260名。
";
    let out = search_in(&[("hospital_zh.md", text)], "各医院满意度", 2).unwrap();
    assert_eq!(out.citations[0].id, "kb-hospital_zh-各医院满意度");
    let table = &out.result["data"]["tables"][0];
    assert_eq!(table["label_column"], "医院");
    assert_eq!(
        table_values(table, "满意度"),
        [
            ("东区医院".into(), json!(92.5)),
            ("西区医院".into(), json!(88.5))
        ]
    );
    assert_eq!(
        table["columns"][1],
        json!({ "name": "满意度", "unit": "%", "count": 2, "missing": [] })
    );

    let rule = search_in(&[("hospital_zh.md", text)], "考核标准", 1).unwrap();
    assert_eq!(rule.citations[0].chunk_id, "满意度考核标准");
    assert_eq!(
        rule.result["data"]["facts"],
        json!([
            { "citation_id": "kb-hospital_zh-满意度考核标准", "key": "平均满意度下限", "value": 90, "unit": "%" },
            { "citation_id": "kb-hospital_zh-满意度考核标准", "key": "单家医院满意度下限", "value": 85, "unit": "%" },
        ])
    );
    assert!(
        view(&rule).contains("Facts: 平均满意度下限 = 90%; 单家医院满意度下限 = 85%"),
        "{}",
        view(&rule)
    );
}

#[test]
fn duplicate_headings_get_distinct_citations() {
    let text = "# Site A\n\n## Notes\n\nalpha uptime\n\n# Site B\n\n## Notes\n\nbeta uptime\n";
    let out = search_one(text, "notes uptime");
    let mut ids: Vec<&str> = out.citations.iter().map(|c| c.chunk_id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["notes", "notes-2"]);
    let headings: Vec<&str> = out.citations.iter().map(|c| c.heading.as_str()).collect();
    assert!(
        headings.contains(&"Site A > Notes") && headings.contains(&"Site B > Notes"),
        "{headings:?}"
    );
}

#[test]
fn code_fences_are_neither_tables_nor_headings_nor_facts() {
    let text = "# Setup\n\nRun this:\n\n```text\n# not a heading\n| a | b |\n|---|---|\n| 1 | 2 |\nlimit: 5\n```\n";
    let out = search_one(text, "setup heading");
    assert_eq!(out.citations.len(), 1);
    assert_eq!(out.citations[0].chunk_id, "setup");
    assert_eq!(out.result["data"], json!({ "tables": [], "facts": [] }));
    assert!(
        view(&out).contains("# not a heading | a | b |"),
        "{}",
        view(&out)
    );
}

#[test]
fn long_prose_is_clipped_at_a_word_and_the_view_stays_small() {
    let sentence = "The committee reviews every branch and writes a short note about it. ";
    let text = format!("# Notes\n\n{}\n", sentence.repeat(20));
    let out = search_one(&text, "committee");
    let prose = view(&out).lines().nth(1).unwrap();
    assert!(
        prose.chars().count() <= knowledge::MAX_PROSE_CHARS + 1,
        "{prose}"
    );
    assert!(prose.ends_with('…') && !prose.ends_with(" …"), "{prose}");
    // The full section text stays available in the citation, clipped to its own limit.
    assert!(out.citations[0].text.chars().count() <= knowledge::MAX_CITATION_CHARS);
}

#[test]
fn parse_source_reads_one_file_without_a_query() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("clinics.md"), CLINICS).unwrap();
    let parsed = knowledge::parse_source(dir.path(), "clinics.md").unwrap();
    assert_eq!(parsed.source_id(), "clinics");
    assert!(parsed.has_numeric_table());
    let (passage, table) = parsed.tables().next().unwrap();
    assert_eq!(
        (passage.citation_id(), table.rows.len()),
        ("kb-clinics-wait-times-by-clinic", 3)
    );
    let facts: Vec<(&str, f64)> = parsed
        .facts()
        .map(|(_, f)| (f.key.as_str(), f.value))
        .collect();
    assert_eq!(
        facts,
        [
            ("Maximum average wait", 30.0),
            ("Maximum wait at any clinic", 40.0)
        ]
    );

    fs::write(
        dir.path().join("prose.md"),
        "# Just prose\n\nNothing structured.\n",
    )
    .unwrap();
    let prose = knowledge::parse_source(dir.path(), "prose.md").unwrap();
    assert!(!prose.has_numeric_table());
    assert_eq!(prose.facts().count(), 0);
    assert_eq!(
        knowledge::parse_source(dir.path(), "../x.md")
            .unwrap_err()
            .code,
        "knowledge_source_invalid"
    );
    assert_eq!(
        knowledge::parse_source(dir.path(), "absent.md")
            .unwrap_err()
            .code,
        "knowledge_missing"
    );
}

#[test]
fn caps_are_exactly_at_the_documented_limits() {
    let rows = |n: usize| -> String {
        let body: String = (0..n).map(|i| format!("| r{i} | {i} |\n")).collect();
        format!("# T\n\n| Row | Value |\n|---|---|\n{body}")
    };
    let out = search_one(&rows(knowledge::MAX_TABLE_ROWS), "row value");
    assert_eq!(
        out.result["data"]["tables"][0]["rows"]
            .as_array()
            .unwrap()
            .len(),
        200
    );
    assert!(
        view(&out).contains("… (140 more) (200 rows; lowest r0 = 0; highest r199 = 199)"),
        "{}",
        view(&out)
    );
    let error = search_in(
        &[("note.md", &rows(knowledge::MAX_TABLE_ROWS + 1))],
        "row",
        3,
    )
    .unwrap_err();
    assert_eq!((error.code, error.retryable), ("knowledge_corrupt", false));

    let facts = |n: usize| -> String { (0..n).map(|i| format!("- limit {i}: {i}\n")).collect() };
    let out = search_one(
        &format!("# Limits\n\n{}", facts(knowledge::MAX_FACTS_PER_FILE)),
        "limit",
    );
    assert_eq!(out.result["data"]["facts"].as_array().unwrap().len(), 100);
    let error = search_in(
        &[("note.md", &format!("# L\n\n{}", facts(101)))],
        "limit",
        3,
    )
    .unwrap_err();
    assert!(
        error
            .message
            .contains("the line after the limit is line 103"),
        "{}",
        error.message
    );
}

#[test]
fn facts_repeated_verbatim_across_passages_appear_once() {
    let text = "# A\n\nalpha\n\n- Minimum score: 70\n\n# B\n\nalpha\n\n- Minimum score: 70\n- Maximum score: 90\n";
    let out = search_one(text, "alpha score");
    let keys: Vec<&str> = out.result["data"]["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys.iter().filter(|k| **k == "Minimum score").count(),
        1,
        "{keys:?}"
    );
    assert_eq!(keys.len(), 2);
}

#[test]
fn full_result_and_view_snapshot() {
    let out = search_in(
        &[("clinic_waits.md", CLINICS)],
        "wait of each clinic and the wait-time standard",
        3,
    )
    .unwrap();
    insta::assert_json_snapshot!("clinic_waits_result", out.result, {
        ".source_blake3" => "[blake3]",
        ".citations[].source_blake3" => "[blake3]",
        ".citations[].score" => "[score]",
    });
    insta::assert_snapshot!("clinic_waits_view", view(&out));
}

/// Markdown-ish text: headings, tables, bullets, fences, numbers, CJK and stray punctuation.
fn markdownish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("# ".to_owned()),
        Just("## ".to_owned()),
        Just("\n".to_owned()),
        Just("\n\n".to_owned()),
        Just("| ".to_owned()),
        Just(" |".to_owned()),
        Just("|---|---|\n".to_owned()),
        Just("- ".to_owned()),
        Just("```\n".to_owned()),
        Just(": ".to_owned()),
        Just("：".to_owned()),
        Just("**".to_owned()),
        Just("`".to_owned()),
        Just("(%)".to_owned()),
        Just("1,250".to_owned()),
        Just("99.2%".to_owned()),
        Just("$4.50".to_owned()),
        Just("-3".to_owned()),
        Just("发布规则".to_owned()),
        Just("> ".to_owned()),
        Just("<b>".to_owned()),
        "[a-zA-Z ]{1,8}",
        "[0-9.,]{1,6}",
        any::<char>().prop_map(|c| c.to_string()),
    ];
    prop::collection::vec(piece, 0..80).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any text parses to data or a typed error; a search returns a schema-valid result or a typed error.
    #[test]
    fn random_markdown_never_panics(text in markdownish(), query in "[a-z发布规则 ]{1,12}") {
        match knowledge::parse_text("random.md", &text) {
            Ok(parsed) => {
                prop_assert!(!parsed.passages().is_empty());
                let request = SearchRequest::new(if query.trim().is_empty() { "a".to_owned() } else { query }, 4).unwrap();
                match knowledge::search_sources(&request, &[parsed]) {
                    Ok(out) => assert_valid(&out.result),
                    Err(e) => prop_assert_eq!(e.code, "knowledge_no_match"),
                }
            }
            Err(e) => prop_assert_eq!(e.code, "knowledge_corrupt"),
        }
    }
}

#[test]
fn the_result_schema_names_what_changed_from_the_seed() {
    let schema: Value = serde_json::from_str(knowledge::RESULT_SCHEMA).unwrap();
    let comment = schema["$comment"].as_str().unwrap();
    assert!(
        comment.starts_with("Differences from the seed"),
        "{comment}"
    );
    for name in [
        "data.batches",
        "data.release_rule",
        "data.tables",
        "data.facts",
    ] {
        assert!(
            comment.contains(name),
            "{name} missing from the schema's $comment"
        );
    }
}

#[test]
fn a_matching_table_is_never_crowded_out_by_prose() {
    // Three short prose sections that repeat the query's words outrank the long numeric table under
    // BM25; the table (and the rule's facts) must still be among the top 3.
    let text = "# 城区图书馆借阅季度报告\n\n本报告汇总第三季度各图书馆的借阅情况，借阅量考核是否达标由区文旅局判断。\n\n\
## 各馆借阅量\n\n| 图书馆 | 藏书量 | 借阅量 (册) | 座位数 |\n|---|---|---|---|\n| 东馆 | 120,000 | 8,400 | 300 |\n\
| 西馆 | 98,000 | 7,100 | 240 |\n| 南馆 | 110,500 | 9,050 | 280 |\n\n## 借阅量考核标准\n\n- 平均借阅量下限：8000\n\n\
## 历年情况\n\n第三季度借阅量考核达标情况：2022年达标，2023年达标，借阅量考核由区文旅局判断。\n\n\
## 更新记录\n\n第三季度借阅量考核资料由区文旅局整理。\n";
    let out = search_in(&[("lib.md", text)], "判断第三季度的借阅量考核是否达标", 3).unwrap();
    let tables = out.result["data"]["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 1, "{}", out.result);
    assert!(!out.result["data"]["facts"].as_array().unwrap().is_empty());
    let scores: Vec<f64> = out.result["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["score"].as_f64().unwrap())
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "hits stay in score order: {scores:?}"
    );
    // With one hit asked for, the best-ranked passage is what comes back.
    let one = search_in(&[("lib.md", text)], "判断第三季度的借阅量考核是否达标", 1).unwrap();
    assert_eq!(one.result["citations"].as_array().unwrap().len(), 1);
}

#[test]
fn a_query_about_the_subject_still_gets_the_documents_table() {
    // The query names the document's subject and its rule, never the table's header words, so the
    // table section matches no query term at all; the best hit's own document table stands in for
    // the lowest prose hit. A table in another, unmatched file stays out.
    let text = "# Northfield Trust results\n\nThe Northfield Trust runs three schools.\n\n\
## Scores by school\n\n| School | Reading |\n|---|---|\n| Ash | 72 |\n| Birch | 64 |\n\n\
## Literacy target\n\nThe Northfield Trust meets its literacy target when the average is at least 70.\n\n\
## Budget\n\nThe Northfield Trust budget for the literacy target is 38,500.\n";
    let other = "# Unrelated\n\n| Shop | Sales |\n|---|---|\n| A | 1 |\n";
    let out = search_in(
        &[("trust.md", text), ("other.md", other)],
        "Northfield Trust literacy target",
        3,
    )
    .unwrap();
    let tables = out.result["data"]["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 1, "{}", out.result);
    assert_eq!(tables[0]["columns"][0]["name"], "Reading", "{}", out.result);
    let headings: Vec<&str> = out.result["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["heading"].as_str().unwrap())
        .collect();
    assert!(
        headings.iter().any(|h| h.contains("Literacy target")),
        "{headings:?}"
    );
    assert!(
        !headings.iter().any(|h| h.contains("Unrelated")),
        "{headings:?}"
    );
    // A query that matches nothing in the document still gets no table out of thin air.
    assert!(search_in(&[("trust.md", text)], "zzz qqq", 3).is_err());
}

#[test]
fn text_columns_besides_the_labels_are_each_rows_texts_in_the_data_and_a_line_of_the_view() {
    // A rule may name some rows by a text column ("every city-centre branch"); the rule reader and the
    // model both need the cells, which a table read as numeric series alone dropped.
    let text = "\
# Branches

## Visits

| Branch | Area | Visits per hour |
|---|---|---|
| Central | City centre | 52 |
| Oakfield | Suburban | 31 |
| Hill Top |  | 35 |
";
    let out = search_one(text, "branch area visits");
    assert_valid(&out.result);
    let table = &out.result["data"]["tables"][0];
    assert_eq!(
        table["rows"],
        json!([
            { "label": "Central", "values": { "Visits per hour": 52 }, "texts": { "Area": "City centre" } },
            { "label": "Oakfield", "values": { "Visits per hour": 31 }, "texts": { "Area": "Suburban" } },
            { "label": "Hill Top", "values": { "Visits per hour": 35 } },
        ])
    );
    let v = view(&out);
    assert!(
        v.contains("Text column Area: Central = City centre, Oakfield = Suburban\n")
            || v.ends_with("Text column Area: Central = City centre, Oakfield = Suburban"),
        "{v}"
    );
}

#[test]
fn a_last_row_that_sums_the_rows_above_in_every_column_is_a_total_whatever_its_label() {
    // Held-out set 8: a total labelled "全区" was read as a sixth district and the mean of five became 1966.67;
    // the 1.5B's answer built on it was certified. One column agreeing is not enough (10, 20, 30 sums by chance).
    let text = "\
# 就业

## 各街道

| 街道 | 新增就业（人） | 招聘会场次 |
|---|---|---|
| 城东 | 1240 | 14 |
| 城西 | 1105 | 11 |
| 新桥 | 980 | 9 |
| 全区 | 3325 | 34 |

## One column

| Site | Count |
|---|---|
| A | 10 |
| B | 20 |
| C | 30 |

## Rinks

| Rink | Sessions | Admissions | Skate hire (%) |
|---|---|---|---|
| Deeside | 62 | 2,850 | 58 |
| Fenwick | 48 | 2,640 | 64 |
| Gateside | 70 | 3,120 | 52 |
| All rinks | 180 | 8,610 | 58 |
";
    let out = search_one(text, "街道 新增就业 site count rink sessions admissions");
    let tables = out.result["data"]["tables"].as_array().unwrap();
    let by_label_column = |l: &str| tables.iter().find(|t| t["label_column"] == l).unwrap();
    let districts = by_label_column("街道");
    assert_eq!(
        districts["rows"].as_array().unwrap().len(),
        3,
        "{districts}"
    );
    assert_eq!(districts["summary_rows"][0]["label"], "全区");
    assert_eq!(districts["summary_rows"][0]["kind"], "sum");
    assert_eq!(by_label_column("Site")["rows"].as_array().unwrap().len(), 3);
    // A share column's total is the overall share, never a sum (held-out set 9: "All rinks" read as a rink).
    let rinks = by_label_column("Rink");
    assert_eq!(rinks["rows"].as_array().unwrap().len(), 3, "{rinks}");
    assert_eq!(rinks["summary_rows"][0]["label"], "All rinks");
}
