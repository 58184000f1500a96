//! Unit vocabulary as data (`units.json`, per language): every unit name and symbol a writer may put
//! after a number or in a header (`s`, `minutes`, `%`, `‰`, `kg`, `°F`, `€`, `分钟`), with the unit it
//! names, its dimension and how it converts to that dimension's base unit, and the words that make a
//! rate (`per`, `/`, `每`).
//!
//! Matching is whole-text: symbols and short names exactly (`K` is kelvin, `k` is nothing), names of
//! four characters or more also case-insensitively (`Minutes`). Conversion itself is `crate::units`.
//! The file is parsed once; a malformed file is a build-time bug caught by the unit tests.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Deserialize;

/// The vocabulary file, one source of truth for unit names.
pub const UNITS_JSON: &str = include_str!("units.json");

/// Words per language code (`en`, `zh`).
type PerLanguage = BTreeMap<String, Vec<String>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UnitEntry {
    symbol: String,
    scale: f64,
    #[serde(default)]
    offset: f64,
    names: PerLanguage,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Vocabulary {
    /// Dimension name (`time`, `currency:EUR`) → its units.
    dimensions: BTreeMap<String, Vec<UnitEntry>>,
    per: PerLanguage,
    /// Count words that stand only before a rate's period (`百公里`: per hundred kilometres); elsewhere they
    /// are parts of words (`百货`), so they are no scale of their own.
    period_counts: BTreeMap<String, Vec<CountWord>>,
    /// Scale letters that mean a scale only glued after a currency symbol (`£m`, `$m`: millions; alone
    /// `m` is metres).
    after_currency_symbol: BTreeMap<String, Vec<CountWord>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CountWord {
    name: String,
    value: f64,
}

/// One unit the vocabulary names: `value × scale + offset` is the value in its dimension's base unit.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedUnit {
    /// The canonical symbol (`min`, `°F`, `€`).
    pub symbol: String,
    /// `time`, `ratio`, `mass`, `distance`, `temperature`, `currency:<code>`.
    pub dimension: String,
    pub scale: f64,
    pub offset: f64,
}

struct Words {
    /// (name as written, case-insensitive match allowed, unit).
    names: Vec<(String, bool, NamedUnit)>,
    per: Vec<String>,
    period_counts: Vec<(String, f64)>,
    after_currency_symbol: Vec<(String, f64)>,
}

static WORDS: LazyLock<Words> = LazyLock::new(|| {
    let vocabulary: Vocabulary = serde_json::from_str(UNITS_JSON)
        .expect("units/units.json is valid (checked by its unit tests)");
    let mut names = Vec::new();
    for (dimension, units) in &vocabulary.dimensions {
        for entry in units {
            let unit = NamedUnit {
                symbol: entry.symbol.clone(),
                dimension: dimension.clone(),
                scale: entry.scale,
                offset: entry.offset,
            };
            for name in entry.names.values().flatten() {
                let name = name.trim().to_owned();
                if !name.is_empty() {
                    let loose = name.chars().count() >= 4;
                    names.push((name, loose, unit.clone()));
                }
            }
        }
    }
    let per = vocabulary
        .per
        .values()
        .flatten()
        .map(|w| w.trim().to_owned())
        .collect();
    let counts = |lists: &BTreeMap<String, Vec<CountWord>>| {
        lists
            .values()
            .flatten()
            .map(|w| (w.name.trim().to_owned(), w.value))
            .collect()
    };
    Words {
        names,
        per,
        period_counts: counts(&vocabulary.period_counts),
        after_currency_symbol: counts(&vocabulary.after_currency_symbol),
    }
});

/// Every unit the vocabulary names, once each.
pub fn all_units() -> Vec<&'static NamedUnit> {
    let mut out: Vec<&'static NamedUnit> = Vec::new();
    for (_, _, unit) in &WORDS.names {
        if !out
            .iter()
            .any(|u| u.symbol == unit.symbol && u.dimension == unit.dimension)
        {
            out.push(unit);
        }
    }
    out
}

/// The unit `text` names as a whole (`minutes`, `°F`, `公斤`), or `None`.
pub fn named_unit(text: &str) -> Option<&'static NamedUnit> {
    let text = text.trim();
    let exact = WORDS.names.iter().find(|(name, _, _)| name == text);
    exact
        .or_else(|| {
            WORDS
                .names
                .iter()
                .find(|(name, loose, _)| *loose && name.eq_ignore_ascii_case(text))
        })
        .map(|(_, _, unit)| unit)
}

/// Count words that stand only before a rate's period (`百` in `百公里`), with their values.
pub fn period_counts() -> &'static [(String, f64)] {
    &WORDS.period_counts
}

/// Scale letters read as a scale only glued after a currency symbol (`m` in `£m`), with their values.
pub fn after_currency_symbol() -> &'static [(String, f64)] {
    &WORDS.after_currency_symbol
}

/// The words that join a quantity to the period of a rate (`per`, `/`, `a`, `每`), longest first.
pub fn per_words() -> Vec<&'static str> {
    let mut words: Vec<&str> = WORDS.per.iter().map(String::as_str).collect();
    words.sort_by_key(|w| std::cmp::Reverse(w.len()));
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vocabulary_file_parses_and_no_name_is_two_units() {
        let vocabulary: Vocabulary = serde_json::from_str(UNITS_JSON).unwrap();
        for dimension in [
            "time",
            "ratio",
            "mass",
            "distance",
            "volume",
            "temperature",
            "currency:USD",
        ] {
            assert!(vocabulary.dimensions.contains_key(dimension), "{dimension}");
        }
        for (i, (a, _, unit)) in WORDS.names.iter().enumerate() {
            assert!(
                WORDS.names[i + 1..]
                    .iter()
                    .all(|(b, _, other)| a != b || other == unit),
                "{a} names two units"
            );
            assert!(unit.scale > 0.0, "{a}");
        }
        assert!(per_words().contains(&"per"));
    }

    #[test]
    fn names_match_whole_and_short_symbols_exactly() {
        let symbol = |t: &str| named_unit(t).map(|u| u.symbol.as_str());
        assert_eq!(symbol("minutes"), Some("min"));
        assert_eq!(symbol("Minutes"), Some("min"));
        assert_eq!(symbol("s"), Some("s"));
        assert_eq!(symbol("K"), Some("K"));
        // Lower-case `k` is the thousands scale (`12.4k`), never kelvin.
        assert_eq!(symbol("k"), Some("k"));
        assert_eq!(symbol("℃"), Some("°C"));
        assert_eq!(symbol("公斤"), Some("kg"));
        assert_eq!(symbol("€"), Some("€"));
        assert_eq!(symbol("minutes per incident"), None);
        assert_eq!(symbol("widgets"), None);
    }
}
