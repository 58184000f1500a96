//! The model's generation: KV-prefix reuse, chunked prefill with cancellation between chunks, then token by
//! token under the grammar (check-first or full), banned prefixes masked, a bounded step back out of dead ends.

use std::time::Instant;

use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

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
        let vocab = self.model.vocab();
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

        let mut grammar = match req.grammar {
            Some(g) => Some(
                LlamaSampler::grammar(&self.model, g, "root")
                    .map_err(|e| EngineError::Grammar(e.to_string()))?,
            ),
            None => None,
        };
        if let Some(g) = grammar.as_mut() {
            for &t in &prefill_tokens {
                g.try_accept(t).map_err(|e| {
                    EngineError::Grammar(format!("the prefill does not fit the grammar: {e}"))
                })?;
            }
        }

        // --- prefill with KV reuse ---
        let started = Instant::now();
        let mut keep = common_prefix(&self.cached, &input);
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
        let prefill_ms = started.elapsed().as_secs_f64() * 1e3;

        // --- decode ---
        let started = Instant::now();
        let mut chain = (req.sampling.temperature > 0.0).then(|| {
            LlamaSampler::chain_simple([
                LlamaSampler::top_k(req.sampling.top_k),
                LlamaSampler::top_p(req.sampling.top_p, 1),
                LlamaSampler::temp(req.sampling.temperature),
                LlamaSampler::dist(req.sampling.seed),
            ])
        });
        let mut scanner = JsonScanner::default();
        for b in req.prefill.bytes() {
            scanner.feed(b);
        }
        let mut out: Vec<u8> = Vec::new();
        let mut generated: u32 = 0;
        let mut full_passes: u32 = 0;
        let mut logits_idx = self.batch.n_tokens() - 1;
        // Banned prefixes mask tokens one at a time, so a path can run into a point where every token the
        // grammar allows is masked (the only way on is a banned repeat). Then generation steps back one token,
        // refuses that token at that position, and goes on: a depth-first search over the grammar's paths,
        // which finds an unbanned decision whenever the grammar has one (bounded by MAX_BACKTRACKS).
        let mut picked: Vec<(LlamaToken, usize)> = Vec::new();
        let mut refused: Vec<Vec<LlamaToken>> = vec![Vec::new()];
        let mut backtracks: u32 = 0;
        let finish = loop {
            if generated >= req.max_new_tokens {
                break Finish::MaxTokens;
            }
            let logits = self.ctx.get_logits_ith(logits_idx);
            if debug_tokens() {
                eprintln!("{}", top_candidates(&self.model, logits, 5));
            }
            let position = picked.len();
            let banned = |token: LlamaToken| {
                if refused.get(position).is_some_and(|r| r.contains(&token)) {
                    return true;
                }
                if req.banned_prefixes.is_empty() {
                    return false;
                }
                let mut text = req.prefill.as_bytes().to_vec();
                text.extend_from_slice(&out);
                text.extend_from_slice(&vocab.token_to_piece(token, false, None));
                req.banned_prefixes
                    .iter()
                    .any(|p| text.starts_with(p.as_bytes()))
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
                Err(e) if is_dead_end(&e) && !picked.is_empty() && backtracks < MAX_BACKTRACKS => {
                    backtracks += 1;
                    let (last, len) = picked.pop().expect("not empty");
                    out.truncate(out.len() - len);
                    generated -= 1;
                    refused.truncate(picked.len() + 1);
                    refused[picked.len()].push(last);
                    // The KV cache holds input + every picked token. Drop the refused token and the one before
                    // it, then decode that one again: its logits are the ones to choose from now.
                    let keep = self.cached.len() - 2;
                    if self.ctx.kv_cache_seq_rm(0, Some(keep as u32), None).is_err() {
                        self.clear_cache();
                        return Err(EngineError::Decode("could not step back in the KV cache".into()));
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
                    logits_idx = 0;
                    if let Some(text) = req.grammar {
                        let accepted: Vec<LlamaToken> =
                            prefill_tokens.iter().copied().chain(picked.iter().map(|(t, _)| *t)).collect();
                        grammar = Some(grammar_after(&self.model, text, &accepted)?);
                    }
                    scanner = JsonScanner::default();
                    for &b in req.prefill.as_bytes().iter().chain(&out) {
                        scanner.feed(b);
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let Some(g) = grammar.as_mut() {
                g.try_accept(token)
                    .map_err(|e| EngineError::Grammar(format!("token rejected on accept: {e}")))?;
            }
            if vocab.is_eog(token) {
                break Finish::EndOfGeneration;
            }
            let piece = vocab.token_to_piece(token, false, None);
            for &b in &piece {
                scanner.feed(b);
            }
            out.extend_from_slice(&piece);
            picked.push((token, piece.len()));
            refused.push(Vec::new());
            generated += 1;
            if req.stop_at_json_end && scanner.complete() {
                break Finish::JsonComplete;
            }
            if generated >= req.max_new_tokens {
                break Finish::MaxTokens;
            }
            if let Some(cause) = check(generated) {
                return Err(stop_error(cause, generated));
            }
            self.batch.clear();
            self.batch
                .add(token, self.cached.len() as i32, &[0], true)
                .map_err(|e| EngineError::Decode(e.to_string()))?;
            if let Err(e) = self.ctx.decode(&mut self.batch) {
                self.clear_cache();
                return Err(EngineError::Decode(e.to_string()));
            }
            self.cached.push(token);
            logits_idx = 0;
        };
        let decode_ms = started.elapsed().as_secs_f64() * 1e3;
        let mut text = req.prefill.as_bytes().to_vec();
        text.extend_from_slice(&out);
        Ok(Generation {
            text: String::from_utf8_lossy(&text).into_owned(),
            input_tokens: input.len() as u32,
            output_tokens: generated,
            reused_tokens: reused,
            prefill_tokens: input.len() as u32 - reused,
            prefill_ms,
            decode_ms,
            full_grammar_passes: full_passes,
            finish,
        })
    }
}
