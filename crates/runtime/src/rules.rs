//! Rules a knowledge file states as `key: number` facts (`average_gte: 78`, `Maximum wait at any clinic: 40`),
//! read well enough to check a verdict when a task declares no rule check of its own.
//!
//! This is the claims gate's fallback, not a rule engine: a key is understood only when it names a
//! comparison (`gte`/`lte`/`minimum`/`at most`/`最低`/`不超过`…) and, optionally, an aggregate (average,
//! total; otherwise every row). Anything it does not understand makes it say nothing — a verdict is then
//! left unchecked rather than checked against a guess. Nothing here names a task or a domain.

use serde_json::Value;

/// What a rule aggregates before comparing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    Mean,
    Sum,
    /// Every row on its own (the lowest row for a lower limit, the highest for an upper one).
    EachRow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    AtLeast,
    Above,
    AtMost,
    Below,
}

impl Comparison {
    fn holds(self, value: f64, threshold: f64) -> bool {
        match self {
            Comparison::AtLeast => value >= threshold,
            Comparison::Above => value > threshold,
            Comparison::AtMost => value <= threshold,
            Comparison::Below => value < threshold,
        }
    }
    fn symbol(self) -> &'static str {
        match self {
            Comparison::AtLeast => ">=",
            Comparison::Above => ">",
            Comparison::AtMost => "<=",
            Comparison::Below => "<",
        }
    }
}

/// One understood fact.
#[derive(Debug, Clone, PartialEq)]
pub struct FactRule {
    pub key: String,
    pub aggregate: Aggregate,
    pub comparison: Comparison,
    pub threshold: f64,
}

/// The verdict the rules give on one table column, with a sentence saying why.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleVerdict {
    pub holds: bool,
    pub explanation: String,
}

fn words(key: &str) -> Vec<String> {
    key.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Reads one fact key as a rule, or `None` when it names no comparison.
pub fn understand(key: &str, threshold: f64) -> Option<FactRule> {
    let lower = key.to_lowercase();
    let w = words(key);
    let has = |list: &[&str]| w.iter().any(|x| list.contains(&x.as_str()));
    let phrase = |list: &[&str]| list.iter().any(|p| lower.contains(p));
    // An explicit operator suffix wins; otherwise "minimum"/"at least"… name the comparison.
    let comparison = if has(&["gte", "ge"]) {
        Comparison::AtLeast
    } else if has(&["gt"]) {
        Comparison::Above
    } else if has(&["lte", "le"]) {
        Comparison::AtMost
    } else if has(&["lt"]) {
        Comparison::Below
    } else if has(&["minimum", "min", "floor"]) || phrase(&["at least", "no less than", "not below", "最低", "不低于", "至少", "下限"]) {
        Comparison::AtLeast
    } else if has(&["maximum", "max", "cap", "ceiling", "limit"]) || phrase(&["at most", "no more than", "not above", "最高", "不超过", "至多", "上限"]) {
        Comparison::AtMost
    } else {
        return None;
    };
    let aggregate = if has(&["average", "mean", "avg"]) || lower.contains("平均") {
        Aggregate::Mean
    } else if has(&["total", "sum"]) || lower.contains('总') {
        Aggregate::Sum
    } else {
        Aggregate::EachRow
    };
    Some(FactRule { key: key.to_owned(), aggregate, comparison, threshold })
}

/// The rules among a knowledge result's `data.facts`.
pub fn rules_in(result: &Value) -> Vec<FactRule> {
    result["data"]["facts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|fact| understand(fact["key"].as_str()?, fact["value"].as_f64()?))
        .collect()
}

/// The one numeric column the rules are about: the only one of the result's tables, or the one whose
/// name appears in every rule key; `None` when that is not clear.
pub fn column_values(result: &Value, rules: &[FactRule]) -> Option<(String, Vec<(String, f64)>)> {
    let mut columns: Vec<(String, Vec<(String, f64)>)> = Vec::new();
    for table in result["data"]["tables"].as_array().into_iter().flatten() {
        for column in table["columns"].as_array().into_iter().flatten() {
            let Some(name) = column["name"].as_str() else { continue };
            let values: Vec<(String, f64)> = table["rows"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|row| Some((row["label"].as_str()?.to_owned(), row["values"][name].as_f64()?)))
                .collect();
            if !values.is_empty() {
                columns.push((name.to_owned(), values));
            }
        }
    }
    if columns.len() == 1 {
        return columns.pop();
    }
    let named: Vec<_> = columns
        .into_iter()
        .filter(|(name, _)| {
            let name = name.to_lowercase();
            !rules.is_empty() && rules.iter().all(|r| r.key.to_lowercase().contains(&name))
        })
        .collect();
    if named.len() == 1 { named.into_iter().next() } else { None }
}

/// Applies every rule to the column; `None` without rules or without one clear column.
pub fn verdict(result: &Value) -> Option<RuleVerdict> {
    let rules = rules_in(result);
    if rules.is_empty() {
        return None;
    }
    let (column, rows) = column_values(result, &rules)?;
    let values: Vec<f64> = rows.iter().map(|(_, v)| *v).collect();
    let mut parts = Vec::new();
    let mut holds = true;
    for rule in &rules {
        let (value, what) = match (rule.aggregate, rule.comparison) {
            (Aggregate::Mean, _) => (values.iter().sum::<f64>() / values.len() as f64, format!("average {column}")),
            (Aggregate::Sum, _) => (values.iter().sum::<f64>(), format!("total {column}")),
            (Aggregate::EachRow, Comparison::AtLeast | Comparison::Above) => {
                let (label, v) = rows.iter().min_by(|a, b| a.1.total_cmp(&b.1)).expect("non-empty");
                (*v, format!("lowest row {label}"))
            }
            (Aggregate::EachRow, Comparison::AtMost | Comparison::Below) => {
                let (label, v) = rows.iter().max_by(|a, b| a.1.total_cmp(&b.1)).expect("non-empty");
                (*v, format!("highest row {label}"))
            }
        };
        let ok = rule.comparison.holds(value, rule.threshold);
        holds &= ok;
        parts.push(format!(
            "{} {}: {what} {} {} {} ({})",
            rule.key,
            crate::numbers::canonical(rule.threshold),
            crate::numbers::canonical((value * 1e4).round() / 1e4),
            rule.comparison.symbol(),
            crate::numbers::canonical(rule.threshold),
            if ok { "holds" } else { "fails" }
        ));
    }
    Some(RuleVerdict { holds, explanation: parts.join("; ") })
}

/// The rules as calculator comparisons over their column, in the order the knowledge states them
/// (`mean(28, 35, 31.5) <= 30`, `max(28, 35, 31.5) <= 40`): what a rule-check expression may be made of
/// when the rules are understood. Empty when they are not (no rules, or no one clear column).
pub fn calculator_terms(result: &Value) -> Vec<String> {
    let rules = rules_in(result);
    let Some((_, rows)) = column_values(result, &rules) else { return Vec::new() };
    let values: Vec<String> = rows.iter().map(|(_, v)| crate::numbers::canonical(*v)).collect();
    let values = values.join(", ");
    rules
        .iter()
        .map(|rule| {
            let function = match (rule.aggregate, rule.comparison) {
                (Aggregate::Mean, _) => "mean",
                (Aggregate::Sum, _) => "sum",
                (Aggregate::EachRow, Comparison::AtLeast | Comparison::Above) => "min",
                (Aggregate::EachRow, Comparison::AtMost | Comparison::Below) => "max",
            };
            format!("{function}({values}) {} {}", rule.comparison.symbol(), crate::numbers::canonical(rule.threshold))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_people_write() {
        let r = |k: &str| understand(k, 1.0).map(|r| (r.aggregate, r.comparison));
        assert_eq!(r("average_gte"), Some((Aggregate::Mean, Comparison::AtLeast)));
        assert_eq!(r("every_batch_gte"), Some((Aggregate::EachRow, Comparison::AtLeast)));
        assert_eq!(r("average_lte"), Some((Aggregate::Mean, Comparison::AtMost)));
        assert_eq!(r("Minimum average uptime"), Some((Aggregate::Mean, Comparison::AtLeast)));
        assert_eq!(r("Maximum wait at any clinic"), Some((Aggregate::EachRow, Comparison::AtMost)));
        assert_eq!(r("Total output at least"), Some((Aggregate::Sum, Comparison::AtLeast)));
        assert_eq!(r("最低平均满意度"), Some((Aggregate::Mean, Comparison::AtLeast)));
        assert_eq!(r("单店退货率上限"), Some((Aggregate::EachRow, Comparison::AtMost)));
        assert_eq!(r("Results to parents"), None);
        assert_eq!(r("Budget"), None);
    }

    fn result(values: &[(&str, f64)], facts: &[(&str, f64)]) -> Value {
        json!({"data": {
            "tables": [{"columns": [{"name": "Score"}],
                        "rows": values.iter().map(|(l, v)| json!({"label": l, "values": {"Score": v}})).collect::<Vec<_>>()}],
            "facts": facts.iter().map(|(k, v)| json!({"key": k, "value": v})).collect::<Vec<_>>()
        }})
    }

    #[test]
    fn verdicts() {
        let data = [("A", 72.0), ("B", 78.0), ("C", 81.0), ("D", 85.0)];
        let met = verdict(&result(&data, &[("average_gte", 78.0), ("every_batch_gte", 70.0)])).unwrap();
        assert!(met.holds, "{}", met.explanation);
        assert!(met.explanation.contains("lowest row A 72 >= 70 (holds)"), "{}", met.explanation);
        let unmet = verdict(&result(&data, &[("average_gte", 80.0), ("every_batch_gte", 70.0)])).unwrap();
        assert!(!unmet.holds);
        assert!(verdict(&result(&data, &[("Budget", 3.0)])).is_none());
        assert!(verdict(&result(&data, &[])).is_none());
    }

    #[test]
    fn understood_rules_become_calculator_comparisons_the_calculator_agrees_with() {
        let r = result(&[("A", 28.0), ("B", 35.0), ("C", 31.5)], &[("Maximum average wait", 30.0), ("Maximum wait at any clinic", 40.0)]);
        let terms = calculator_terms(&r);
        assert_eq!(terms, ["mean(28, 35, 31.5) <= 30", "max(28, 35, 31.5) <= 40"]);
        let joined = terms.join(" and ");
        let computed = crate::tools::calculator::evaluate(&joined).unwrap();
        assert_eq!(computed, crate::tools::calculator::CalcValue::Boolean(verdict(&r).unwrap().holds));
        assert!(calculator_terms(&result(&[("A", 1.0)], &[("Opening year", 1990.0)])).is_empty());
    }

    #[test]
    fn ambiguous_columns_say_nothing() {
        let two = json!({"data": {"tables": [{"columns": [{"name": "Score"}, {"name": "Visits"}],
            "rows": [{"label": "A", "values": {"Score": 1, "Visits": 2}}]}],
            "facts": [{"key": "average_gte", "value": 1}]}});
        assert!(verdict(&two).is_none());
        let named = json!({"data": {"tables": [{"columns": [{"name": "Score"}, {"name": "Visits"}],
            "rows": [{"label": "A", "values": {"Score": 5, "Visits": 2}}]}],
            "facts": [{"key": "Minimum average score", "value": 4}]}});
        assert!(verdict(&named).unwrap().holds);
    }
}
