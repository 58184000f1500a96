//! A small GBNF grammar model: build rules in Rust, render them as llama.cpp's GBNF text, and check a
//! string against them without llama.cpp (tests, and the server backend that sends GBNF over HTTP).
//!
//! It covers exactly what the decision grammars need — literals, character classes, sequences,
//! alternatives, bounded repetition and rule references — and nothing of JSON or decisions (that is
//! `grammar`). The checker is a plain set-of-positions matcher: fine for the short strings it sees.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

/// One grammar expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// Exact text.
    Lit(String),
    /// One character from (or, negated, outside) the given inclusive ranges.
    Class { negated: bool, ranges: Vec<(char, char)> },
    /// Another rule, by name.
    Ref(String),
    Seq(Vec<Node>),
    /// One of the alternatives (must not be empty).
    Alt(Vec<Node>),
    /// `node{min,max}`; `max: None` is unbounded.
    Repeat { node: Box<Node>, min: u32, max: Option<u32> },
}

impl Node {
    pub fn lit(text: impl Into<String>) -> Node {
        Node::Lit(text.into())
    }
    pub fn rule(name: impl Into<String>) -> Node {
        Node::Ref(name.into())
    }
    pub fn seq(items: impl IntoIterator<Item = Node>) -> Node {
        Node::Seq(items.into_iter().collect())
    }
    /// Alternatives of literal texts (deduplicated, in order).
    pub fn one_of_texts<S: AsRef<str>>(texts: impl IntoIterator<Item = S>) -> Node {
        let mut seen = Vec::new();
        for text in texts {
            let text = text.as_ref().to_owned();
            if !seen.contains(&text) {
                seen.push(text);
            }
        }
        Node::Alt(seen.into_iter().map(Node::Lit).collect())
    }
    pub fn opt(self) -> Node {
        Node::Repeat { node: Box::new(self), min: 0, max: Some(1) }
    }
    pub fn star(self) -> Node {
        Node::Repeat { node: Box::new(self), min: 0, max: None }
    }
    pub fn repeat(self, min: u32, max: u32) -> Node {
        Node::Repeat { node: Box::new(self), min, max: Some(max) }
    }
    /// Any character except the listed ones and the control characters (`\x00-\x1F`, `\x7F`).
    pub fn char_except(excluded: &str) -> Node {
        let mut ranges: Vec<(char, char)> = excluded.chars().map(|c| (c, c)).collect();
        ranges.push(('\u{0}', '\u{1f}'));
        ranges.push(('\u{7f}', '\u{7f}'));
        Node::Class { negated: true, ranges }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GbnfError {
    #[error("rule {0:?} is referenced but not defined")]
    UndefinedRule(String),
    #[error("rule {0:?} is defined twice")]
    DuplicateRule(String),
    #[error("rule {0:?} has an empty alternative list")]
    EmptyAlternatives(String),
    #[error("rule name {0:?} is not [a-z0-9-]+")]
    BadName(String),
}

/// A set of named rules; the first one is `root`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grammar {
    rules: Vec<(String, Node)>,
}

impl Grammar {
    pub fn new(root: Node) -> Grammar {
        Grammar { rules: vec![("root".into(), root)] }
    }

    /// Adds a rule unless one with the same name and body exists (shared helpers are added by several
    /// builders). A different body under the same name is an error at [`Grammar::check`].
    pub fn define(&mut self, name: &str, body: Node) {
        if self.rules.iter().any(|(n, b)| n == name && *b == body) {
            return;
        }
        self.rules.push((name.to_owned(), body));
    }

    pub fn has_rule(&self, name: &str) -> bool {
        self.rules.iter().any(|(n, _)| n == name)
    }

    /// Every reference resolves, names are unique and valid, no empty alternatives.
    pub fn check(&self) -> Result<(), GbnfError> {
        let mut names = BTreeSet::new();
        for (name, _) in &self.rules {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
                return Err(GbnfError::BadName(name.clone()));
            }
            if !names.insert(name.as_str()) {
                return Err(GbnfError::DuplicateRule(name.clone()));
            }
        }
        fn walk(node: &Node, rule: &str, names: &BTreeSet<&str>) -> Result<(), GbnfError> {
            match node {
                Node::Ref(r) if !names.contains(r.as_str()) => Err(GbnfError::UndefinedRule(r.clone())),
                Node::Alt(items) if items.is_empty() => Err(GbnfError::EmptyAlternatives(rule.to_owned())),
                Node::Seq(items) | Node::Alt(items) => items.iter().try_for_each(|n| walk(n, rule, names)),
                Node::Repeat { node, .. } => walk(node, rule, names),
                _ => Ok(()),
            }
        }
        self.rules.iter().try_for_each(|(name, body)| walk(body, name, &names))
    }

    /// llama.cpp GBNF text, one rule per line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, body) in &self.rules {
            let _ = writeln!(out, "{name} ::= {}", render_node(body, false));
        }
        out
    }

    /// Whether the whole of `input` matches `root`.
    pub fn accepts(&self, input: &str) -> bool {
        let chars: Vec<char> = input.chars().collect();
        let rules: HashMap<&str, &Node> = self.rules.iter().map(|(n, b)| (n.as_str(), b)).collect();
        let mut matcher = Matcher { chars: &chars, rules, memo: HashMap::new() };
        let root = Node::Ref("root".into());
        matcher.ends(&root, 0).contains(&chars.len())
    }

    /// Whether `input` is a prefix of some string the grammar accepts (what a decoder checks per token).
    pub fn accepts_prefix(&self, input: &str) -> bool {
        let chars: Vec<char> = input.chars().collect();
        let rules: HashMap<&str, &Node> = self.rules.iter().map(|(n, b)| (n.as_str(), b)).collect();
        let mut matcher = Matcher { chars: &chars, rules, memo: HashMap::new() };
        matcher.prefix_ok(&Node::Ref("root".into()), 0)
    }
}

fn render_node(node: &Node, nested: bool) -> String {
    match node {
        Node::Lit(text) => render_literal(text),
        Node::Class { negated, ranges } => {
            let mut s = String::from("[");
            if *negated {
                s.push('^');
            }
            for (a, b) in ranges {
                s.push_str(&class_char(*a));
                if a != b {
                    s.push('-');
                    s.push_str(&class_char(*b));
                }
            }
            s.push(']');
            s
        }
        Node::Ref(name) => name.clone(),
        Node::Seq(items) => {
            if items.is_empty() {
                return "\"\"".into();
            }
            let body = items.iter().map(|n| render_node(n, true)).collect::<Vec<_>>().join(" ");
            if nested && items.len() > 1 { format!("({body})") } else { body }
        }
        Node::Alt(items) => {
            let body = items.iter().map(|n| render_node(n, false)).collect::<Vec<_>>().join(" | ");
            if nested || items.len() > 1 { format!("({body})") } else { body }
        }
        Node::Repeat { node, min, max } => {
            let inner = match node.as_ref() {
                Node::Lit(_) | Node::Class { .. } | Node::Ref(_) => render_node(node, true),
                _ => format!("({})", render_node(node, false)),
            };
            match (min, max) {
                (0, Some(1)) => format!("{inner}?"),
                (0, None) => format!("{inner}*"),
                (1, None) => format!("{inner}+"),
                (m, None) => format!("{inner}{{{m},}}"),
                (m, Some(x)) if m == x => format!("{inner}{{{m}}}"),
                (m, Some(x)) => format!("{inner}{{{m},{x}}}"),
            }
        }
    }
}

fn render_literal(text: &str) -> String {
    let mut s = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(s, "\\x{:02X}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

fn class_char(c: char) -> String {
    match c {
        ']' | '[' | '\\' | '^' | '-' | '"' => format!("\\{c}"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => format!("\\x{:02X}", c as u32),
        c => c.to_string(),
    }
}

struct Matcher<'a> {
    chars: &'a [char],
    rules: HashMap<&'a str, &'a Node>,
    memo: HashMap<(String, usize), BTreeSet<usize>>,
}

impl Matcher<'_> {
    /// Every position where `node`, started at `pos`, can end.
    fn ends(&mut self, node: &Node, pos: usize) -> BTreeSet<usize> {
        match node {
            Node::Lit(text) => {
                let lit: Vec<char> = text.chars().collect();
                let end = pos + lit.len();
                if end <= self.chars.len() && self.chars[pos..end] == lit[..] {
                    BTreeSet::from([end])
                } else {
                    BTreeSet::new()
                }
            }
            Node::Class { negated, ranges } => match self.chars.get(pos) {
                Some(c) if ranges.iter().any(|(a, b)| a <= c && c <= b) != *negated => BTreeSet::from([pos + 1]),
                _ => BTreeSet::new(),
            },
            Node::Ref(name) => {
                let key = (name.clone(), pos);
                if let Some(done) = self.memo.get(&key) {
                    return done.clone();
                }
                // Guards left recursion (the grammars here have none): a rule re-entered at the same
                // position matches nothing on the inner call.
                self.memo.insert(key.clone(), BTreeSet::new());
                let result = match self.rules.get(name.as_str()).copied() {
                    Some(body) => self.ends(body, pos),
                    None => BTreeSet::new(),
                };
                self.memo.insert(key, result.clone());
                result
            }
            Node::Seq(items) => {
                let mut positions = BTreeSet::from([pos]);
                for item in items {
                    let mut next = BTreeSet::new();
                    for p in positions {
                        next.extend(self.ends(item, p));
                    }
                    if next.is_empty() {
                        return next;
                    }
                    positions = next;
                }
                positions
            }
            Node::Alt(items) => {
                let mut out = BTreeSet::new();
                for item in items {
                    out.extend(self.ends(item, pos));
                }
                out
            }
            Node::Repeat { node, min, max } => {
                let mut out = BTreeSet::new();
                let mut frontier = BTreeSet::from([pos]);
                let mut seen = BTreeSet::new();
                let mut count = 0u32;
                if *min == 0 {
                    out.insert(pos);
                }
                while !frontier.is_empty() && max.is_none_or(|m| count < m) {
                    count += 1;
                    let mut next = BTreeSet::new();
                    for p in &frontier {
                        for e in self.ends(node, *p) {
                            // An empty iteration makes no progress; unbounded loops stop on revisits.
                            if e != *p && (max.is_some() || seen.insert(e)) {
                                next.insert(e);
                            }
                        }
                    }
                    if count >= *min {
                        out.extend(next.iter().copied());
                    }
                    frontier = next;
                }
                out
            }
        }
    }

    /// Whether some match of `node` starting at `pos` consumes the rest of the input (and may go on).
    fn prefix_ok(&mut self, node: &Node, pos: usize) -> bool {
        let len = self.chars.len();
        if pos == len {
            return true;
        }
        match node {
            Node::Lit(text) => {
                let lit: Vec<char> = text.chars().collect();
                let n = lit.len().min(len - pos);
                self.chars[pos..pos + n] == lit[..n] && (n < lit.len() || pos + n == len)
            }
            Node::Class { .. } => self.ends(node, pos).contains(&len),
            Node::Ref(name) => {
                let body = self.rules.get(name.as_str()).copied();
                body.is_some_and(|b| self.prefix_ok(b, pos))
            }
            Node::Seq(items) => {
                let mut positions = BTreeSet::from([pos]);
                for item in items {
                    if positions.iter().any(|p| *p == len) {
                        return true;
                    }
                    if positions.clone().iter().any(|p| self.prefix_ok(item, *p)) {
                        return true;
                    }
                    let mut next = BTreeSet::new();
                    for p in positions {
                        next.extend(self.ends(item, p));
                    }
                    if next.is_empty() {
                        return false;
                    }
                    positions = next;
                }
                positions.contains(&len)
            }
            Node::Alt(items) => items.iter().any(|item| self.prefix_ok(item, pos)),
            Node::Repeat { node: inner, min: _, max } => {
                let mut frontier = BTreeSet::from([pos]);
                let mut count = 0u32;
                let mut seen = BTreeSet::new();
                while !frontier.is_empty() && max.is_none_or(|m| count < m) {
                    if frontier.iter().any(|p| *p == len) || frontier.clone().iter().any(|p| self.prefix_ok(inner, *p)) {
                        return true;
                    }
                    count += 1;
                    let mut next = BTreeSet::new();
                    for p in &frontier {
                        for e in self.ends(inner, *p) {
                            if e != *p && seen.insert(e) {
                                next.insert(e);
                            }
                        }
                    }
                    frontier = next;
                }
                frontier.contains(&len)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digits_grammar() -> Grammar {
        let mut g = Grammar::new(Node::seq([Node::lit("\""), Node::rule("num"), Node::lit("\"")]));
        g.define("num", Node::one_of_texts(["72", "7", "81.5"]));
        g
    }

    #[test]
    fn renders_gbnf() {
        let g = digits_grammar();
        assert_eq!(g.render(), "root ::= \"\\\"\" num \"\\\"\"\nnum ::= (\"72\" | \"7\" | \"81.5\")\n");
        let class = Node::char_except("\"\\");
        assert_eq!(render_node(&class, false), "[^\\\"\\\\\\x00-\\x1F\\x7F]");
        let rep = Node::Repeat { node: Box::new(Node::rule("x")), min: 1, max: Some(3) };
        assert_eq!(render_node(&rep, false), "x{1,3}");
    }

    #[test]
    fn matches_whole_strings_and_prefixes() {
        let g = digits_grammar();
        assert!(g.accepts("\"72\""));
        assert!(g.accepts("\"81.5\""));
        assert!(!g.accepts("\"73\""));
        assert!(!g.accepts("\"72"));
        assert!(g.accepts_prefix("\"8"));
        assert!(g.accepts_prefix("\"72"));
        assert!(!g.accepts_prefix("\"9"));
        assert!(g.check().is_ok());
    }

    #[test]
    fn repetition_bounds() {
        let g = Grammar::new(Node::lit("a").repeat(2, 3));
        assert!(!g.accepts("a"));
        assert!(g.accepts("aa"));
        assert!(g.accepts("aaa"));
        assert!(!g.accepts("aaaa"));
        let star = Grammar::new(Node::seq([Node::lit("x").star(), Node::lit("y")]));
        assert!(star.accepts("y") && star.accepts("xxxy") && !star.accepts("xx"));
    }

    #[test]
    fn check_finds_errors() {
        let mut g = Grammar::new(Node::rule("missing"));
        assert_eq!(g.check(), Err(GbnfError::UndefinedRule("missing".into())));
        g.define("missing", Node::Alt(vec![]));
        assert_eq!(g.check(), Err(GbnfError::EmptyAlternatives("missing".into())));
        let mut g = Grammar::new(Node::lit("a"));
        g.define("Bad_Name", Node::lit("b"));
        assert_eq!(g.check(), Err(GbnfError::BadName("Bad_Name".into())));
    }
}
