//! Rules a knowledge file states as `key: number` facts (`average_gte: 78`, `Maximum wait at any clinic: 40`)
//! or as an English sentence ("eligible only when the average basket is at least $42 and no store falls
//! below $35"), read well enough to check a verdict when a task declares no rule check of its own.
//!
//! This is the claims gate's fallback, not a rule engine: a key or clause is understood only when it
//! names a comparison (`gte`/`lte`/`minimum`/`at most`/`below`/`最低`/`不超过`…) followed by its number and,
//! optionally, an aggregate (average, total; otherwise every row — "no crew may average more than 3.2"
//! is every row at most 3.2). A clause with no quantity word (average, total, every, any, no…) is not a
//! rule ("warmers run for at least 45 minutes"). Facts win over sentences when both state rules.
//! Anything it does not understand makes it say nothing — a verdict is then left unchecked rather than
//! checked against a guess. Nothing here names a task or a domain.

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

/// The rules among a knowledge result's `data.facts`; when the facts state none, the rules its
/// returned passages state as sentences. Repeats (same aggregate, comparison, threshold) are dropped.
pub fn rules_in(result: &Value) -> Vec<FactRule> {
    let facts: Vec<FactRule> = result["data"]["facts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|fact| understand(fact["key"].as_str()?, fact["value"].as_f64()?))
        .collect();
    let rules = if facts.is_empty() {
        result["citations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str())
            .flat_map(sentence_rules)
            .collect()
    } else {
        facts
    };
    let mut unique: Vec<FactRule> = Vec::new();
    for rule in rules {
        let same = |r: &FactRule| r.aggregate == rule.aggregate && r.comparison == rule.comparison && r.threshold == rule.threshold;
        if !unique.iter().any(same) {
            unique.push(rule);
        }
    }
    unique
}

/// Comparison phrases, longest first at any one position; a phrase that already holds its negation
/// ("no more than") is listed whole so that its "no" is not read as negating the clause.
const PHRASES: &[(&str, Comparison)] = &[
    ("no more than", Comparison::AtMost),
    ("not more than", Comparison::AtMost),
    ("no higher than", Comparison::AtMost),
    ("not higher than", Comparison::AtMost),
    ("no greater than", Comparison::AtMost),
    ("not to exceed", Comparison::AtMost),
    ("not exceed", Comparison::AtMost),
    ("at most", Comparison::AtMost),
    ("a maximum of", Comparison::AtMost),
    ("no less than", Comparison::AtLeast),
    ("not less than", Comparison::AtLeast),
    ("no lower than", Comparison::AtLeast),
    ("not lower than", Comparison::AtLeast),
    ("no fewer than", Comparison::AtLeast),
    ("not below", Comparison::AtLeast),
    ("at least", Comparison::AtLeast),
    ("a minimum of", Comparison::AtLeast),
    ("more than", Comparison::Above),
    ("greater than", Comparison::Above),
    ("higher than", Comparison::Above),
    ("above", Comparison::Above),
    ("exceed", Comparison::Above),
    ("exceeds", Comparison::Above),
    ("less than", Comparison::Below),
    ("fewer than", Comparison::Below),
    ("lower than", Comparison::Below),
    ("below", Comparison::Below),
];

const NEGATIONS: &[&str] = &["no", "not", "none", "never", "nor", "cannot"];
/// Words that make a clause about a quantity over rows rather than about one thing.
const QUANTITY_WORDS: &[&str] = &[
    "average", "mean", "avg", "total", "sum", "combined", "every", "each", "any", "all", "no", "none",
];

impl Comparison {
    /// "not at least" is "below": the comparison a negated clause states.
    fn negated(self) -> Comparison {
        match self {
            Comparison::AtLeast => Comparison::Below,
            Comparison::Above => Comparison::AtMost,
            Comparison::AtMost => Comparison::Above,
            Comparison::Below => Comparison::AtLeast,
        }
    }
}

/// A word as a threshold: `$42`, `2.6`, `1,250`, `35%`, `60.` → the number.
fn threshold_of(word: &str) -> Option<f64> {
    let trimmed = word.trim_start_matches(['$', '£', '€', '¥']).trim_end_matches(['%', ',', '.', ';', ':', ')']);
    if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    trimmed.replace(',', "").parse::<f64>().ok().filter(|v| v.is_finite())
}

/// One clause as a rule: its first comparison phrase with a number right after it (`at least $42`,
/// `no more than 2.6 seconds`). Negations before the phrase flip it; "no <row>"
/// makes it a rule on every row.
fn clause_rule(clause: &str) -> Option<FactRule> {
    let lower = clause.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let bare = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_owned();
    let bare_words: Vec<String> = words.iter().map(|w| bare(w)).collect();
    if !bare_words.iter().any(|w| QUANTITY_WORDS.contains(&w.as_str())) {
        return None;
    }
    for start in 0..words.len() {
        let found = PHRASES.iter().find(|(phrase, _)| {
            let parts: Vec<&str> = phrase.split(' ').collect();
            start + parts.len() <= words.len() && parts.iter().zip(&bare_words[start..]).all(|(p, w)| p == w)
        });
        let Some((phrase, comparison)) = found else { continue };
        let after = start + phrase.split(' ').count();
        let threshold = words.get(after).and_then(|w| threshold_of(w))?;
        let before = &bare_words[..start];
        let negated = before.iter().filter(|w| NEGATIONS.contains(&w.as_str())).count() % 2 == 1;
        let comparison = if negated { comparison.negated() } else { *comparison };
        let universal_negative = before.iter().any(|w| w == "no" || w == "none");
        let has = |list: &[&str]| before.iter().any(|w| list.contains(&w.as_str()));
        let aggregate = if universal_negative {
            Aggregate::EachRow
        } else if has(&["average", "mean", "avg"]) {
            Aggregate::Mean
        } else if has(&["total", "sum", "combined"]) {
            Aggregate::Sum
        } else {
            Aggregate::EachRow
        };
        return Some(FactRule { key: clause.trim().to_owned(), aggregate, comparison, threshold });
    }
    None
}

/// CJK comparison phrases, longest first (`不超过` before `超过`).
const CJK_PHRASES: &[(&str, Comparison)] = &[
    ("不超过", Comparison::AtMost),
    ("不高于", Comparison::AtMost),
    ("不多于", Comparison::AtMost),
    ("至多", Comparison::AtMost),
    ("不低于", Comparison::AtLeast),
    ("不少于", Comparison::AtLeast),
    ("至少", Comparison::AtLeast),
    ("超过", Comparison::Above),
    ("高于", Comparison::Above),
    ("多于", Comparison::Above),
    ("低于", Comparison::Below),
    ("少于", Comparison::Below),
];

/// One Chinese clause as a rule ("各门店的平均退货率不超过3.5%", "没有任何一家门店的退货率超过5%"):
/// the same reading as [`clause_rule`], by substring since the text has no spaces.
fn cjk_clause_rule(clause: &str) -> Option<FactRule> {
    if !["平均", "总", "每", "各", "任何", "所有", "没有"].iter().any(|w| clause.contains(w)) {
        return None;
    }
    let (at, phrase, comparison) = clause
        .char_indices()
        .find_map(|(i, _)| CJK_PHRASES.iter().find(|(p, _)| clause[i..].starts_with(p)).map(|(p, c)| (i, *p, *c)))?;
    let rest = clause[at + phrase.len()..].trim_start();
    let number: String = rest.chars().take_while(|c| c.is_ascii_digit() || matches!(c, '.' | ',')).collect();
    let threshold = threshold_of(number.trim_end_matches(['.', ',']))?;
    let before = &clause[..at];
    let negated = ["没有", "不得", "不能", "不可"].iter().any(|n| before.contains(n));
    let comparison = if negated { comparison.negated() } else { comparison };
    let aggregate = if negated {
        Aggregate::EachRow
    } else if before.contains("平均") {
        Aggregate::Mean
    } else if before.contains('总') {
        Aggregate::Sum
    } else {
        Aggregate::EachRow
    };
    Some(FactRule { key: clause.trim().to_owned(), aggregate, comparison, threshold })
}

/// The rules a passage states in English sentences, clause by clause (clauses split at `, ` `; ` and
/// " and "): "the average … to be no more than 2.6 seconds, and no crew may average more than 3.2
/// seconds" gives mean ≤ 2.6 and every row ≤ 3.2.
pub fn sentence_rules(text: &str) -> Vec<FactRule> {
    // Sentences end at `.`/`!`/`?` followed by white space or the end (a decimal point is not followed
    // by a space), and at line breaks of lists and tables.
    let mut rules = Vec::new();
    let mut sentence = String::new();
    let mut chars = text.chars().peekable();
    let flush = |sentence: &mut String, rules: &mut Vec<FactRule>| {
        if !sentence.is_ascii() && sentence.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)) {
            for clause in sentence.split(['，', '、', '；', '且']) {
                rules.extend(cjk_clause_rule(clause));
            }
            sentence.clear();
            return;
        }
        // A comma inside a number (`1,250`) is not followed by a space.
        for part in sentence.split("; ").flat_map(|p| p.split(", ")) {
            for clause in part.split(" and ") {
                rules.extend(clause_rule(clause));
            }
        }
        sentence.clear();
    };
    while let Some(c) = chars.next() {
        let ends = matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace()) || matches!(c, '。' | '！' | '？');
        if ends || c == '\n' && chars.peek().is_none_or(|n| matches!(n, '\n' | '-' | '*' | '|' | '#')) {
            flush(&mut sentence, &mut rules);
        } else {
            sentence.push(if c == '\n' { ' ' } else { c });
        }
    }
    flush(&mut sentence, &mut rules);
    rules
}

/// The one numeric column the rules are about: the only one of the result's tables, or the one the
/// rule keys name; when they name none (`average_lte`, `every_team_lte`), the one `context` (the
/// task's own text) names most; `None` when that is not clear.
pub fn column_values(result: &Value, rules: &[FactRule], context: &str) -> Option<(String, Vec<(String, f64)>)> {
    let mut columns: Vec<(String, Vec<(String, f64)>)> = Vec::new();
    // The header of each column's row-label column (`Hotel`, `Month`), index for index.
    let mut row_kinds: Vec<String> = Vec::new();
    for table in result["data"]["tables"].as_array().into_iter().flatten() {
        let row_kind = table["label_column"].as_str().unwrap_or_default();
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
                row_kinds.push(row_kind.to_owned());
            }
        }
    }
    if columns.len() == 1 {
        return columns.pop();
    }
    // A column is named by a rule when its header's words (less units and aggregate words: "Avg
    // basket ($)" → basket) all occur in the rule's key, or the key holds the header whole (CJK). The
    // answer is how many words it names, so "Pit stop" (2) beats "Stops" (1) in "pit stop time".
    let names = |column: &str, key: &str| -> usize {
        let key_lower = key.to_lowercase();
        let key_words: Vec<String> = words(key).into_iter().map(|w| singular(&w)).collect();
        let header = column.split('(').next().unwrap_or(column);
        let header_words: Vec<String> = words(header)
            .into_iter()
            .filter(|w| !["avg", "average", "mean", "total", "sum"].contains(&w.as_str()))
            .map(|w| singular(&w))
            .collect();
        // CJK text has no spaces: a header word there is found inside the key.
        let found = |w: &String| key_words.contains(w) || (!w.is_ascii() && key_lower.contains(w.as_str()));
        if !header_words.is_empty() && header_words.iter().all(found) {
            header_words.len()
        } else if key_lower.contains(&column.to_lowercase()) {
            1
        } else {
            0
        }
    };
    if rules.is_empty() {
        return None;
    }
    // One column name in two tables ("Occupancy" by hotel and by month): the table whose rows the first
    // of `texts` naming exactly one of them talks about ("no hotel is below 65%").
    let by_rows_named = |at_top: Vec<usize>, texts: &[&str]| -> Vec<usize> {
        if at_top.len() < 2 {
            return at_top;
        }
        for text in texts {
            let named: Vec<usize> =
                at_top.iter().copied().filter(|&i| !row_kinds[i].is_empty() && names(&row_kinds[i], text) > 0).collect();
            if named.len() == 1 {
                return named;
            }
        }
        at_top
    };
    // Each rule's column is the one it names most specifically ("pit stop time" names "Pit stop" with
    // two words, "Stops" with one); a rule naming none ("no crew may average more than 3.2") goes with
    // the others. Rules that name different columns leave it unclear, and nothing is said.
    let mut chosen: Option<usize> = None;
    let mut named_any = false;
    for rule in rules {
        let scores: Vec<usize> = columns.iter().map(|(name, _)| names(name, &rule.key)).collect();
        let top = scores.iter().copied().max().unwrap_or(0);
        if top == 0 {
            continue;
        }
        named_any = true;
        let at_top = by_rows_named((0..columns.len()).filter(|&i| scores[i] == top).collect(), &[rule.key.as_str(), context]);
        if at_top.len() != 1 || chosen.is_some_and(|c| c != at_top[0]) {
            return None;
        }
        chosen = Some(at_top[0]);
    }
    if !named_any && !context.is_empty() {
        // No rule names a column: the task says which one it is about ("… the average answer time …"),
        // counted by how often it names it (a passing mention of another column loses).
        let context_words: Vec<String> = words(context).into_iter().map(|w| singular(&w)).collect();
        let scores: Vec<usize> = columns
            .iter()
            .map(|(name, _)| {
                if names(name, context) == 0 {
                    return 0;
                }
                let header = name.split('(').next().unwrap_or(name);
                words(header)
                    .into_iter()
                    .map(|w| {
                        let w = singular(&w);
                        if w.is_ascii() { context_words.iter().filter(|c| **c == w).count() } else { context.matches(w.as_str()).count() }
                    })
                    .sum()
            })
            .collect();
        let top = scores.iter().copied().max().unwrap_or(0);
        let at_top = by_rows_named((0..columns.len()).filter(|&i| scores[i] == top).collect(), &[context]);
        if top > 0 && at_top.len() == 1 {
            chosen = Some(at_top[0]);
        }
    }
    chosen.map(|i| columns.swap_remove(i))
}

/// "stores" → "store": enough plural folding for header words against rule words.
fn singular(word: &str) -> String {
    match word.strip_suffix('s') {
        Some(stem) if stem.len() > 2 && !stem.ends_with('s') => stem.to_owned(),
        _ => word.to_owned(),
    }
}

/// Applies every rule to the column; `None` without rules or without one clear column. `context` is
/// the task's text (see [`column_values`]).
pub fn verdict(result: &Value, context: &str) -> Option<RuleVerdict> {
    let rules = rules_in(result);
    if rules.is_empty() {
        return None;
    }
    let (column, rows) = column_values(result, &rules, context)?;
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
pub fn calculator_terms(result: &Value, context: &str) -> Vec<String> {
    let rules = rules_in(result);
    let Some((_, rows)) = column_values(result, &rules, context) else { return Vec::new() };
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
        let met = verdict(&result(&data, &[("average_gte", 78.0), ("every_batch_gte", 70.0)]), "").unwrap();
        assert!(met.holds, "{}", met.explanation);
        assert!(met.explanation.contains("lowest row A 72 >= 70 (holds)"), "{}", met.explanation);
        let unmet = verdict(&result(&data, &[("average_gte", 80.0), ("every_batch_gte", 70.0)]), "").unwrap();
        assert!(!unmet.holds);
        assert!(verdict(&result(&data, &[("Budget", 3.0)]), "").is_none());
        assert!(verdict(&result(&data, &[]), "").is_none());
    }

    #[test]
    fn understood_rules_become_calculator_comparisons_the_calculator_agrees_with() {
        let r = result(&[("A", 28.0), ("B", 35.0), ("C", 31.5)], &[("Maximum average wait", 30.0), ("Maximum wait at any clinic", 40.0)]);
        let terms = calculator_terms(&r, "");
        assert_eq!(terms, ["mean(28, 35, 31.5) <= 30", "max(28, 35, 31.5) <= 40"]);
        let joined = terms.join(" and ");
        let computed = crate::tools::calculator::evaluate(&joined).unwrap();
        assert_eq!(computed, crate::tools::calculator::CalcValue::Boolean(verdict(&r, "").unwrap().holds));
        assert!(calculator_terms(&result(&[("A", 1.0)], &[("Opening year", 1990.0)]), "").is_empty());
    }

    #[test]
    fn rules_people_write_as_sentences() {
        let read = |text: &str| -> Vec<(Aggregate, Comparison, f64)> {
            sentence_rules(text).into_iter().map(|r| (r.aggregate, r.comparison, r.threshold)).collect()
        };
        use Aggregate::*;
        use Comparison::*;
        assert_eq!(
            read("For the bonus the team needs the average stop time across all crews to be no more than 2.6 seconds, and no crew may average more than 3.2 seconds."),
            [(Mean, AtMost, 2.6), (EachRow, AtMost, 3.2)]
        );
        assert_eq!(
            read("The trust meets its target when the average score across its schools is at least 70 and no school scores below 60 in reading. Other targets are reviewed later."),
            [(Mean, AtLeast, 70.0), (EachRow, AtLeast, 60.0)]
        );
        assert_eq!(
            read("The region is eligible only when the average basket across its stores is at least $42 and no store falls below $35."),
            [(Mean, AtLeast, 42.0), (EachRow, AtLeast, 35.0)]
        );
        assert_eq!(read("The total output must exceed 1,250 units."), [(Sum, Above, 1250.0)]);
        assert_eq!(read("Every line must not exceed 4%."), [(EachRow, AtMost, 4.0)]);
        assert_eq!(read("- Each site: at least 90\n- Average: at most 12.5\n"), [(EachRow, AtLeast, 90.0), (Mean, AtMost, 12.5)]);
        assert_eq!(
            read("本季度目标只有在各门店的平均退货率不超过3.5%、且没有任何一家门店的退货率超过5%时才算达成。达成目标可获奖励。"),
            [(Mean, AtMost, 3.5), (EachRow, AtMost, 5.0)]
        );
        assert_eq!(read("平均满意度不低于85，且任何科室不得低于80。"), [(Mean, AtLeast, 85.0), (EachRow, AtLeast, 80.0)]);
        assert_eq!(read("六月十八日全场满三百元减五十元。"), []);
        // No quantity word, no number after the phrase, or no comparison: not a rule.
        assert_eq!(read("Tyre warmers run at 80 °C for at least 45 minutes before a stop."), []);
        assert_eq!(read("Every crew trains at least twice a week."), []);
        assert_eq!(read("The 2024 season had 9 rounds with 362 stops in all."), []);
    }

    #[test]
    fn facts_win_over_sentences_and_sentences_find_their_column() {
        let table = json!({"columns": [{"name": "Stops"}, {"name": "Pit stop (s)"}, {"name": "Fastest (s)"}],
            "rows": [{"label": "A", "values": {"Stops": 38, "Pit stop (s)": 2.4, "Fastest (s)": 2.1}},
                     {"label": "B", "values": {"Stops": 35, "Pit stop (s)": 3.0, "Fastest (s)": 2.4}}]});
        let rule = "The team needs the average pit stop time to be no more than 2.6 seconds, and no crew may average more than 3.2 seconds.";
        let result = json!({"data": {"tables": [table], "facts": []}, "citations": [{"text": rule}]});
        assert_eq!(calculator_terms(&result, ""), ["mean(2.4, 3) <= 2.6", "max(2.4, 3) <= 3.2"]);
        assert!(!verdict(&result, "").unwrap().holds, "mean 2.7 > 2.6");
        let with_facts = json!({"data": {"tables": [table], "facts": [{"key": "Maximum average pit stop", "value": 2.8}]},
            "citations": [{"text": rule}]});
        assert_eq!(calculator_terms(&with_facts, ""), ["mean(2.4, 3) <= 2.8"]);
        // Two columns named by different rules: not one clear column, so nothing is said.
        let two = json!({"data": {"tables": [table], "facts": []},
            "citations": [{"text": "The average pit stop must be at most 3, and every crew needs at least 30 stops."}]});
        assert!(calculator_terms(&two, "").is_empty());
    }

    #[test]
    fn keys_that_name_no_column_take_the_one_the_task_names() {
        let table = json!({"columns": [{"name": "Calls answered"}, {"name": "Answer time (s)"}],
            "rows": [{"label": "A", "values": {"Calls answered": 800, "Answer time (s)": 42}},
                     {"label": "B", "values": {"Calls answered": 500, "Answer time (s)": 50}}]});
        let result = json!({"data": {"tables": [table], "facts": [{"key": "average_lte", "value": 45}, {"key": "every_team_lte", "value": 60}]}});
        assert!(calculator_terms(&result, "").is_empty(), "two columns, no context: unclear");
        let task = "Does the centre keep its service rule? Compute the average answer time of the teams.";
        assert_eq!(calculator_terms(&result, task), ["mean(42, 50) <= 45", "max(42, 50) <= 60"]);
        assert!(!verdict(&result, task).unwrap().holds, "mean 46 > 45");
        // A task naming both columns equally says nothing.
        assert!(calculator_terms(&result, "calls answered and answer time").is_empty());
    }

    #[test]
    fn ambiguous_columns_say_nothing() {
        let two = json!({"data": {"tables": [{"columns": [{"name": "Score"}, {"name": "Visits"}],
            "rows": [{"label": "A", "values": {"Score": 1, "Visits": 2}}]}],
            "facts": [{"key": "average_gte", "value": 1}]}});
        assert!(verdict(&two, "").is_none());
        let named = json!({"data": {"tables": [{"columns": [{"name": "Score"}, {"name": "Visits"}],
            "rows": [{"label": "A", "values": {"Score": 5, "Visits": 2}}]}],
            "facts": [{"key": "Minimum average score", "value": 4}]}});
        assert!(verdict(&named, "").unwrap().holds);
    }

    #[test]
    fn one_column_name_in_two_tables_is_told_apart_by_the_rows_the_rule_names() {
        // "Occupancy" by hotel and by month; the rule talks about hotels.
        let by_hotel = json!({"label_column": "Hotel", "columns": [{"name": "Rooms"}, {"name": "Occupancy"}],
            "rows": [{"label": "Quayside", "values": {"Rooms": 120, "Occupancy": 82}},
                     {"label": "Parkside", "values": {"Rooms": 64, "Occupancy": 63.5}}]});
        let by_month = json!({"label_column": "Month", "columns": [{"name": "Occupancy"}],
            "rows": [{"label": "July", "values": {"Occupancy": 84.5}}, {"label": "August", "values": {"Occupancy": 88}}]});
        let rule = "The bonus is paid when the average occupancy across the group's hotels is at least 75% and no hotel is below 65%.";
        let result = json!({"data": {"tables": [by_hotel, by_month], "facts": []}, "citations": [{"text": rule}]});
        assert_eq!(calculator_terms(&result, ""), ["mean(82, 63.5) >= 75", "min(82, 63.5) >= 65"]);
        assert!(!verdict(&result, "").unwrap().holds, "Parkside 63.5 < 65");
        // Rows named nowhere: still two candidates, nothing is said.
        let vague = json!({"data": {"tables": [by_hotel, by_month], "facts": []},
            "citations": [{"text": "The bonus is paid when the average occupancy is at least 75%."}]});
        assert!(calculator_terms(&vague, "").is_empty());
    }
}
