//! The model's generation: KV-prefix reuse, chunked prefill with cancellation between chunks, then token by
//! token under the grammar (check-first or full), banned prefixes masked, a bounded step back out of dead ends.

use std::time::Instant;

use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

use super::path::TokenPath;
use super::sampling::*;
use super::*;

impl Session {
    /// Generate. `check(generated)` is polled before every llama.cpp decode (prefill chunks and each new
    /// token), so cancellation and deadlines take effect within one token.
    pub fn generate(
        &mut self,
        req: &GenerateRequest<'_>,
        check: &mut dyn FnMut(u32) -> Option<StopCause>,
    ) -> Result<Generation, EngineError> {
        let model = Arc::clone(&self.model);
        let vocab = model.vocab();
        let mut input = vocab.tokenize(req.prompt.as_bytes(), false, true);
        let prefill_tokens = vocab.tokenize(req.prefill.as_bytes(), false, false);
        input.extend_from_slice(&prefill_tokens);
        let needed = input.len() + req.max_new_tokens as usize;
        if needed > self.config.n_ctx as usize {
            return Err(EngineError::ContextFull {
                needed,
                n_ctx: self.config.n_ctx,
            });
        }
        if input.is_empty() {
            return Err(EngineError::Template("empty prompt".into()));
        }

        let mut grammar = self.grammar_past_prefill(req.grammar, &prefill_tokens)?;

        // --- prefill with KV reuse ---
        let started = Instant::now();
        let reused = self.prefill(&input, check)?;
        let prefill_ms = started.elapsed().as_secs_f64() * 1e3;

        // --- decode ---
        let started = Instant::now();
        let mut chain = sampler_chain(&req.sampling);
        let mut path = TokenPath::new(req.prefill, req.banned_prefixes);
        let mut full_passes: u32 = 0;
        if req.grammar.is_some() && self.first_bytes.is_none() {
            self.first_bytes = Some(std::sync::Arc::new(share::FirstBytes::of(&self.model)));
        }
        let first_bytes = self.first_bytes.clone();
        let mut logits_idx = self.batch.n_tokens() - 1;
        let finish = loop {
            if path.len() >= req.max_new_tokens {
                break Finish::MaxTokens;
            }
            let logits = self.ctx.get_logits_ith(logits_idx);
            if debug_tokens() {
                eprintln!("{}", top_candidates(&self.model, logits, 5));
            }
            let banned = |token: LlamaToken| {
                !path.allows(token, || vocab.token_to_piece(token, false, None))
            };
            let choice = pick(
                logits,
                chain.as_mut(),
                grammar.as_mut(),
                req.grammar_mode,
                &banned,
                &mut full_passes,
            );
            let token = match choice {
                Ok(token) => token,
                Err(e) if is_dead_end(&e) && path.step_back().is_some() => {
                    self.step_back_in_cache()?;
                    logits_idx = 0;
                    if let Some(text) = req.grammar {
                        grammar = Some(grammar_after(
                            &self.model,
                            text,
                            &path.accepted(&prefill_tokens),
                        )?);
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            // Classified before the grammar accepts the token: where the grammar stands, what else was allowed.
            let allowance = share::allowance(
                &self.model,
                first_bytes.as_deref(),
                logits,
                grammar.as_mut(),
                req.grammar_mode,
                &banned,
                &mut full_passes,
            );
            if let Some(g) = grammar.as_mut() {
                g.try_accept(token)
                    .map_err(|e| EngineError::Grammar(format!("token rejected on accept: {e}")))?;
            }
            if vocab.is_eog(token) {
                break Finish::EndOfGeneration;
            }
            path.push(token, &vocab.token_to_piece(token, false, None), allowance);
            if req.stop_at_json_end && path.json_complete() {
                break Finish::JsonComplete;
            }
            if path.len() >= req.max_new_tokens {
                break Finish::MaxTokens;
            }
            if let Some(cause) = check(path.len()) {
                return Err(stop_error(cause, path.len()));
            }
            self.decode_next(token)?;
            logits_idx = 0;
        };
        let decode_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(Generation {
            text: path.text(),
            input_tokens: input.len() as u32,
            output_tokens: path.len(),
            reused_tokens: reused,
            prefill_tokens: input.len() as u32 - reused,
            prefill_ms,
            decode_ms,
            full_grammar_passes: full_passes,
            finish,
            share: path.share(),
        })
    }

    /// The request's grammar as a sampler, advanced past the prefill's tokens (`None` without a grammar).
    fn grammar_past_prefill(
        &self,
        grammar: Option<&str>,
        prefill_tokens: &[LlamaToken],
    ) -> Result<Option<LlamaSampler>, EngineError> {
        let Some(text) = grammar else {
            return Ok(None);
        };
        let mut sampler = LlamaSampler::grammar(&self.model, text, "root")
            .map_err(|e| EngineError::Grammar(e.to_string()))?;
        for &t in prefill_tokens {
            sampler.try_accept(t).map_err(|e| {
                EngineError::Grammar(format!("the prefill does not fit the grammar: {e}"))
            })?;
        }
        Ok(Some(sampler))
    }

    /// Decodes `input` into the KV cache in chunks, keeping the prefix the cache already holds (`check` is
    /// polled before each chunk); returns how many tokens were reused.
    fn prefill(
        &mut self,
        input: &[LlamaToken],
        check: &mut dyn FnMut(u32) -> Option<StopCause>,
    ) -> Result<u32, EngineError> {
        let mut keep = common_prefix(&self.cached, input);
        if keep == input.len() {
            keep -= 1; // the last input token must be decoded again to get its logits
        }
        if keep < self.cached.len() {
            if self
                .ctx
                .kv_cache_seq_rm(0, Some(keep as u32), None)
                .is_err()
            {
                self.ctx.clear_kv_cache();
                keep = 0;
            }
            self.cached.truncate(keep);
        }
        let reused = keep as u32;
        let mut pos = keep;
        while pos < input.len() {
            if let Some(cause) = check(0) {
                return Err(stop_error(cause, 0));
            }
            let chunk = self.config.prefill_chunk.clamp(1, self.config.n_batch) as usize;
            let end = (pos + chunk).min(input.len());
            self.batch.clear();
            for (i, &t) in input[pos..end].iter().enumerate() {
                let p = pos + i;
                self.batch
                    .add(t, p as i32, &[0], p + 1 == input.len())
                    .map_err(|e| EngineError::Decode(e.to_string()))?;
            }
            if let Err(e) = self.ctx.decode(&mut self.batch) {
                self.clear_cache();
                return Err(EngineError::Decode(e.to_string()));
            }
            self.cached.extend_from_slice(&input[pos..end]);
            pos = end;
        }
        Ok(reused)
    }

    /// Out of a dead end: the KV cache holds input + every picked token. Drops the refused token and the one
    /// before it, then decodes that one again: its logits are the ones to choose from now.
    fn step_back_in_cache(&mut self) -> Result<(), EngineError> {
        let keep = self.cached.len() - 2;
        if self
            .ctx
            .kv_cache_seq_rm(0, Some(keep as u32), None)
            .is_err()
        {
            self.clear_cache();
            return Err(EngineError::Decode(
                "could not step back in the KV cache".into(),
            ));
        }
        let previous = self.cached[keep];
        self.cached.truncate(keep);
        self.batch.clear();
        self.batch
            .add(previous, keep as i32, &[0], true)
            .map_err(|e| EngineError::Decode(e.to_string()))?;
        if let Err(e) = self.ctx.decode(&mut self.batch) {
            self.clear_cache();
            return Err(EngineError::Decode(e.to_string()));
        }
        self.cached.push(previous);
        Ok(())
    }

    /// Decodes one picked token at the end of the cache (its logits are the next step's).
    fn decode_next(&mut self, token: LlamaToken) -> Result<(), EngineError> {
        self.batch.clear();
        self.batch
            .add(token, self.cached.len() as i32, &[0], true)
            .map_err(|e| EngineError::Decode(e.to_string()))?;
        if let Err(e) = self.ctx.decode(&mut self.batch) {
            self.clear_cache();
            return Err(EngineError::Decode(e.to_string()));
        }
        self.cached.push(token);
        Ok(())
    }
}

/// The sampler of a temperature above 0 (top-k, top-p, temperature, seeded draw); `None` at 0: greedy.
fn sampler_chain(sampling: &Sampling) -> Option<LlamaSampler> {
    (sampling.temperature > 0.0).then(|| {
        LlamaSampler::chain_simple([
            LlamaSampler::top_k(sampling.top_k),
            LlamaSampler::top_p(sampling.top_p, 1),
            LlamaSampler::temp(sampling.temperature),
            LlamaSampler::dist(sampling.seed),
        ])
    })
}
