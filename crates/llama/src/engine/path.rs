//! The path one generation takes through the grammar: the tokens picked so far and their text, what each
//! position refuses after a step back, the banned-prefix mask, and the JSON scanner that says when the value
//! is complete. Shared by the model's generation and the grammar-only baseline, so both mask and step back
//! the same way.

use llama_cpp_2::token::LlamaToken;

use forge_decoding::generation::JsonScanner;
use forge_decoding::share::{Allowance, ShareCount, TokenShare};

use super::sampling::MAX_BACKTRACKS;

pub(super) struct TokenPath<'r> {
    prefill: &'r str,
    banned_prefixes: &'r [String],
    /// Each picked token with the length of its text.
    picked: Vec<(LlamaToken, usize)>,
    /// Per position: tokens refused there after a step back.
    refused: Vec<Vec<LlamaToken>>,
    /// The text generated after the prefill.
    out: Vec<u8>,
    backtracks: u32,
    scanner: JsonScanner,
    /// Per picked token: whether the masks forced it or left a choice.
    share: ShareCount,
}

impl<'r> TokenPath<'r> {
    pub(super) fn new(prefill: &'r str, banned_prefixes: &'r [String]) -> Self {
        let mut path = TokenPath {
            prefill,
            banned_prefixes,
            picked: Vec::new(),
            refused: vec![Vec::new()],
            out: Vec::new(),
            backtracks: 0,
            scanner: JsonScanner::default(),
            share: ShareCount::default(),
        };
        path.rescan();
        path
    }

    /// Tokens picked (= tokens generated: a step back takes one away).
    pub(super) fn len(&self) -> u32 {
        self.picked.len() as u32
    }

    /// Whether `token`, whose text `piece` gives, may come next: not refused at this position, and the text
    /// so far with it does not start with a banned prefix (a repeat the runtime refuses).
    pub(super) fn allows(&self, token: LlamaToken, piece: impl FnOnce() -> Vec<u8>) -> bool {
        if self
            .refused
            .get(self.picked.len())
            .is_some_and(|r| r.contains(&token))
        {
            return false;
        }
        if self.banned_prefixes.is_empty() {
            return true;
        }
        // Called for every candidate token at every step: the three parts are compared in place, never joined.
        let piece = piece();
        let parts: [&[u8]; 3] = [self.prefill.as_bytes(), &self.out, &piece];
        !self
            .banned_prefixes
            .iter()
            .any(|p| parts_start_with(&parts, p.as_bytes()))
    }

    pub(super) fn push(&mut self, token: LlamaToken, piece: &[u8], allowance: Allowance) {
        self.share.push(allowance);
        piece.iter().for_each(|&b| self.scanner.feed(b));
        self.out.extend_from_slice(piece);
        self.picked.push((token, piece.len()));
        self.refused.push(Vec::new());
    }

    /// Banned prefixes mask tokens one at a time, so a path can reach a point where every token the grammar
    /// allows is masked. Then it steps back one token and refuses that token at that position: a depth-first
    /// search that finds an unbanned path whenever the grammar has one. `None` when there is nothing to step
    /// back over or the bound (`MAX_BACKTRACKS`) is spent.
    pub(super) fn step_back(&mut self) -> Option<LlamaToken> {
        if self.picked.is_empty() || self.backtracks >= MAX_BACKTRACKS {
            return None;
        }
        self.backtracks += 1;
        let (last, len) = self.picked.pop().expect("not empty");
        self.share.pop();
        self.out.truncate(self.out.len() - len);
        self.refused.truncate(self.picked.len() + 1);
        self.refused[self.picked.len()].push(last);
        self.rescan();
        Some(last)
    }

    /// The tokens a grammar sampler must have accepted to stand where this path stands.
    pub(super) fn accepted(&self, prefill_tokens: &[LlamaToken]) -> Vec<LlamaToken> {
        prefill_tokens
            .iter()
            .copied()
            .chain(self.picked.iter().map(|(t, _)| *t))
            .collect()
    }

    /// How many of the picked tokens the masks forced.
    pub(super) fn share(&self) -> TokenShare {
        self.share.share()
    }

    pub(super) fn json_complete(&self) -> bool {
        self.scanner.complete()
    }

    /// Prefill and generated text.
    pub(super) fn text(&self) -> String {
        let mut text = self.prefill.as_bytes().to_vec();
        text.extend_from_slice(&self.out);
        String::from_utf8_lossy(&text).into_owned()
    }

    fn rescan(&mut self) {
        self.scanner = JsonScanner::default();
        for &b in self.prefill.as_bytes().iter().chain(&self.out) {
            self.scanner.feed(b);
        }
    }
}

/// Whether the concatenation of `parts` starts with `prefix`, without building the concatenation.
fn parts_start_with(parts: &[&[u8]], mut prefix: &[u8]) -> bool {
    for part in parts {
        if prefix.is_empty() {
            return true;
        }
        let n = part.len().min(prefix.len());
        if part[..n] != prefix[..n] {
            return false;
        }
        prefix = &prefix[n..];
    }
    prefix.is_empty()
}

#[cfg(test)]
mod tests {
    use super::parts_start_with;

    #[test]
    fn a_prefix_is_found_across_part_boundaries_and_not_past_the_end() {
        let parts: [&[u8]; 3] = [b"{\"a", b"ction\":", b"\"calc"];
        assert!(parts_start_with(&parts, b""));
        assert!(parts_start_with(&parts, b"{\"action\":\"ca"));
        assert!(parts_start_with(&parts, b"{\"action\":\"calc"));
        assert!(
            !parts_start_with(&parts, b"{\"action\":\"calcu"),
            "longer than the text"
        );
        assert!(!parts_start_with(&parts, b"{\"actor"));
        assert!(parts_start_with(&[b"", b"ab", b""], b"ab"));
        assert!(!parts_start_with(&[], b"a"));
    }
}
