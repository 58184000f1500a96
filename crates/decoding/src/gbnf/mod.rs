//! The one GBNF model: grammars built in Rust (the decision grammars), parsed from llama.cpp's GBNF text
//! (what a backend receives), rendered back to that text, recognised, and advanced past a prefill — all over
//! one representation, [`Grammar`] of [`Node`]s.
//!
//! It covers what llama.cpp's GBNF has except token terminals (`<…>`): literals, character classes and `.`,
//! sequences, alternatives, groups, bounded and unbounded repetition, rule references. Nothing here knows JSON
//! or decisions (that is `grammar`). Submodules: `parse` (text → grammar), `recognise` (llama.cpp's stack
//! recogniser over the grammar's normal form: accepting, prefixes, the grammar left after a prefill) and
//! `sample` (seeded strings of a grammar, productive rules).

mod parse;
mod recognise;
mod sample;

use std::collections::BTreeSet;
use std::fmt::Write as _;

/// One grammar expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// Exact text.
    Lit(String),
    /// One character from (or, negated, outside) the given inclusive ranges; negated and empty is `.`.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    /// Another rule, by name.
    Ref(String),
    Seq(Vec<Node>),
    /// One of the alternatives (must not be empty).
    Alt(Vec<Node>),
    /// `node{min,max}`; `max: None` is unbounded.
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
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
        Node::Repeat {
            node: Box::new(self),
            min: 0,
            max: Some(1),
        }
    }
    pub fn star(self) -> Node {
        Node::Repeat {
            node: Box::new(self),
            min: 0,
            max: None,
        }
    }
    pub fn repeat(self, min: u32, max: u32) -> Node {
        Node::Repeat {
            node: Box::new(self),
            min,
            max: Some(max),
        }
    }
    /// Any character except the listed ones and the control characters (`\x00-\x1F`, `\x7F`).
    pub fn char_except(excluded: &str) -> Node {
        let mut ranges: Vec<(char, char)> = excluded.chars().map(|c| (c, c)).collect();
        ranges.push(('\u{0}', '\u{1f}'));
        ranges.push(('\u{7f}', '\u{7f}'));
        Node::Class {
            negated: true,
            ranges,
        }
    }
}

/// Why a grammar cannot be used: built wrongly, written wrongly, or not fitting a prefill.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum GbnfError {
    #[error("rule {0:?} is referenced but not defined")]
    UndefinedRule(String),
    #[error("rule {0:?} is defined twice")]
    DuplicateRule(String),
    #[error("rule {0:?} has an empty alternative list")]
    EmptyAlternatives(String),
    #[error("rule name {0:?} is not [a-zA-Z0-9-]+")]
    BadName(String),
    #[error("GBNF parse error at line {line}: {message}")]
    Parse { line: usize, message: String },
    #[error("GBNF has no `root` rule")]
    NoRoot,
    #[error("GBNF rule {0:?} is left-recursive")]
    LeftRecursion(String),
    #[error("the prefill does not fit the grammar at character {at} ({context:?})")]
    PrefillRejected { at: usize, context: String },
    #[error("the grammar is too ambiguous after the prefill ({0} parallel states)")]
    TooAmbiguous(usize),
}

/// A set of named rules; the first one is `root`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grammar {
    rules: Vec<(String, Node)>,
}

impl Grammar {
    pub fn new(root: Node) -> Grammar {
        Grammar {
            rules: vec![("root".into(), root)],
        }
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
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                return Err(GbnfError::BadName(name.clone()));
            }
            if !names.insert(name.as_str()) {
                return Err(GbnfError::DuplicateRule(name.clone()));
            }
        }
        fn walk(node: &Node, rule: &str, names: &BTreeSet<&str>) -> Result<(), GbnfError> {
            match node {
                Node::Ref(r) if !names.contains(r.as_str()) => {
                    Err(GbnfError::UndefinedRule(r.clone()))
                }
                Node::Alt(items) if items.is_empty() => {
                    Err(GbnfError::EmptyAlternatives(rule.to_owned()))
                }
                Node::Seq(items) | Node::Alt(items) => {
                    items.iter().try_for_each(|n| walk(n, rule, names))
                }
                Node::Repeat { node, .. } => walk(node, rule, names),
                _ => Ok(()),
            }
        }
        self.rules
            .iter()
            .try_for_each(|(name, body)| walk(body, name, &names))
    }

    /// Rules that derive no finite string at all (every alternative needs an unproductive rule): a decoder
    /// that enters one can never finish, the token-level "dead end". Sorted by name.
    pub fn unproductive_rules(&self) -> Vec<String> {
        let productive = sample::productive(&self.rules);
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
        sample::sample(&self.rules, seed)
    }

    /// The rules in order, `root` first.
    pub fn rules(&self) -> impl Iterator<Item = (&str, &Node)> {
        self.rules.iter().map(|(n, b)| (n.as_str(), b))
    }

    /// llama.cpp GBNF text, one rule per line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, body) in &self.rules {
            let _ = writeln!(out, "{name} ::= {}", render_node(body, false));
        }
        out
    }

    /// The grammar a GBNF text describes (comments and layout dropped), checked like a built one.
    pub fn parse(gbnf: &str) -> Result<Grammar, GbnfError> {
        parse::parse(gbnf)
    }

    /// Whether the whole of `input` matches `root`. A grammar the recogniser cannot run (left-recursive,
    /// undefined rules) accepts nothing.
    pub fn accepts(&self, input: &str) -> bool {
        recognise::Normal::of(self)
            .and_then(|n| n.accepts(input))
            .unwrap_or(false)
    }

    /// Whether `input` is a prefix of some string the grammar accepts (what a decoder checks per token).
    pub fn accepts_prefix(&self, input: &str) -> bool {
        recognise::Normal::of(self)
            .and_then(|n| n.accepts_prefix(input))
            .unwrap_or(false)
    }

    /// The grammar that accepts `s` exactly when this one accepts `prefill + s`: what an inference server
    /// must enforce on the text it generates after assistant text the runner wrote itself. Its `root` lists
    /// the recogniser's surviving states; the other rules are this grammar's in normal form.
    pub fn resume_after(&self, prefill: &str) -> Result<Grammar, GbnfError> {
        if prefill.is_empty() {
            return Ok(self.clone());
        }
        recognise::Normal::of(self)?.resume_after(prefill)
    }
}

/// [`Grammar::resume_after`] on GBNF text, for a backend that receives text and sends text: the text itself
/// when the prefill is empty (a server then gets exactly what llama.cpp in process would).
pub fn resume_text_after(gbnf: &str, prefill: &str) -> Result<String, GbnfError> {
    if prefill.is_empty() {
        return Ok(gbnf.to_string());
    }
    Ok(Grammar::parse(gbnf)?.resume_after(prefill)?.render())
}

fn render_node(node: &Node, nested: bool) -> String {
    match node {
        Node::Lit(text) => {
            let mut s = String::from("\"");
            text.chars().for_each(|c| escape_into(&mut s, c, false));
            s.push('"');
            s
        }
        Node::Class {
            negated: true,
            ranges,
        } if ranges.is_empty() => ".".into(),
        Node::Class { negated, ranges } => {
            let mut s = String::from("[");
            if *negated {
                s.push('^');
            }
            for &(a, b) in ranges {
                escape_into(&mut s, a, true);
                if a != b {
                    s.push('-');
                    escape_into(&mut s, b, true);
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
            let body = items
                .iter()
                .map(|n| render_node(n, true))
                .collect::<Vec<_>>()
                .join(" ");
            if nested && items.len() > 1 {
                format!("({body})")
            } else {
                body
            }
        }
        Node::Alt(items) => {
            let body = items
                .iter()
                .map(|n| render_node(n, false))
                .collect::<Vec<_>>()
                .join(" | ");
            if nested || items.len() > 1 {
                format!("({body})")
            } else {
                body
            }
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

/// One character as GBNF writes it inside a literal or (`in_class`) a character class: the escapes
/// llama.cpp's parser reads (`parse` reads the same), `\xNN`/`\uNNNN`/`\UNNNNNNNN` for control characters.
/// `^` in a class is written `\x5E`, which llama.cpp reads anywhere in a class.
fn escape_into(out: &mut String, c: char, in_class: bool) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        ']' if in_class => out.push_str("\\]"),
        '[' if in_class => out.push_str("\\["),
        '-' if in_class => out.push_str("\\-"),
        '^' if in_class => out.push_str("\\x5E"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) >= 0x20 && c != '\u{7f}' => out.push(c),
        c => {
            let _ = write!(out, "\\x{:02X}", c as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digits_grammar() -> Grammar {
        let mut g = Grammar::new(Node::seq([
            Node::lit("\""),
            Node::rule("num"),
            Node::lit("\""),
        ]));
        g.define("num", Node::one_of_texts(["72", "7", "81.5"]));
        g
    }

    #[test]
    fn renders_gbnf() {
        let g = digits_grammar();
        assert_eq!(
            g.render(),
            "root ::= \"\\\"\" num \"\\\"\"\nnum ::= (\"72\" | \"7\" | \"81.5\")\n"
        );
        let class = Node::char_except("\"\\");
        assert_eq!(render_node(&class, false), "[^\\\"\\\\\\x00-\\x1F\\x7F]");
        let rep = Node::Repeat {
            node: Box::new(Node::rule("x")),
            min: 1,
            max: Some(3),
        };
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
        g.define(
            "word",
            Node::Class {
                negated: false,
                ranges: vec![('a', 'z')],
            }
            .repeat(1, 5),
        );
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
        assert_eq!(
            g.check(),
            Err(GbnfError::EmptyAlternatives("missing".into()))
        );
        let mut g = Grammar::new(Node::lit("a"));
        g.define("Bad_Name", Node::lit("b"));
        assert_eq!(g.check(), Err(GbnfError::BadName("Bad_Name".into())));
    }

    // ---- text: parse, resume after a prefill (the server backend's path) ----

    /// The recogniser on text, as a backend meets it: parse, then accept.
    fn accepts_text(gbnf: &str, text: &str) -> Result<bool, GbnfError> {
        Ok(Grammar::parse(gbnf)?.accepts(text))
    }

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
        let rest = resume_text_after(DECISION, prefix).unwrap();
        for suffix in [r#"abc"}}"#, r#"abcdefgh","top_k":3}}"#, r#"a","top_k":9}}"#] {
            assert!(
                accepts_text(DECISION, &format!("{prefix}{suffix}")).unwrap(),
                "{suffix}"
            );
            assert!(
                accepts_text(&rest, suffix).unwrap(),
                "continuation rejects {suffix}\n{rest}"
            );
        }
        for suffix in [
            r#""}}"#,
            r#"abcdefghi"}}"#,
            r#"a","top_k":0}}"#,
            r#"a"}"#,
            r#"a"}}x"#,
        ] {
            assert!(
                !accepts_text(DECISION, &format!("{prefix}{suffix}")).unwrap(),
                "{suffix}"
            );
            assert!(
                !accepts_text(&rest, suffix).unwrap(),
                "continuation accepts {suffix}\n{rest}"
            );
        }
    }

    #[test]
    fn a_prefill_inside_a_bounded_repetition_keeps_the_remaining_budget() {
        let prefix = r#"{"type":"action","tool":"calc","arguments":{"query":"abcde"#;
        let rest = resume_text_after(DECISION, prefix).unwrap();
        assert!(accepts_text(&rest, r#"fgh"}}"#).unwrap());
        assert!(
            !accepts_text(&rest, r#"fghi"}}"#).unwrap(),
            "only three more characters fit\n{rest}"
        );
    }

    #[test]
    fn empty_prefill_leaves_the_grammar_unchanged() {
        assert_eq!(resume_text_after(DECISION, "").unwrap(), DECISION);
    }

    #[test]
    fn a_prefill_the_grammar_rejects_is_a_typed_error_with_its_position() {
        let err = resume_text_after(DECISION, r#"{"type":"final""#).unwrap_err();
        assert!(
            matches!(err, GbnfError::PrefillRejected { at: 9, .. }),
            "{err}"
        );
    }

    #[test]
    fn bad_grammars_are_typed_errors() {
        assert!(
            matches!(Grammar::parse("root ::= missing"), Err(GbnfError::UndefinedRule(n)) if n == "missing")
        );
        assert!(matches!(
            Grammar::parse("start ::= \"a\""),
            Err(GbnfError::NoRoot)
        ));
        assert!(matches!(
            Grammar::parse("root ::= \"a"),
            Err(GbnfError::Parse { line: 1, .. })
        ));
        assert!(matches!(
            Grammar::parse("root ::= \"a\"\nx ::= [a"),
            Err(GbnfError::Parse { line: 2, .. })
        ));
        assert!(matches!(
            Grammar::parse("root ::= <think>"),
            Err(GbnfError::Parse { .. })
        ));
        assert!(matches!(
            resume_text_after("root ::= root \"a\" | \"b\"", "b"),
            Err(GbnfError::LeftRecursion(_))
        ));
    }

    #[test]
    fn escapes_and_classes_survive_the_round_trip() {
        let g = "root ::= \"\\\"\" [\\]\\-^a-c] \"\\n\" [^\\x00-\\x1F]* \"\\u00e9\"";
        let rest = resume_text_after(g, "\"").unwrap();
        for s in ["]\nxyz\u{e9}", "-\n\u{e9}", "^\n\u{e9}", "b\nQ\u{e9}"] {
            assert!(accepts_text(g, &format!("\"{s}")).unwrap(), "{s:?}");
            assert!(accepts_text(&rest, s).unwrap(), "{s:?}\n{rest}");
        }
        assert!(!accepts_text(&rest, "d\n\u{e9}").unwrap());
        assert!(!accepts_text(&rest, "a\n\u{1}\u{e9}").unwrap());
    }

    #[test]
    fn generated_rules_never_clash_with_rules_defined_later() {
        // `x{2,3}` makes helper rules; a later rule with the helper-like name must stay itself.
        let g = "root ::= \"a\" item{2,3} root-g1 root-g2\nitem ::= \"x\"\nroot-g1 ::= \"y\"\nroot-g2 ::= \"z\"";
        let rest = resume_text_after(g, "a").unwrap();
        assert!(
            accepts_text(g, "axxyz").unwrap()
                && accepts_text(&rest, "xxyz").unwrap()
                && accepts_text(&rest, "xxxyz").unwrap(),
            "{rest}"
        );
        assert!(
            !accepts_text(&rest, "xyz").unwrap() && !accepts_text(&rest, "xxxxyz").unwrap(),
            "{rest}"
        );
    }

    #[test]
    fn a_complete_prefill_leaves_only_the_empty_string() {
        let rest = resume_text_after("root ::= \"ab\" | \"abc\"", "ab").unwrap();
        assert!(accepts_text(&rest, "").unwrap());
        assert!(accepts_text(&rest, "c").unwrap());
        assert!(!accepts_text(&rest, "cc").unwrap());
    }
}
