//! The grammar-only baseline's generation: no prompt evaluated, no logits computed; each token drawn uniformly
//! (seeded) among those the grammar allows.

use std::time::Instant;

use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

use super::path::TokenPath;
use super::sampling::*;
use super::*;

impl Session {
    /// Grammar-only generation: the prompt is never evaluated and the model's logits never computed. From the
    /// prefill on, each token is drawn uniformly among the tokens the grammar allows (banned prefixes masked
    /// as in [`Session::generate`]), with a generator seeded by `req.sampling.seed`, until the grammar ends,
    /// the JSON value completes or the cap is reached. Input-token counts are 0: nothing was read.
    pub fn generate_uniform(
        &mut self,
        req: &GenerateRequest<'_>,
        check: &mut dyn FnMut(u32) -> Option<StopCause>,
    ) -> Result<Generation, EngineError> {
        let vocab = self.model.vocab();
        let Some(text) = req.grammar else {
            return Err(EngineError::Grammar(
                "grammar-only generation needs a grammar (it has no model to choose tokens)".into(),
            ));
        };
        let prefill_tokens = vocab.tokenize(req.prefill.as_bytes(), false, false);
        let mut grammar =
            grammar_after(&self.model, text, &prefill_tokens).map_err(|e| match e {
                EngineError::Grammar(m) => {
                    EngineError::Grammar(format!("the prefill does not fit the grammar: {m}"))
                }
                other => other,
            })?;
        let n_vocab = self.model.n_vocab();
        let mut rng = SplitMix64(u64::from(req.sampling.seed) ^ 0x9e37_79b9_7f4a_7c15);
        let started = Instant::now();
        let mut path = TokenPath::new(req.prefill, req.banned_prefixes);
        let finish = loop {
            if path.len() >= req.max_new_tokens {
                break Finish::MaxTokens;
            }
            if let Some(cause) = check(path.len()) {
                return Err(stop_error(cause, path.len()));
            }
            // Equal logits: whatever the grammar leaves finite is equally likely.
            let mut arr = LlamaTokenDataArray::new(
                (0..n_vocab)
                    .map(|i| LlamaTokenData::new(LlamaToken(i), 0.0, 0.0))
                    .collect(),
                false,
            );
            arr.apply_sampler(&mut grammar);
            let allowed: Vec<LlamaToken> = arr
                .data
                .iter()
                .filter(|d| d.logit().is_finite())
                .map(|d| d.id())
                .filter(|&token| path.allows(token, || vocab.token_to_piece(token, false, None)))
                .collect();
            if allowed.is_empty() {
                // Steps back from dead ends the banned prefixes make, exactly as `generate` does.
                if path.step_back().is_none() {
                    return Err(EngineError::Grammar(NO_TOKEN.into()));
                }
                grammar = grammar_after(&self.model, text, &path.accepted(&prefill_tokens))?;
                continue;
            }
            let token = allowed[rng.below(allowed.len())];
            let allowance = fold_tokens(&self.model, allowed.iter().copied());
            if debug_tokens() {
                eprintln!(
                    "uniform pick {} of {}: {:?} {:?}",
                    token.0,
                    allowed.len(),
                    String::from_utf8_lossy(&vocab.token_to_piece(token, false, None)),
                    String::from_utf8_lossy(&vocab.token_to_piece(token, true, None))
                );
            }
            grammar
                .try_accept(token)
                .map_err(|e| EngineError::Grammar(format!("token rejected on accept: {e}")))?;
            if vocab.is_eog(token) {
                break Finish::EndOfGeneration;
            }
            path.push(token, &vocab.token_to_piece(token, false, None), allowance);
            if req.stop_at_json_end && path.json_complete() {
                break Finish::JsonComplete;
            }
        };
        let generated = path.len();
        Ok(Generation {
            text: path.text(),
            input_tokens: 0,
            output_tokens: generated,
            reused_tokens: 0,
            prefill_tokens: 0,
            prefill_ms: 0.0,
            decode_ms: started.elapsed().as_secs_f64() * 1e3,
            full_grammar_passes: generated,
            finish,
            share: path.share(),
        })
    }
}

/// A small seeded generator for grammar-only draws (SplitMix64: one state word, good enough to pick among
/// at most a vocabulary's worth of tokens, identical on every platform).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (rejection sampling: no modulo bias).
    fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.next();
            if x < zone {
                return (x % n) as usize;
            }
        }
    }
}
