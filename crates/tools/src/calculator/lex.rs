//! The calculator's tokenizer: a whitelist of tokens with character positions;
//! anything else is a `forbidden_token` (or a `syntax_error` for a near miss).

use super::columns::ColumnRef;
use super::expr::{BinOp, Function};
use super::{CalcError, MAX_MAGNITUDE};

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Token {
    Number(f64),
    True,
    False,
    Function(Function),
    Plus,
    Minus,
    Star,
    Slash,
    StarStar,
    LParen,
    RParen,
    Comma,
    Compare(BinOp),
    And,
    Or,
    Not,
    /// `[Name]` / `[Rows | Name]`: an index into the tokenizer's column references.
    Column(usize),
    /// The unit written right after a number (`5 min`, `2.5升`, `80 %`): an index into the units read.
    Unit(usize),
}

/// Tokens with their character positions, the column references `Token::Column` indexes and the units
/// `Token::Unit` indexes.
pub(super) type Tokens = (Vec<(Token, usize)>, Vec<ColumnRef>, Vec<String>);

/// Symbols a unit may be written with besides letters (`°C`, `%`, `‰`, `£`).
const UNIT_SYMBOLS: &[char] = &['°', '%', '％', '‰', '£', '€', '$', '¥', '￥'];

/// Whether `c` may be part of a unit written after a number.
fn unit_char(c: char) -> bool {
    c.is_alphabetic() || UNIT_SYMBOLS.contains(&c)
}

/// The unit word starting at `start` right after a number (spaces skipped): its text, where it begins and
/// ends, when it is a unit the vocabulary knows and no word of the calculator's own (`5 and …` is no unit).
fn unit_after_number(chars: &[char], start: usize) -> Option<(String, usize, usize)> {
    let begin = start + chars[start..].iter().take_while(|c| **c == ' ').count();
    let end = begin + chars[begin..].iter().take_while(|c| unit_char(**c)).count();
    if end == begin {
        return None;
    }
    let word: String = chars[begin..end].iter().collect();
    // After these spaces, what follows the word.
    let after = end
        + chars[end..]
            .iter()
            .take_while(|c| c.is_whitespace())
            .count();
    // `min` is minutes unless a call's `(` follows it (`5 min` against `5 * min(…)`).
    if keyword(&word).is_some()
        || (Function::from_name(&word).is_some() && chars.get(after) == Some(&'('))
    {
        return None;
    }
    // A digit or `_` glued on after the word (`5 min2`) makes it no unit: the word is read (and refused)
    // whole.
    if chars
        .get(end)
        .is_some_and(|c| c.is_alphanumeric() || *c == '_')
    {
        return None;
    }
    // An operand right after it (`2 % 3`) makes it an operator someone meant, not a limit's unit.
    if chars
        .get(after)
        .is_some_and(|c| c.is_ascii_digit() || matches!(c, '.' | '(' | '['))
    {
        return None;
    }
    forge_language::units::read(&word).map(|_| (word, begin, end))
}

/// Whether the calculator reads all of `text` as one unit after a number (`min`, `克`, `%`; not `mg/L`, which
/// it reads as `mg` and a division): the units a grammar may offer after a limit.
pub fn reads_as_unit(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    unit_after_number(&chars, 0).is_some_and(|(_, begin, end)| begin == 0 && end == chars.len())
}

/// Splits the input into whitelisted tokens with their character positions.
pub(super) fn tokenize(input: &str) -> Result<Tokens, CalcError> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut columns = Vec::new();
    let mut units = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        let next = chars.get(i + 1).copied();
        match c {
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '0'..='9' | '.' => {
                let (token, end) = number_token(&chars, start)?;
                tokens.push((token, start));
                i = end;
                // A limit written with its unit (`5 min`): the calculator converts it into the unit of
                // the column it is compared with.
                if let Some((unit, at, end)) = unit_after_number(&chars, i) {
                    tokens.push((Token::Unit(units.len()), at));
                    units.push(unit);
                    i = end;
                }
                continue;
            }
            c if c.is_alphanumeric() || c == '_' => {
                let (token, end) = word_token(&chars, start)?;
                tokens.push((token, start));
                i = end;
                continue;
            }
            '[' => {
                let (reference, end) = column_reference(&chars, start)?;
                tokens.push((Token::Column(columns.len()), start));
                columns.push(reference);
                i = end;
                continue;
            }
            ']' => {
                return Err(CalcError::Syntax {
                    position: start,
                    message: "']' without a '[' opening a column reference".to_owned(),
                });
            }
            '+' => tokens.push((Token::Plus, start)),
            '-' => tokens.push((Token::Minus, start)),
            '*' if next == Some('*') => {
                tokens.push((Token::StarStar, start));
                i += 1;
            }
            '*' => tokens.push((Token::Star, start)),
            '/' => tokens.push((Token::Slash, start)),
            '(' => tokens.push((Token::LParen, start)),
            ')' => tokens.push((Token::RParen, start)),
            ',' => tokens.push((Token::Comma, start)),
            '<' | '>' | '=' | '!' if next == Some('=') => {
                let op = match c {
                    '<' => BinOp::LessEqual,
                    '>' => BinOp::GreaterEqual,
                    '=' => BinOp::Equal,
                    _ => BinOp::NotEqual,
                };
                tokens.push((Token::Compare(op), start));
                i += 1;
            }
            '<' => tokens.push((Token::Compare(BinOp::Less), start)),
            '>' => tokens.push((Token::Compare(BinOp::Greater), start)),
            // Halves of `==` / `!=`: say what was probably meant.
            '=' => {
                return Err(CalcError::Syntax {
                    position: start,
                    message: "'=' is not an operator: compare with '=='".to_owned(),
                });
            }
            '!' => {
                return Err(CalcError::Syntax {
                    position: start,
                    message: "'!' is not an operator: negate with 'not', compare with '!='"
                        .to_owned(),
                });
            }
            other => {
                return Err(CalcError::ForbiddenToken {
                    token: other.to_string(),
                    position: start,
                });
            }
        }
        i += 1;
    }
    Ok((tokens, columns, units))
}

/// The number literal starting at `start` and the position after it (digits glued to a name, malformed and
/// too large literals refused).
fn number_token(chars: &[char], start: usize) -> Result<(Token, usize), CalcError> {
    let mut i = start;
    while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
        i += 1;
    }
    let text: String = chars[start..i].iter().collect();
    // Digits glued to a name (`2e5`, `3x`) are a forbidden name, not a number; glued to a unit (`2.5升`,
    // `5min`) they are a limit with its unit.
    let glued_unit = unit_after_number(chars, i).is_some_and(|(_, at, _)| at == i);
    if i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') && !glued_unit {
        return Err(forbidden_word(chars, start));
    }
    let value = parse_number(&text).ok_or_else(|| CalcError::Syntax {
        position: start,
        message: format!("malformed number {text:?}"),
    })?;
    if value.abs() > MAX_MAGNITUDE {
        return Err(CalcError::Overflow {
            position: start,
            message: format!("literal {text} exceeds {MAX_MAGNITUDE:e}"),
        });
    }
    Ok((Token::Number(value), i))
}

/// The word starting at `start` (a boolean, a logical operator or a whitelisted function) and the position
/// after it; any other word, dotted names included, is refused.
fn word_token(chars: &[char], start: usize) -> Result<(Token, usize), CalcError> {
    let mut i = start;
    while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
        i += 1;
    }
    // A dotted name (`os.system`, `mean.x`) is refused whole.
    if chars.get(i) == Some(&'.') {
        return Err(forbidden_word(chars, start));
    }
    let word: String = chars[start..i].iter().collect();
    let token = match keyword(&word) {
        Some(token) => token,
        None => match Function::from_name(&word) {
            Some(function) => Token::Function(function),
            None => {
                return Err(CalcError::ForbiddenToken {
                    token: word,
                    position: start,
                });
            }
        },
    };
    Ok((token, i))
}

/// The calculator's own words other than function names: `true`, `false`, `and`, `or`, `not`.
fn keyword(word: &str) -> Option<Token> {
    match word {
        "true" => Some(Token::True),
        "false" => Some(Token::False),
        "and" => Some(Token::And),
        "or" => Some(Token::Or),
        "not" => Some(Token::Not),
        _ => None,
    }
}

/// `[Name]` or `[Rows | Name]` starting at the `[` at `start`: the reference,
/// whitespace collapsed, and the position after its `]`.
pub(crate) fn column_reference(
    chars: &[char],
    start: usize,
) -> Result<(ColumnRef, usize), CalcError> {
    let syntax = |position: usize, message: String| CalcError::Syntax { position, message };
    let Some(length) = chars[start + 1..]
        .iter()
        .position(|&c| c == ']' || c == '[')
    else {
        return Err(syntax(
            chars.len(),
            format!("expected ']' to close the column reference '[' at position {start}"),
        ));
    };
    let close = start + 1 + length;
    if chars[close] == '[' {
        return Err(syntax(
            close,
            format!("expected ']' to close the column reference '[' at position {start}"),
        ));
    }
    let inner: String = chars[start + 1..close].iter().collect();
    let collapse = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let parts: Vec<String> = inner.split('|').map(collapse).collect();
    if parts.len() > 2 {
        return Err(syntax(
            start,
            "a column reference is [Name] or [Rows | Name], with one '|' at most".to_owned(),
        ));
    }
    if parts.iter().any(String::is_empty) {
        return Err(syntax(
            start,
            "empty column name: write a column reference as [Name] or [Rows | Name]".to_owned(),
        ));
    }
    let mut parts = parts.into_iter();
    let first = parts.next().unwrap_or_default();
    let reference = match parts.next() {
        Some(name) => ColumnRef::qualified(first, name),
        None => ColumnRef::new(first),
    };
    Ok((reference, close + 1))
}

/// The whole identifier-like word starting at `start` (e.g. `__import__`, `1e5`, `.real`, `os.system`).
fn forbidden_word(chars: &[char], start: usize) -> CalcError {
    let end = chars[start..]
        .iter()
        .position(|c| !(c.is_alphanumeric() || *c == '_' || *c == '.'))
        .map_or(chars.len(), |n| start + n);
    CalcError::ForbiddenToken {
        token: chars[start..end].iter().collect(),
        position: start,
    }
}

/// `12`, `12.5`, `.5`, `12.` — one dot at most, at least one digit.
fn parse_number(text: &str) -> Option<f64> {
    if text.matches('.').count() > 1 || !text.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<f64>().ok().filter(|x| x.is_finite())
}

pub(super) fn describe(token: Token) -> String {
    match token {
        Token::Number(x) => format!("number {x}"),
        Token::True => "'true'".into(),
        Token::False => "'false'".into(),
        Token::Function(function) => format!("'{function}'"),
        Token::Plus => "'+'".into(),
        Token::Minus => "'-'".into(),
        Token::Star => "'*'".into(),
        Token::Slash => "'/'".into(),
        Token::StarStar => "'**'".into(),
        Token::LParen => "'('".into(),
        Token::RParen => "')'".into(),
        Token::Comma => "','".into(),
        Token::Compare(op) => format!("'{}'", op.symbol()),
        Token::And => "'and'".into(),
        Token::Or => "'or'".into(),
        Token::Not => "'not'".into(),
        Token::Column(_) => "a column reference".into(),
        Token::Unit(_) => "a unit".into(),
    }
}

// Reading a reference on its own is lexing one token: it lives with the tokenizer, so `columns` (the
// reference's type and its sources) needs nothing from here.
impl ColumnRef {
    /// Reads a reference written on its own (`[Wait]`, ` [Clinic | Wait] `), as a chart's `column` argument is:
    /// the calculator's own spelling rules, nothing before or after it.
    pub fn parse(text: &str) -> Result<ColumnRef, CalcError> {
        let chars: Vec<char> = text.trim().chars().collect();
        if chars.first() != Some(&'[') {
            return Err(CalcError::Syntax {
                position: 0,
                message: "a column reference is [Name] or [Rows | Name]".to_owned(),
            });
        }
        let (reference, end) = column_reference(&chars, 0)?;
        if end != chars.len() {
            return Err(CalcError::Syntax {
                position: end,
                message: "nothing may follow a column reference's ']'".to_owned(),
            });
        }
        Ok(reference)
    }
}
