//! `LlamaServerBackend`: generation on a llama.cpp server (`llama-server`) through its native `/completion`
//! endpoint, so the runner keeps its own prompt, prefill and per-step grammar.
//!
//! Per request: the model's chat template is applied by the server's `/apply-template` (the same GGUF
//! template the in-process engine uses), the runner appends its prefill, and the grammar is advanced past
//! that prefill (`gbnf::resume_text_after`) because the server constrains only what it generates. Tokens and timings
//! come from the server's stream; dropping the stream aborts the request (llama-server stops a generation
//! whose connection is closed). Not a server manager: starting llama-server is the caller's business.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::backend::{Backend, BackendError, BackendRequest};
use crate::gbnf;
use crate::generation::{Finish, Generation, JsonScanner, StopCause};
use crate::http_client::{HttpClient, HttpConfig, HttpError, Poll, SseItem, SseStream};

/// How often the caller's cancel flag and deadline are polled while waiting for the server.
pub(crate) const POLL: Duration = Duration::from_millis(20);
/// Derived grammars kept per backend (one per distinct grammar + prefill pair).
const GRAMMAR_CACHE: usize = 64;

/// Facts the server reports about itself (`GET /props`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ServerFacts {
    /// File name of the model the server loaded (directories dropped).
    pub model_file: Option<String>,
    pub total_slots: Option<u64>,
    /// Context per slot.
    pub n_ctx: Option<u64>,
    pub build_info: Option<String>,
}

pub struct LlamaServerBackend {
    client: HttpClient,
    facts: ServerFacts,
    grammars: HashMap<(String, String), String>,
}

impl LlamaServerBackend {
    /// Check `/health` and read `/props`: a server that is down or still loading is reported now.
    pub fn connect(config: &HttpConfig) -> Result<Self, BackendError> {
        let client = HttpClient::new(config)?;
        let health = client.get_json("/health")?;
        if health.get("status").and_then(Value::as_str) != Some("ok") {
            return Err(BackendError::Protocol(format!(
                "{} /health is not ok: {health}",
                client.base()
            )));
        }
        let props = client.get_json("/props")?;
        if !props.is_object() {
            return Err(BackendError::Protocol(format!(
                "{} /props is not a JSON object",
                client.base()
            )));
        }
        let facts = ServerFacts {
            model_file: props
                .get("model_path")
                .and_then(Value::as_str)
                .map(|p| forge_model::inspect::redact(std::path::Path::new(p))),
            total_slots: props.get("total_slots").and_then(Value::as_u64),
            n_ctx: props
                .pointer("/default_generation_settings/n_ctx")
                .and_then(Value::as_u64),
            build_info: props
                .get("build_info")
                .and_then(Value::as_str)
                .map(str::to_string),
        };
        Ok(Self {
            client,
            facts,
            grammars: HashMap::new(),
        })
    }

    pub fn facts(&self) -> &ServerFacts {
        &self.facts
    }

    /// The model's chat template applied by the server, ending with the assistant header.
    fn chat_prompt(
        &self,
        system: &str,
        user: &str,
        check: &mut dyn FnMut(u32) -> Option<StopCause>,
    ) -> Result<String, BackendError> {
        let body = json!({ "messages": [ {"role": "system", "content": system}, {"role": "user", "content": user} ] });
        let mut cause = None;
        let answer = self
            .client
            .post_json_polled("/apply-template", &body, POLL, &mut || {
                cause = check(0);
                cause.is_some()
            })?;
        let Some(answer) = answer else {
            return Err(BackendError::stopped(
                cause.expect("stopped for a cause"),
                0,
            ));
        };
        answer
            .get("prompt")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| {
                BackendError::Protocol(format!(
                    "{}/apply-template answered without a \"prompt\" string",
                    self.client.base()
                ))
            })
    }

    fn resumed_grammar(&mut self, grammar: &str, prefill: &str) -> Result<String, BackendError> {
        let key = (grammar.to_string(), prefill.to_string());
        if let Some(g) = self.grammars.get(&key) {
            return Ok(g.clone());
        }
        let g = gbnf::resume_text_after(grammar, prefill)?;
        if self.grammars.len() >= GRAMMAR_CACHE {
            self.grammars.clear();
        }
        self.grammars.insert(key, g.clone());
        Ok(g)
    }
}

/// The `/completion` body for a request (the chat prompt already formatted).
pub fn completion_body(prompt: &str, req: &BackendRequest<'_>, grammar: Option<&str>) -> Value {
    let s = req.sampling;
    let greedy = s.temperature <= 0.0;
    let mut body = json!({
        "prompt": format!("{prompt}{}", req.prefill),
        "n_predict": req.max_new_tokens,
        "stream": true,
        "cache_prompt": true,
        "timings_per_token": true,
        "return_tokens": true,
        "seed": s.seed,
        "temperature": if greedy { 0.0 } else { s.temperature },
        "top_k": s.top_k,
        "top_p": s.top_p,
        "min_p": 0.0,
        "repeat_penalty": 1.0,
        // The in-process chain: greedy argmax, or top-k → top-p → temperature → sample.
        "samplers": if greedy { json!(["temperature"]) } else { json!(["top_k", "top_p", "temperature"]) },
    });
    if let Some(g) = grammar {
        body["grammar"] = json!(g);
    }
    body
}

impl Backend for LlamaServerBackend {
    fn describe(&self) -> String {
        format!(
            "llama-server {} ({})",
            self.client.base(),
            self.facts.model_file.as_deref().unwrap_or("model unknown")
        )
    }

    fn generate(
        &mut self,
        req: &BackendRequest<'_>,
        check: &mut dyn FnMut(u32) -> Option<StopCause>,
    ) -> Result<Generation, BackendError> {
        crate::backend::ready_to_send("llama-server", req, check)?;
        let prompt = self.chat_prompt(req.system, req.user, check)?;
        let grammar = match req.grammar {
            Some(g) => Some(self.resumed_grammar(g, req.prefill)?),
            None => None,
        };
        let body = completion_body(&prompt, req, grammar.as_deref());
        let stream = self.client.post_sse("/completion", &body);
        read_completion(stream, self.client.base(), req, check)
    }
}

/// Read `/completion` stream events until the final one (or the JSON value is complete, or the caller stops).
/// Returning early drops `stream`, which aborts the request on the server.
fn read_completion(
    mut stream: SseStream,
    base: &str,
    req: &BackendRequest<'_>,
    check: &mut dyn FnMut(u32) -> Option<StopCause>,
) -> Result<Generation, BackendError> {
    let mut text = req.prefill.to_string();
    let mut scanner = JsonScanner::default();
    req.prefill.bytes().for_each(|b| scanner.feed(b));
    let mut generated: u32 = 0;
    let mut last_stats: Option<Value> = None;
    let finish = loop {
        if let Some(cause) = check(generated) {
            return Err(BackendError::stopped(cause, generated));
        }
        let event = match stream.next(POLL)? {
            Poll::Pending | Poll::Item(SseItem::KeepAlive) => continue,
            Poll::End | Poll::Item(SseItem::Done) => {
                return Err(HttpError::Closed {
                    url: format!("{base}/completion"),
                }
                .into());
            }
            Poll::Item(SseItem::Data(v)) => v,
        };
        if let Some(e) = event.get("error") {
            let message = e
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| e.to_string(), str::to_string);
            return Err(BackendError::Protocol(format!(
                "{base}/completion reported an error: {message}"
            )));
        }
        let content = event
            .get("content")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                BackendError::Protocol(format!(
                    "{base}/completion event without a \"content\" string: {}",
                    excerpt(&event)
                ))
            })?;
        text.push_str(content);
        content.bytes().for_each(|b| scanner.feed(b));
        generated += match event.get("tokens").and_then(Value::as_array) {
            Some(t) => t.len() as u32,
            None => u32::from(!content.is_empty()),
        };
        if event.get("timings").is_some() {
            last_stats = Some(event.clone());
        }
        if event.get("stop").and_then(Value::as_bool) == Some(true) {
            break match event.get("stop_type").and_then(Value::as_str) {
                Some("limit") => Finish::MaxTokens,
                _ if scanner.complete() => Finish::JsonComplete,
                _ => Finish::EndOfGeneration,
            };
        }
        if req.stop_at_json_end && scanner.complete() {
            break Finish::JsonComplete;
        }
        if generated >= req.max_new_tokens {
            break Finish::MaxTokens;
        }
    };
    drop(stream);
    let stats = last_stats.unwrap_or(Value::Null);
    let num = |p: &str| stats.pointer(p).and_then(Value::as_f64);
    let prompt_n = num("/timings/prompt_n").unwrap_or(0.0) as u32;
    let cache_n = num("/timings/cache_n").unwrap_or(0.0) as u32;
    let input = num("/tokens_evaluated").map_or(prompt_n + cache_n, |v| v as u32);
    Ok(Generation {
        text,
        input_tokens: input,
        output_tokens: generated,
        reused_tokens: cache_n,
        prefill_tokens: prompt_n,
        prefill_ms: num("/timings/prompt_ms").unwrap_or(0.0),
        decode_ms: num("/timings/predicted_ms").unwrap_or(0.0),
        full_grammar_passes: 0,
        finish,
        share: crate::share::unknown("llama-server"),
    })
}

pub(crate) fn excerpt(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 160 {
        format!(
            "{}…",
            &s[..s.char_indices().nth(160).map_or(s.len(), |(i, _)| i)]
        )
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generation::{GrammarMode, Sampling};

    fn request<'a>(temperature: f32) -> BackendRequest<'a> {
        BackendRequest {
            system: "sys",
            user: "user",
            prefill: "{\"a\":\"",
            grammar: Some("root ::= \"{\\\"a\\\":\\\"\" [a-z]+ \"\\\"}\""),
            json_schema: None,
            grammar_mode: GrammarMode::CheckFirst,
            sampling: Sampling {
                temperature,
                ..Sampling::default()
            },
            max_new_tokens: 32,
            stop_at_json_end: true,
            banned_prefixes: &[],
        }
    }

    #[test]
    fn the_completion_body_mirrors_the_in_process_sampler() {
        let greedy = completion_body("<prompt>", &request(0.0), Some("root ::= x"));
        assert_eq!(greedy["prompt"], "<prompt>{\"a\":\"");
        assert_eq!(greedy["samplers"], json!(["temperature"]));
        assert_eq!(greedy["temperature"], 0.0);
        assert_eq!(greedy["repeat_penalty"], 1.0);
        assert_eq!(greedy["n_predict"], 32);
        assert_eq!(greedy["stream"], true);
        assert_eq!(greedy["grammar"], "root ::= x");
        let sampled = completion_body("<prompt>", &request(0.7), None);
        assert_eq!(
            sampled["samplers"],
            json!(["top_k", "top_p", "temperature"])
        );
        assert!(sampled.get("grammar").is_none());
    }

    #[test]
    fn the_grammar_sent_accepts_what_follows_the_prefill() {
        let req = request(0.0);
        let sent = gbnf::resume_text_after(req.grammar.unwrap(), req.prefill).unwrap();
        assert!(
            gbnf::Grammar::parse(&sent).unwrap().accepts("abc\"}"),
            "{sent}"
        );
        assert!(
            !gbnf::Grammar::parse(&sent)
                .unwrap()
                .accepts("{\"a\":\"abc\"}"),
            "{sent}"
        );
    }
}
