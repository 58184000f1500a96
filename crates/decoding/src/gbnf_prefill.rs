//! A GBNF grammar advanced past a prefill: the grammar an inference server must enforce on the text it
//! generates *after* the assistant text the runner wrote itself (guided mode's JSON prefix).
//!
//! In process the engine feeds the prefill through llama.cpp's grammar before decoding. A server only
//! constrains what it generates, so the backend sends this derived grammar instead: it accepts `s` exactly
//! when the original grammar accepts `prefill + s`. It parses GBNF the way llama.cpp does (literals, classes,
//! `.`, groups, `* + ? {m,n}`), runs the same stack recognizer over the prefill, and writes each surviving
//! stack back out as one alternative of a new `root`. Not a GBNF emitter for schemas (that is `grammar`), and
//! token terminals (`<…>`) are refused rather than guessed.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

/// Surviving recognizer stacks beyond this mean the grammar is too ambiguous to rewrite sensibly.
const MAX_STACKS: usize = 4096;
/// Rule expansions while looking for the next terminal; more means left recursion.
const MAX_EXPANSION_DEPTH: usize = 512;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GbnfError {
    #[error("GBNF parse error at line {line}: {message}")]
    Parse { line: usize, message: String },
    #[error("GBNF refers to rule {0:?}, which is not defined")]
    UndefinedRule(String),
    #[error("GBNF has no `root` rule")]
    NoRoot,
    #[error("GBNF rule {0:?} is left-recursive")]
    LeftRecursion(String),
    #[error("the prefill does not fit the grammar at character {at} ({context:?})")]
    PrefillRejected { at: usize, context: String },
    #[error("the grammar is too ambiguous after the prefill ({0} parallel states)")]
    TooAmbiguous(usize),
}

/// One terminal: a set of code points (`negated` = everything except `ranges`; `.` is negated and empty).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct CharSet {
    negated: bool,
    ranges: Vec<(u32, u32)>,
}

impl CharSet {
    fn single(c: u32) -> Self {
        Self { negated: false, ranges: vec![(c, c)] }
    }
    fn matches(&self, c: u32) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != self.negated
    }
    fn as_single(&self) -> Option<u32> {
        match (self.negated, self.ranges.as_slice()) {
            (false, [(lo, hi)]) if lo == hi => Some(*lo),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Elem {
    Char(CharSet),
    Ref(usize),
}

type Alt = Vec<Elem>;

/// A parsed grammar in llama.cpp's normal form: every rule a list of alternatives of terminals and refs.
#[derive(Debug, Default)]
struct Grammar {
    names: Vec<String>,
    rules: Vec<Option<Vec<Alt>>>,
    ids: HashMap<String, usize>,
}

impl Grammar {
    fn symbol(&mut self, name: &str) -> usize {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len();
        self.names.push(name.to_string());
        self.rules.push(None);
        self.ids.insert(name.to_string(), id);
        id
    }

    /// A fresh rule id for a group or repetition inside `base`. Its name holds a `#`, which no parsed name
    /// can, so a rule defined later in the text never takes it over; `write` gives it a real name.
    fn generated(&mut self, base: &str) -> usize {
        let name = format!("{base}#{}", self.names.len());
        self.symbol(&name)
    }
}

struct Parser<'a> {
    src: &'a [char],
    pos: usize,
    g: Grammar,
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
        1 + self.src[..self.pos.min(self.src.len())].iter().filter(|&&c| c == '\n').count()
    }
    fn err(&self, message: impl Into<String>) -> GbnfError {
        GbnfError::Parse { line: self.line(), message: message.into() }
    }

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
            return Err(self.err(format!("expected a rule name, found {:?}", self.peek().unwrap_or('\0'))));
        }
        Ok(self.src[start..self.pos].iter().collect())
    }

    fn int(&mut self) -> Result<u64, GbnfError> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let text: String = self.src[start..self.pos].iter().collect();
        text.parse().map_err(|_| self.err("expected an integer"))
    }

    fn hex(&mut self, digits: usize) -> Result<u32, GbnfError> {
        let text: String = self.src.get(self.pos..self.pos + digits).map(|s| s.iter().collect()).unwrap_or_default();
        let value = u32::from_str_radix(&text, 16).map_err(|_| self.err(format!("expected {digits} hex digits")))?;
        self.pos += digits;
        Ok(value)
    }

    /// One (possibly escaped) character of a literal or a class.
    fn char(&mut self) -> Result<u32, GbnfError> {
        let c = self.peek().ok_or_else(|| self.err("unexpected end of input"))?;
        self.pos += 1;
        if c != '\\' {
            return Ok(c as u32);
        }
        let e = self.peek().ok_or_else(|| self.err("unexpected end of input after \\"))?;
        self.pos += 1;
        match e {
            'x' => self.hex(2),
            'u' => self.hex(4),
            'U' => self.hex(8),
            't' => Ok('\t' as u32),
            'r' => Ok('\r' as u32),
            'n' => Ok('\n' as u32),
            '\\' | '"' | '[' | ']' | '-' => Ok(e as u32),
            other => Err(self.err(format!("unknown escape \\{other}"))),
        }
    }

    fn rule(&mut self) -> Result<(), GbnfError> {
        let name = self.name()?;
        self.space(false);
        if !(self.peek() == Some(':') && self.at(1) == Some(':') && self.at(2) == Some('=')) {
            return Err(self.err(format!("expected ::= after {name:?}")));
        }
        self.pos += 3;
        self.space(true);
        let id = self.g.symbol(&name);
        let alts = self.alternates(&name, false)?;
        self.g.rules[id] = Some(alts);
        match self.peek() {
            None => {}
            Some('\r') => self.pos += if self.at(1) == Some('\n') { 2 } else { 1 },
            Some('\n') => self.pos += 1,
            Some(c) => return Err(self.err(format!("expected the end of the rule, found {c:?}"))),
        }
        self.space(true);
        Ok(())
    }

    fn alternates(&mut self, rule: &str, nested: bool) -> Result<Vec<Alt>, GbnfError> {
        let mut alts = vec![self.sequence(rule, nested)?];
        while self.peek() == Some('|') {
            self.pos += 1;
            self.space(true);
            alts.push(self.sequence(rule, nested)?);
        }
        Ok(alts)
    }

    fn sequence(&mut self, rule: &str, nested: bool) -> Result<Alt, GbnfError> {
        let mut seq: Alt = Vec::new();
        let mut last_start: Option<usize> = None;
        while let Some(c) = self.peek() {
            match c {
                '"' => {
                    self.pos += 1;
                    last_start = Some(seq.len());
                    while self.peek() != Some('"') {
                        if self.peek().is_none() {
                            return Err(self.err("unterminated string literal"));
                        }
                        let ch = self.char()?;
                        seq.push(Elem::Char(CharSet::single(ch)));
                    }
                    self.pos += 1;
                    self.space(nested);
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
                        let hi = if self.peek() == Some('-') && self.at(1).is_some_and(|c| c != ']') {
                            self.pos += 1;
                            self.char()?
                        } else {
                            lo
                        };
                        ranges.push((lo, hi));
                    }
                    self.pos += 1;
                    last_start = Some(seq.len());
                    seq.push(Elem::Char(CharSet { negated, ranges }));
                    self.space(nested);
                }
                '.' => {
                    self.pos += 1;
                    last_start = Some(seq.len());
                    seq.push(Elem::Char(CharSet { negated: true, ranges: Vec::new() }));
                    self.space(nested);
                }
                '<' | '!' => return Err(self.err("token terminals (<…>) are not supported after a prefill")),
                '(' => {
                    self.pos += 1;
                    self.space(true);
                    let id = self.g.generated(rule);
                    let alts = self.alternates(rule, true)?;
                    self.g.rules[id] = Some(alts);
                    if self.peek() != Some(')') {
                        return Err(self.err("expected ')'"));
                    }
                    self.pos += 1;
                    last_start = Some(seq.len());
                    seq.push(Elem::Ref(id));
                    self.space(nested);
                }
                '*' | '+' | '?' => {
                    self.pos += 1;
                    self.space(nested);
                    let (min, max) = match c {
                        '*' => (0, None),
                        '+' => (1, None),
                        _ => (0, Some(1)),
                    };
                    self.repeat(rule, &mut seq, last_start, min, max)?;
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
                            let max = if self.peek().is_some_and(|c| c.is_ascii_digit()) { Some(self.int()?) } else { None };
                            self.space(nested);
                            if self.peek() != Some('}') {
                                return Err(self.err("expected '}'"));
                            }
                            max
                        }
                        _ => return Err(self.err("expected ',' or '}' in a repetition")),
                    };
                    self.pos += 1;
                    self.space(nested);
                    self.repeat(rule, &mut seq, last_start, min, max)?;
                }
                c if is_word(c) => {
                    let name = self.name()?;
                    let id = self.g.symbol(&name);
                    last_start = Some(seq.len());
                    seq.push(Elem::Ref(id));
                    self.space(nested);
                }
                _ => break,
            }
        }
        Ok(seq)
    }

    /// Rewrite the last symbol for `{min,max}` exactly as llama.cpp does: `min` copies, then a chain of
    /// optional rules (`S' ::= S S' | ""` when unbounded).
    fn repeat(&mut self, rule: &str, seq: &mut Alt, last: Option<usize>, min: u64, max: Option<u64>) -> Result<(), GbnfError> {
        let start = last.filter(|&s| s < seq.len()).ok_or_else(|| self.err("a repetition needs something before it"))?;
        if min > 10_000 || max.is_some_and(|m| m > 10_000 || m < min) {
            return Err(self.err(format!("unsupported repetition {{{min},{max:?}}}")));
        }
        let symbol: Alt = seq[start..].to_vec();
        seq.truncate(start);
        for _ in 0..min {
            seq.extend(symbol.iter().cloned());
        }
        let optional = match max {
            None => {
                let id = self.g.generated(rule);
                let mut again = symbol.clone();
                again.push(Elem::Ref(id));
                self.g.rules[id] = Some(vec![again, Vec::new()]);
                Some(id)
            }
            Some(max) => {
                let mut next: Option<usize> = None;
                for _ in 0..(max - min) {
                    let id = self.g.generated(rule);
                    let mut body = symbol.clone();
                    if let Some(n) = next {
                        body.push(Elem::Ref(n));
                    }
                    self.g.rules[id] = Some(vec![body, Vec::new()]);
                    next = Some(id);
                }
                next
            }
        };
        if let Some(id) = optional {
            seq.push(Elem::Ref(id));
        }
        Ok(())
    }
}

fn parse(gbnf: &str) -> Result<Grammar, GbnfError> {
    let chars: Vec<char> = gbnf.chars().collect();
    let mut p = Parser { src: &chars, pos: 0, g: Grammar::default() };
    p.space(true);
    while p.peek().is_some() {
        p.rule()?;
    }
    let g = p.g;
    if let Some(i) = g.rules.iter().position(Option::is_none) {
        return Err(GbnfError::UndefinedRule(g.names[i].clone()));
    }
    if !g.ids.contains_key("root") {
        return Err(GbnfError::NoRoot);
    }
    Ok(g)
}

/// A position in the grammar: rule, alternative, index of the next element.
type Frame = (usize, usize, usize);
/// Bottom first; the last frame's next element is what must come next. Empty = the grammar is complete.
type Stack = Vec<Frame>;

/// Expand `stack` until its top is a terminal (or it is empty), pushing every result into `out`.
fn expand(g: &Grammar, mut stack: Stack, depth: usize, out: &mut BTreeSet<Stack>) -> Result<(), GbnfError> {
    // Drop finished frames.
    while let Some(&(r, a, p)) = stack.last() {
        if p < alt(g, r, a).len() {
            break;
        }
        stack.pop();
    }
    let Some(&(r, a, p)) = stack.last() else {
        out.insert(stack);
        return Ok(());
    };
    match &alt(g, r, a)[p] {
        Elem::Char(_) => {
            out.insert(stack);
        }
        Elem::Ref(target) => {
            if depth > MAX_EXPANSION_DEPTH {
                return Err(GbnfError::LeftRecursion(g.names[*target].clone()));
            }
            let mut rest = stack.clone();
            rest.last_mut().expect("non-empty").2 += 1;
            for i in 0..g.rules[*target].as_ref().expect("checked at parse").len() {
                let mut next = rest.clone();
                next.push((*target, i, 0));
                expand(g, next, depth + 1, out)?;
            }
        }
    }
    if out.len() > MAX_STACKS {
        return Err(GbnfError::TooAmbiguous(out.len()));
    }
    Ok(())
}

fn alt(g: &Grammar, rule: usize, alt: usize) -> &Alt {
    &g.rules[rule].as_ref().expect("checked at parse")[alt]
}

/// The grammar that accepts `s` exactly when `gbnf` accepts `prefill + s` (unchanged when `prefill` is empty).
pub fn resume_after(gbnf: &str, prefill: &str) -> Result<String, GbnfError> {
    let g = parse(gbnf)?;
    if prefill.is_empty() {
        return Ok(gbnf.to_string());
    }
    let root = g.ids["root"];
    let mut stacks = BTreeSet::new();
    for i in 0..g.rules[root].as_ref().expect("checked").len() {
        expand(&g, vec![(root, i, 0)], 0, &mut stacks)?;
    }
    for (at, c) in prefill.chars().enumerate() {
        let mut next = BTreeSet::new();
        for stack in &stacks {
            let Some(&(r, a, p)) = stack.last() else { continue };
            if let Elem::Char(set) = &alt(&g, r, a)[p]
                && set.matches(c as u32)
            {
                let mut advanced = stack.clone();
                advanced.last_mut().expect("non-empty").2 += 1;
                expand(&g, advanced, 0, &mut next)?;
            }
        }
        if next.is_empty() {
            let context: String = prefill.chars().skip(at.saturating_sub(24)).take(at.min(24) + 1).collect();
            return Err(GbnfError::PrefillRejected { at, context });
        }
        stacks = next;
    }
    Ok(write(&g, &stacks))
}

/// The surviving stacks as the alternatives of a new `root` (top frame's remainder first), followed by every
/// rule of the original grammar; the old `root` is renamed because a stack may still refer to it.
fn write(g: &Grammar, stacks: &BTreeSet<Stack>) -> String {
    let mut taken: std::collections::HashSet<String> = g.names.iter().filter(|n| !n.contains('#')).cloned().collect();
    let mut fresh = |wanted: String| {
        let mut name = wanted.clone();
        let mut n = 1;
        while taken.contains(&name) {
            name = format!("{wanted}-{n}");
            n += 1;
        }
        taken.insert(name.clone());
        name
    };
    let root = g.ids["root"];
    let mut names: Vec<String> = g.names.clone();
    names[root] = fresh("root-whole".to_string());
    for name in names.iter_mut().filter(|n| n.contains('#')) {
        *name = fresh(name.replace('#', "-g"));
    }

    let mut out = String::from("root ::= ");
    let alternatives: Vec<String> = stacks
        .iter()
        .map(|stack| {
            let elems: Vec<&Elem> = stack.iter().rev().flat_map(|&(r, a, p)| alt(g, r, a)[p..].iter()).collect();
            write_seq(&names, &elems)
        })
        .collect();
    out.push_str(&alternatives.join(" | "));
    out.push('\n');
    for (id, rule) in g.rules.iter().enumerate() {
        let alts: Vec<String> =
            rule.as_ref().expect("checked").iter().map(|a| write_seq(&names, &a.iter().collect::<Vec<_>>())).collect();
        let _ = writeln!(out, "{} ::= {}", names[id], alts.join(" | "));
    }
    out
}

fn write_seq(names: &[String], elems: &[&Elem]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut literal = String::new();
    for e in elems {
        match e {
            Elem::Char(set) if set.as_single().is_some() => escape_into(&mut literal, set.as_single().expect("single"), false),
            other => {
                if !literal.is_empty() {
                    parts.push(format!("\"{}\"", std::mem::take(&mut literal)));
                }
                parts.push(match other {
                    Elem::Ref(id) => names[*id].clone(),
                    Elem::Char(set) => write_set(set),
                });
            }
        }
    }
    if !literal.is_empty() {
        parts.push(format!("\"{literal}\""));
    }
    if parts.is_empty() { "\"\"".to_string() } else { parts.join(" ") }
}

fn write_set(set: &CharSet) -> String {
    if set.negated && set.ranges.is_empty() {
        return ".".to_string();
    }
    let mut s = String::from("[");
    if set.negated {
        s.push('^');
    }
    for &(lo, hi) in &set.ranges {
        escape_into(&mut s, lo, true);
        if hi != lo {
            s.push('-');
            escape_into(&mut s, hi, true);
        }
    }
    s.push(']');
    s
}

fn escape_into(out: &mut String, c: u32, in_class: bool) {
    match char::from_u32(c) {
        Some('"') => out.push_str("\\\""),
        Some('\\') => out.push_str("\\\\"),
        Some(']') if in_class => out.push_str("\\]"),
        Some('[') if in_class => out.push_str("\\["),
        Some('-') if in_class => out.push_str("\\-"),
        Some('^') if in_class => out.push_str("\\x5E"),
        Some('\n') => out.push_str("\\n"),
        Some('\r') => out.push_str("\\r"),
        Some('\t') => out.push_str("\\t"),
        Some(ch) if (ch as u32) >= 0x20 && ch as u32 != 0x7F => out.push(ch),
        _ if c <= 0xFF => {
            let _ = write!(out, "\\x{c:02X}");
        }
        _ if c <= 0xFFFF => {
            let _ = write!(out, "\\u{c:04X}");
        }
        _ => {
            let _ = write!(out, "\\U{c:08X}");
        }
    }
}

/// Whether `gbnf` accepts `text` completely (the same recognizer; used by tests and as a self-check).
pub fn accepts(gbnf: &str, text: &str) -> Result<bool, GbnfError> {
    let g = parse(gbnf)?;
    let root = g.ids["root"];
    let mut stacks = BTreeSet::new();
    for i in 0..g.rules[root].as_ref().expect("checked").len() {
        expand(&g, vec![(root, i, 0)], 0, &mut stacks)?;
    }
    for c in text.chars() {
        let mut next = BTreeSet::new();
        for stack in &stacks {
            let Some(&(r, a, p)) = stack.last() else { continue };
            if let Elem::Char(set) = &alt(&g, r, a)[p]
                && set.matches(c as u32)
            {
                let mut advanced = stack.clone();
                advanced.last_mut().expect("non-empty").2 += 1;
                expand(&g, advanced, 0, &mut next)?;
            }
        }
        if next.is_empty() {
            return Ok(false);
        }
        stacks = next;
    }
    Ok(stacks.iter().any(Vec::is_empty))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DECISION: &str = r#"
# a decision in the shape the runner's grammars have
root ::= "{" space "\"type\"" space ":" space "\"action\"" "," space "\"tool\":" tool "," "\"arguments\":{" args "}}" space
tool ::= "\"calc\"" | "\"search\""
args ::= "\"query\":\"" char{1,8} "\"" ( ",\"top_k\":" [1-9] )?
char ::= [^"\\\x7F\x00-\x1F]
space ::= ""
"#;

    #[test]
    fn continuation_accepts_exactly_the_suffixes() {
        let prefix = r#"{"type":"action","tool":"search","arguments":{"query":""#;
        let rest = resume_after(DECISION, prefix).unwrap();
        for suffix in [r#"abc"}}"#, r#"abcdefgh","top_k":3}}"#, r#"a","top_k":9}}"#] {
            assert!(accepts(DECISION, &format!("{prefix}{suffix}")).unwrap(), "{suffix}");
            assert!(accepts(&rest, suffix).unwrap(), "continuation rejects {suffix}\n{rest}");
        }
        for suffix in [r#""}}"#, r#"abcdefghi"}}"#, r#"a","top_k":0}}"#, r#"a"}"#, r#"a"}}x"#] {
            assert!(!accepts(DECISION, &format!("{prefix}{suffix}")).unwrap(), "{suffix}");
            assert!(!accepts(&rest, suffix).unwrap(), "continuation accepts {suffix}\n{rest}");
        }
    }

    #[test]
    fn a_prefill_inside_a_bounded_repetition_keeps_the_remaining_budget() {
        let prefix = r#"{"type":"action","tool":"calc","arguments":{"query":"abcde"#;
        let rest = resume_after(DECISION, prefix).unwrap();
        assert!(accepts(&rest, r#"fgh"}}"#).unwrap());
        assert!(!accepts(&rest, r#"fghi"}}"#).unwrap(), "only three more characters fit\n{rest}");
    }

    #[test]
    fn empty_prefill_leaves_the_grammar_unchanged() {
        assert_eq!(resume_after(DECISION, "").unwrap(), DECISION);
    }

    #[test]
    fn a_prefill_the_grammar_rejects_is_a_typed_error_with_its_position() {
        let err = resume_after(DECISION, r#"{"type":"final""#).unwrap_err();
        assert!(matches!(err, GbnfError::PrefillRejected { at: 9, .. }), "{err}");
    }

    #[test]
    fn bad_grammars_are_typed_errors() {
        assert!(matches!(parse("root ::= missing"), Err(GbnfError::UndefinedRule(n)) if n == "missing"));
        assert!(matches!(parse("start ::= \"a\""), Err(GbnfError::NoRoot)));
        assert!(matches!(parse("root ::= \"a"), Err(GbnfError::Parse { line: 1, .. })));
        assert!(matches!(parse("root ::= \"a\"\nx ::= [a"), Err(GbnfError::Parse { line: 2, .. })));
        assert!(matches!(parse("root ::= <think>"), Err(GbnfError::Parse { .. })));
        assert!(matches!(resume_after("root ::= root \"a\" | \"b\"", "b"), Err(GbnfError::LeftRecursion(_))));
    }

    #[test]
    fn escapes_and_classes_survive_the_round_trip() {
        let g = "root ::= \"\\\"\" [\\]\\-^a-c] \"\\n\" [^\\x00-\\x1F]* \"\\u00e9\"";
        let rest = resume_after(g, "\"").unwrap();
        for s in ["]\nxyz\u{e9}", "-\n\u{e9}", "^\n\u{e9}", "b\nQ\u{e9}"] {
            assert!(accepts(g, &format!("\"{s}")).unwrap(), "{s:?}");
            assert!(accepts(&rest, s).unwrap(), "{s:?}\n{rest}");
        }
        assert!(!accepts(&rest, "d\n\u{e9}").unwrap());
        assert!(!accepts(&rest, "a\n\u{1}\u{e9}").unwrap());
    }

    #[test]
    fn generated_rules_never_clash_with_rules_defined_later() {
        // `x{2,3}` makes helper rules; a later rule with the helper-like name must stay itself.
        let g = "root ::= \"a\" item{2,3} root-g1 root-g2\nitem ::= \"x\"\nroot-g1 ::= \"y\"\nroot-g2 ::= \"z\"";
        let rest = resume_after(g, "a").unwrap();
        assert!(accepts(g, "axxyz").unwrap() && accepts(&rest, "xxyz").unwrap() && accepts(&rest, "xxxyz").unwrap(), "{rest}");
        assert!(!accepts(&rest, "xyz").unwrap() && !accepts(&rest, "xxxxyz").unwrap(), "{rest}");
    }

    #[test]
    fn a_complete_prefill_leaves_only_the_empty_string() {
        let rest = resume_after("root ::= \"ab\" | \"abc\"", "ab").unwrap();
        assert!(accepts(&rest, "").unwrap());
        assert!(accepts(&rest, "c").unwrap());
        assert!(!accepts(&rest, "cc").unwrap());
    }
}
