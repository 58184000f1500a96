//! Tables as people write them, through the whole knowledge_search result: `Total`/`Average` rows kept
//! apart (`summary_rows`), missing cells as gaps (`missing` per row and column), negatives in every
//! printed form, thousands separators, units in cells, the label column anywhere, bullet lists of
//! `label: number` as tables (unless they state rules), and tables of 26 and 200 rows. Every result is
//! checked against `schemas/knowledge_result.schema.json`.

use std::fs;

use forge_tools::ToolOutput;
use forge_tools::knowledge::{self, SearchRequest};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn search_one(text: &str, query: &str) -> ToolOutput {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("note.md"), text).unwrap();
    let out = knowledge::search(
        &SearchRequest::new(query, 4).unwrap(),
        dir.path(),
        &["note.md".to_owned()],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let schema: Value = serde_json::from_str(knowledge::RESULT_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&out.result)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "result does not match the schema: {errors:#?}"
    );
    out
}

fn first_table(out: &ToolOutput) -> &Value {
    &out.result["data"]["tables"][0]
}

fn view(out: &ToolOutput) -> &str {
    out.result["view"].as_str().unwrap()
}

#[test]
fn summary_rows_are_apart_from_rows_and_stats() {
    let text = "\
# Stores

## Sales by store

| Store | Sales ($) | Staff |
|---|---|---|
| **Total** | 3,000 | 9 |
| North | 1,000 | 3 |
| Total Care Clinic | 500 | 1 |
| South | 1,500 | 5 |
| Average: | 1,000 | 3 |
| 合计 | 3,000 | 9 |
";
    let out = search_one(text, "sales by store");
    let table = first_table(&out);
    let labels: Vec<&str> = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["North", "Total Care Clinic", "South"]);
    assert_eq!(
        table["summary_rows"],
        json!([
            { "label": "Total", "kind": "sum", "values": { "Sales": 3000, "Staff": 9 } },
            { "label": "Average:", "kind": "mean", "values": { "Sales": 1000, "Staff": 3 } },
            { "label": "合计", "kind": "sum", "values": { "Sales": 3000, "Staff": 9 } },
        ])
    );
    assert_eq!(table["stats"]["Sales"]["count"], 3);
    assert_eq!(
        table["stats"]["Sales"]["highest"],
        json!({ "label": "South", "value": 1500 })
    );
    assert_eq!(
        table["columns"][0],
        json!({ "name": "Sales", "unit": "$", "count": 3, "missing": [] })
    );
    assert!(
        view(&out).contains("Stated Total (sum): Sales = 3000, Staff = 9"),
        "{}",
        view(&out)
    );
    assert!(
        view(&out)
            .contains("Sales ($): North = 1000, Total Care Clinic = 500, South = 1500 (3 rows)"),
        "{}",
        view(&out)
    );
    assert!(
        out.summary.contains("1 table(s) (3 rows)"),
        "{}",
        out.summary
    );
}

#[test]
fn missing_cells_are_gaps_in_a_numeric_column() {
    let text = "\
## Uptime by site

| Site | Uptime (%) | Tickets |
|---|---|---|
| North | 99.2 | 4 |
| South | n/a | 7 |
| East | — | TBD |
| West | 97.5 |  |
| Central | 暂无 | ? |
";
    let out = search_one(text, "uptime by site");
    let table = first_table(&out);
    assert_eq!(
        table["columns"],
        json!([
            { "name": "Uptime", "unit": "%", "count": 2, "missing": ["South", "East", "Central"] },
            { "name": "Tickets", "unit": null, "count": 2, "missing": ["East", "West", "Central"] },
        ])
    );
    assert_eq!(
        table["rows"],
        json!([
            { "label": "North", "values": { "Uptime": 99.2, "Tickets": 4 } },
            { "label": "South", "values": { "Tickets": 7 }, "missing": ["Uptime"] },
            { "label": "East", "values": {}, "missing": ["Uptime", "Tickets"] },
            { "label": "West", "values": { "Uptime": 97.5 }, "missing": ["Tickets"] },
            { "label": "Central", "values": {}, "missing": ["Uptime", "Tickets"] },
        ])
    );
    assert_eq!(table["stats"]["Uptime"]["count"], 2);
    assert!(
        view(&out).contains(
            "Uptime (%): North = 99.2, West = 97.5 (2 rows; no value: South, East, Central)"
        ),
        "{}",
        view(&out)
    );

    // Any other text in the column: not a series.
    let out = search_one(
        "## Uptime\n\n| Site | Uptime |\n|---|---|\n| A | 99 |\n| B | down |\n| C | n/a |\n",
        "uptime",
    );
    assert_eq!(first_table(&out)["columns"], json!([]));
}

#[test]
fn negative_numbers_survive_into_the_table_json() {
    let text = "\
## Net change by account

| Account | Change | Net ($) | Growth |
|---|---|---|---|
| hyphen | -3.1 | -$3.10 | -3.1% |
| minus sign | \u{2212}3.1 | $-3.10 | \u{2212}3.1% |
| en dash | \u{2013}3.1 | ($3.10) | (3.1%) |
| accounting | (3.1) | \u{2212}$3.10 | 2% |
";
    let out = search_one(text, "net change by account");
    let table = first_table(&out);
    for row in table["rows"].as_array().unwrap() {
        assert_eq!(row["values"]["Change"], json!(-3.1), "{row}");
        assert_eq!(row["values"]["Net"], json!(-3.1), "{row}");
    }
    let growth: Vec<f64> = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["values"]["Growth"].as_f64().unwrap())
        .collect();
    assert_eq!(growth, [-3.1, -3.1, -3.1, 2.0]);
    assert_eq!(
        table["stats"]["Growth"]["lowest"],
        json!({ "label": "hyphen", "value": -3.1 })
    );
    assert_eq!(table["columns"][1]["unit"], "$");
    assert!(view(&out).contains("hyphen = -3.1"), "{}", view(&out));
}

#[test]
fn thousands_separators_and_units_stay_attached() {
    let text = "\
## Plants

| Plant | Output | Distance | Price | Share | Wait |
|---|---|---|---|---|---|
| A | 12,400 | 1.2 km | $4.50 | 12% | 42 min |
| B | 12 400 | 3 km | $5 | 8% | 30 min |
| C | 12\u{00A0}400 | 0.5 km | $0.75 | 1.5% | 5 min |
| D | 12\u{202F}400 | 2 km | $1 | 0% | 1 min |
| E | 12\u{2009}400 | 1 km | $2 | 3% | 2 min |
";
    let out = search_one(text, "plants");
    let table = first_table(&out);
    let units: Vec<(&str, &Value)> = table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), &c["unit"]))
        .collect();
    assert_eq!(
        units,
        [
            ("Output", &json!(null)),
            ("Distance", &json!("km")),
            ("Price", &json!("$")),
            ("Share", &json!("%")),
            ("Wait", &json!("min"))
        ]
    );
    for row in table["rows"].as_array().unwrap() {
        assert_eq!(row["values"]["Output"], json!(12400), "{row}");
    }
    assert_eq!(
        table["rows"][0]["values"],
        json!({ "Output": 12400, "Distance": 1.2, "Price": 4.5, "Share": 12, "Wait": 42 })
    );
}

#[test]
fn european_decimals_are_not_silently_misread() {
    // Every cell of the column writes `.` for thousands and `,` for decimals: the column's decimal mark is the
    // comma, read exactly (the old reader left it out rather than misread it).
    let out = search_one(
        "## Output\n\n| Plant | Output |\n|---|---|\n| A | 12.400,5 |\n| B | 9.100,0 |\n",
        "output",
    );
    let table = first_table(&out);
    assert_eq!(table["columns"][0]["name"], "Output", "{table}");
    assert_eq!(
        table["rows"][0]["values"]["Output"],
        json!(12400.5),
        "{table}"
    );
    assert_eq!(table["rows"][1]["values"]["Output"], json!(9100), "{table}");
}

#[test]
fn the_label_column_is_the_first_text_column_wherever_it_stands() {
    let text = "\
## Late deliveries

| Week | Depot | Late |
|---|---|---|
| 1 | North | 4 |
| 2 | South | 6 |
| 3 | East | n/a |
";
    let out = search_one(text, "late deliveries");
    let table = first_table(&out);
    assert_eq!(table["label_column"], "Depot");
    assert_eq!(
        table["columns"],
        json!([
            { "name": "Week", "unit": null, "count": 3, "missing": [] },
            { "name": "Late", "unit": null, "count": 2, "missing": ["East"] },
        ])
    );
    assert_eq!(
        table["rows"][0],
        json!({ "label": "North", "values": { "Week": 1, "Late": 4 } })
    );
}

#[test]
fn a_bullet_list_of_numbers_is_a_table() {
    let text = "\
# Plant report

## Output per line (units)

Output last week:

- Line A: 120
- Line B — 95
- **Line C** = 130
- Total: 345

The night shift ran on line B only.
";
    let out = search_one(text, "output per line");
    assert_eq!(
        out.result["data"]["facts"],
        json!([]),
        "the items are not also facts"
    );
    let table = first_table(&out);
    assert_eq!(table["label_column"], "");
    assert_eq!(table["heading"], "Plant report > Output per line (units)");
    assert_eq!(
        table["columns"],
        json!([{ "name": "Output per line", "unit": "units", "count": 3, "missing": [] }])
    );
    let rows: Vec<(&str, f64)> = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["label"].as_str().unwrap(),
                r["values"]["Output per line"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [("Line A", 120.0), ("Line B", 95.0), ("Line C", 130.0)]
    );
    assert_eq!(
        table["summary_rows"],
        json!([{ "label": "Total", "kind": "sum", "values": { "Output per line": 345 } }])
    );
    assert!(view(&out).starts_with("[kb-note-output-per-line-units] Plant report > Output per line (units)\nOutput last week:"), "{}", view(&out));
    assert!(
        view(&out)
            .contains("Table: Output per line (units)\nOutput per line (units): Line A = 120"),
        "{}",
        view(&out)
    );
    assert!(!view(&out).contains("Facts:"), "{}", view(&out));

    // Units from the items when the heading has none; the preamble's column is `Value`.
    let out = search_one("- North: $4.50\n- South: $3.90\n", "north south");
    let table = first_table(&out);
    assert_eq!(table["columns"][0]["name"], "Value");
    assert_eq!(table["columns"][0]["unit"], "$");
}

#[test]
fn a_bullet_list_that_states_a_rule_stays_facts() {
    let text = "\
## Wait-time standard

- Maximum average wait: 30 min
- North: 24 min
- South: 31 min
";
    let out = search_one(text, "wait-time standard");
    assert_eq!(out.result["data"]["tables"], json!([]));
    let keys: Vec<&str> = out.result["data"]["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["Maximum average wait", "North", "South"]);

    // Mixed units, or a single item: facts as before.
    let out = search_one(
        "## Figures\n\n- Wait: 30 min\n- Budget: $1,250\n",
        "figures",
    );
    assert_eq!(out.result["data"]["tables"], json!([]));
    assert_eq!(out.result["data"]["facts"].as_array().unwrap().len(), 2);
}

#[test]
fn tables_of_26_and_200_rows_parse() {
    // The cap counts every body row as written, summary rows included: 199 rows and an Average fit.
    for (n, average) in [
        (26usize, true),
        (knowledge::MAX_TABLE_ROWS - 1, true),
        (knowledge::MAX_TABLE_ROWS, false),
    ] {
        let mut text = "## Scores\n\n| Name | Score |\n|---|---|\n".to_owned();
        for i in 0..n {
            text.push_str(&format!("| Row {i} | {} |\n", i * 10));
        }
        if average {
            text.push_str("| Average | 5 |\n");
        }
        let out = search_one(&text, "scores");
        let table = first_table(&out);
        assert_eq!(
            table["rows"].as_array().unwrap().len(),
            n,
            "{n} rows; the Average row is a summary row"
        );
        assert_eq!(table["columns"][0]["count"], n);
        assert_eq!(table["stats"]["Score"]["highest"]["value"], (n - 1) * 10);
        assert_eq!(
            table["summary_rows"].as_array().unwrap().len(),
            usize::from(average)
        );
    }
    // One more is still a typed error, naming the line and the limit.
    let mut text = "## Scores\n\n| Name | Score |\n|---|---|\n".to_owned();
    for i in 0..=knowledge::MAX_TABLE_ROWS {
        text.push_str(&format!("| Row {i} | {i} |\n"));
    }
    let err = knowledge::parse_text("note.md", &text).unwrap_err();
    assert_eq!(err.code, "knowledge_corrupt");
    assert!(err.message.contains("201 rows"), "{}", err.message);
}
