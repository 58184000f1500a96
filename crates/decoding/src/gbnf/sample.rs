//! Seeded strings of a grammar and its productive rules: what a decoder could write, for tests and the
//! free-mode property checks (a rule that derives no finite string is a decoder's dead end).

use std::collections::{BTreeSet, HashMap};

use super::Node;

/// The rules that derive at least one finite string (a fixpoint over the rules).
pub(super) fn productive(rules: &[(String, Node)]) -> BTreeSet<&str> {
    let mut productive: BTreeSet<&str> = BTreeSet::new();
    loop {
        let before = productive.len();
        for (name, body) in rules {
            if !productive.contains(name.as_str()) && node_productive(body, &productive) {
                productive.insert(name.as_str());
            }
        }
        if productive.len() == before {
            return productive;
        }
    }
}

/// See [`super::Grammar::sample`].
pub(super) fn sample(rules: &[(String, Node)], seed: u64) -> Option<String> {
    if !productive(rules).contains("root") {
        return None;
    }
    let by_name: HashMap<&str, &Node> = rules.iter().map(|(n, b)| (n.as_str(), b)).collect();
    // The least derivation height of each rule: past a depth budget, alternatives and repetitions take
    // the shortest way out, so recursive rules (a parenthesised expression) always terminate.
    let mut heights: HashMap<&str, u32> = HashMap::new();
    loop {
        let mut changed = false;
        for (name, body) in rules {
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
    let mut sampler = Sampler {
        rules: by_name,
        heights,
        state: seed ^ 0x2545_f491_4f6c_dd1d,
    };
    let mut out = String::new();
    sampler
        .node(&Node::Ref("root".into()), &mut out, 0)
        .then_some(out)
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
        Node::Seq(items) => items
            .iter()
            .try_fold(0, |m, n| node_height(n, heights).map(|h| m.max(h))),
        Node::Alt(items) => items.iter().filter_map(|n| node_height(n, heights)).min(),
        Node::Repeat { node, min, .. } => {
            if *min == 0 {
                Some(0)
            } else {
                node_height(node, heights)
            }
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
                let live: Vec<(&Node, u32)> = items
                    .iter()
                    .filter_map(|n| node_height(n, &self.heights).map(|h| (n, h)))
                    .collect();
                if live.is_empty() {
                    return false;
                }
                let pick = if depth > SAMPLE_DEPTH {
                    live.iter()
                        .min_by_key(|(_, h)| *h)
                        .map(|(n, _)| *n)
                        .expect("not empty")
                } else {
                    live[self.below(live.len())].0
                };
                self.node(pick, out, depth + 1)
            }
            Node::Repeat { node, min, max } => {
                let extra_cap = if depth > SAMPLE_DEPTH {
                    0
                } else {
                    max.map_or(3, |m| m.saturating_sub(*min).min(3))
                };
                let count = *min + self.below(extra_cap as usize + 1) as u32;
                (0..count).all(|_| self.node(node, out, depth + 1))
            }
        }
    }
}
