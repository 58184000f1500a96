//! The knowledge observation's `data` typed: the tables and facts the knowledge tool writes, and the one reader every consumer reads them with.
//!
//! The knowledge tool builds an [`Observed`] and serialises it as its result's `data`
//! (`schemas/knowledge_result.schema.json`), so the writer and the readers share one shape and cannot drift.
//! Whoever reads a tool result back — the calculator's column references, the grounding, the claims gate,
//! the rules, the scorer — reads it here: [`read`] is strict (a malformed observation is an
//! [`ObservedError`]); [`tables_in`] and [`facts_in`] take any tool result and leave out what does not read
//! as a table or a fact, as the consumers always have (a calculator result has no tables). A field a
//! hand-built observation leaves out reads as empty (`{"rows": [...]}` is a table with no columns).

use std::fmt;
use std::marker::PhantomData;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::SummaryKind;

/// A knowledge result's `data`: its tables and its `key: number` facts, in rank order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Observed {
    #[serde(default)]
    pub tables: Vec<ObservedTable>,
    #[serde(default)]
    pub facts: Vec<ObservedFact>,
}

/// One observed table: its numeric columns, its data rows, the summary rows kept apart from them and
/// per-column statistics.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ObservedTable {
    /// The passage the table was read from.
    pub citation_id: String,
    pub heading: String,
    /// Header of the column that labels the rows (`Clinic`; empty for a bullet list).
    pub label_column: String,
    /// Numeric series in header order.
    pub columns: Vec<ObservedColumn>,
    pub rows: Vec<ObservedRow>,
    /// `Total`, `Average`, … rows: what the document states about its rows, never a data row.
    pub summary_rows: Vec<ObservedSummaryRow>,
    /// Per column with a value, in column order.
    #[serde(with = "ordered")]
    pub stats: Vec<(String, ObservedStats)>,
    /// Columns of numbers that could not be read exactly (written only when there are some).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unread_columns: Vec<UnreadColumn>,
    /// Whether the table was read turned (written only when it was).
    #[serde(skip_serializing_if = "is_false")]
    pub transposed: bool,
}

/// A numeric series: its name, unit, how many rows hold a value and which rows do not.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ObservedColumn {
    pub name: String,
    pub unit: Option<String>,
    pub count: usize,
    /// Labels of the rows without a value, in row order.
    pub missing: Vec<String>,
}

/// A data row: its label and its values by column name (a column with no value is absent).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ObservedRow {
    pub label: String,
    #[serde(with = "numbers")]
    pub values: Vec<(String, f64)>,
    /// Footnote markers on the row's numbers (written only when there are some).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<ObservedNote>,
    /// The columns the row has no value in (written only when there are some).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// The row's cells in the table's text columns other than its label (`Region`: `North`), by column
    /// name (written only when there are some): what a rule may name some rows by.
    #[serde(skip_serializing_if = "Vec::is_empty", with = "ordered")]
    pub texts: Vec<(String, String)>,
}

/// A footnote marker after one of a row's numbers, with the footnote's text when the passage has one.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ObservedNote {
    pub column: String,
    pub marker: String,
    pub text: Option<String>,
}

/// A row labelled as a whole (`Total`, `Average`, `合计`) with its values by column name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservedSummaryRow {
    #[serde(default)]
    pub label: String,
    pub kind: SummaryKind,
    #[serde(default, with = "numbers")]
    pub values: Vec<(String, f64)>,
}

/// Count, lowest and highest of one column (the first row wins a tie). The tool writes all three; a
/// hand-built observation may state only some.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ObservedStats {
    pub count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lowest: Option<LabelledValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub highest: Option<LabelledValue>,
}

impl ObservedStats {
    /// The lowest and the highest value, those stated.
    pub fn ends(&self) -> impl Iterator<Item = f64> + '_ {
        [&self.lowest, &self.highest]
            .into_iter()
            .flatten()
            .map(|end| end.value)
    }
}

/// A row label and one of its values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelledValue {
    #[serde(default)]
    pub label: String,
    #[serde(with = "number")]
    pub value: f64,
}

/// A column of numbers that is not a series, and why.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct UnreadColumn {
    pub name: String,
    pub reason: String,
}

/// A `key: number` line of a passage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservedFact {
    #[serde(default)]
    pub citation_id: String,
    #[serde(default)]
    pub key: String,
    #[serde(with = "number")]
    pub value: f64,
    #[serde(default)]
    pub unit: Option<String>,
}

impl ObservedTable {
    /// The column named `name`, if the table has one.
    pub fn column(&self, name: &str) -> Option<&ObservedColumn> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// Whether the table has a column named `name`.
    pub fn has_column(&self, name: &str) -> bool {
        self.column(name).is_some()
    }
}

impl ObservedRow {
    /// The row's cell in text column `name`; `None` when it has none.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.texts
            .iter()
            .find(|(column, _)| column == name)
            .map(|(_, t)| t.as_str())
    }

    /// The row's value in column `name`; `None` when it has none.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.values
            .iter()
            .find(|(column, _)| column == name)
            .map(|(_, v)| *v)
    }
}

/// Why an observation is not a knowledge result's data.
#[derive(Debug, thiserror::Error)]
pub enum ObservedError {
    #[error("the observation has no `data` object")]
    NoData,
    #[error("data.{field} is not a list")]
    NotAList { field: &'static str },
    #[error("data.tables[{index}] is not a table: {source}")]
    Table {
        index: usize,
        source: serde_json::Error,
    },
    #[error("data.facts[{index}] is not a fact: {source}")]
    Fact {
        index: usize,
        source: serde_json::Error,
    },
}

/// The tables and facts of a knowledge result, every one of them read; the first one that does not read
/// is the error. Absent `tables` or `facts` read as none.
pub fn read(result: &Value) -> Result<Observed, ObservedError> {
    let data = result
        .get("data")
        .and_then(Value::as_object)
        .ok_or(ObservedError::NoData)?;
    let tables = list(data, Field::Tables)?
        .iter()
        .enumerate()
        .map(|(index, t)| {
            ObservedTable::deserialize(t).map_err(|source| ObservedError::Table { index, source })
        })
        .collect::<Result<_, _>>()?;
    let facts = list(data, Field::Facts)?
        .iter()
        .enumerate()
        .map(|(index, f)| {
            ObservedFact::deserialize(f).map_err(|source| ObservedError::Fact { index, source })
        })
        .collect::<Result<_, _>>()?;
    Ok(Observed { tables, facts })
}

/// The tables of any tool result that read as tables, in order (none for a result without `data.tables`).
pub fn tables_in(result: &Value) -> Vec<ObservedTable> {
    readable(result, Field::Tables)
}

/// The facts of any tool result that read as facts, in order (none for a result without `data.facts`).
pub fn facts_in(result: &Value) -> Vec<ObservedFact> {
    readable(result, Field::Facts)
}

/// Whether a result's `data` object already holds tables (an old-shape result being restated).
pub fn holds_tables(data: &Map<String, Value>) -> bool {
    data.contains_key(Field::Tables.key())
}

/// Sets a result's `data.tables` (restating an old-shape result in the current one).
pub fn set_tables(data: &mut Map<String, Value>, tables: Value) {
    data.insert(Field::Tables.key().into(), tables);
}

/// The two lists of an observation's `data`.
#[derive(Clone, Copy)]
enum Field {
    Tables,
    Facts,
}

impl Field {
    fn key(self) -> &'static str {
        match self {
            Field::Tables => "tables",
            Field::Facts => "facts",
        }
    }
}

/// `data.<field>` as a list: empty when absent, an error when it is something else.
fn list(data: &Map<String, Value>, field: Field) -> Result<&[Value], ObservedError> {
    match data.get(field.key()) {
        None => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(ObservedError::NotAList { field: field.key() }),
    }
}

/// The elements of `data.<field>` that deserialise as `T`; the rest, and a `data` that is not an object or
/// a field that is not a list, are left out.
fn readable<T: for<'de> Deserialize<'de>>(result: &Value, field: Field) -> Vec<T> {
    let Some(data) = result.get("data").and_then(Value::as_object) else {
        return Vec::new();
    };
    list(data, field)
        .unwrap_or_default()
        .iter()
        .filter_map(|item| T::deserialize(item).ok())
        .collect()
}

fn is_false(b: &bool) -> bool {
    !b
}

/// One number written as the tools write numbers ([`crate::number_value`]: `12` for a whole value).
mod number {
    use super::*;

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        crate::number_value(*x).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        f64::deserialize(d)
    }
}

/// An object of numbers by name, in order, each written as [`number`] writes it.
mod numbers {
    use super::*;

    pub fn serialize<S: Serializer>(pairs: &[(String, f64)], s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(pairs.iter().map(|(k, v)| (k, crate::number_value(*v))))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, f64)>, D::Error> {
        super::ordered::deserialize(d)
    }
}

/// An object read as its `(key, value)` pairs in written order, and written back the same way.
mod ordered {
    use super::*;

    pub fn serialize<S: Serializer, V: Serialize>(
        pairs: &[(String, V)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>, V: Deserialize<'de>>(
        d: D,
    ) -> Result<Vec<(String, V)>, D::Error> {
        d.deserialize_map(Pairs(PhantomData))
    }

    struct Pairs<V>(PhantomData<V>);

    impl<'de, V: Deserialize<'de>> Visitor<'de> for Pairs<V> {
        type Value = Vec<(String, V)>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(pair) = map.next_entry::<String, V>()? {
                out.push(pair);
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_hand_built_table_reads_with_its_missing_fields_empty() {
        let result = json!({"data": {"tables": [{"label_column": "Clinic", "columns": [{"name": "Wait"}],
            "rows": [{"label": "North", "values": {"Wait": 12, "Staff": 4.5}}]}]}});
        let observed = read(&result).unwrap();
        let table = &observed.tables[0];
        assert_eq!(table.label_column, "Clinic");
        assert_eq!(table.columns[0].unit, None);
        assert_eq!(table.rows[0].value("Wait"), Some(12.0));
        assert_eq!(table.rows[0].value("Staff"), Some(4.5));
        assert_eq!(table.rows[0].value("Other"), None);
        assert!(observed.facts.is_empty());
        assert_eq!(tables_in(&result), observed.tables);
    }

    #[test]
    fn a_malformed_observation_is_a_typed_error_and_the_lenient_readers_leave_it_out() {
        let no_data = json!({"value": 3});
        assert!(matches!(read(&no_data), Err(ObservedError::NoData)));
        assert!(tables_in(&no_data).is_empty());

        let not_a_list = json!({"data": {"tables": {"rows": []}}});
        assert!(matches!(
            read(&not_a_list),
            Err(ObservedError::NotAList { field: "tables" })
        ));
        assert!(tables_in(&not_a_list).is_empty());

        let bad_table = json!({"data": {"tables": [
            {"rows": [{"label": "A", "values": {"x": 1}}]},
            {"rows": [{"label": "B", "values": {"x": "many"}}]}]}});
        let error = read(&bad_table).unwrap_err();
        assert!(matches!(error, ObservedError::Table { index: 1, .. }));
        assert!(
            error
                .to_string()
                .starts_with("data.tables[1] is not a table")
        );
        let tables = tables_in(&bad_table);
        assert_eq!(tables.len(), 1);
        assert_eq!(tables[0].rows[0].label, "A");

        let bad_fact = json!({"data": {"facts": [{"key": "k", "value": 1}, {"key": "no value"}]}});
        assert!(matches!(
            read(&bad_fact),
            Err(ObservedError::Fact { index: 1, .. })
        ));
        assert_eq!(facts_in(&bad_fact).len(), 1);
    }

    #[test]
    fn what_is_written_is_what_is_read_back_in_the_same_json() {
        let data = json!({
            "tables": [{
                "citation_id": "kb-a-x", "heading": "A > X", "label_column": "Site",
                "columns": [{"name": "Wait", "unit": "min", "count": 1, "missing": ["B"]}],
                "rows": [
                    {"label": "A", "values": {"Wait": 12.5},
                     "notes": [{"column": "Wait", "marker": "*", "text": null}]},
                    {"label": "B", "values": {}, "missing": ["Wait"], "texts": {"Zone": "East"}}],
                "summary_rows": [{"label": "Total", "kind": "sum", "values": {"Wait": 12}}],
                "stats": {"Wait": {"count": 1, "lowest": {"label": "A", "value": 12.5},
                                    "highest": {"label": "A", "value": 12.5}}},
                "unread_columns": [{"name": "Cost", "reason": "mixed"}],
                "transposed": true,
            }],
            "facts": [{"citation_id": "kb-a-x", "key": "Maximum wait", "value": 30, "unit": null}],
        });
        let observed = read(&json!({ "data": data })).unwrap();
        let written = serde_json::to_value(&observed).unwrap();
        assert_eq!(written.to_string(), data.to_string());
    }
}
