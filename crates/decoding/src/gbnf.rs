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

    /// Rules that derive no finite string at all (every alternative needs an unproductive rule): a decoder
    /// that enters one can never finish, the token-level "dead end". Sorted by name.
    pub fn unproductive_rules(&self) -> Vec<String> {
        let mut productive: BTreeSet<&str> = BTreeSet::new();
        loop {
            let before = productive.len();
            for (name, body) in &self.rules {
                if !productive.contains(name.as_str()) && node_productive(body, &productive) {
                    productive.insert(name.as_str());
                }
            }
            if productive.len() == before {
                break;
            }
        }
        let mut out: Vec<String> = self
            .rules
            .iter()
            .filter(|(n, _)| !productive.contains(n.as_str()))
            .map(|(n, _)| n.clone())
            .collect();
        out.sort();
        out
    }

    /// One string of the grammar, drawn at random (seeded): alternatives uniformly among the productive ones,
    /// repetitions between their minimum and three more, characters of a class from a small printable pool.
    /// `None` when `root` derives nothing. For tests and property checks: it shows what a decoder could write.
    pub fn sample(&self, seed: u64) -> Option<String> {
        let mut productive: BTreeSet<&str> = BTreeSet::new();
        loop {
            let before = productive.len();
            for (name, body) in &self.rules {
                if !productive.contains(name.as_str()) && node_productive(body, &productive) {
                    productive.insert(name.as_str());
                }
            }
            if productive.len() == before {
                break;
            }
        }
        if !productive.contains("root") {
            return None;
        }
        let rules: HashMap<&str, &Node> = self.rules.iter().map(|(n, b)| (n.as_str(), b)).collect();
        // The least derivation height of each rule: past a depth budget, alternatives and repetitions take
        // the shortest way out, so recursive rules (a parenthesised expression) always terminate.
        let mut heights: HashMap<&str, u32> = HashMap::new();
        loop {
            let mut changed = false;
            for (name, body) in &self.rules {
                if let Some(h) = node_height(body, &heights)
                    && heights.get(name.as_str()).is_none_or(|old| h < *old)
                {
                    heights.insert(name.as_str(), h);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut sampler = Sampler { rules, heights, state: seed ^ 0x2545_f491_4f6c_dd1d };
        let mut out = String::new();
        sampler.node(&Node::Ref("root".into()), &mut out, 0).then_some(out)
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

fn node_productive(node: &Node, productive: &BTreeSet<&str>) -> bool {
    match node {
        Node::Lit(_) => true,
        Node::Class { negated, ranges } => *negated || !ranges.is_empty(),
        Node::Ref(name) => productive.contains(name.as_str()),
        Node::Seq(items) => items.iter().all(|n| node_productive(n, productive)),
        Node::Alt(items) => items.iter().any(|n| node_productive(n, productive)),
        Node::Repeat { node, min, .. } => *min == 0 || node_productive(node, productive),
    }
}

/// The least height of a derivation of `node` (rule references count one), `None` if it has none yet.
fn node_height(node: &Node, heights: &HashMap<&str, u32>) -> Option<u32> {
    match node {
        Node::Lit(_) | Node::Class { .. } => Some(0),
        Node::Ref(name) => heights.get(name.as_str()).map(|h| h + 1),
        Node::Seq(items) => items.iter().try_fold(0, |m, n| node_height(n, heights).map(|h| m.max(h))),
        Node::Alt(items) => items.iter().filter_map(|n| node_height(n, heights)).min(),
        Node::Repeat { node, min, .. } => {
            if *min == 0 { Some(0) } else { node_height(node, heights) }
        }
    }
}

/// Characters a sampled class draws from (a negated class: one of these it does not exclude).
const SAMPLE_POOL: &str = "abcxyzABC XYZ-_é中";

/// Past this depth a sample takes the shortest way out.
const SAMPLE_DEPTH: u32 = 24;

struct Sampler<'a> {
    rules: HashMap<&'a str, &'a Node>,
    heights: HashMap<&'a str, u32>,
    state: u64,
}

impl Sampler<'_> {
    fn next(&mut self) -> u64 {
        // xorshift64*: enough to pick alternatives in tests.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn node(&mut self, node: &Node, out: &mut String, depth: u32) -> bool {
        match node {
            Node::Lit(text) => {
                out.push_str(text);
                true
            }
            Node::Class { negated, ranges } => {
                let inside = |c: char| ranges.iter().any(|(a, b)| *a <= c && c <= *b);
                let pick = if *negated {
                    let pool: Vec<char> = SAMPLE_POOL.chars().filter(|c| !inside(*c)).collect();
                    if pool.is_empty() {
                        return false;
                    }
                    pool[self.below(pool.len())]
                } else {
                    if ranges.is_empty() {
                        return false;
                    }
                    let (a, b) = ranges[self.below(ranges.len())];
                    let span = (b as u32).saturating_sub(a as u32) as usize + 1;
                    char::from_u32(a as u32 + self.below(span) as u32).unwrap_or(a)
                };
                out.push(pick);
                true
            }
            Node::Ref(name) => match self.rules.get(name.as_str()).copied() {
                Some(body) => self.node(body, out, depth + 1),
                None => false,
            },
            Node::Seq(items) => items.iter().all(|n| self.node(n, out, depth + 1)),
            Node::Alt(items) => {
                let live: Vec<(&Node, u32)> =
                    items.iter().filter_map(|n| node_height(n, &self.heights).map(|h| (n, h))).collect();
                if live.is_empty() {
                    return false;
                }
                let pick = if depth > SAMPLE_DEPTH {
                    live.iter().min_by_key(|(_, h)| *h).map(|(n, _)| *n).expect("not empty")
                } else {
                    live[self.below(live.len())].0
                };
                self.node(pick, out, depth + 1)
            }
            Node::Repeat { node, min, max } => {
                let extra_cap = if depth > SAMPLE_DEPTH { 0 } else { max.map_or(3, |m| m.saturating_sub(*min).min(3)) };
                let count = *min + self.below(extra_cap as usize + 1) as u32;
                (0..count).all(|_| self.node(node, out, depth + 1))
            }
        }
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
    fn samples_are_accepted_and_unproductive_rules_are_found() {
        let mut g = Grammar::new(Node::seq([
            Node::lit("{"),
            Node::Alt(vec![Node::rule("num"), Node::rule("word")]),
            Node::lit("}"),
        ]));
        g.define("num", Node::one_of_texts(["72", "7", "81.5"]));
        g.define("word", Node::Class { negated: false, ranges: vec![('a', 'z')] }.repeat(1, 5));
        for seed in 0..50 {
            let text = g.sample(seed).expect("productive");
            assert!(g.accepts(&text), "{text}");
        }
        assert!(g.unproductive_rules().is_empty());
        // A rule that can only recurse derives nothing: the decoder's dead end.
        let mut dead = Grammar::new(Node::Alt(vec![Node::rule("loop"), Node::lit("x")]));
        dead.define("loop", Node::seq([Node::lit("a"), Node::rule("loop")]));
        assert_eq!(dead.unproductive_rules(), ["loop"]);
        assert_eq!(dead.sample(1).as_deref(), Some("x"));
        let mut none = Grammar::new(Node::rule("loop"));
        none.define("loop", Node::seq([Node::lit("a"), Node::rule("loop")]));
        assert_eq!(none.sample(1), None);
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
