//! GBNF text → [`Grammar`]: llama.cpp's syntax (literals with escapes, classes, `.`, groups, `* + ? {m,n}`,
//! `#` comments, rules over several lines inside groups), read into the one model. Token terminals (`<…>`)
//! are refused rather than guessed; a repetition binds to the symbol before it, a whole literal included,
//! as in llama.cpp.

use super::{GbnfError, Grammar, Node};

/// Larger repetition bounds than llama.cpp would expand in reasonable memory are refused.
const MAX_REPEAT: u32 = 10_000;

pub(super) fn parse(gbnf: &str) -> Result<Grammar, GbnfError> {
    let chars: Vec<char> = gbnf.chars().collect();
    let mut p = Parser {
        src: &chars,
        pos: 0,
    };
    let mut rules: Vec<(String, Node)> = Vec::new();
    p.space(true);
    while p.peek().is_some() {
        let (name, body) = p.rule()?;
        if rules.iter().any(|(n, _)| *n == name) {
            return Err(GbnfError::DuplicateRule(name));
        }
        rules.push((name, body));
    }
    let root = rules
        .iter()
        .position(|(n, _)| n == "root")
        .ok_or(GbnfError::NoRoot)?;
    let (_, root_body) = rules.remove(root);
    let mut grammar = Grammar::new(root_body);
    for (name, body) in rules {
        grammar.define(&name, body);
    }
    grammar.check()?;
    Ok(grammar)
}

struct Parser<'a> {
    src: &'a [char],
    pos: usize,
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.src.get(self.pos).copied()
    }
    fn at(&self, off: usize) -> Option<char> {
        self.src.get(self.pos + off).copied()
    }
    fn line(&self) -> usize {
        1 + self.src[..self.pos.min(self.src.len())]
            .iter()
            .filter(|&&c| c == '\n')
            .count()
    }
    fn err(&self, message: impl Into<String>) -> GbnfError {
        GbnfError::Parse {
            line: self.line(),
            message: message.into(),
        }
    }

    /// Blanks and comments; newlines too where a rule may go on (`newline_ok`: inside a group, between rules).
    fn space(&mut self, newline_ok: bool) {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' => self.pos += 1,
                '\r' | '\n' if newline_ok => self.pos += 1,
                '#' => {
                    while self.peek().is_some_and(|c| c != '\r' && c != '\n') {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn name(&mut self) -> Result<String, GbnfError> {
        let start = self.pos;
        while self.peek().is_some_and(is_word) {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(self.err(format!(
                "expected a rule name, found {:?}",
                self.peek().unwrap_or('\0')
            )));
        }
        Ok(self.src[start..self.pos].iter().collect())
    }

    fn int(&mut self) -> Result<u32, GbnfError> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let text: String = self.src[start..self.pos].iter().collect();
        text.parse().map_err(|_| self.err("expected an integer"))
    }

    fn hex(&mut self, digits: usize) -> Result<char, GbnfError> {
        let text: String = self
            .src
            .get(self.pos..self.pos + digits)
            .map(|s| s.iter().collect())
            .unwrap_or_default();
        let value = u32::from_str_radix(&text, 16)
            .map_err(|_| self.err(format!("expected {digits} hex digits")))?;
        self.pos += digits;
        char::from_u32(value).ok_or_else(|| self.err(format!("\\x{value:X} is not a character")))
    }

    /// One (possibly escaped) character of a literal or a class.
    fn char(&mut self) -> Result<char, GbnfError> {
        let c = self
            .peek()
            .ok_or_else(|| self.err("unexpected end of input"))?;
        self.pos += 1;
        if c != '\\' {
            return Ok(c);
        }
        let e = self
            .peek()
            .ok_or_else(|| self.err("unexpected end of input after \\"))?;
        self.pos += 1;
        match e {
            'x' => self.hex(2),
            'u' => self.hex(4),
            'U' => self.hex(8),
            't' => Ok('\t'),
            'r' => Ok('\r'),
            'n' => Ok('\n'),
            '\\' | '"' | '[' | ']' | '-' => Ok(e),
            other => Err(self.err(format!("unknown escape \\{other}"))),
        }
    }

    fn rule(&mut self) -> Result<(String, Node), GbnfError> {
        let name = self.name()?;
        self.space(false);
        if !(self.peek() == Some(':') && self.at(1) == Some(':') && self.at(2) == Some('=')) {
            return Err(self.err(format!("expected ::= after {name:?}")));
        }
        self.pos += 3;
        self.space(true);
        let body = self.alternates(false)?;
        match self.peek() {
            None => {}
            Some('\r') => self.pos += if self.at(1) == Some('\n') { 2 } else { 1 },
            Some('\n') => self.pos += 1,
            Some(c) => return Err(self.err(format!("expected the end of the rule, found {c:?}"))),
        }
        self.space(true);
        Ok((name, body))
    }

    fn alternates(&mut self, nested: bool) -> Result<Node, GbnfError> {
        let mut alts = vec![self.sequence(nested)?];
        while self.peek() == Some('|') {
            self.pos += 1;
            self.space(true);
            alts.push(self.sequence(nested)?);
        }
        Ok(if alts.len() == 1 {
            alts.pop().expect("one")
        } else {
            Node::Alt(alts)
        })
    }

    fn sequence(&mut self, nested: bool) -> Result<Node, GbnfError> {
        let mut seq: Vec<Node> = Vec::new();
        while let Some(c) = self.peek() {
            match c {
                '"' => {
                    self.pos += 1;
                    let mut text = String::new();
                    while self.peek() != Some('"') {
                        if self.peek().is_none() {
                            return Err(self.err("unterminated string literal"));
                        }
                        text.push(self.char()?);
                    }
                    self.pos += 1;
                    seq.push(Node::Lit(text));
                }
                '[' => {
                    self.pos += 1;
                    let negated = self.peek() == Some('^');
                    if negated {
                        self.pos += 1;
                    }
                    let mut ranges = Vec::new();
                    while self.peek() != Some(']') {
                        if self.peek().is_none() {
                            return Err(self.err("unterminated character class"));
                        }
                        let lo = self.char()?;
                        let hi = if self.peek() == Some('-') && self.at(1).is_some_and(|c| c != ']')
                        {
                            self.pos += 1;
                            self.char()?
                        } else {
                            lo
                        };
                        ranges.push((lo, hi));
                    }
                    self.pos += 1;
                    seq.push(Node::Class { negated, ranges });
                }
                '.' => {
                    self.pos += 1;
                    seq.push(Node::Class {
                        negated: true,
                        ranges: Vec::new(),
                    });
                }
                '<' | '!' => return Err(self.err("token terminals (<…>) are not supported")),
                '(' => {
                    self.pos += 1;
                    self.space(true);
                    let group = self.alternates(true)?;
                    if self.peek() != Some(')') {
                        return Err(self.err("expected ')'"));
                    }
                    self.pos += 1;
                    seq.push(group);
                }
                '*' | '+' | '?' => {
                    self.pos += 1;
                    let (min, max) = match c {
                        '*' => (0, None),
                        '+' => (1, None),
                        _ => (0, Some(1)),
                    };
                    self.repeat(&mut seq, min, max)?;
                }
                '{' => {
                    self.pos += 1;
                    self.space(nested);
                    let min = self.int()?;
                    self.space(nested);
                    let max = match self.peek() {
                        Some('}') => Some(min),
                        Some(',') => {
                            self.pos += 1;
                            self.space(nested);
                            let max = if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                                Some(self.int()?)
                            } else {
                                None
                            };
                            self.space(nested);
                            if self.peek() != Some('}') {
                                return Err(self.err("expected '}'"));
                            }
                            max
                        }
                        _ => return Err(self.err("expected ',' or '}' in a repetition")),
                    };
                    self.pos += 1;
                    self.repeat(&mut seq, min, max)?;
                }
                c if is_word(c) => seq.push(Node::Ref(self.name()?)),
                _ => break,
            }
            self.space(nested);
        }
        Ok(if seq.len() == 1 {
            seq.pop().expect("one")
        } else {
            Node::Seq(seq)
        })
    }

    /// Wraps the last symbol of `seq` in `{min,max}`.
    fn repeat(&mut self, seq: &mut Vec<Node>, min: u32, max: Option<u32>) -> Result<(), GbnfError> {
        let last = seq
            .pop()
            .ok_or_else(|| self.err("a repetition needs something before it"))?;
        if min > MAX_REPEAT || max.is_some_and(|m| m > MAX_REPEAT || m < min) {
            return Err(self.err(format!("unsupported repetition {{{min},{max:?}}}")));
        }
        seq.push(Node::Repeat {
            node: Box::new(last),
            min,
            max,
        });
        Ok(())
    }
}
