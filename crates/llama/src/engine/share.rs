//! Whether the grammar (and the bans) left a generated token's position one text or a choice, without a
//! whole-vocabulary grammar pass at every forced position: the model's top candidates first, then the first
//! bytes the grammar allows (read off the vocabulary's one-byte tokens), then only the tokens that start with
//! the one allowed byte. Exact: the whole vocabulary is walked whenever a shortcut's premise does not hold.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

use forge_decoding::generation::GrammarMode;
use forge_decoding::share::Allowance;

use super::sampling::{SHORTLIST, fold_allowed, full_array, shortlist};

/// The vocabulary by first byte, read once per session. Why it is exact: the grammar accepts a text only if
/// it accepts each of its prefixes (llama.cpp's grammar also matches a partial UTF-8 character as a prefix),
/// so a token whose first byte is `b` can be allowed only where the one-byte token `b` is.
pub(super) struct FirstBytes {
    /// Non-end tokens with a non-empty text, by their first byte.
    by_byte: Vec<Vec<LlamaToken>>,
    /// The one-byte token of each byte, where the vocabulary has one.
    single: Vec<Option<LlamaToken>>,
    /// End-of-generation tokens (no text; allowed where the grammar may end).
    ends: Vec<LlamaToken>,
}

impl FirstBytes {
    pub(super) fn of(model: &LlamaModel) -> FirstBytes {
        let vocab = model.vocab();
        let mut index = FirstBytes {
            by_byte: vec![Vec::new(); 256],
            single: vec![None; 256],
            ends: Vec::new(),
        };
        for id in 0..model.n_vocab() {
            let token = LlamaToken(id);
            if vocab.is_eog(token) {
                index.ends.push(token);
                continue;
            }
            let piece = vocab.token_to_piece(token, false, None);
            let Some(&first) = piece.first() else {
                continue; // no text: the grammar never allows it
            };
            index.by_byte[usize::from(first)].push(token);
            if piece.len() == 1 && index.single[usize::from(first)].is_none() {
                index.single[usize::from(first)] = Some(token);
            }
        }
        index
    }

    /// Whether every byte has a one-byte token (else the first-byte shortcut does not apply).
    fn complete(&self) -> bool {
        self.single.iter().all(Option::is_some)
    }
}

/// How much choice the grammar and the bans leave at this position (called before the picked token is
/// accepted, with the grammar where it stands). `GrammarMode::Full`, the reference, always walks the whole
/// vocabulary; otherwise the shortcuts above come first. Without a grammar every token is allowed: a choice.
pub(super) fn allowance(
    model: &LlamaModel,
    index: Option<&FirstBytes>,
    logits: &[f32],
    grammar: Option<&mut LlamaSampler>,
    mode: GrammarMode,
    banned: &dyn Fn(LlamaToken) -> bool,
    full_passes: &mut u32,
) -> Allowance {
    let Some(g) = grammar else {
        return Allowance::Choice;
    };
    if mode == GrammarMode::CheckFirst {
        let mut short = shortlist(logits, SHORTLIST);
        short.apply_sampler(g);
        if fold_allowed(model, &short, banned) == Allowance::Choice {
            return Allowance::Choice;
        }
        if let Some(candidates) = index.and_then(|index| one_first_byte(index, g)) {
            let mut arr = array_of(&candidates);
            arr.apply_sampler(g);
            return fold_allowed(model, &arr, banned);
        }
    }
    *full_passes += 1;
    let mut all = full_array(logits);
    all.apply_sampler(g);
    fold_allowed(model, &all, banned)
}

/// When the grammar allows at most one first byte here: the tokens that can be allowed (those starting with
/// it, and the end tokens). `None` when it allows several first bytes, or the vocabulary lacks a one-byte
/// token for some byte: then only the whole vocabulary answers.
fn one_first_byte(index: &FirstBytes, g: &mut LlamaSampler) -> Option<Vec<LlamaToken>> {
    if !index.complete() {
        return None;
    }
    let singles: Vec<LlamaToken> = index.single.iter().flatten().copied().collect();
    let mut arr = array_of(&singles);
    arr.apply_sampler(g);
    let mut allowed = arr.data.iter().filter(|d| d.logit().is_finite());
    let first = allowed.next();
    if allowed.next().is_some() {
        return None;
    }
    let mut candidates = index.ends.clone();
    if let Some(d) = first {
        let byte = index.single.iter().position(|s| *s == Some(d.id()))?;
        candidates.extend_from_slice(&index.by_byte[byte]);
    }
    Some(candidates)
}

fn array_of(tokens: &[LlamaToken]) -> LlamaTokenDataArray {
    LlamaTokenDataArray::new(
        tokens
            .iter()
            .map(|&t| LlamaTokenData::new(t, 0.0, 0.0))
            .collect(),
        false,
    )
}
