//! Numbers as people print them: whole-cell quantities (`99.2%`, `1,250`, `12 400`, `$4.50`, `(3.10)`, `30 min`), numbers
//! mentioned in running text, canonical printing and the "printed rounding" rule.
//!
//! One module for every place that reads or writes a number — the knowledge tool's tables and facts,
//! grounding (which numbers a model may write), the claims gate and the answer scorer — so all of them
//! agree on what `83.3` means. It knows nothing about tasks, tools or models.

/// Comparisons treat two numbers as equal when they differ by at most this fraction of the larger
/// magnitude (at least 1), so float noise such as `0.1 + 0.2 == 0.3` cannot flip a rule check — the
/// calculator's comparisons and the rule reader's alike. Two whole numbers always compare exactly (every
/// integer within the calculator's `MAX_MAGNITUDE` is exact in f64).
pub const COMPARISON_TOLERANCE: f64 = 1e-12;

/// Most decimals a printed rounding may have (`83.3333` is accepted for 83.333…; more is not a rounding).
pub const MAX_ROUNDING_DECIMALS: u32 = 4;

/// A number found in text, with where and how it was printed.
#[derive(Debug, Clone, PartialEq)]
pub struct NumberMention {
    pub value: f64,
    /// As printed, without thousands separators or a percent sign (`1,250.5%` → `1250.5`).
    pub printed: String,
    /// Digits after the decimal point as printed.
    pub decimals: u32,
    /// Byte range of the whole mention in the text (sign, separators and `%` included).
    pub start: usize,
    pub end: usize,
    pub percent: bool,
}

impl NumberMention {
    /// Whether this printed number is `value` or a rounding of it to the printed decimals
    /// (83.3 and 83.33 both stand for 83.333…; 83.4 does not).
    pub fn stands_for(&self, value: f64) -> bool {
        stands_for(self.value, self.decimals, value)
    }
}

/// `printed_value` with `decimals` digits after the point stands for `value` when it is `value`
/// rounded (half either way) to that many decimals, that rounding keeps at least one decimal (a
/// [whole number stands only for itself](rounding_decimals)) and it [keeps two significant
/// digits](keeps_two_significant_digits) of it.
pub fn stands_for(printed_value: f64, decimals: u32, value: f64) -> bool {
    if !printed_value.is_finite() || !value.is_finite() {
        return false;
    }
    let tolerance = 1e-9 * value.abs().max(1.0);
    if (printed_value - value).abs() <= tolerance {
        return true;
    }
    // More decimals than the grammar writes are fine to read (83.333333 is still 83.333…); none are not.
    if decimals < *rounding_decimals().start() || !keeps_two_significant_digits(decimals, value) {
        return false;
    }
    let half_unit = 0.5 * 10f64.powi(-(decimals as i32));
    (printed_value - value).abs() <= half_unit + tolerance
}

/// How many decimals a printed rounding may have: at least one, at most [`MAX_ROUNDING_DECIMALS`].
///
/// Why not zero: a whole number reads as an exact claim. "82%" for an average of 81.5 is half a
/// point off and collides with neighbouring values (a row at 82.5 also "rounds" to 82), so a reader
/// cannot tell which one is meant; "81.5%" or "83.3" for 83.333… can only be the value itself. The
/// gate, the grammar's printed forms and the scorer all take this one rule from here.
pub fn rounding_decimals() -> std::ops::RangeInclusive<u32> {
    1..=MAX_ROUNDING_DECIMALS
}

/// Whether rounding `value` to `decimals` keeps at least two significant digits: the last printed
/// digit's unit is at most a tenth of the value. `83` for 83.33 does (0.4 % off), `3.7` for 3.667 does,
/// `4` for 3.667 does not (9 % off: a different claim, not a rounding), nor `0.1` for 0.123.
pub fn keeps_two_significant_digits(decimals: u32, value: f64) -> bool {
    let unit = 10f64.powi(-(decimals as i32));
    unit <= 0.1 * value.abs() * (1.0 + 1e-9)
}

/// A whole cell or fact value read as one quantity.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantity {
    pub value: f64,
    /// `%`, a currency symbol, or a short unit word (`min`, `kWh`, `分钟`); `None` for a bare number.
    pub unit: Option<String>,
}

const CURRENCY: [char; 5] = ['$', '€', '£', '¥', '₹'];
/// Longest unit word accepted after a number in a cell (`30 min`, `12 kWh`).
const MAX_UNIT_CHARS: usize = 8;

/// Reads a whole cell (or a fact's value) as one number with an optional unit:
/// `72`, `-3.5`, `−3.5` (U+2212), `–3.5` (an en dash glued to the number at the start of the cell — a
/// typeset minus; anywhere else an en dash is a range or a missing marker), `(3.5)` and `($3.50)`
/// (accounting negatives), `-$3.50`, `$-3.50`, `-3.5%`, `81.5%`, `1,250`, `12 400` (space, no-break,
/// narrow or thin space between thousands groups), `$4.50`, `30 min`, `12 kWh`, `5 °C`, `3 ‰`, `80分`. Anything
/// else is `None` (text such as `n/a`, `72 (est.)`, `3–5`, `Q3`, `12.400,5`, `(-3)`).
pub fn parse_quantity(cell: &str) -> Option<Quantity> {
    let mut text = cell.trim();
    let mut negative = false;
    if let Some(inner) = text.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        negative = true;
        text = inner.trim();
    }
    // A sign before the currency (`-$3.50`) or the number; glued to what follows.
    let strip_sign = |text: &str| -> Option<usize> {
        let c = text.chars().next()?;
        let next = text[c.len_utf8()..].chars().next()?;
        (matches!(c, '-' | MINUS_SIGN | '\u{2013}')
            && (next.is_ascii_digit() || CURRENCY.contains(&next)))
        .then_some(c.len_utf8())
    };
    let mut signs = 0;
    if let Some(len) = strip_sign(text) {
        signs += 1;
        text = &text[len..];
    }
    let mut unit: Option<String> = None;
    if let Some(c) = text.chars().next().filter(|c| CURRENCY.contains(c)) {
        unit = Some(c.to_string());
        text = text[c.len_utf8()..].trim_start();
        if let Some(len) = strip_sign(text) {
            signs += 1;
            text = &text[len..];
        }
    }
    if signs > 1 || (negative && signs > 0) {
        return None; // `-$-3`, `(-3)`: not a way anyone prints one number
    }
    negative |= signs == 1;
    if !text.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let (number_len, mention) = leading_number(text)?;
    let rest = text[number_len..].trim();
    if !rest.is_empty() {
        if unit.is_some() {
            return None; // `$4.50 USD`: one unit is enough to be sure
        }
        let is_unit_word = (rest.chars().count() <= MAX_UNIT_CHARS
            && (rest == "%"
                || rest.chars().all(|c| {
                    c.is_alphabetic() || matches!(c, '/' | '²' | '³' | '°' | '‰' | 'µ' | '·')
                })))
            // A unit of several words the vocabulary knows (`40 per week`, `21 ° C`).
            || crate::units::read(rest).is_some();
        if !is_unit_word {
            return None;
        }
        unit = Some(rest.to_owned());
    } else if mention.percent {
        unit = Some("%".into());
    }
    let value = if negative && mention.value != 0.0 {
        -mention.value
    } else {
        mention.value
    };
    Some(Quantity { value, unit })
}

/// The number at the start of `text` (sign, thousands groups, decimals, optional `%`), and its byte length.
fn leading_number(text: &str) -> Option<(usize, NumberMention)> {
    let mentions = scan(text);
    let first = mentions.into_iter().next()?;
    (first.start == 0).then_some((first.end, first))
}

/// Characters that separate thousands groups: `,`, an ASCII space, a no-break space (U+00A0), a narrow
/// no-break space (U+202F), a thin space (U+2009) and the apostrophe Swiss exports write (`12'480`, or
/// U+2019 `12’480`).
const THOUSANDS_SEPARATORS: [char; 7] = [
    ',', ' ', '\u{00A0}', '\u{202F}', '\u{2009}', '\'', '\u{2019}',
];
/// The minus sign (U+2212), read like `-`.
const MINUS_SIGN: char = '\u{2212}';

/// Every number mentioned in `text`, in order. A `-` or `−` (U+2212) counts as a sign only at the
/// start, after a space or opening bracket, or after a CJK character (so `2021-2024` is two years, not 2021 and −2024); `1,250`
/// is one number and so are `12 400`, `12\u{00A0}400`, `12\u{202F}400` and `12\u{2009}400` (a first group of 1–3
/// digits, then groups of exactly three digits, each after the same separator, the last not followed by
/// a digit), `72,78` is two and so is `in 2024 150 units` (a first group of four digits is not a
/// thousands group); a trailing `%` is part of the mention. Digits glued to letters (`Q3`, `B2`) are
/// still mentions: they are digits a writer chose.
pub fn scan(text: &str) -> Vec<NumberMention> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let mut start = i;
        let sign_len = if text[..i].ends_with('-') {
            1
        } else if text[..i].ends_with(MINUS_SIGN) {
            MINUS_SIGN.len_utf8()
        } else {
            0
        };
        // What stands before the sign: the start, a space, an opening bracket, `:` or `=`, or any CJK character
        // or full-width punctuation (Chinese text has no spaces: "平均值为-1.1%").
        let before = text[..i - sign_len].chars().next_back();
        let negative = sign_len > 0
            && before.is_none_or(|c| {
                matches!(c, ' ' | '(' | '[' | '\t' | '\n' | ':' | '=' | '\u{a0}')
                    || crate::lexicon::is_cjk(c)
            });
        if negative {
            start = i - sign_len;
        }
        // Integer part with optional thousands groups.
        let mut j = i;
        while j < bytes.len() && bytes[j].is_ascii_digit() {
            j += 1;
        }
        let mut digits: String = text[i..j].to_owned();
        let first_group_len = j - i;
        let mut decimals = 0;
        let european = (first_group_len <= 3)
            .then(|| european_groups(text, j))
            .flatten();
        let is_european = european.is_some();
        if let Some((grouped, fraction, k)) = european {
            digits.push_str(&grouped);
            if !fraction.is_empty() {
                decimals = fraction.len() as u32;
                digits.push('.');
                digits.push_str(&fraction);
            }
            j = k;
        } else if first_group_len <= 3 {
            let (grouped, k) = thousands_groups(text, j);
            if !grouped.is_empty() {
                digits.push_str(&grouped);
                j = k;
            }
        }
        if !is_european && j + 1 < bytes.len() && bytes[j] == b'.' && bytes[j + 1].is_ascii_digit()
        {
            let mut k = j + 1;
            while k < bytes.len() && bytes[k].is_ascii_digit() {
                k += 1;
            }
            decimals = (k - j - 1) as u32;
            digits.push_str(&text[j..k]);
            j = k;
        }
        let percent = bytes.get(j) == Some(&b'%');
        let end = if percent { j + 1 } else { j };
        let printed = if negative {
            format!("-{digits}")
        } else {
            digits
        };
        if let Ok(value) = printed.parse::<f64>()
            && value.is_finite()
        {
            out.push(NumberMention {
                value,
                printed,
                decimals,
                start,
                end,
                percent,
            });
        }
        i = j.max(i + 1);
    }
    out
}

/// A number written the continental way after its first group ending at byte `from`, where only that reading
/// fits: points grouping thousands and a decimal comma (`1.150,0`), or two or more point groups
/// (`1.234.567`). Returns the groups' digits, the fraction's digits and the byte where the number ends;
/// `None` for one point group without a comma (`1.150`: a decimal point or a thousands point, the text
/// alone cannot say) and anything not grouped in threes.
fn european_groups(text: &str, from: usize) -> Option<(String, String, usize)> {
    let bytes = text.as_bytes();
    let digits_from = |k: usize| {
        bytes[k.min(bytes.len())..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let (mut grouped, mut k, mut groups) = (String::new(), from, 0);
    while bytes.get(k) == Some(&b'.') && digits_from(k + 1) == 3 {
        grouped.push_str(&text[k + 1..k + 4]);
        k += 4;
        groups += 1;
    }
    if groups == 0 || bytes.get(k) == Some(&b'.') && digits_from(k + 1) > 0 {
        return None;
    }
    let fraction_len = if bytes.get(k) == Some(&b',') {
        digits_from(k + 1)
    } else {
        0
    };
    if fraction_len > 0 {
        let fraction = text[k + 1..k + 1 + fraction_len].to_owned();
        return Some((grouped, fraction, k + 1 + fraction_len));
    }
    (groups >= 2).then_some((grouped, String::new(), k))
}

/// The thousands groups right after an integer's first group ending at byte `from`: their digits and
/// the byte where they end. Every group is one separator of [`THOUSANDS_SEPARATORS`] (the same one
/// each time) followed by exactly three digits that are not followed by another digit.
fn thousands_groups(text: &str, from: usize) -> (String, usize) {
    let mut grouped = String::new();
    let mut k = from;
    let mut separator: Option<char> = None;
    while let Some(c) = text[k..].chars().next()
        && THOUSANDS_SEPARATORS.contains(&c)
        && separator.is_none_or(|s| s == c)
    {
        let group_start = k + c.len_utf8();
        let group = text.as_bytes().get(group_start..group_start + 3);
        let is_group = group.is_some_and(|g| g.iter().all(u8::is_ascii_digit))
            && text
                .as_bytes()
                .get(group_start + 3)
                .is_none_or(|b| !b.is_ascii_digit());
        if !is_group {
            break;
        }
        grouped.push_str(&text[group_start..group_start + 3]);
        separator = Some(c);
        k = group_start + 3;
    }
    (grouped, k)
}

/// The canonical printing of a value: integers without a fraction (`79`), others in the shortest form
/// that reads back to the same f64 (`98.96666666666667`), never exponent notation for |x| < 1e15.
pub fn canonical(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        let text = format!("{value}");
        if text.contains('e') {
            format!("{value:.6}")
        } else {
            text
        }
    }
}

/// The printed forms a writer may use for `value`: the canonical form (when it has at most 8 decimals)
/// and its roundings to [`rounding_decimals`] that keep two significant digits, shortest first, without
/// duplicates. `79` → [`79`]; `83.333…` → [`83.3`, `83.33`, `83.333`, `83.3333`] (not `83`); `81.5` →
/// [`81.5`] (not `82`); `3.6667` → [`3.7`, `3.67`, …] (not `4`).
pub fn printed_forms(value: f64) -> Vec<String> {
    let mut forms: Vec<String> = Vec::new();
    let canonical = canonical(value);
    if value.fract() == 0.0 {
        return vec![canonical];
    }
    for decimals in rounding_decimals().filter(|d| keeps_two_significant_digits(*d, value)) {
        let text = format!("{value:.prec$}", prec = decimals as usize);
        let text = if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            text
        };
        let text = if text == "-0" { "0".to_owned() } else { text };
        if !forms.contains(&text) {
            forms.push(text);
        }
    }
    let canonical_decimals = canonical.split_once('.').map_or(0, |(_, d)| d.len());
    if canonical_decimals <= 8 && !forms.contains(&canonical) {
        forms.push(canonical);
    }
    forms
}

/// The units `text` writes with its numbers, as written and each once: the word right after a number that
/// names a unit (`5 minutes`, `120克`, `12‰`, `80%`; of a run of CJK characters, its longest start that
/// does: `2.5升且` → `升`) and a currency symbol right before one (`£2.10`). What a limit may be written with.
pub fn units_written_with(text: &str) -> Vec<String> {
    // A currency sign stands before its number (`£2.10`); the other signs after it (`80%`, `12‰`, `5 °C`).
    const CURRENCY_SIGNS: [char; 5] = ['£', '€', '$', '¥', '￥'];
    let is_sign = |c: &char| matches!(c, '°' | '%' | '％' | '‰') || CURRENCY_SIGNS.contains(c);
    let text = fold_full_width(text);
    let mut out: Vec<String> = Vec::new();
    let mut push = |unit: &str| {
        if !out.iter().any(|u| u == unit) {
            out.push(unit.to_owned());
        }
    };
    for mention in scan(&text) {
        if mention.percent {
            push("%");
        }
        if let Some(symbol) = text[..mention.start]
            .chars()
            .next_back()
            .filter(|c| CURRENCY_SIGNS.contains(c))
        {
            push(&symbol.to_string());
        }
        let after = text[mention.end..].trim_start_matches(' ');
        let run: Vec<char> = after
            .chars()
            .take_while(|c| c.is_alphabetic() || is_sign(c))
            .collect();
        // Words in a spaced script are whole (`depots` is no `d`); in an unspaced one the unit is the start
        // of the run (`升且`).
        let shortest = if run.iter().all(|c| c.is_ascii() || is_sign(c)) {
            run.len().max(1)
        } else {
            1
        };
        for end in (shortest..=run.len()).rev() {
            let word: String = run[..end].iter().collect();
            if crate::units::names::named_unit(&word).is_some() {
                push(&word);
                break;
            }
        }
    }
    out
}

/// Full-width digits and number punctuation folded to ASCII (`１２．５` → `12.5`, `８５％` → `85%`): the same
/// number as Unicode compatibility folding reads it. Only `０`–`９`, a `．` or `，` between digits and a `％`
/// or `－` next to a digit change; a full-width `，` between words stays the clause separator it is.
pub fn fold_full_width(text: &str) -> std::borrow::Cow<'_, str> {
    let is_full_digit = |c: char| ('０'..='９').contains(&c);
    if !text.chars().any(is_full_digit) {
        return std::borrow::Cow::Borrowed(text);
    }
    let chars: Vec<char> = text.chars().collect();
    let digit_at = |i: Option<usize>| {
        i.and_then(|i| chars.get(i))
            .is_some_and(|c| c.is_ascii_digit() || is_full_digit(*c))
    };
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        let (before, after) = (digit_at(i.checked_sub(1)), digit_at(Some(i + 1)));
        out.push(match c {
            c if is_full_digit(c) => char::from(b'0' + (c as u32 - '０' as u32) as u8),
            '．' if before && after => '.',
            '，' if before && after => ',',
            '％' if before => '%',
            '－' if after => '-',
            c => c,
        });
    }
    std::borrow::Cow::Owned(out)
}

/// Footnote markers a writer glues to a number (`91.4*`, `12.4¹`, `12.4[a]`, `96.0†`).
const NOTE_SYMBOLS: [char; 6] = ['*', '†', '‡', '§', '¶', '#'];
const SUPERSCRIPTS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];

/// A numbered marker: a superscript digit or a circled number (`①`–`⑳`, `❶`–`❿`), which Unicode counts as
/// numeric — so a marker, never a digit of the value (`61.5①` is 61.5, not 61.51).
fn is_numbered_marker(c: char) -> bool {
    SUPERSCRIPTS.contains(&c)
        || ('\u{2460}'..='\u{2473}').contains(&c)
        || ('\u{2776}'..='\u{277F}').contains(&c)
}

/// A note in brackets after a number (`76（暂定）`, `88 (provisional)`): words, no digit and no unit inside, so
/// the number is the value and the bracket a note. A whole cell in brackets (`(3.1)`, a negative) is no note.
fn bracketed_note(cell: &str) -> Option<(&str, Option<&str>)> {
    let (open, close) = [('(', ')'), ('（', '）')]
        .into_iter()
        .find(|(_, close)| cell.ends_with(*close))?;
    let start = cell.rfind(open)?;
    let inner = &cell[start + open.len_utf8()..cell.len() - close.len_utf8()];
    let value = cell[..start].trim_end();
    let words = !inner.trim().is_empty()
        && !inner.chars().any(|c| c.is_ascii_digit() || c.is_numeric())
        && crate::units::read(inner).is_none();
    let after_number = value.ends_with(|c: char| c.is_ascii_digit() || c == '%');
    (words && after_number).then_some((value, Some(&cell[start..])))
}

/// A cell without its trailing footnote marker, and the marker: `91.4*` → (`91.4`, `*`), `12.4¹` →
/// (`12.4`, `¹`), `12.4[a]` → (`12.4`, `[a]`), `42 min†` → (`42 min`, `†`). A marker follows a digit, a
/// `%` or a unit letter, glued or after one space; superscript digits and circled numbers (`61.5①`) count only
/// right after a digit or `%` (`m²` is a unit). `None` when the cell ends in no marker.
pub fn split_note_marker(cell: &str) -> (&str, Option<&str>) {
    let cell = cell.trim();
    if let Some(split) = bracketed_note(cell) {
        return split;
    }
    let marker_start = if let Some(inner) = cell.strip_suffix(']')
        && let Some(open) = inner.rfind('[')
        && (1..=3).contains(&inner[open + 1..].chars().count())
        && inner[open + 1..].chars().all(char::is_alphanumeric)
    {
        Some(open)
    } else {
        let symbols = cell
            .char_indices()
            .rev()
            .take_while(|(_, c)| NOTE_SYMBOLS.contains(c))
            .last()
            .map(|(i, _)| i);
        symbols.or_else(|| {
            cell.char_indices()
                .rev()
                .take_while(|(_, c)| is_numbered_marker(*c))
                .last()
                .map(|(i, _)| i)
                .filter(|&i| cell[..i].ends_with(|c: char| c.is_ascii_digit() || c == '%'))
        })
    };
    match marker_start {
        Some(start) => {
            let value = cell[..start].trim_end();
            let glued_to = value.chars().next_back();
            if glued_to.is_some_and(|c| c.is_alphanumeric() || c == '%' || c == ')') {
                (value, Some(&cell[start..]))
            } else {
                (cell, None)
            }
        }
        None => (cell, None),
    }
}

/// Which character a cell uses as its decimal mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecimalMark {
    /// `12.5`, `1,250.5` (commas group thousands): what [`parse_quantity`] reads.
    Point,
    /// `12,5`, `1.250,5`, `12 400,5` (points or spaces group thousands).
    Comma,
}

/// What one cell's digits say about its decimal mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecimalEvidence {
    /// No separator between digits (`12`, `12 400`): any mark reads it the same.
    Neither,
    /// Only a decimal comma reads it (`7,4`, `12,50`, `1.234,5`, `1.234.567`).
    Comma,
    /// Only a decimal point reads it (`7.4`, `1,234.5`, `1,234,567`).
    Point,
    /// One separator followed by exactly three digits (`1,250` or `1.250`): thousands or decimals.
    Either,
}

/// The decimal evidence of the number at the start of `cell` (after a sign, bracket or currency).
pub fn decimal_evidence(cell: &str) -> DecimalEvidence {
    let start = cell.find(|c: char| c.is_ascii_digit());
    let Some(start) = start else {
        return DecimalEvidence::Neither;
    };
    let digits: String = cell[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, ',' | '.'))
        .collect();
    let digits = digits.trim_end_matches([',', '.']);
    let groups: Vec<&str> = digits.split([',', '.']).collect();
    let marks: Vec<char> = digits.chars().filter(|c| matches!(c, ',' | '.')).collect();
    let (commas, points) = (
        marks.iter().filter(|c| **c == ',').count(),
        marks.iter().filter(|c| **c == '.').count(),
    );
    let tail_len = groups.last().map_or(0, |g| g.len());
    match (commas, points) {
        (0, 0) => DecimalEvidence::Neither,
        (1, 0) if tail_len == 3 && groups[0].len() <= 3 => DecimalEvidence::Either,
        (0, 1) if tail_len == 3 && groups[0].len() <= 3 => DecimalEvidence::Either,
        (1, 0) => DecimalEvidence::Comma,
        (0, 1) => DecimalEvidence::Point,
        (_, 0) => DecimalEvidence::Point, // `1,234,567`
        (0, _) => DecimalEvidence::Comma, // `1.234.567`
        _ if marks.last() == Some(&',') => DecimalEvidence::Comma, // `1.234,5`
        _ => DecimalEvidence::Point,      // `1,234.5`
    }
}

/// [`parse_quantity`] with the decimal mark decided for the cell's column: with [`DecimalMark::Comma`],
/// `7,4` is 7.4 and `1.250,5` is 1250.5 (a point or space groups thousands, in groups of three).
pub fn parse_quantity_with(cell: &str, mark: DecimalMark) -> Option<Quantity> {
    match mark {
        DecimalMark::Point => parse_quantity(cell),
        DecimalMark::Comma => parse_quantity(&comma_to_point(cell)?),
    }
}

/// `1.250,5 t` → `1250.5 t`: the number's thousands points dropped (each before exactly three digits) and
/// its decimal comma made a point; `None` when the digits are not grouped that way.
fn comma_to_point(cell: &str) -> Option<String> {
    let start = cell.find(|c: char| c.is_ascii_digit())?;
    // The number runs over digits, `,` and `.`, and a space-like thousands separator before a digit.
    let mut end = start;
    let mut chars = cell[start..].char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next_is_digit = chars.peek().is_some_and(|(_, n)| n.is_ascii_digit());
        let grouping_space = c != ',' && THOUSANDS_SEPARATORS.contains(&c) && next_is_digit;
        if !(c.is_ascii_digit() || matches!(c, ',' | '.') || grouping_space) {
            break;
        }
        end = start + i + c.len_utf8();
    }
    let number = cell[start..end].trim_end_matches([',', '.']);
    let end = start + number.len();
    let (integer, fraction) = match number.split_once(',') {
        Some((i, f)) if !f.is_empty() && f.chars().all(|c| c.is_ascii_digit()) => (i, Some(f)),
        Some(_) => return None,
        None => (number, None),
    };
    let groups: Vec<&str> = integer
        .split(|c: char| c == '.' || (c != ',' && THOUSANDS_SEPARATORS.contains(&c)))
        .collect();
    let grouped = groups.len() > 1;
    if grouped
        && (groups[0].is_empty() || groups[0].len() > 3 || groups[1..].iter().any(|g| g.len() != 3))
    {
        return None;
    }
    let mut out = String::with_capacity(cell.len());
    out.push_str(&cell[..start]);
    out.push_str(&groups.concat());
    if let Some(fraction) = fraction {
        out.push('.');
        out.push_str(fraction);
    }
    out.push_str(&cell[end..]);
    Some(out)
}

/// The number `text` starts with and the byte where it ends, reading a decimal comma the way the writer
/// means it: `7,0 t/ha` is 7.0 (a comma followed by digits that are not a thousands group of three),
/// `1,250 units` stays 1250. `None` when `text` does not start with a number.
pub fn leading_value(text: &str) -> Option<(f64, usize)> {
    let first = scan(text).into_iter().next()?;
    if first.start != 0 {
        return None;
    }
    let rest = &text[first.end..];
    let fraction: String = rest
        .strip_prefix(',')
        .map(|r| r.chars().take_while(char::is_ascii_digit).collect())
        .unwrap_or_default();
    let glued_group = rest.starts_with(',') && fraction.len() == 3;
    if !first.percent && first.decimals == 0 && !fraction.is_empty() && !glued_group {
        let value: f64 = format!("{}.{fraction}", first.printed).parse().ok()?;
        return Some((value, first.end + 1 + fraction.len()));
    }
    Some((first.value, first.end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_units_a_text_writes_with_its_numbers_are_read_as_written() {
        assert_eq!(
            units_written_with(
                "no more than 5 minutes, and no store above 8 minutes; reported in seconds (270 s)"
            ),
            ["minutes", "s"]
        );
        assert_eq!(
            units_written_with("平均值不超过１２０克，且任一食堂不超过150克"),
            ["克"]
        );
        assert_eq!(
            units_written_with("at most £2.10, 12‰ and 80% of 3 depots"),
            ["£", "‰", "%"]
        );
    }

    fn values(text: &str) -> Vec<f64> {
        scan(text).into_iter().map(|m| m.value).collect()
    }

    #[test]
    fn scan_reads_people_numbers() {
        assert_eq!(values("Average 79, lowest 72."), [79.0, 72.0]);
        assert_eq!(values("revenue 1,250 and 72,78"), [1250.0, 72.0, 78.0]);
        assert_eq!(
            values("2021-2024 change -3.5 (−2)"),
            [2021.0, 2024.0, -3.5, -2.0]
        );
        // Chinese prose puts no space before a sign; a hyphen between digits or after a letter is still a dash.
        assert_eq!(values("平均值为-1.1%，最低为−2.4%"), [-1.1, -2.4]);
        assert_eq!(values("Q3-2 line-4"), [3.0, 2.0, 4.0]);
        assert_eq!(values("uptime 99.2% in Q3"), [99.2, 3.0]);
        assert_eq!(values("平均值为79，最低72"), [79.0, 72.0]);
        // Continental grouping where only that reading fits; one point group alone stays a decimal point.
        assert_eq!(
            values("no more than 1.150,0 kWh, 1.234.567 in all, 不低于1.050,0件"),
            [1150.0, 1234567.0, 1050.0]
        );
        assert_eq!(values("1.150 t and 2.7505"), [1.15, 2.7505]);
        assert_eq!(values("192.168.100.1"), [192.168, 100.1]);
        let m = &scan("1.320,05 kWh")[0];
        assert_eq!(
            (m.printed.as_str(), m.decimals, m.value),
            ("1320.05", 2, 1320.05)
        );
        let m = &scan("is 83.30%")[0];
        assert_eq!(
            (m.printed.as_str(), m.decimals, m.percent),
            ("83.30", 2, true)
        );
    }

    #[test]
    fn rounding_rule() {
        let third = 250.0 / 3.0;
        for (printed, ok) in [
            ("83.3", true),
            ("83.33", true),
            ("83", false),
            ("83.4", false),
            ("83.32", false),
        ] {
            let m = &scan(printed)[0];
            assert_eq!(m.stands_for(third), ok, "{printed}");
        }
        assert!(scan("79")[0].stands_for(79.0));
        assert!(!scan("78")[0].stands_for(79.0));
        // A rounding keeps two significant digits: "4" is not 3.667, "0.1" is not 0.123.
        let small = 11.0 / 3.0;
        for (printed, ok) in [("4", false), ("3.7", true), ("3.67", true), ("3.6", false)] {
            assert_eq!(scan(printed)[0].stands_for(small), ok, "{printed}");
        }
        assert!(!scan("0.1")[0].stands_for(0.123));
        assert!(scan("0.12")[0].stands_for(0.123));
        assert!(!scan("10")[0].stands_for(9.6));
        // A whole number stands only for itself: "82%" is neither 81.5 nor 82.5; "81.5" and "79.0" are exact.
        for (printed, value, ok) in [
            ("82%", 81.5, false),
            ("82", 82.5, false),
            ("81.5%", 81.5, true),
            ("79.0", 79.0, true),
            ("1,250", 1250.4, false),
            ("1,250.4", 1250.4, true),
        ] {
            assert_eq!(
                scan(printed)[0].stands_for(value),
                ok,
                "{printed} for {value}"
            );
        }
        // Float noise from a calculator is not a rounding: 82 is 81.99999999999999.
        assert!(scan("82")[0].stands_for(81.99999999999999));
        assert_eq!(
            printed_forms(small)[..2],
            ["3.7".to_owned(), "3.67".to_owned()]
        );
    }

    #[test]
    fn quantities() {
        let q = |s: &str| parse_quantity(s).map(|q| (q.value, q.unit));
        assert_eq!(q("72"), Some((72.0, None)));
        assert_eq!(q(" 99.2% "), Some((99.2, Some("%".into()))));
        assert_eq!(q("1,250"), Some((1250.0, None)));
        assert_eq!(q("$4.50"), Some((4.5, Some("$".into()))));
        assert_eq!(q("30 min"), Some((30.0, Some("min".into()))));
        assert_eq!(q("80分"), Some((80.0, Some("分".into()))));
        for text in [
            "n/a",
            "72 (est.)",
            "3–5",
            "Q3",
            "",
            "4.5.6",
            "$4.50 USD",
            "North",
        ] {
            assert_eq!(q(text), None, "{text}");
        }
    }

    #[test]
    fn negative_cells_in_every_printed_form() {
        let q = |s: &str| parse_quantity(s).map(|q| (q.value, q.unit));
        let dollars = |v: f64| Some((v, Some("$".to_owned())));
        assert_eq!(q("-3.1"), Some((-3.1, None)));
        assert_eq!(q("\u{2212}3.1"), Some((-3.1, None)), "U+2212 minus sign");
        assert_eq!(
            q("\u{2013}3.1"),
            Some((-3.1, None)),
            "an en dash glued to the number at the start of a cell is a minus"
        );
        assert_eq!(q("(3.1)"), Some((-3.1, None)), "accounting negative");
        assert_eq!(q("($3.10)"), dollars(-3.1));
        assert_eq!(q("(3.1%)"), Some((-3.1, Some("%".into()))));
        assert_eq!(q("-3.1%"), Some((-3.1, Some("%".into()))));
        assert_eq!(q("\u{2212}3.1%"), Some((-3.1, Some("%".into()))));
        assert_eq!(q("-$3.10"), dollars(-3.1));
        assert_eq!(q("$-3.10"), dollars(-3.1));
        assert_eq!(q("\u{2212}$3.10"), dollars(-3.1));
        assert_eq!(q("$\u{2212}3.10"), dollars(-3.1));
        assert_eq!(q("(1,250)"), Some((-1250.0, None)));
        assert_eq!(q("-12 400"), Some((-12400.0, None)));
        assert_eq!(q("(0)"), Some((0.0, None)));
        // Not one number: a detached sign, a double sign, a range, an en dash alone (a missing marker).
        for text in [
            "- 3",
            "(-3)",
            "-$-3",
            "--3",
            "\u{2013}",
            "\u{2013} 3",
            "3\u{2013}5",
            "()",
            "(North)",
            "-",
            "\u{2212}",
        ] {
            assert_eq!(q(text), None, "{text}");
        }
    }

    #[test]
    fn thousands_separators_in_cells_and_prose() {
        let q = |s: &str| parse_quantity(s).map(|q| q.value);
        for text in [
            "12,400",
            "12 400",
            "12\u{00A0}400",
            "12\u{202F}400",
            "12\u{2009}400",
            "12'400",
            "12\u{2019}400",
        ] {
            assert_eq!(q(text), Some(12400.0), "{text:?}");
            assert_eq!(
                values(&format!("output {text} units")),
                [12400.0],
                "{text:?}"
            );
        }
        assert_eq!(q("1 234 567.5"), Some(1234567.5));
        assert_eq!(q("$12 400"), Some(12400.0));
        assert_eq!(q("12 400 min"), Some(12400.0));
        // Continental `12.400,5` and `1.234.567` have one reading, and it is the one taken.
        assert_eq!(q("12.400,5"), Some(12400.5));
        assert_eq!(q("1.234.567"), Some(1234567.0));
        for text in ["12 40", "12 4000", "1234 567", "12 400 500,1"] {
            assert_eq!(q(text), None, "{text}");
        }
        // In prose: a four-digit first group is a year or a count, not a thousands group.
        assert_eq!(values("in 2024 150 units"), [2024.0, 150.0]);
        assert_eq!(values("12 4000"), [12.0, 4000.0]);
        assert_eq!(values("12, 400"), [12.0, 400.0]);
        // An apostrophe before fewer or more than three digits is no group: feet and inches, a decade.
        assert_eq!(values("5'10 tall"), [5.0, 10.0]);
        assert_eq!(values("the 1990's"), [1990.0]);
        assert_eq!(
            values("1,234 567"),
            [1234.0, 567.0],
            "separators do not mix"
        );
        let m = &scan("about 12\u{202F}400 kWh")[0];
        assert_eq!(
            (m.printed.as_str(), m.start, m.end),
            ("12400", 6, 6 + 2 + 3 + 3)
        );
    }

    #[test]
    fn units_with_symbols_stay_attached() {
        for (cell, value, unit) in [
            ("5 °C", 5.0, "°C"),
            ("-2.5 °F", -2.5, "°F"),
            ("3 ‰", 3.0, "‰"),
            ("40 µg/m³", 40.0, "µg/m³"),
        ] {
            let q = parse_quantity(cell).unwrap_or_else(|| panic!("{cell}"));
            assert_eq!((q.value, q.unit.as_deref()), (value, Some(unit)), "{cell}");
        }
        assert_eq!(parse_quantity("5 °C (est.)"), None);
    }

    #[test]
    fn scan_reads_the_minus_sign_like_a_hyphen() {
        assert_eq!(values("change \u{2212}3.5 and (\u{2212}2)"), [-3.5, -2.0]);
        assert_eq!(values("\u{2212}4%"), [-4.0]);
        assert_eq!(
            values("2021\u{2212}2024"),
            [2021.0, 2024.0],
            "glued to a number on the left: not a sign"
        );
        let m = &scan("x \u{2212}3")[0];
        assert_eq!((m.printed.as_str(), m.start, m.end), ("-3", 2, 6));
    }

    #[test]
    fn full_width_numbers_fold_to_ascii() {
        assert_eq!(fold_full_width("１２８．５"), "128.5");
        assert_eq!(
            fold_full_width("不超过１２０克，且任一"),
            "不超过120克，且任一"
        );
        assert_eq!(fold_full_width("８５％，－３．１"), "85%，-3.1");
        assert_eq!(fold_full_width("１，２５０"), "1,250");
        assert!(matches!(
            fold_full_width("plain 12.5"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            parse_quantity(&fold_full_width("１２．５")).map(|q| q.value),
            Some(12.5)
        );
    }

    #[test]
    fn note_markers_after_numbers() {
        for (cell, value, marker) in [
            ("91.4*", "91.4", Some("*")),
            ("12.4¹", "12.4", Some("¹")),
            ("61.5①", "61.5", Some("①")),
            ("70.5⑳", "70.5", Some("⑳")),
            ("3 ①", "3 ①", None),
            ("12.4[a]", "12.4", Some("[a]")),
            ("96.0 †", "96.0", Some("†")),
            ("42 min‡", "42 min", Some("‡")),
            ("12%**", "12%", Some("**")),
            ("12 m²", "12 m²", None),
            ("North", "North", None),
            ("*", "*", None),
            ("[a]", "[a]", None),
            ("76（暂定）", "76", Some("（暂定）")),
            ("88.5 (provisional)", "88.5", Some("(provisional)")),
            ("(3.1)", "(3.1)", None),
            ("12 (%)", "12 (%)", None),
            ("45 (12)", "45 (12)", None),
        ] {
            assert_eq!(split_note_marker(cell), (value, marker), "{cell}");
        }
    }

    #[test]
    fn decimal_marks_are_read_as_the_cell_shows_them() {
        use DecimalEvidence::*;
        for (cell, evidence) in [
            ("12", Neither),
            ("12 400", Neither),
            ("7,4", Comma),
            ("12,50", Comma),
            ("1.234,5", Comma),
            ("1.234.567", Comma),
            ("7.4", Point),
            ("1,234.5", Point),
            ("1,234,567", Point),
            ("1,250", Either),
            ("1.250", Either),
            ("-3,5 %", Comma),
            ("€1,5", Comma),
        ] {
            assert_eq!(decimal_evidence(cell), evidence, "{cell}");
        }
        let comma = |s: &str| parse_quantity_with(s, DecimalMark::Comma).map(|q| (q.value, q.unit));
        assert_eq!(comma("7,4"), Some((7.4, None)));
        assert_eq!(comma("1.250,5 t"), Some((1250.5, Some("t".into()))));
        assert_eq!(comma("1,250"), Some((1.25, None)));
        assert_eq!(comma("12 400,5"), Some((12400.5, None)));
        assert_eq!(comma("(3,5)"), Some((-3.5, None)));
        assert_eq!(comma("1.23,4"), None, "points group thousands in threes");
        assert_eq!(comma("n/a"), None);
        assert_eq!(
            parse_quantity_with("1,250", DecimalMark::Point).map(|q| q.value),
            Some(1250.0)
        );
    }

    #[test]
    fn leading_values_read_a_decimal_comma_but_not_a_thousands_group() {
        assert_eq!(leading_value("7,0 t/ha and"), Some((7.0, 3)));
        assert_eq!(leading_value("5,5 t/ha."), Some((5.5, 3)));
        assert_eq!(leading_value("1,250 units"), Some((1250.0, 5)));
        assert_eq!(leading_value("30 minutes"), Some((30.0, 2)));
        assert_eq!(leading_value("85%, and"), Some((85.0, 3)));
        assert_eq!(leading_value("about 30"), None);
    }

    #[test]
    fn units_of_several_words_the_vocabulary_knows() {
        let q = |s: &str| parse_quantity(s).map(|q| (q.value, q.unit));
        assert_eq!(q("40 per week"), Some((40.0, Some("per week".into()))));
        assert_eq!(q("21 ° C"), Some((21.0, Some("° C".into()))));
        assert_eq!(q("3 km"), Some((3.0, Some("km".into()))));
        assert_eq!(q("€1,200"), Some((1200.0, Some("€".into()))));
        assert_eq!(q("40 per fortnight"), None);
    }

    #[test]
    fn printing() {
        assert_eq!(canonical(79.0), "79");
        assert_eq!(canonical(-0.0), "0");
        assert_eq!(canonical(98.96666666666667), "98.96666666666667");
        assert_eq!(printed_forms(79.0), ["79"]);
        assert_eq!(
            printed_forms(250.0 / 3.0),
            ["83.3", "83.33", "83.333", "83.3333"]
        );
        assert_eq!(printed_forms(98.25), ["98.2", "98.25"]);
        assert_eq!(printed_forms(81.5), ["81.5"]);
    }
}
