//! Units of measure: what a unit text means (`270 s`, `Wait, minutes`, `21 °C`, `40 per week`, `€`), and
//! converting a rule's limit into the unit of the column it limits — or refusing, by name, to compare
//! numbers whose units differ in kind or are not known.
//!
//! Two numbers are compared only when their units agree: the same text, or two known units of one
//! dimension (time, ratio, mass, distance, volume, temperature, one currency, a rate per period), converted
//! exactly. A side that states no unit is taken in the other side's unit (a bare `30` beside `Wait (min)`
//! is how people write it). Anything else is a [`UnitError`]: the caller leaves the comparison unread
//! rather than compare raw numbers. Names and symbols are data (`units/units.json`).

pub mod clock;
pub mod names;

use names::{self as vocabulary, NamedUnit};

/// A unit read from text: its canonical spelling and how its values convert to the dimension's base.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    /// Canonical spelling (`min`, `°F`, `kg/week`).
    pub symbol: String,
    /// `time`, `ratio`, `mass`, `distance`, `volume`, `temperature`, `currency:EUR`, or `<dimension>/time` for a rate
    /// (`count/time` for `per week`).
    pub dimension: String,
    pub scale: f64,
    pub offset: f64,
}

/// Why two units cannot be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UnitError {
    #[error(
        "the unit {unit:?} is not one the runtime knows, so {unit:?} cannot be compared with {other:?}"
    )]
    Unknown { unit: String, other: String },
    #[error("{from:?} ({from_dimension}) and {to:?} ({to_dimension}) measure different things")]
    Mismatch {
        from: String,
        from_dimension: String,
        to: String,
        to_dimension: String,
    },
    #[error(
        "a total of {unit:?} values cannot be converted: {unit:?} has an offset zero (a sum of temperatures)"
    )]
    OffsetTotal { unit: String },
    #[error(
        "{unit:?} counts in a scale (× {scale}) and the other side states no scale, so it could be counted either way"
    )]
    ScaleUnstated { unit: String, scale: f64 },
}

/// A limit made comparable with a column: its value in the column's unit, and the conversion made.
#[derive(Debug, Clone, PartialEq)]
pub struct Aligned {
    pub value: f64,
    /// `(from, to)` when the limit was converted (`5 min` → `300 s`).
    pub converted: Option<(String, String)>,
}

/// Reads `text` as a unit: a known name or symbol (`minutes`, `°F`, `%`), a rate (`per week`,
/// `kg/day`, `a month` when `month` is known), or a unit followed by what each value is about (`minutes
/// per incident`: minutes). `None` when it is not a unit the vocabulary knows.
pub fn read(text: &str) -> Option<Unit> {
    let text = text.trim().trim_end_matches('.').trim();
    if text.is_empty() {
        return None;
    }
    if let Some(named) = vocabulary::named_unit(text) {
        return Some(from_named(named));
    }
    if let Some((scaled, _)) = scaled_unit(text) {
        return Some(scaled);
    }
    if let Some(scaled) = scale_of_counted(text) {
        return Some(scaled);
    }
    for per in vocabulary::per_words() {
        let Some((quantity, period)) = split_per(text, per) else {
            continue;
        };
        let counted = counted_period(period.trim());
        let numerator = match quantity.trim() {
            "" => None,
            q => match vocabulary::named_unit(q) {
                Some(unit) => Some(unit),
                // `complaints per 100 passengers`: a count of what the word names, per so many.
                None if counted.is_some() && one_word(q) => None,
                None => return None,
            },
        };
        if let Some(period) = counted {
            return rate(numerator, &period.symbol, &period.dimension, period.scale);
        }
        match vocabulary::named_unit(period.trim()) {
            // A rate per one of any unit that counts without an offset: `per week`, `kWh/km`, `€ per kg`.
            Some(period) if countable(period) => {
                return rate(numerator, &period.symbol, &period.dimension, period.scale);
            }
            // `minutes per incident`: the value is minutes; the rest says what each one is about. Only after
            // a word (`per`, `each`): `t/ha` is tonnes per hectare, a unit of its own, not tonnes.
            None if numerator.is_some()
                && !period.trim().is_empty()
                && per.chars().all(char::is_alphabetic) =>
            {
                return numerator.map(from_named);
            }
            _ => return None,
        }
    }
    None
}

/// Whether `unit` is a share (`%`, `‰`): each row's part of its own base, never summed into a quantity.
pub fn is_share(unit: Option<&str>) -> bool {
    unit.and_then(read).is_some_and(|u| u.dimension == "ratio")
}

/// `numerator` (a unit, or a plain count when `None`) per a period of `scale` in `dimension`: `kg/week`,
/// `per 100 passengers`. A numerator with an offset (a temperature) makes no rate.
fn rate(numerator: Option<&NamedUnit>, period: &str, dimension: &str, scale: f64) -> Option<Unit> {
    let (symbol, numerator_dimension, numerator_scale) = match numerator {
        Some(n) if n.offset != 0.0 => return None,
        Some(n) => (n.symbol.as_str(), n.dimension.as_str(), n.scale),
        None => ("", "count", 1.0),
    };
    Some(Unit {
        symbol: format!("{symbol}/{period}"),
        dimension: format!("{numerator_dimension}/{dimension}"),
        scale: numerator_scale / scale,
        offset: 0.0,
    })
}

/// A unit that counts in multiples without an offset (not a scale word, not a temperature): what a scale
/// may multiply and a rate may be per.
fn countable(unit: &NamedUnit) -> bool {
    unit.dimension != SCALE && unit.offset == 0.0 && unit.dimension != "temperature"
}

/// `万元`, `千元`, `thousand euros` (a scale word, then a unit) or `£k`, `$m`, `USD million` (a currency, then a
/// scale): one unit counted in that scale, so `126万元` is 1,260,000 元 and converts as such. A unit with an
/// offset (a temperature) takes no scale.
fn scaled_unit(text: &str) -> Option<(Unit, f64)> {
    for (i, _) in text.char_indices().skip(1) {
        let (head, rest) = text.split_at(i);
        // A Latin scale word stands apart from its unit (`thousand euros`); CJK writes them together (`万元`).
        let apart = rest.starts_with(char::is_whitespace);
        if let Some(scale) = vocabulary::named_unit(head).filter(|u| u.dimension == SCALE)
            && (!head.is_ascii() || apart)
            && let Some(unit) = vocabulary::named_unit(rest.trim()).filter(|u| countable(u))
        {
            return Some((scaled(text, unit, scale.scale), scale.scale));
        }
        let Some(currency) = vocabulary::named_unit(head.trim())
            .filter(|u| countable(u) && u.dimension.starts_with("currency:"))
        else {
            continue;
        };
        // Glued, the scale follows a symbol (`£k`), never a word (`GBPk`).
        let symbol = !head.trim_end().ends_with(char::is_alphanumeric);
        let scale = match vocabulary::named_unit(rest.trim()) {
            Some(scale) if scale.dimension == SCALE && (apart || symbol) => Some(scale.scale),
            _ if symbol && !apart => vocabulary::after_currency_symbol()
                .iter()
                .find(|(name, _)| name == rest)
                .map(|(_, value)| *value),
            _ => None,
        };
        if let Some(scale) = scale {
            return Some((scaled(text, currency, scale), scale));
        }
    }
    None
}

/// The scale a unit is counted in (`1000` for `£k`, `10000` for `万元`); `None` for a unit without one.
pub fn scale_of(text: &str) -> Option<f64> {
    scaled_unit(text.trim()).map(|(_, by)| by)
}

fn scaled(text: &str, unit: &NamedUnit, by: f64) -> Unit {
    Unit {
        symbol: text.trim().to_owned(),
        dimension: unit.dimension.clone(),
        scale: unit.scale * by,
        offset: 0.0,
    }
}

/// A rate's period that counts several of what it is per: `100 km`, `1,000 passengers`, `thousand
/// residents`, `百公里`. Its symbol (`100 km`), dimension (`distance`, or `each passengers` for a counted
/// noun) and size in the dimension's base. `None` without a count (`incident`, `week`: the caller reads those).
fn counted_period(text: &str) -> Option<Unit> {
    let digits = text
        .char_indices()
        .take_while(|(_, c)| c.is_ascii_digit() || *c == ',')
        .last()
        .map_or(0, |(i, c)| i + c.len_utf8());
    let (count, rest) = if digits > 0 {
        let number = text[..digits].replace(',', "");
        (number.parse::<f64>().ok()?, &text[digits..])
    } else {
        let scale_word = vocabulary::all_units()
            .into_iter()
            .filter(|u| u.dimension == SCALE)
            .flat_map(|u| {
                text.char_indices().skip(1).filter_map(move |(i, _)| {
                    let (head, rest) = text.split_at(i);
                    let apart = !head.is_ascii() || rest.starts_with(char::is_whitespace);
                    (apart && vocabulary::named_unit(head).is_some_and(|n| n == u))
                        .then_some((u.scale, rest))
                })
            })
            .chain(
                vocabulary::period_counts()
                    .iter()
                    .filter_map(|(name, value)| Some((*value, text.strip_prefix(name.as_str())?))),
            )
            .min_by_key(|(_, rest)| rest.len());
        scale_word?
    };
    let what = rest.trim();
    if count.is_nan() || count <= 0.0 || what.is_empty() {
        return None;
    }
    let counted = |dimension: String, scale: f64| Unit {
        symbol: format!("{count} {what}"),
        dimension,
        scale: count * scale,
        offset: 0.0,
    };
    if let Some(unit) = vocabulary::named_unit(what) {
        return countable(unit).then(|| counted(unit.dimension.clone(), unit.scale));
    }
    // One word of what is counted (`passengers`, `人`): a dimension of its own, so only the same word
    // converts (per 100 passengers to per 1,000 passengers).
    one_word(what).then(|| counted(format!("each {}", what.to_lowercase()), 1.0))
}

/// One Latin word, or up to four CJK characters: a noun naming what is counted, never a phrase.
fn one_word(text: &str) -> bool {
    text.chars().all(char::is_alphabetic) && (text.is_ascii() || text.chars().count() <= 4)
}

/// The dimension of the scale words (`k`, `thousand`, `万`): a count in thousands, millions, ten-thousands.
pub const SCALE: &str = "scale";

/// `万人次`, `thousand visitors`, `'000 tonnes`: a scale word, then what is counted — the scale. A known unit
/// after the scale (`万元`, `k €`) is a scaled unit the reader does not combine: `None`, so it stays unknown.
fn scale_of_counted(text: &str) -> Option<Unit> {
    let mut best: Option<(&NamedUnit, &str)> = None;
    for unit in vocabulary::all_units()
        .into_iter()
        .filter(|u| u.dimension == SCALE)
    {
        for (i, _) in text.char_indices().skip(1) {
            let (head, rest) = text.split_at(i);
            // A Latin scale word stands apart from what it counts (`k visitors`); glued (`kWh`) it is a prefix
            // of another unit. CJK writes them together (`万人次`).
            let apart = !head.is_ascii() || rest.starts_with(char::is_whitespace);
            if apart
                && vocabulary::named_unit(head).is_some_and(|n| n.symbol == unit.symbol)
                && best.is_none_or(|(_, r)| rest.len() < r.len())
            {
                best = Some((unit, rest));
            }
        }
    }
    let (unit, rest) = best?;
    let counted = rest.trim();
    if counted.is_empty() || vocabulary::named_unit(counted).is_some() || read_rate_or_unit(counted)
    {
        return None;
    }
    Some(from_named(unit))
}

/// Whether `text` reads as a unit of its own (a rate such as `kg/day`).
fn read_rate_or_unit(text: &str) -> bool {
    vocabulary::per_words()
        .iter()
        .any(|per| split_per(text, per).is_some())
        && read(text).is_some()
}

fn from_named(named: &NamedUnit) -> Unit {
    Unit {
        symbol: named.symbol.clone(),
        dimension: named.dimension.clone(),
        scale: named.scale,
        offset: named.offset,
    }
}

/// `kg per week` → (`kg`, `week`) at a whole word `per` (or at `/`, which needs no spaces).
fn split_per<'t>(text: &'t str, per: &str) -> Option<(&'t str, &'t str)> {
    if per.chars().all(char::is_alphabetic) && per.is_ascii() {
        let lower = text.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix(&format!("{per} ")) {
            let at = text.len() - rest.len();
            return Some(("", &text[at..]));
        }
        let at = lower.find(&format!(" {per} "))?;
        return Some((&text[..at], &text[at + per.len() + 2..]));
    }
    let at = text.find(per)?;
    Some((&text[..at], &text[at + per.len()..]))
}

/// Whether `x` is the factor that converts between two known units of one dimension, or between a unit and
/// its dimension's base (`60` minutes to seconds, `100` a fraction to a percentage, `1000` kg to g): a number a
/// calculation may spell to change units, which states nothing about the data. Units with an offset
/// (temperatures other than °C) convert by more than a factor and give none.
pub fn is_conversion_factor(x: f64) -> bool {
    if !x.is_finite() || x <= 0.0 {
        return false;
    }
    let same = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
    let units: Vec<_> = vocabulary::all_units()
        .into_iter()
        .filter(|u| u.offset == 0.0 && u.scale > 0.0)
        .collect();
    units.iter().any(|a| {
        same(x, a.scale)
            || same(x, 1.0 / a.scale)
            || units
                .iter()
                .filter(|b| b.dimension == a.dimension)
                .any(|b| same(x, a.scale / b.scale))
    }) && !same(x, 1.0)
}

/// Every factor above 1 that converts between two known units of one dimension (`60` minutes to seconds,
/// `1000` kilograms to grams, `100` pounds to pence), smallest first: the numbers a rule check may spell to
/// bring a limit into its column's unit. A scale gives its own value (`10000`: a column in `万元` against a
/// limit in `元`); ratios of two scales and offset units give none.
pub fn conversion_factors() -> Vec<f64> {
    let units: Vec<_> = vocabulary::all_units()
        .into_iter()
        .filter(|u| u.offset == 0.0 && u.scale > 0.0 && u.dimension != "scale")
        .collect();
    let mut out: Vec<f64> = Vec::new();
    for a in &units {
        for b in units.iter().filter(|b| b.dimension == a.dimension) {
            let factor = clean(a.scale / b.scale);
            // An inverse of an inexact scale (1 / 0.45359237) spells no exact factor: left out.
            let exact = format!("{factor}")
                .chars()
                .filter(char::is_ascii_digit)
                .count()
                <= 9;
            if factor > 1.0 && exact && !out.iter().any(|f| (f - factor).abs() <= 1e-9 * factor) {
                out.push(factor);
            }
        }
    }
    for scale in vocabulary::all_units()
        .into_iter()
        .filter(|u| u.dimension == SCALE)
    {
        if !out
            .iter()
            .any(|f| (f - scale.scale).abs() <= 1e-9 * scale.scale)
        {
            out.push(scale.scale);
        }
    }
    out.sort_by(f64::total_cmp);
    out
}

/// Converts `value` from unit `from` to unit `to` (both texts); an error when they cannot be compared.
pub fn convert(value: f64, from: &str, to: &str) -> Result<f64, UnitError> {
    if same_text(from, to) {
        return Ok(value);
    }
    let known = |unit: &str, other: &str| {
        read(unit).ok_or_else(|| UnitError::Unknown {
            unit: unit.trim().to_owned(),
            other: other.trim().to_owned(),
        })
    };
    let (source, target) = (known(from, to)?, known(to, from)?);
    if source.dimension != target.dimension {
        return Err(UnitError::Mismatch {
            from: from.trim().to_owned(),
            from_dimension: source.dimension,
            to: to.trim().to_owned(),
            to_dimension: target.dimension,
        });
    }
    let base = value * source.scale + source.offset;
    Ok(clean((base - target.offset) / target.scale))
}

/// A rule's limit (`limit` in `limit_unit`) in the unit of the column it is compared with. A side without a
/// unit takes the other's; `total` says the column is summed first (a total of an offset unit — a
/// temperature — converts differently from one value, so it is refused when the units differ).
pub fn align_limit(
    limit: f64,
    limit_unit: Option<&str>,
    column_unit: Option<&str>,
    total: bool,
) -> Result<Aligned, UnitError> {
    // A bare number beside a column counted in thousands (`12.4k`, `（万人次）`) could be in either: `11,500`
    // admissions or 11,500 thousand. People write it both ways, so it is not guessed.
    // So could a bare number beside a unit counted in a scale (`Revenue (£k)`, `126万元`): `450` or `450,000`.
    if let (None, Some(scaled)) | (Some(scaled), None) =
        (nonempty(limit_unit), nonempty(column_unit))
        && let Some(scale) = read(scaled)
            .filter(|u| u.dimension == SCALE)
            .map(|u| u.scale)
            .or_else(|| scaled_unit(scaled).map(|(_, by)| by))
    {
        return Err(UnitError::ScaleUnstated {
            unit: scaled.to_owned(),
            scale,
        });
    }
    let (Some(from), Some(to)) = (nonempty(limit_unit), nonempty(column_unit)) else {
        return Ok(Aligned {
            value: limit,
            converted: None,
        });
    };
    if same_text(from, to) {
        return Ok(Aligned {
            value: limit,
            converted: None,
        });
    }
    let value = convert(limit, from, to)?;
    let offsets = (read(from).map(|u| u.offset), read(to).map(|u| u.offset));
    if total && offsets.0 != offsets.1 {
        return Err(UnitError::OffsetTotal {
            unit: from.to_owned(),
        });
    }
    let same_unit = read(from).map(|u| u.symbol) == read(to).map(|u| u.symbol);
    Ok(Aligned {
        value,
        converted: (!same_unit).then(|| (from.to_owned(), to.to_owned())),
    })
}

/// The unit every value of a column can be put in (the header's when it is given, else the first cell's);
/// an error when a cell unit cannot be converted to it.
pub fn common_unit<'u>(
    header: Option<&'u str>,
    cells: &[&'u str],
) -> Result<Option<&'u str>, UnitError> {
    let target = nonempty(header).or_else(|| cells.first().copied());
    if let Some(target) = target {
        for cell in cells {
            convert(1.0, cell, target)?;
        }
    }
    Ok(target)
}

fn nonempty(unit: Option<&str>) -> Option<&str> {
    unit.map(str::trim).filter(|u| !u.is_empty())
}

fn same_text(a: &str, b: &str) -> bool {
    a.trim().to_lowercase() == b.trim().to_lowercase()
}

/// Conversion results without float noise: `8 °C` is `46.4 °F`, not `46.400000000000006`.
fn clean(value: f64) -> f64 {
    crate::precision::without_float_noise(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_dimension_converts() {
        let c = |v: f64, a: &str, b: &str| convert(v, a, b).unwrap();
        assert_eq!(c(5.0, "min", "s"), 300.0);
        assert_eq!(c(270.0, "s", "minutes"), 4.5);
        assert_eq!(c(1.5, "h", "min"), 90.0);
        assert_eq!(c(3.0, "‰", "%"), 0.3);
        assert_eq!(c(12.0, "%", "percent"), 12.0);
        assert_eq!(c(8.0, "°C", "°F"), 46.4);
        assert_eq!(c(41.0, "°F", "°C"), 5.0);
        assert_eq!(c(21.0, "°C", "K"), 294.15);
        assert_eq!(c(2.5, "kg", "g"), 2500.0);
        assert_eq!(c(1.0, "t", "kg"), 1000.0);
        assert_eq!(c(3.0, "km", "m"), 3000.0);
        assert_eq!(c(1.0, "mi", "km"), 1.609344);
        assert_eq!(c(1200.0, "€", "EUR"), 1200.0);
        // A currency's hundredth converts within its currency; "cents" alone names no currency.
        assert_eq!(c(1.15, "£", "pence"), 115.0);
        assert_eq!(c(126.0, "p", "£"), 1.26);
        assert_eq!(c(99.0, "¢", "$"), 0.99);
        assert!(convert(99.0, "cents", "$").is_err());
        assert!(convert(99.0, "p", "$").is_err());
        assert!((c(40.0, "per week", "per day") - 40.0 / 7.0).abs() < 1e-9);
        assert_eq!(c(14.0, "kg/week", "kg per day"), 2.0);
        assert_eq!(c(8.0, "minutes per incident", "min"), 8.0);
        assert!(
            read("t/ha").is_none(),
            "a compound the vocabulary does not know is unknown, not tonnes"
        );
        assert!(read("kWh/m²").is_none());
    }

    #[test]
    fn a_rate_per_several_converts_to_a_rate_per_one_or_per_another_count() {
        let c = |v: f64, a: &str, b: &str| convert(v, a, b).unwrap();
        assert_eq!(c(0.5, "per 100 passengers", "per 1,000 passengers"), 5.0);
        assert_eq!(c(4.6, "per 1,000 passengers", "per 100 passengers"), 0.46);
        assert_eq!(c(104.0, "千瓦时/百公里", "kWh/km"), 1.04);
        assert_eq!(c(6.0, "L/100 km", "L per 100 km"), 6.0);
        assert_eq!(c(2.0, "per 2 weeks", "per week"), 1.0);
        // What is counted must be the same word; a rate per one passenger is a rate per one.
        assert!(convert(0.5, "per 100 passengers", "per 1,000 journeys").is_err());
        assert!(convert(0.5, "per 100 passengers", "per passenger").is_err());
        // Without a count the period is what the value is about, as before.
        assert_eq!(
            read("minutes per incident").map(|u| u.symbol),
            Some("min".to_owned())
        );
        assert!(read("per 100 passengers across the routes").is_none());
        // What the rate counts may be named before it (stop 52's probe: "0.8 complaints per 100 passengers" had
        // no unit, so it would have been taken in its column's per 1,000).
        assert_eq!(
            c(0.8, "complaints per 100 passengers", "per 1,000 passengers"),
            8.0
        );
        assert!(read("late complaints per 100 passengers").is_none());
    }

    #[test]
    fn conversion_factors_are_the_vocabulary_s_own_above_one() {
        let factors = conversion_factors();
        for f in [60.0, 3600.0, 1000.0, 100.0, 7.0, 24.0] {
            assert!(factors.contains(&f), "{f}: {factors:?}");
        }
        assert!(factors.iter().all(|f| *f > 1.0 && is_conversion_factor(*f)));
        // A scale converts a unit counted in it (`万元` to `元`).
        assert!(factors.contains(&10000.0), "{factors:?}");
    }

    #[test]
    fn different_kinds_and_unknown_units_are_refused_by_name() {
        assert!(matches!(
            convert(5.0, "kg", "km"),
            Err(UnitError::Mismatch { from_dimension, to_dimension, .. })
                if from_dimension == "mass" && to_dimension == "distance"
        ));
        assert!(
            matches!(convert(1200.0, "€", "$"), Err(UnitError::Mismatch { .. })),
            "currencies never convert"
        );
        assert!(matches!(
            convert(40.0, "per week", "min"),
            Err(UnitError::Mismatch { .. })
        ));
        let unknown = convert(5.0, "widgets", "min").unwrap_err();
        assert_eq!(
            unknown,
            UnitError::Unknown {
                unit: "widgets".into(),
                other: "min".into()
            }
        );
        assert!(unknown.to_string().contains("\"widgets\""));
        // The same text needs no vocabulary.
        assert_eq!(convert(5.0, "kWh/m²", "kWh/m²"), Ok(5.0));
    }

    #[test]
    fn scale_words_count_in_thousands_and_a_bare_number_beside_them_is_not_guessed() {
        assert_eq!(read("k").map(|u| u.scale), Some(1000.0));
        assert_eq!(
            read("thousand visitors").map(|u| (u.dimension, u.scale)),
            Some((SCALE.to_owned(), 1000.0))
        );
        assert_eq!(read("万人次").map(|u| u.scale), Some(10000.0));
        assert_eq!(read("'000").map(|u| u.scale), Some(1000.0));
        // A scaled unit of its own kind (ten-thousand yuan) is that unit counted in the scale.
        assert_eq!(
            read("万元").map(|u| u.dimension),
            Some("currency:CNY".to_owned())
        );
        // Two scales convert; a bare limit beside a scaled column could be either.
        assert_eq!(
            align_limit(0.3, Some("亿"), Some("万"), false).map(|a| a.value),
            Ok(3000.0)
        );
        assert!(matches!(
            align_limit(11500.0, None, Some("k"), false),
            Err(UnitError::ScaleUnstated { .. })
        ));
        assert!(matches!(
            align_limit(80000.0, None, Some("万人次"), false),
            Err(UnitError::ScaleUnstated { .. })
        ));
        // A unit counted in a scale converts as that unit; beside it a bare number is not guessed either.
        assert_eq!(convert(1_200_000.0, "元", "万元"), Ok(120.0));
        assert_eq!(convert(450_000.0, "£", "£k"), Ok(450.0));
        assert_eq!(convert(2.7, "$ million", "$"), Ok(2_700_000.0));
        assert_eq!(convert(2.7, "$m", "USD"), Ok(2_700_000.0));
        assert_eq!(convert(3.0, "千万元", "亿元"), Ok(0.3));
        assert!(matches!(
            align_limit(450.0, None, Some("£k"), false),
            Err(UnitError::ScaleUnstated { scale, .. }) if scale == 1000.0
        ));
        assert!(
            convert(1.0, "万元", "$").is_err(),
            "a scale does not change the currency"
        );
        assert!(
            read("k°C").is_none() && read("万摄氏度").is_none(),
            "an offset unit takes no scale"
        );
        assert!(
            read("GBPk").is_none(),
            "glued, a scale follows a symbol, not a word"
        );
        // Nothing changes for a column in an ordinary unit.
        assert_eq!(
            align_limit(30.0, None, Some("min"), false).map(|a| a.value),
            Ok(30.0)
        );
    }

    #[test]
    fn limits_align_with_their_column() {
        let a = align_limit(5.0, Some("minutes"), Some("s"), false).unwrap();
        assert_eq!(a.value, 300.0);
        assert_eq!(a.converted, Some(("minutes".into(), "s".into())));
        let same = align_limit(30.0, Some("minutes"), Some("min"), false).unwrap();
        assert_eq!((same.value, same.converted), (30.0, None));
        assert_eq!(
            align_limit(30.0, None, Some("s"), false).unwrap().value,
            30.0
        );
        assert_eq!(
            align_limit(30.0, Some("s"), None, false).unwrap().value,
            30.0
        );
        assert!(matches!(
            align_limit(100.0, Some("°C"), Some("°F"), true),
            Err(UnitError::OffsetTotal { .. })
        ));
        assert!(align_limit(5.0, Some("kg"), Some("s"), false).is_err());
    }

    #[test]
    fn a_column_of_cell_units_has_one_target_or_none() {
        assert_eq!(common_unit(None, &["min", "s"]), Ok(Some("min")));
        assert_eq!(common_unit(Some("s"), &["min"]), Ok(Some("s")));
        assert!(common_unit(None, &["min", "kg"]).is_err());
        assert_eq!(common_unit(None, &[]), Ok(None));
    }
}
