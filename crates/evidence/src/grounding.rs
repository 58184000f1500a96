//! Grounding: which numbers and labels the observations so far establish — what a model may write into
//! tool arguments and a final answer (grammar), and what a final answer's numbers are checked against
//! (claims gate).
//!
//! Built per step from the observation ledger and the task's own text, never from `expected.json`.
//! It reads results by their shape (tables and facts through `forge_tools::knowledge::tables_in` and
//! `facts_in`, `citations[].text`, `value`, `expression`, `spec`), not by tool or task name, so a new tool
//! with the same result shapes is grounded the same way.

use serde::Serialize;
use serde_json::Value;

use crate::ledger::ObservationRecord;
use forge_language::numbers;

/// What the next decision may write, for a policy's grammar (all strings, ready to print).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Grounding {
    /// Printed forms of grounded numbers (signed, JSON-valid), shortest first per value.
    pub numbers: Vec<String>,
    /// The numbers among `numbers` that the data and the task's own words state, leaving out what was
    /// computed from them: what a rule's limit may be written with (a limit is stated, never a result).
    pub stated: Vec<String>,
    /// Row counts of observed tables ("5 sites"): fine in an answer's text, never data to compute with.
    pub counts: Vec<String>,
    /// Row labels seen in tables (what a chart or an answer may name).
    pub labels: Vec<String>,
    /// Ids of successful observations (what a final answer may cite).
    pub evidence_ids: Vec<String>,
    /// Every numeric table column seen, its values in table order (what an aggregate runs over).
    pub series: Vec<Series>,
    /// Printed forms of computed results (a tool result's top-level numeric `value`, with its
    /// roundings): what an answer slot for an average or a total may state.
    pub computed: Vec<String>,
    /// The same results as computed, unrounded (canonical form): what a chart's line draws — a chart is
    /// data, so its line is the value itself, never a printed rounding of it.
    pub computed_exact: Vec<String>,
    /// Units the observed text and the task's own words write with their numbers (`minutes`, `克`, `£`),
    /// and the unit each observed column states: what a limit may be written with.
    pub units: Vec<String>,
}

/// One numeric column of an observed table: `Score` → [71, 64.5, …] (printed forms), with the row
/// label of each value.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Series {
    pub name: String,
    pub labels: Vec<String>,
    pub values: Vec<String>,
    /// The header of the table's row-label column (`Hotel`, `Month`): what the rows are. Two tables
    /// can share a column name (`Occupancy` by hotel and by month); the text's words for the rows
    /// tell them apart.
    pub rows: String,
    /// The unit the table states for the column's values (`s`, `%`), if any.
    pub unit: Option<String>,
}

impl Series {
    /// The printed values at the column's lowest or highest row (`lowest`: `Some(true)` the lowest,
    /// `Some(false)` the highest, `None` both), the rows [`Self::extremes`] names.
    pub fn extreme_values(&self, lowest: Option<bool>) -> Vec<&str> {
        let Some((low, high)) = self.extreme_rows() else {
            return Vec::new();
        };
        let rows: &[usize] = match lowest {
            Some(true) => &[low],
            Some(false) => &[high],
            None => &[low, high],
        };
        rows.iter()
            .filter_map(|&i| self.values.get(i).map(String::as_str))
            .collect()
    }

    /// The indices of the rows holding the smallest and the largest value (the first such row on a tie).
    fn extreme_rows(&self) -> Option<(usize, usize)> {
        let numbers: Vec<(usize, f64)> = self
            .values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.parse::<f64>().ok().map(|x| (i, x)))
            .collect();
        let lowest = numbers
            .iter()
            .copied()
            .reduce(|a, b| if b.1 < a.1 { b } else { a })?;
        let highest = numbers
            .iter()
            .copied()
            .reduce(|a, b| if b.1 > a.1 { b } else { a })?;
        Some((lowest.0, highest.0))
    }
}

/// The values behind a [`Grounding`], for checking numbers a writer already wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroundedValues {
    pub values: Vec<f64>,
    pub labels: Vec<String>,
    /// The most rows any observed table has.
    pub max_rows: usize,
    /// The row count of each observed table (and of each column with missing cells): counts the data states.
    pub row_counts: Vec<usize>,
    /// Each observed row's values (every numeric column of a table row, a chart bar's value), by label:
    /// what a number stated *for* a row must be.
    pub row_values: Vec<(String, Vec<f64>)>,
    /// The names of the observed numeric columns (words that may stand between a label and its value).
    pub columns: Vec<String>,
    /// The values the data and the task's texts state, without the results computed from them.
    pub stated: Vec<f64>,
}

impl GroundedValues {
    /// Collects the values established by `records` (successful ones only) and by `texts` (the task's
    /// own words: task text and answer template).
    pub fn collect<'a>(
        records: impl IntoIterator<Item = &'a ObservationRecord>,
        texts: &[&str],
    ) -> GroundedValues {
        let mut out = GroundedValues::default();
        let results: Vec<&Value> = records
            .into_iter()
            .filter(|r| r.ok)
            .filter_map(|r| r.result.as_ref())
            .collect();
        // Data first (every observation's cells, facts and cited text), then what was computed from it:
        // a computed value is grounded when its inputs are data, whichever order the calls came in (the
        // scorer, not grounding, judges causal order).
        for result in &results {
            out.add_result(result);
        }
        let data_end = out.values.len();
        for result in &results {
            out.add_computed(result);
        }
        let computed_end = out.values.len();
        for text in texts {
            out.values
                .extend(numbers::scan(text).into_iter().map(|m| m.value));
        }
        out.stated = out.values[..data_end]
            .iter()
            .chain(&out.values[computed_end..])
            .copied()
            .collect();
        out
    }

    fn add_result(&mut self, result: &Value) {
        for table in forge_tools::knowledge::tables_in(result) {
            let rows = &table.rows;
            self.max_rows = self.max_rows.max(rows.len());
            if !self.row_counts.contains(&rows.len()) {
                self.row_counts.push(rows.len());
            }
            for row in rows {
                for (column, value) in &row.values {
                    self.add_value(*value);
                    if !self.columns.contains(column) {
                        self.columns.push(column.clone());
                    }
                }
                self.add_label(&row.label);
                self.add_row_values(&row.label, row.values.iter().map(|(_, v)| *v));
            }
            for (_, stat) in &table.stats {
                for end in stat.ends() {
                    self.add_value(end);
                }
            }
        }
        for fact in forge_tools::knowledge::facts_in(result) {
            self.add_value(fact.value);
        }
        for citation in result["citations"].as_array().into_iter().flatten() {
            for key in ["text", "heading"] {
                if let Some(text) = citation[key].as_str() {
                    self.values
                        .extend(numbers::scan(text).into_iter().map(|m| m.value));
                }
            }
        }
        // A chart's values are the model's arguments, not data: its bars ground nothing new.
        let spec = &result["spec"];
        let bars = spec["values"].as_array().map_or(&[][..], Vec::as_slice);
        for (i, label) in spec["labels"].as_array().into_iter().flatten().enumerate() {
            if let Some(label) = label.as_str() {
                self.add_label(label);
                self.add_row_values(label, bars.get(i).and_then(Value::as_f64));
            }
        }
    }

    /// A computed value is grounded only when what it was computed from is: every number its expression
    /// spells is grounded in the data or is an observed table's row count (`… / 4`); a column reference
    /// is data by itself. The model's own numbers in, its own number out, is not evidence.
    fn add_computed(&mut self, result: &Value) {
        let Some(expression) = result["expression"].as_str() else {
            return;
        };
        let spelled = numbers::scan(&strip_references(expression));
        // A number the expression spells is data, a count the data states, or a factor that converts units
        // (`* 100` for a percentage, `/ 60` for minutes): the last states nothing about the data.
        let from_data = spelled.iter().all(|m| {
            self.values.iter().any(|v| m.stands_for(*v))
                || (m.decimals == 0 && self.row_counts.iter().any(|n| *n as f64 == m.value))
                || forge_language::units::is_conversion_factor(m.value)
        });
        if from_data {
            self.add_number(&result["value"]);
        }
    }

    fn add_row_values(&mut self, label: &str, values: impl IntoIterator<Item = f64>) {
        let index = match self.row_values.iter().position(|(l, _)| l == label) {
            Some(i) => i,
            None => {
                self.row_values.push((label.to_owned(), Vec::new()));
                self.row_values.len() - 1
            }
        };
        self.row_values[index]
            .1
            .extend(values.into_iter().filter(|x| x.is_finite()));
    }

    fn add_number(&mut self, value: &Value) {
        if let Some(x) = value.as_f64() {
            self.add_value(x);
        }
    }

    fn add_value(&mut self, x: f64) {
        if x.is_finite() {
            self.values.push(x);
        }
    }

    fn add_label(&mut self, label: &str) {
        if !label.trim().is_empty() && !self.labels.iter().any(|l| l == label) {
            self.labels.push(label.to_owned());
        }
    }

    /// Whether `mention` states a grounded value (printed rounding allowed, sign exact) or the row count
    /// of an observed table ("5 sites"). A small number is not grounded for being small: "3" is grounded
    /// only where the data holds a 3 (or a table has 3 rows).
    pub fn grounds(&self, mention: &numbers::NumberMention) -> bool {
        let row_count = mention.decimals == 0
            && !mention.percent
            && self.row_counts.iter().any(|n| *n as f64 == mention.value);
        row_count || self.values.iter().any(|v| mention.stands_for(*v))
    }
}

impl Grounding {
    /// The grammar-facing view of `records` plus the task's own texts: every grounded value in its
    /// canonical form, calculator-like results (a top-level `value`) also in their roundings, digits
    /// inside row labels, and (apart) the counts `0..=max_rows`.
    pub fn build<'a>(
        records: impl IntoIterator<Item = &'a ObservationRecord> + Clone,
        texts: &[&str],
    ) -> Grounding {
        let values = GroundedValues::collect(records.clone(), texts);
        let mut numbers_out: Vec<String> = Vec::new();
        let mut push = |text: String| {
            if !numbers_out.contains(&text) {
                numbers_out.push(text);
            }
        };
        for value in &values.values {
            push(numbers::canonical(*value));
        }
        let mut stated: Vec<String> = Vec::new();
        for value in &values.stated {
            push_unique(&mut stated, numbers::canonical(*value));
        }
        // Digits inside row labels ("Plant 7") may be written wherever the label may.
        for label in &values.labels {
            for mention in numbers::scan(label) {
                push_unique(&mut stated, mention.printed.clone());
                push(mention.printed);
            }
        }
        // One pass over the successful observations: citable ids, computed values, columns.
        let mut evidence_ids = Vec::new();
        let mut computed: Vec<String> = Vec::new();
        let mut computed_exact: Vec<String> = Vec::new();
        let mut series: Vec<Series> = Vec::new();
        for record in records.clone().into_iter().filter(|r| r.ok) {
            evidence_ids.push(record.id.clone());
            let result = record.result.as_ref().unwrap_or(&Value::Null);
            if let Some(value) = result["value"]
                .as_f64()
                .filter(|v| values.values.contains(v))
            {
                push_unique(&mut computed_exact, numbers::canonical(value));
                for form in numbers::printed_forms(value) {
                    push_unique(&mut computed, form.clone());
                    push(form);
                }
            }
            for s in series_in(result) {
                push_unique(&mut series, s);
            }
        }
        let counts = values.row_counts.iter().map(|c| c.to_string()).collect();
        let mut units: Vec<String> = Vec::new();
        let mut cited: Vec<&str> = texts.to_vec();
        for record in records.clone().into_iter().filter(|r| r.ok) {
            let result = record.result.as_ref().unwrap_or(&Value::Null);
            for citation in result["citations"].as_array().into_iter().flatten() {
                cited.extend(citation["text"].as_str());
            }
        }
        for text in cited {
            for unit in numbers::units_written_with(text) {
                push_unique(&mut units, unit);
            }
        }
        for s in &series {
            if let Some(unit) = &s.unit {
                push_unique(&mut units, unit.clone());
            }
        }
        Grounding {
            numbers: numbers_out,
            stated,
            counts,
            labels: values.labels,
            evidence_ids,
            series,
            computed,
            computed_exact,
            units,
        }
    }
}

/// `mean([Wait]) <= 30` → `mean() <= 30`: column references name data, they spell no number.
pub fn strip_references(expression: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in expression.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Appends `item` unless an equal one is there (the lists are short and keep first-seen order).
fn push_unique<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// The numeric columns of a result's tables, values in row order (rows lacking the column skipped).
fn series_in(result: &Value) -> Vec<Series> {
    let mut out = Vec::new();
    for table in forge_tools::knowledge::tables_in(result) {
        for column in &table.columns {
            let (labels, values): (Vec<String>, Vec<String>) = table
                .rows
                .iter()
                .filter_map(|row| {
                    let value = row.value(&column.name)?;
                    Some((row.label.clone(), numbers::canonical(value)))
                })
                .unzip();
            if !values.is_empty() {
                out.push(Series {
                    name: column.name.clone(),
                    labels,
                    values,
                    rows: table.label_column.clone(),
                    unit: column.unit.clone().filter(|u| !u.trim().is_empty()),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn record(id: &str, ok: bool, result: Value) -> ObservationRecord {
        ObservationRecord::for_test(id, "t", ok, result)
    }

    #[test]
    fn collects_by_shape() {
        let knowledge = record(
            "obs-a-1",
            true,
            json!({
                "citations": [{"text": "The rule: at least 78 on average.", "heading": "Rule"}],
                "data": {
                    "tables": [{"rows": [{"label": "North", "values": {"Uptime": 99.2}},
                                          {"label": "South", "values": {"Uptime": 97.5}}],
                                "stats": {"Uptime": {"lowest": {"label": "South", "value": 97.5}}}}],
                    "facts": [{"key": "Minimum", "value": 98}]
                }
            }),
        );
        let calc = record(
            "obs-b-2",
            true,
            json!({"expression": "mean(99.2, 97.5)", "value": 98.35}),
        );
        let failed = record("obs-c-3", false, json!({"value": 12345}));
        let g = Grounding::build([&knowledge, &calc, &failed], &["Task for 2024"]);
        for n in ["99.2", "97.5", "98", "78", "98.35", "98.3", "2024"] {
            assert!(
                g.numbers.contains(&n.to_string()),
                "{n} missing from {:?}",
                g.numbers
            );
        }
        assert_eq!(
            g.counts,
            ["2"],
            "the table's row count, not every small number"
        );
        assert!(!g.numbers.contains(&"12345".to_string()));
        assert_eq!(g.labels, ["North", "South"]);
        assert_eq!(g.evidence_ids, ["obs-a-1", "obs-b-2"]);
    }

    #[test]
    fn computed_values_are_the_results_of_tools_with_their_roundings() {
        let data = record(
            "obs-a-0",
            true,
            json!({"data": {"facts": [{"key": "a", "value": 1}, {"key": "b", "value": 2}, {"key": "c", "value": 3.5}]}}),
        );
        let calc = record(
            "obs-b-1",
            true,
            json!({"expression": "mean(1, 2, 3.5)", "value": 250.0 / 3.0}),
        );
        let g = Grounding::build([&data, &calc], &[]);
        assert!(g.computed.contains(&"83.3".to_string()), "{:?}", g.computed);
        assert_eq!(
            g.computed_exact,
            vec![numbers::canonical(250.0 / 3.0)],
            "a chart's line is the value itself"
        );
        assert!(!g.computed.contains(&"3.5".to_string()));
        // The same call over numbers no observation of the data holds grounds nothing.
        let alone = Grounding::build([&calc], &[]);
        assert!(
            alone.computed.is_empty() && !alone.numbers.contains(&"83.3".to_string()),
            "{:?}",
            alone.numbers
        );
    }

    #[test]
    fn a_stated_number_is_one_the_data_or_the_task_writes_never_only_a_result() {
        let data = record(
            "obs-a-0",
            true,
            json!({
                "citations": [{"text": "The average must not exceed 12 minutes."}],
                "data": {"tables": [{"rows": [{"label": "Depot 4", "values": {"Wait": 11.5}},
                                               {"label": "Quay", "values": {"Wait": 13.25}}]}]}
            }),
        );
        let mean = record(
            "obs-b-1",
            true,
            json!({"expression": "mean([Wait])", "value": 12.375}),
        );
        let g = Grounding::build([&data, &mean], &["Answer by the 30th."]);
        for n in ["12", "11.5", "13.25", "4", "30"] {
            assert!(g.stated.contains(&n.to_string()), "{n}: {:?}", g.stated);
        }
        // The mean and its roundings may be stated in an answer, never written as a limit.
        for n in ["12.375", "12.38", "12.4"] {
            assert!(g.numbers.contains(&n.to_string()), "{n}: {:?}", g.numbers);
            assert!(!g.stated.contains(&n.to_string()), "{n}: {:?}", g.stated);
        }
        // A result the data also states stays stated: a mean exactly at a limit is the boundary case.
        let level = record(
            "obs-a-0",
            true,
            json!({
                "citations": [{"text": "The average must not exceed 12 minutes."}],
                "data": {"tables": [{"rows": [{"label": "Dock", "values": {"Wait": 11.5}},
                                               {"label": "Quay", "values": {"Wait": 12.5}}]}]}
            }),
        );
        let at_limit = record(
            "obs-b-1",
            true,
            json!({"expression": "mean([Wait])", "value": 12.0}),
        );
        let g = Grounding::build([&level, &at_limit], &[]);
        assert!(g.stated.contains(&"12".to_string()), "{:?}", g.stated);
    }

    #[test]
    fn a_factor_that_converts_units_is_not_a_number_the_data_must_hold() {
        let table = record(
            "obs-a-0",
            true,
            json!({"data": {"tables": [{"rows": [{"label": "A", "values": {"Claims": 240, "Units": 20000}},
                                                  {"label": "B", "values": {"Claims": 60, "Units": 2000}}]}]}}),
        );
        // A percentage of two totals, and minutes from seconds: 100 and 60 convert units.
        let percent = record(
            "obs-b-1",
            true,
            json!({"expression": "sum([Claims]) / sum([Units]) * 100", "value": 300.0 / 220.0}),
        );
        let minutes = record(
            "obs-b-2",
            true,
            json!({"expression": "sum([Claims]) / 60", "value": 5.0}),
        );
        // 37 converts nothing and no observation holds it: what it computes is not grounded.
        let made_up = record(
            "obs-b-3",
            true,
            json!({"expression": "sum([Claims]) / 37", "value": 300.0 / 37.0}),
        );
        let values = GroundedValues::collect([&table, &percent, &minutes, &made_up], &[]);
        assert!(
            values.values.contains(&(300.0 / 220.0)),
            "{:?}",
            values.values
        );
        assert!(values.values.contains(&5.0), "{:?}", values.values);
        assert!(
            !values.values.contains(&(300.0 / 37.0)),
            "{:?}",
            values.values
        );
        assert!(forge_language::units::is_conversion_factor(100.0));
        assert!(forge_language::units::is_conversion_factor(1000.0));
        assert!(!forge_language::units::is_conversion_factor(1.0));
        assert!(!forge_language::units::is_conversion_factor(37.0));
    }

    #[test]
    fn grounds_roundings_and_counts() {
        let table = record(
            "obs-a-2",
            true,
            json!({"data": {"tables": [{"rows": [{"label": "A", "values": {"x": 80}}, {"label": "B", "values": {"x": 85}}, {"label": "C", "values": {"x": 85}}]}]}}),
        );
        let calc = record(
            "obs-b-1",
            true,
            json!({"expression": "mean(80, 85, 85)", "value": 250.0 / 3.0}),
        );
        let values = GroundedValues::collect([&table, &calc], &[]);
        let ok = |text: &str| values.grounds(&numbers::scan(text)[0]);
        assert!(
            ok("83.3") && ok("83.33") && ok("3"),
            "3 = the table's row count"
        );
        // A whole number is not a rounding of 83.333…: "83" claims exactly 83. A small number is not
        // grounded for being small, and a sign is never dropped.
        assert!(
            !ok("83.4")
                && !ok("83")
                && !ok("4")
                && !ok("2.5")
                && !ok("0")
                && !ok("1")
                && !ok("-80")
        );
    }
}
