//! Choosing one token under a grammar: argmax or a shortlist sampled at the request's temperature, checked
//! against the grammar first and run over the whole vocabulary only when refused; dead ends recognised; the
//! debug view of the top candidates; the texts a mask allows folded into forced or a choice (the token share).

use std::sync::OnceLock;

use forge_decoding::generation::{EngineError, GrammarMode};
use forge_decoding::share::{Allowance, AllowedTexts};
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

/// `FORGE_LLAMA_DEBUG_TOKENS=1` prints the top candidates of every generated token (prompt experiments).
pub(super) fn debug_tokens() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("FORGE_LLAMA_DEBUG_TOKENS").is_ok_and(|v| v == "1"))
}

pub(super) fn top_candidates(model: &LlamaModel, logits: &[f32], n: usize) -> String {
    let mut idx: Vec<usize> = (0..logits.len()).collect();
    idx.select_nth_unstable_by(n, |a, b| logits[*b].total_cmp(&logits[*a]));
    let mut top: Vec<usize> = idx[..n].to_vec();
    top.sort_by(|a, b| logits[*b].total_cmp(&logits[*a]));
    top.iter()
        .map(|&i| {
            let piece = model
                .vocab()
                .token_to_piece(LlamaToken(i as i32), false, None);
            format!("{:?}:{:.1}", String::from_utf8_lossy(&piece), logits[i])
        })
        .collect::<Vec<_>>()
        .join("  ")
}

pub(super) fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

pub(super) fn argmax(logits: &[f32]) -> usize {
    let mut best = 0;
    let mut best_v = f32::NEG_INFINITY;
    for (i, &v) in logits.iter().enumerate() {
        if v > best_v {
            best_v = v;
            best = i;
        }
    }
    best
}

pub(super) fn full_array(logits: &[f32]) -> LlamaTokenDataArray {
    LlamaTokenDataArray::new(
        logits
            .iter()
            .enumerate()
            .map(|(i, &l)| LlamaTokenData::new(LlamaToken(i as i32), l, 0.0))
            .collect(),
        false,
    )
}

/// Choose the next token. With a grammar in `CheckFirst` mode the unconstrained choice is tried first and
/// the whole-vocabulary grammar pass runs only when the grammar rejects it.
pub(super) fn pick(
    logits: &[f32],
    mut chain: Option<&mut LlamaSampler>,
    grammar: Option<&mut LlamaSampler>,
    mode: GrammarMode,
    banned: &dyn Fn(LlamaToken) -> bool,
    full_passes: &mut u32,
) -> Result<LlamaToken, EngineError> {
    // Banned tokens are masked exactly as a grammar masks: out of the candidate arrays before selection.
    let unban = |arr: &mut LlamaTokenDataArray| {
        for d in arr.data.iter_mut() {
            if d.logit().is_finite() && banned(d.id()) {
                d.set_logit(f32::NEG_INFINITY);
            }
        }
    };
    let unconstrained = |chain: Option<&mut LlamaSampler>| -> Result<LlamaToken, EngineError> {
        match chain {
            None => Ok(LlamaToken(argmax(logits) as i32)),
            Some(c) => {
                let mut arr = full_array(logits);
                arr.apply_sampler(c);
                arr.selected_token()
                    .ok_or_else(|| EngineError::Decode("sampler selected no token".into()))
            }
        }
    };
    let Some(g) = grammar else {
        return unconstrained(chain);
    };
    if mode == GrammarMode::CheckFirst {
        let candidate = unconstrained(chain.as_deref_mut())?;
        let mut one = LlamaTokenDataArray::new(
            vec![LlamaTokenData::new(
                candidate,
                logits[candidate.0 as usize],
                0.0,
            )],
            false,
        );
        one.apply_sampler(g);
        if one.data[0].logit().is_finite() && !banned(candidate) {
            return Ok(candidate);
        }
        // Rejected: the grammar's choice is almost always among the most likely tokens. Filter the top
        // SHORTLIST first; for greedy decoding this is exactly the full pass's answer whenever any shortlisted
        // token is allowed (the best allowed token overall is then the best allowed shortlisted one).
        let mut short = shortlist(logits, SHORTLIST);
        short.apply_sampler(g);
        unban(&mut short);
        if short.data.iter().any(|d| d.logit().is_finite()) {
            return select(short, chain);
        }
    }
    *full_passes += 1;
    let mut arr = full_array(logits);
    arr.apply_sampler(g);
    unban(&mut arr);
    if !arr.data.iter().any(|d| d.logit().is_finite()) {
        return Err(EngineError::Grammar(NO_TOKEN.into()));
    }
    select(arr, chain)
}

/// The grammar error when no token is allowed at a point (every candidate rejected or masked).
pub(super) const NO_TOKEN: &str = "the grammar allows no token here";

/// How many times one generation may step back from a dead end its masks made (see [`Session::generate`]).
pub(super) const MAX_BACKTRACKS: u32 = 256;

pub(super) fn is_dead_end(e: &EngineError) -> bool {
    matches!(e, EngineError::Grammar(m) if m == NO_TOKEN)
}

/// A grammar sampler for `text` that has accepted `tokens` (rebuilt when generation steps back: llama.cpp's
/// grammar sampler cannot un-accept a token).
pub(super) fn grammar_after(
    model: &LlamaModel,
    text: &str,
    tokens: &[LlamaToken],
) -> Result<LlamaSampler, EngineError> {
    let mut g = LlamaSampler::grammar(model, text, "root")
        .map_err(|e| EngineError::Grammar(e.to_string()))?;
    for &t in tokens {
        g.try_accept(t)
            .map_err(|e| EngineError::Grammar(format!("replaying an accepted token: {e}")))?;
    }
    Ok(g)
}

/// How many top tokens the check-first path tries before a whole-vocabulary grammar pass.
pub(super) const SHORTLIST: usize = 128;

pub(super) fn shortlist(logits: &[f32], n: usize) -> LlamaTokenDataArray {
    let n = n.min(logits.len());
    let mut idx: Vec<u32> = (0..logits.len() as u32).collect();
    if n < idx.len() {
        idx.select_nth_unstable_by(n, |a, b| {
            logits[*b as usize].total_cmp(&logits[*a as usize])
        });
        idx.truncate(n);
    }
    LlamaTokenDataArray::new(
        idx.into_iter()
            .map(|i| LlamaTokenData::new(LlamaToken(i as i32), logits[i as usize], 0.0))
            .collect(),
        false,
    )
}

/// Pick from grammar-filtered candidates: the best allowed token (greedy) or a sample via the chain.
pub(super) fn select(
    mut arr: LlamaTokenDataArray,
    chain: Option<&mut LlamaSampler>,
) -> Result<LlamaToken, EngineError> {
    match chain {
        None => arr
            .data
            .iter()
            .filter(|d| d.logit().is_finite())
            .max_by(|a, b| a.logit().total_cmp(&b.logit()))
            .map(|d| d.id())
            .ok_or_else(|| EngineError::Grammar(NO_TOKEN.into())),
        Some(c) => {
            arr.data.retain(|d| d.logit().is_finite());
            arr.apply_sampler(c);
            arr.selected_token()
                .ok_or_else(|| EngineError::Decode("sampler selected no token".into()))
        }
    }
}

/// The allowance of the tokens an array still allows (finite and not banned), folded by their texts.
pub(super) fn fold_allowed(
    model: &LlamaModel,
    arr: &LlamaTokenDataArray,
    banned: &dyn Fn(LlamaToken) -> bool,
) -> Allowance {
    fold_tokens(
        model,
        arr.data
            .iter()
            .filter(|d| d.logit().is_finite())
            .map(|d| d.id())
            .filter(|&t| !banned(t)),
    )
}

/// The allowance of a set of allowed tokens: their texts (an end-of-generation token as the end) folded.
pub(super) fn fold_tokens(
    model: &LlamaModel,
    allowed: impl IntoIterator<Item = LlamaToken>,
) -> Allowance {
    let vocab = model.vocab();
    let mut texts = AllowedTexts::default();
    for token in allowed {
        let text = (!vocab.is_eog(token)).then(|| vocab.token_to_piece(token, false, None));
        if !texts.add(text.as_deref()) {
            break;
        }
    }
    texts.allowance()
}
