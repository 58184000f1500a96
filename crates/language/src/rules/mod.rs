//! Rules a knowledge file states as `key: number` facts (`average_gte: 78`, `Maximum wait at any clinic: 40`)
//! or as sentences ("eligible only when the average basket is at least $42 and no store falls below
//! $35"), read as typed terms to check a verdict apart from anything the model wrote.
//!
//! A key or clause is a rule when it names a comparison (`gte`/`lte`/`minimum`/`at most`/`below`/`最低`/
//! `不超过`…) or a range (`between 60 and 75`, `7.2–7.8`, `within ±0.3 of 7.5`) with its limit, and what it
//! measures: an aggregate (average, total), every row ("no crew may average more than 3.2"), a count of
//! rows ("no more than one depot is above 7%"), or a ratio of totals the knowledge defines ("the overall
//! rate is all completions divided by all starts"). A limit may be a share of a quantity the knowledge
//! states ("85% of the hall's capacity") — `clause` types each clause. A rule naming rows by a value of a
//! table's text column that only some rows hold ("every city-centre branch") is not typed: it is unread. A clause with no quantity word is not
//! placed ("warmers run for at least 45 minutes"). Fail closed: a sentence with any clause the reader
//! cannot type or place, or with a connective it does not type ("or", "unless"), gives no rule at all, and
//! a result holding a rule-shaped clause it cannot type gives none either — a verdict is then left
//! unchecked, the clause named, rather than checked against the part that was read. Facts win over
//! sentences when both state rules. Nothing here names a task or a domain.

pub mod clause;

pub use crate::lexicon::Comparison;
use crate::lexicon::{self, lexicon};

pub use crate::lexicon::Aggregate;

/// What a rule measures before comparing.
#[derive(Debug, Clone, PartialEq)]
pub enum Measure {
    /// An aggregate of the column (a rule states a mean or a total).
    Of(Aggregate),
    /// Every row on its own (the lowest row for a lower limit, the highest for an upper one).
    EachRow,
    /// How many rows pass `row limit` ("no more than one depot is above 7%": rows > 7, compared with 1).
    CountRows { row: Comparison, limit: f64 },
    /// The total of one column over the total of another, times `per` (`None`: 100 for a percentage
    /// limit, else 1), each column named by the knowledge's own definition.
    RatioOfTotals {
        numerator: String,
        denominator: String,
        per: Option<f64>,
    },
}

/// One understood fact.
#[derive(Debug, Clone, PartialEq)]
pub struct FactRule {
    pub key: String,
    pub measure: Measure,
    pub comparison: Comparison,
    pub threshold: f64,
    /// The limit's unit as written (`min`, `°C`, `%`, `$`), when the rule states one: the limit is
    /// converted to the column's unit before any comparison, or the rule is not applied ([`crate::units`]).
    pub unit: Option<String>,
}

/// The verdict the rules give on one table column, with a sentence saying why.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleVerdict {
    pub holds: bool,
    pub explanation: String,
}

/// What a result's knowledge says about rules: the clauses read with certainty, and, by name with the
/// reason, the clauses that hold a comparison with a number but could not be placed or typed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleReading {
    pub rules: Vec<FactRule>,
    /// `"clause" (reason)` for each clause left unread.
    pub uncertain: Vec<String>,
}

/// The lowercase alphanumeric words of a key or header (`Maximum wait (min)` → `maximum`, `wait`, `min`).
pub fn words(key: &str) -> Vec<String> {
    key.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `Maximum average wait (min)` → `Maximum average wait`: a bracketed suffix is a unit, never an operator.
fn without_brackets(key: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in key.chars() {
        match c {
            '(' | '[' | '（' => depth += 1,
            ')' | ']' | '）' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Reads one fact key as a rule, or `None` when it names no comparison.
pub fn understand(key: &str, threshold: f64) -> Option<FactRule> {
    let bare = without_brackets(key);
    let lex = lexicon();
    // `min_average`, `Min wait`: "min" is an operator only as the key's first word (elsewhere, minutes).
    let first_is_min = words(&bare).first().is_some_and(|w| w == "min");
    let hits = lexicon::scan(
        &bare.replace('_', " "),
        lex.key_comparisons.iter().map(|c| c.phrase.as_str()),
    );
    let comparison = match hits.first() {
        Some(hit) => {
            lex.key_comparisons
                .iter()
                .find(|c| c.phrase == hit.entry)?
                .op
        }
        None if first_is_min => Comparison::AtLeast,
        None => return None,
    };
    let named = lexicon::aggregates_in(&bare.replace('_', " "));
    let measure = if named.contains(&Aggregate::Mean) {
        Measure::Of(Aggregate::Mean)
    } else if named.contains(&Aggregate::Sum) {
        Measure::Of(Aggregate::Sum)
    } else {
        Measure::EachRow
    };
    Some(FactRule {
        key: key.to_owned(),
        measure,
        comparison,
        threshold,
        unit: bracketed_unit(key),
    })
}

/// `Maximum average turnaround (min)` → `min`: a bracketed suffix of a key that names a known unit.
fn bracketed_unit(key: &str) -> Option<String> {
    let inner = key.trim().strip_suffix([')', '）'])?;
    let start = inner.rfind(['(', '（'])?;
    let unit = inner[start..].trim_start_matches(['(', '（']).trim();
    crate::units::read(unit).map(|_| unit.to_owned())
}

/// What a knowledge result states, as the rule reader takes it: its `key: number` facts, the names of
/// its tables' columns (what a ratio definition may name) and its passages' texts. The result itself is
/// read above this crate (`forge_evidence::rules` through `forge_tools`' observed reader).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stated {
    pub facts: Vec<StatedFact>,
    pub columns: Vec<String>,
    pub texts: Vec<String>,
    /// The text columns of its tables besides the row labels.
    pub categories: Vec<Category>,
}

/// A table column of text that is not the row labels (`Region`, `Size band`, `片区`), with each data row's
/// cell in row order: what a rule can use to name some of the rows ("every North branch", "华东片区的门店").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Category {
    pub column: String,
    pub cells: Vec<String>,
}

impl Category {
    /// The first value of this column that `text` names and that only some of the rows hold, as
    /// `"North", which 3 of 7 rows hold in Region`; `None` when `text` names none (a value every row holds
    /// restricts nothing).
    fn some_rows_named_in(&self, text: &str) -> Option<String> {
        let mut values: Vec<&str> = self
            .cells
            .iter()
            .map(|c| c.trim())
            .filter(|c| !c.is_empty())
            .collect();
        values.sort_unstable();
        values.dedup();
        values.into_iter().find_map(|value| {
            let held = self.cells.iter().filter(|c| c.trim() == value).count();
            (held < self.cells.len() && !lexicon::find(text, value).is_empty()).then(|| {
                format!(
                    "\"{value}\", which {held} of {} rows hold in {}",
                    self.cells.len(),
                    self.column
                )
            })
        })
    }
}

/// The first category value `text` names that only some rows hold ([`Category::some_rows_named_in`]).
pub fn some_rows_named(text: &str, categories: &[Category]) -> Option<String> {
    categories.iter().find_map(|c| c.some_rows_named_in(text))
}

/// A `key: number` fact (`Maximum wait (min): 40`), with the unit its line wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct StatedFact {
    pub key: String,
    pub value: f64,
    pub unit: Option<String>,
}

/// The rules among a knowledge result's facts; when the facts state none, the rules its returned
/// passages state as sentences. Repeats (same aggregate, comparison, threshold) are dropped.
pub fn rules_in(stated: &Stated) -> Vec<FactRule> {
    reading(stated).rules
}

/// [`rules_in`] with the clauses that could not be read. Fails closed: a rule-shaped clause the reader
/// cannot type anywhere in the cited passages leaves every rule of the result unread.
pub fn reading(stated: &Stated) -> RuleReading {
    let facts: Vec<FactRule> = stated
        .facts
        .iter()
        .filter_map(|fact| {
            let mut rule = understand(&fact.key, fact.value)?;
            if let Some(unit) = &fact.unit {
                rule.unit = Some(unit.clone());
            }
            Some(rule)
        })
        .collect();
    let context = context_of(stated);
    let mut sentences = SentenceReading::default();
    sentences
        .untyped
        .extend(facts.iter().filter_map(|f| untyped_fact(&f.key)));
    sentences.untyped.extend(facts.iter().filter_map(|f| {
        some_rows_named(&f.key, &stated.categories)
            .map(|scope| format!("\"{}\" ({})", f.key, some_rows_reason(&scope)))
    }));
    for text in &stated.texts {
        let read = read_sentences_with(text, &context);
        sentences.rules.extend(read.rules.iter().cloned());
        sentences.untyped.extend(read.untyped);
        if read.rules.is_empty() {
            sentences.unplaced.extend(read.unplaced);
        } else {
            // A passage that states rules and a comparison the reader cannot place: that comparison may be
            // part of the rule (its subject in another sentence), so none of the passage's rules is read.
            sentences.untyped.extend(read.unplaced);
        }
    }
    let mut out = RuleReading::default();
    if !sentences.untyped.is_empty() {
        // A rule the reader could not type: enforcing the rest of what it read would enforce part of it.
        out.uncertain = sentences.untyped;
        out.uncertain.extend(sentences.unplaced);
        return out;
    }
    if facts.is_empty() {
        out.rules = sentences.rules;
        out.uncertain = sentences.unplaced;
    } else {
        out.rules = facts;
    }
    let mut unique: Vec<FactRule> = Vec::new();
    for rule in std::mem::take(&mut out.rules) {
        let same = |r: &FactRule| {
            r.measure == rule.measure
                && r.comparison == rule.comparison
                && r.threshold == rule.threshold
        };
        if !unique.iter().any(same) {
            unique.push(rule);
        }
    }
    out.rules = unique;
    if let Some(named) = limits_on_some_rows(&out.rules) {
        // Two limits every row must keep, one way, at two values: each holds for some rows only ("every large
        // herd at most 200, every small herd at most 250"), and which rows is not typed.
        out.uncertain.push(named);
        out.rules.clear();
    }
    out
}

/// Two rules on every row in the same direction with different limits, named; `None` when there are none.
fn limits_on_some_rows(rules: &[FactRule]) -> Option<String> {
    let each_row: Vec<&FactRule> = rules
        .iter()
        .filter(|r| r.measure == Measure::EachRow)
        .collect();
    each_row.iter().enumerate().find_map(|(i, a)| {
        each_row[i + 1..]
            .iter()
            .find(|b| {
                a.comparison.is_lower_limit() == b.comparison.is_lower_limit()
                    && a.threshold != b.threshold
            })
            .map(|b| {
                format!(
                    "\"{}\" and \"{}\" (two limits every row must keep, one way: each is for some rows, and which is not typed)",
                    a.key.trim(),
                    b.key.trim()
                )
            })
    })
}

/// The ratios of column totals a result's passages define ("the overall rate is all completions divided
/// by all starts"): what a slot naming that quantity claims.
pub fn definitions_in(stated: &Stated) -> Vec<clause::Definition> {
    context_of(stated).definitions
}

/// A fact key read as a rule that says more than one comparison can type: a number of its own ("Maximum
/// depots above 7%"), a second comparison, or a limit relative to something ("Minimum average attendance
/// (% of capacity)"): named, so the result's rules stay unread.
fn untyped_fact(key: &str) -> Option<String> {
    let lex = lexicon();
    let reason = if key.chars().any(|c| c.is_ascii_digit()) {
        "the key holds a number of its own"
    } else if lexicon::contains_any(key, &lex.rule_terms.relative_of) {
        "the key makes the limit relative to something"
    } else if second_comparison(key) {
        "the key holds a comparison beside its limit"
    } else {
        return None;
    };
    Some(format!("\"{key}\" ({reason})"))
}

/// Whether a fact key holds a sentence comparison other than the key comparison it is read by.
fn second_comparison(key: &str) -> bool {
    let lex = lexicon();
    let plain = key.replace('_', " ");
    let own = lexicon::scan(
        &plain,
        lex.key_comparisons.iter().map(|c| c.phrase.as_str()),
    );
    lexicon::scan(&plain, lex.comparisons.iter().map(|c| c.phrase.as_str()))
        .iter()
        .any(|h| !own.iter().any(|o| h.start < o.end && o.start < h.end))
}

/// What the whole result offers each clause: ratios it defines over its columns and quantities it states
/// once (in its passages, or as `key: number` facts that are not rules).
fn context_of(stated: &Stated) -> clause::Context {
    let mut context = clause::Context {
        columns: stated.columns.clone(),
        categories: stated.categories.clone(),
        ..clause::Context::default()
    };
    for text in &stated.texts {
        for sentence in sentences_of(text) {
            for part in clauses_of(&sentence) {
                if let Some(def) = clause::definition(&part, &sentence, &stated.columns) {
                    context.definitions.push(def);
                } else if let Some(stated) = clause::statement(&part) {
                    context.statements.push(stated);
                }
            }
        }
    }
    for fact in &stated.facts {
        if understand(&fact.key, fact.value).is_none() {
            context
                .statements
                .push((crate::lexicon::content_words(&fact.key), fact.value));
        }
    }
    context
}

/// The rules of a run of sentences, with the clauses left unread: `unplaced` (a comparison whose subject
/// names no quantity, maybe not a rule) and `untyped` (a rule-shaped clause the reader cannot type).
#[derive(Debug, Clone, Default, PartialEq)]
struct SentenceReading {
    rules: Vec<FactRule>,
    unplaced: Vec<String>,
    untyped: Vec<String>,
}

/// The rules a passage states in sentences (English or Chinese), clause by clause (clauses split at
/// `, ` `; ` " and " and their Chinese forms): "the average … to be no more than 2.6 seconds, and no crew
/// may average more than 3.2 seconds" gives mean ≤ 2.6 and every row ≤ 3.2.
pub fn sentence_rules(text: &str) -> Vec<FactRule> {
    read_sentences(text).rules
}

/// [`sentence_rules`] with the clauses it could not read, by name (no stated quantities to resolve a
/// relative limit against, no defined ratios: see [`reading`] for a whole knowledge result).
pub fn read_sentences(text: &str) -> RuleReading {
    let read = read_sentences_with(text, &clause::Context::default());
    let mut uncertain = read.untyped;
    uncertain.extend(read.unplaced);
    if !uncertain.is_empty() && read.rules.is_empty() {
        return RuleReading {
            rules: Vec::new(),
            uncertain,
        };
    }
    RuleReading {
        rules: read.rules,
        uncertain,
    }
}

fn read_sentences_with(text: &str, context: &clause::Context) -> SentenceReading {
    let mut out = SentenceReading::default();
    let sentences = sentences_of(text);
    // Only where one sentence holds every comparison: a second one may be the alternative the outcome after
    // "otherwise" belongs to ("A lower average is still accepted, provided that …; otherwise …").
    let comparing = sentences
        .iter()
        .filter(|s| !comparison_phrases(s).is_empty())
        .count();
    for sentence in sentences {
        let sentence = if comparing == 1 {
            without_alternative_outcome(&sentence, context)
        } else {
            sentence
        };
        let mut rules = Vec::new();
        let mut unread: Vec<String> = Vec::new();
        let mut untyped = false;
        for part in clauses_of(&sentence) {
            match clause::read(&part, context) {
                clause::ClauseRead::Rules(read) => rules.extend(read),
                clause::ClauseRead::Unplaced(u) => unread.push(named(&u)),
                clause::ClauseRead::Untyped(u) => {
                    untyped = true;
                    unread.push(named(&u));
                }
                clause::ClauseRead::Nothing => {}
            }
        }
        if !rules.is_empty()
            && let Some(word) = untyped_connective(&sentence)
        {
            out.untyped.push(format!(
                "\"{}\" (the connective \"{word}\" is not typed)",
                sentence.trim()
            ));
            continue;
        }
        // "除旗舰店以外，各门店…的平均值不低于9000元": the rows left out are named in a clause of their own, with no
        // comparison, so each clause reads whole; the sentence's rules would judge rows it leaves out
        // (held-out set 18).
        if !rules.is_empty()
            && let Some(word) =
                clause::rows_left_out(&clause::without_headers(&sentence, &context.columns))
        {
            out.untyped.push(format!(
                "\"{}\" (it leaves some rows out (\"{word}\"), which the reader does not type)",
                sentence.trim()
            ));
            continue;
        }
        // A rule over the rows a category value names ("every city-centre branch", "华东片区的门店每家"): the
        // reader types limits on all rows or on their aggregate, so checking it over every row would judge
        // rows the rule leaves out.
        if !rules.is_empty()
            && let Some(scope) = some_rows_named(&sentence, &context.categories)
        {
            out.untyped.push(format!(
                "\"{}\" ({})",
                sentence.trim(),
                some_rows_reason(&scope)
            ));
            continue;
        }
        // A quantity the sentence defines as a ratio ("… rate — total passes divided by total tests — is at
        // least 50%") or by a formula ("延误率 = 100% − 准点率") that no rule of it reads as a ratio of totals:
        // the rule would measure something else (a column of a like name), so the whole sentence is unread.
        if !rules.is_empty()
            && !rules
                .iter()
                .any(|r| matches!(r.measure, Measure::RatioOfTotals { .. }))
            && let Some(word) = ratio_word(&sentence).or_else(|| formula_sign(&sentence))
        {
            out.untyped.push(format!(
                "\"{}\" (it defines a quantity with \"{word}\", which the reader could not type)",
                sentence.trim()
            ));
            continue;
        }
        match (rules.is_empty(), unread.is_empty(), untyped) {
            (_, true, _) => out.rules.extend(rules),
            // One rule, part of it unread: the whole sentence is unread.
            (false, false, _) | (true, false, true) => out.untyped.extend(unread),
            (true, false, false) => out.unplaced.extend(unread),
        }
    }
    out
}

/// Why a rule naming some of the rows is unread, for the text a user reads.
fn some_rows_reason(scope: &str) -> String {
    format!("it names {scope}: a limit on some of the rows, which the reader does not type")
}

fn named(unread: &clause::Unread) -> String {
    format!("\"{}\" ({})", unread.clause, unread.reason)
}

/// A word that defines a ratio ("divided by") in `sentence`.
fn ratio_word(sentence: &str) -> Option<String> {
    lexicon::scan(
        sentence,
        lexicon().rule_terms.ratio_words.iter().map(String::as_str),
    )
    .into_iter()
    .next()
    .map(|hit| hit.entry.to_owned())
}

/// An equals sign in `sentence` (`延误率 = 100% − 准点率`): a quantity defined by a formula.
fn formula_sign(sentence: &str) -> Option<String> {
    sentence
        .chars()
        .find(|c| matches!(c, '=' | '＝'))
        .map(|c| c.to_string())
}

/// The comparison phrases of `text` ("at least", "不低于", "or more").
fn comparison_phrases(text: &str) -> Vec<lexicon::Hit<'_>> {
    lexicon::scan(
        text,
        lexicon().comparisons.iter().map(|c| c.phrase.as_str()),
    )
}

/// The first of `connectives` in `sentence` outside a comparison phrase ("or" in "or more" is none).
fn connective_outside_comparisons<'a>(
    sentence: &str,
    connectives: &'a [String],
) -> Option<lexicon::Hit<'a>> {
    let phrases = comparison_phrases(sentence);
    lexicon::scan(sentence, connectives.iter().map(String::as_str))
        .into_iter()
        .find(|c| !phrases.iter().any(|p| c.start < p.end && p.start < c.end))
}

/// A rule sentence cut before "otherwise" / "否则" when what follows states only an outcome (no clause of it
/// compares anything: "otherwise the grant lapses", "否则扣分，并由分管领导约谈"): the conditions are the
/// rule. Where the alternative holds a comparison ("otherwise it passes only if every line is at least 95") the
/// sentence is kept whole, and the connective leaves it unread; so it is where another sentence of the text
/// compares too (the caller's check).
fn without_alternative_outcome(sentence: &str, context: &clause::Context) -> String {
    let outcomes = &lexicon().rule_terms.alternative_outcomes;
    let Some(hit) = connective_outside_comparisons(sentence, outcomes) else {
        return sentence.to_owned();
    };
    let (head, tail) = (&sentence[..hit.start], &sentence[hit.end..]);
    let compares = !comparison_phrases(tail).is_empty()
        || clauses_of(tail)
            .iter()
            .any(|part| !matches!(clause::read(part, context), clause::ClauseRead::Nothing));
    if compares || head.trim().is_empty() {
        sentence.to_owned()
    } else {
        head.trim_end()
            .trim_end_matches([',', ';', '，', '；', '、'])
            .to_owned()
    }
}

/// A connective the reader does not type ("or", "unless") outside a comparison phrase ("or more").
fn untyped_connective(sentence: &str) -> Option<String> {
    connective_outside_comparisons(sentence, &lexicon().rule_terms.untyped_connectives)
        .map(|c| c.entry.to_owned())
}

/// A text's sentences (at `.` `!` `?` before a space, Chinese end marks, and line breaks before a list
/// item, table row or heading), each on one line.
fn sentences_of(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut sentence = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let ends = matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace())
            || matches!(c, '。' | '！' | '？');
        if ends
            || c == '\n'
                && chars
                    .peek()
                    .is_none_or(|n| matches!(n, '\n' | '-' | '*' | '|' | '#'))
        {
            out.push(std::mem::take(&mut sentence));
        } else {
            sentence.push(if c == '\n' { ' ' } else { c });
        }
    }
    out.push(sentence);
    out.retain(|s| !s.trim().is_empty());
    out
}

/// A sentence's clauses (split at `, ` `; ` " and " and their Chinese forms), a range's own "and"
/// ("between 60% and 75%") kept inside its clause.
fn clauses_of(sentence: &str) -> Vec<String> {
    let protected = protect_ranges(sentence);
    let normalised = protected.replace(" and ", "; ").replace(", ", "; ");
    normalised
        .split(['；', '，', '、', '且', ';'])
        .map(str::to_owned)
        .collect()
}

/// "between 60% and 75%" → "between 60% to 75%": the "and" of a range opener is the range's joiner.
fn protect_ranges(sentence: &str) -> String {
    let openers = &lexicon().rule_terms.range_openers;
    let mut out = sentence.to_owned();
    for hit in lexicon::scan(sentence, openers.iter().map(String::as_str)) {
        let rest = &sentence[hit.end..];
        if let Some(at) = rest.find(" and ") {
            let first = &rest[..at];
            let second = rest[at + 5..].trim_start_matches(|c: char| {
                c.is_whitespace() || matches!(c, '$' | '£' | '€' | '-' | '\u{2212}')
            });
            let short = first.trim().chars().count() <= 16;
            if short
                && first.chars().any(|c| c.is_ascii_digit())
                && second.starts_with(|c: char| c.is_ascii_digit())
            {
                let from = hit.end + at;
                out.replace_range(from..from + 5, " to ");
                return protect_ranges_rest(out, from + 4);
            }
        }
    }
    out
}

/// [`protect_ranges`] again on the text after byte `from` (a sentence may hold several ranges).
fn protect_ranges_rest(text: String, from: usize) -> String {
    let (head, tail) = text.split_at(from);
    format!("{head}{}", protect_ranges(tail))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(text: &str) -> Vec<(Measure, Comparison, f64)> {
        read_sentences(text)
            .rules
            .into_iter()
            .map(|r| (r.measure, r.comparison, r.threshold))
            .collect()
    }

    #[test]
    fn an_otherwise_that_states_only_an_outcome_leaves_the_conditions_as_the_rule() {
        let zh = "各街道按时办结率的平均值不低于95%、任何一个街道不低于90%的，本季度考核加分；否则扣分，并由分管领导约谈。";
        assert_eq!(
            limits(zh),
            [
                (Measure::Of(Aggregate::Mean), Comparison::AtLeast, 95.0),
                (Measure::EachRow, Comparison::AtLeast, 90.0)
            ]
        );
        let en = "The grant is renewed if the average attendance is at least 32; otherwise it lapses in March.";
        assert_eq!(
            limits(en),
            [(Measure::Of(Aggregate::Mean), Comparison::AtLeast, 32.0)]
        );
    }

    #[test]
    fn an_otherwise_with_a_comparison_after_it_or_beside_another_rule_sentence_stays_unread() {
        // The alternative compares again: which outcome the data gives is not the conditions alone.
        let again = "The grant is renewed if the average attendance is at least 32; otherwise a new bid must show an average of at least 40.";
        let read = read_sentences(again);
        assert!(read.rules.is_empty(), "{read:?}");
        assert!(
            read.uncertain[0].contains("\"otherwise\" is not typed"),
            "{read:?}"
        );
        // Another sentence compares too: the outcome after "otherwise" may belong to that one's alternative.
        let two = "A round is signed off when the average rating is at least 4.2. A lower average is still accepted, provided that every venue scored at least 3.7; otherwise the round goes to the panel.";
        let read = read_sentences(two);
        assert!(
            read.uncertain
                .iter()
                .any(|u| u.contains("\"otherwise\" is not typed")),
            "{read:?}"
        );
        assert!(
            !read.rules.iter().any(|r| r.measure == Measure::EachRow),
            "{read:?}"
        );
    }
}
