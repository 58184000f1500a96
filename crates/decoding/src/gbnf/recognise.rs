//! llama.cpp's grammar recogniser over the one model. A [`Grammar`] is first brought to llama.cpp's normal
//! form — every rule a list of alternatives of single-character sets and rule references; a nested
//! alternative or a repetition becomes a generated rule, named after its rule with a suffix no rule has —
//! and a set of stacks of positions then advances one character at a time, as llama.cpp's sampler does.
//! Used to accept strings and prefixes, and to write the grammar left after a prefill (what a server must
//! enforce on the text it generates after assistant text the runner wrote itself).

use std::collections::{BTreeSet, HashMap, HashSet};

use super::{GbnfError, Grammar, Node};

/// Surviving recogniser stacks beyond this mean the grammar is too ambiguous to rewrite sensibly.
const MAX_STACKS: usize = 4096;
/// Rule expansions while looking for the next terminal; more means left recursion.
const MAX_EXPANSION_DEPTH: usize = 512;

/// One terminal: a set of characters (`negated` = everything except `ranges`; `.` is negated and empty).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct CharSet {
    negated: bool,
    ranges: Vec<(char, char)>,
}

impl CharSet {
    fn matches(&self, c: char) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != self.negated
    }
    fn single(&self) -> Option<char> {
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

/// A position in the grammar: rule, alternative, index of the next element.
type Frame = (usize, usize, usize);
/// Bottom first; the last frame's next element is what must come next. Empty = the grammar is complete.
type Stack = Vec<Frame>;

/// A grammar in normal form. Rule ids are the grammar's rule order (`root` is 0), generated rules after.
pub(super) struct Normal {
    names: Vec<String>,
    rules: Vec<Vec<Alt>>,
}

impl Normal {
    pub(super) fn of(grammar: &Grammar) -> Result<Normal, GbnfError> {
        grammar.check()?;
        let names: Vec<String> = grammar.rules().map(|(n, _)| n.to_owned()).collect();
        let mut builder = Builder {
            ids: names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i))
                .collect(),
            taken: names.iter().cloned().collect(),
            normal: Normal {
                rules: vec![Vec::new(); names.len()],
                names,
            },
        };
        for (id, (name, body)) in grammar.rules().enumerate() {
            builder.normal.rules[id] = builder.alternatives(body, name);
        }
        Ok(builder.normal)
    }

    fn alt(&self, rule: usize, alt: usize) -> &Alt {
        &self.rules[rule][alt]
    }

    /// Expands `stack` until its top is a terminal (or it is empty), pushing every result into `out`.
    fn expand(
        &self,
        mut stack: Stack,
        depth: usize,
        out: &mut BTreeSet<Stack>,
    ) -> Result<(), GbnfError> {
        // Finished frames say nothing about what comes next.
        while let Some(&(r, a, p)) = stack.last() {
            if p < self.alt(r, a).len() {
                break;
            }
            stack.pop();
        }
        let Some(&(r, a, p)) = stack.last() else {
            out.insert(stack);
            return Ok(());
        };
        match &self.alt(r, a)[p] {
            Elem::Char(_) => {
                out.insert(stack);
            }
            Elem::Ref(target) => {
                if depth > MAX_EXPANSION_DEPTH {
                    return Err(GbnfError::LeftRecursion(self.names[*target].clone()));
                }
                // A reference that ends its alternative leaves nothing to return to (a tail call): without
                // this, every round of `S' ::= S S'` would leave a finished frame behind.
                stack.last_mut().expect("non-empty").2 += 1;
                while stack
                    .last()
                    .is_some_and(|&(r, a, p)| p >= self.alt(r, a).len())
                {
                    stack.pop();
                }
                for i in 0..self.rules[*target].len() {
                    let mut next = stack.clone();
                    next.push((*target, i, 0));
                    self.expand(next, depth + 1, out)?;
                }
            }
        }
        if out.len() > MAX_STACKS {
            return Err(GbnfError::TooAmbiguous(out.len()));
        }
        Ok(())
    }

    fn start(&self) -> Result<BTreeSet<Stack>, GbnfError> {
        let mut stacks = BTreeSet::new();
        for i in 0..self.rules[0].len() {
            self.expand(vec![(0, i, 0)], 0, &mut stacks)?;
        }
        Ok(stacks)
    }

    /// The stacks after one more character (empty: the character does not fit).
    fn step(&self, stacks: &BTreeSet<Stack>, c: char) -> Result<BTreeSet<Stack>, GbnfError> {
        let mut next = BTreeSet::new();
        for stack in stacks {
            let Some(&(r, a, p)) = stack.last() else {
                continue;
            };
            if let Elem::Char(set) = &self.alt(r, a)[p]
                && set.matches(c)
            {
                let mut advanced = stack.clone();
                advanced.last_mut().expect("non-empty").2 += 1;
                self.expand(advanced, 0, &mut next)?;
            }
        }
        Ok(next)
    }

    /// The stacks after `text`, or the index of the first character that fits no stack.
    fn run(&self, text: &str) -> Result<Result<BTreeSet<Stack>, usize>, GbnfError> {
        let mut stacks = self.start()?;
        for (at, c) in text.chars().enumerate() {
            stacks = self.step(&stacks, c)?;
            if stacks.is_empty() {
                return Ok(Err(at));
            }
        }
        Ok(Ok(stacks))
    }

    pub(super) fn accepts(&self, text: &str) -> Result<bool, GbnfError> {
        Ok(self
            .run(text)?
            .is_ok_and(|stacks| stacks.iter().any(Vec::is_empty)))
    }

    pub(super) fn accepts_prefix(&self, text: &str) -> Result<bool, GbnfError> {
        Ok(self.run(text)?.is_ok())
    }

    /// The surviving stacks after `prefill` as the alternatives of a new `root` (each the rest of its top
    /// frame's alternative first, then the frames below), followed by every rule in normal form; the old
    /// `root` is renamed, since a stack may still refer to it.
    pub(super) fn resume_after(&self, prefill: &str) -> Result<Grammar, GbnfError> {
        let stacks = match self.run(prefill)? {
            Ok(stacks) => stacks,
            Err(at) => {
                let context: String = prefill
                    .chars()
                    .skip(at.saturating_sub(24))
                    .take(at.min(24) + 1)
                    .collect();
                return Err(GbnfError::PrefillRejected { at, context });
            }
        };
        let mut names = self.names.clone();
        let taken: HashSet<String> = names.iter().cloned().collect();
        names[0] = fresh_name(&taken, "root-whole");
        let resumed = stacks.iter().map(|stack| {
            let elems: Vec<&Elem> = stack
                .iter()
                .rev()
                .flat_map(|&(r, a, p)| self.alt(r, a)[p..].iter())
                .collect();
            seq_node(&names, &elems)
        });
        let mut grammar = Grammar::new(alt_node(resumed.collect()));
        for (id, rule) in self.rules.iter().enumerate() {
            let alts = rule
                .iter()
                .map(|alt| seq_node(&names, &alt.iter().collect::<Vec<_>>()))
                .collect();
            grammar.define(&names[id], alt_node(alts));
        }
        Ok(grammar)
    }
}

/// `wanted`, or `wanted-1`, `wanted-2`, … whichever no rule has.
fn fresh_name(taken: &HashSet<String>, wanted: &str) -> String {
    let mut name = wanted.to_owned();
    let mut n = 1;
    while taken.contains(&name) {
        name = format!("{wanted}-{n}");
        n += 1;
    }
    name
}

/// Elements as a node: runs of single characters as one literal.
fn seq_node(names: &[String], elems: &[&Elem]) -> Node {
    let mut items: Vec<Node> = Vec::new();
    let mut literal = String::new();
    for elem in elems {
        match elem {
            Elem::Char(set) if set.single().is_some() => {
                literal.push(set.single().expect("single"))
            }
            other => {
                if !literal.is_empty() {
                    items.push(Node::Lit(std::mem::take(&mut literal)));
                }
                items.push(match other {
                    Elem::Ref(id) => Node::Ref(names[*id].clone()),
                    Elem::Char(set) => Node::Class {
                        negated: set.negated,
                        ranges: set.ranges.clone(),
                    },
                });
            }
        }
    }
    if !literal.is_empty() || items.is_empty() {
        items.push(Node::Lit(literal));
    }
    if items.len() == 1 {
        items.pop().expect("one")
    } else {
        Node::Seq(items)
    }
}

fn alt_node(mut alts: Vec<Node>) -> Node {
    if alts.len() == 1 {
        alts.pop().expect("one")
    } else {
        Node::Alt(alts)
    }
}

/// Brings nodes to normal form, adding generated rules.
struct Builder {
    ids: HashMap<String, usize>,
    taken: HashSet<String>,
    normal: Normal,
}

impl Builder {
    /// A new, empty rule named after `base` with a suffix no rule has.
    fn generated(&mut self, base: &str) -> usize {
        let name = fresh_name(&self.taken, &format!("{base}-g"));
        self.taken.insert(name.clone());
        self.normal.names.push(name);
        self.normal.rules.push(Vec::new());
        self.normal.rules.len() - 1
    }

    fn alternatives(&mut self, node: &Node, base: &str) -> Vec<Alt> {
        let items = match node {
            Node::Alt(items) => items.as_slice(),
            other => std::slice::from_ref(other),
        };
        items
            .iter()
            .map(|item| {
                let mut alt = Vec::new();
                self.sequence(item, base, &mut alt);
                alt
            })
            .collect()
    }

    /// Appends `node` to one alternative; what cannot be inline becomes a generated rule.
    fn sequence(&mut self, node: &Node, base: &str, out: &mut Alt) {
        match node {
            Node::Lit(text) => out.extend(text.chars().map(|c| {
                Elem::Char(CharSet {
                    negated: false,
                    ranges: vec![(c, c)],
                })
            })),
            Node::Class { negated, ranges } => out.push(Elem::Char(CharSet {
                negated: *negated,
                ranges: ranges.clone(),
            })),
            // `Grammar::check` ran first: every reference resolves.
            Node::Ref(name) => out.push(Elem::Ref(self.ids[name])),
            Node::Seq(items) => items.iter().for_each(|item| self.sequence(item, base, out)),
            Node::Alt(items) if items.len() == 1 => self.sequence(&items[0], base, out),
            Node::Alt(_) => {
                let id = self.generated(base);
                self.normal.rules[id] = self.alternatives(node, base);
                out.push(Elem::Ref(id));
            }
            // As llama.cpp rewrites `S{min,max}`: `min` copies, then a chain of optional rules
            // (`S' ::= S S' | ""` when unbounded).
            Node::Repeat { node, min, max } => {
                let mut once = Vec::new();
                self.sequence(node, base, &mut once);
                for _ in 0..*min {
                    out.extend(once.iter().cloned());
                }
                let optional = match max {
                    None => {
                        let id = self.generated(base);
                        let mut again = once.clone();
                        again.push(Elem::Ref(id));
                        self.normal.rules[id] = vec![again, Vec::new()];
                        Some(id)
                    }
                    Some(max) => {
                        let mut next: Option<usize> = None;
                        for _ in 0..max.saturating_sub(*min) {
                            let id = self.generated(base);
                            let mut body = once.clone();
                            body.extend(next.map(Elem::Ref));
                            self.normal.rules[id] = vec![body, Vec::new()];
                            next = Some(id);
                        }
                        next
                    }
                };
                out.extend(optional.map(Elem::Ref));
            }
        }
    }
}
