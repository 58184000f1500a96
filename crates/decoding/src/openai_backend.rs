//! `OpenAiBackend`: generation on an OpenAI-compatible chat server (vLLM, llama-server's `/v1`, …) through
//! `POST /v1/chat/completions` with `response_format: {type: "json_schema"}`.
//!
//! What it cannot do, and what it does instead:
//! - **No prefill.** A chat endpoint starts the assistant turn itself. The policy's generation schema already
//!   fixes what guided mode's prefix writes for a tool step (`type`, `tool`, the argument names), so the
//!   schema carries it; for a final step the evidence ids the runtime would have written are left to the
//!   model, and the runtime's final gate checks them as it checks any answer. The returned text is the
//!   model's whole JSON, not prefill + continuation.
//! - **No GBNF.** Only the JSON Schema is sent; constraints that exist only in the grammar are not enforced
//!   while decoding, and the runtime's validation catches what slips through. Without a schema the request is
//!   plain chat (the policy's unconstrained experiments).
//! - **Server-side chat template and sampling.** Token counts come from the server's `usage` (cached prompt
//!   tokens when it reports them); timings from llama.cpp's `timings` when present, else measured here.

use std::time::Instant;

use serde_json::{Value, json};

use crate::backend::{Backend, BackendError, BackendRequest};
use crate::generation::{Finish, Generation, JsonScanner, StopCause};
use crate::http_client::{HttpClient, HttpConfig, HttpError, Poll, SseItem};
use crate::server_backend::{POLL, excerpt};

pub struct OpenAiBackend {
    client: HttpClient,
    model: String,
}

impl OpenAiBackend {
    /// `config.url` is the server root or its `/v1` base. Without `model`, the first one `/v1/models` lists.
    pub fn connect(config: &HttpConfig, model: Option<String>) -> Result<Self, BackendError> {
        let mut config = config.clone();
        let trimmed = config.url.trim_end_matches('/');
        config.url = trimmed.strip_suffix("/v1").unwrap_or(trimmed).to_string();
        let client = HttpClient::new(&config)?;
        let models = client.get_json("/v1/models")?;
        let listed: Vec<String> = models
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                BackendError::Protocol(format!("{}/v1/models has no \"data\" list", client.base()))
            })?
            .iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
            .collect();
        let model = match model {
            Some(m) => m,
            None => listed.first().cloned().ok_or_else(|| {
                BackendError::Protocol(format!("{}/v1/models lists no model", client.base()))
            })?,
        };
        Ok(Self { client, model })
    }

    pub fn model(&self) -> &str {
        &self.model
    }
}

/// The `/v1/chat/completions` body for a request.
pub fn chat_body(model: &str, req: &BackendRequest<'_>) -> Result<Value, BackendError> {
    let s = req.sampling;
    let mut body = json!({
        "model": model,
        "messages": [ {"role": "system", "content": req.system}, {"role": "user", "content": req.user} ],
        "max_tokens": req.max_new_tokens,
        "temperature": s.temperature.max(0.0),
        "top_p": s.top_p,
        "seed": s.seed,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    match (req.json_schema, req.grammar) {
        (Some(schema), _) => {
            body["response_format"] = json!({ "type": "json_schema", "json_schema": { "name": "decision", "strict": true, "schema": schema } });
        }
        (None, Some(_)) => {
            return Err(BackendError::Config("the openai-chat backend needs the JSON Schema behind a grammar; it cannot send GBNF".into()));
        }
        (None, None) => {}
    }
    Ok(body)
}

impl Backend for OpenAiBackend {
    fn describe(&self) -> String {
        format!("openai-chat {} (model {})", self.client.base(), self.model)
    }

    fn generate(
        &mut self,
        req: &BackendRequest<'_>,
        check: &mut dyn FnMut(u32) -> Option<StopCause>,
    ) -> Result<Generation, BackendError> {
        crate::backend::ready_to_send("openai-chat", req, check)?;
        let body = chat_body(&self.model, req)?;
        let url = format!("{}/v1/chat/completions", self.client.base());
        let started = Instant::now();
        let mut first_token_ms: Option<f64> = None;
        let mut stream = self.client.post_sse("/v1/chat/completions", &body);
        let mut text = String::new();
        let mut scanner = JsonScanner::default();
        let mut chunks: u32 = 0;
        let mut finish: Option<Finish> = None;
        let mut usage: Option<Value> = None;
        let mut timings: Option<Value> = None;
        loop {
            if let Some(cause) = check(chunks) {
                return Err(BackendError::stopped(cause, chunks));
            }
            let event = match stream.next(POLL)? {
                Poll::Pending | Poll::Item(SseItem::KeepAlive) => continue,
                Poll::Item(SseItem::Done) => break,
                Poll::End => {
                    if finish.is_some() {
                        break;
                    }
                    return Err(HttpError::Closed { url }.into());
                }
                Poll::Item(SseItem::Data(v)) => v,
            };
            if let Some(e) = event.get("error") {
                let message = e
                    .get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| e.to_string(), str::to_string);
                return Err(BackendError::Protocol(format!(
                    "{url} reported an error: {message}"
                )));
            }
            if let Some(u) = event.get("usage").filter(|u| u.is_object()) {
                usage = Some(u.clone());
            }
            if let Some(t) = event.get("timings").filter(|t| t.is_object()) {
                timings = Some(t.clone());
            }
            let Some(choices) = event.get("choices").and_then(Value::as_array) else {
                return Err(BackendError::Protocol(format!(
                    "{url} chunk without \"choices\": {}",
                    excerpt(&event)
                )));
            };
            let Some(choice) = choices.first() else {
                continue;
            };
            if let Some(piece) = choice.pointer("/delta/content").and_then(Value::as_str) {
                if !piece.is_empty() {
                    first_token_ms.get_or_insert_with(|| started.elapsed().as_secs_f64() * 1e3);
                    chunks += 1;
                }
                text.push_str(piece);
                piece.bytes().for_each(|b| scanner.feed(b));
            }
            match choice.get("finish_reason").and_then(Value::as_str) {
                Some("length") => finish = Some(Finish::MaxTokens),
                Some(_) => {
                    finish = Some(if scanner.complete() {
                        Finish::JsonComplete
                    } else {
                        Finish::EndOfGeneration
                    })
                }
                None => {}
            }
            // With a schema the server ends the answer itself (and sends `usage` after it); only free text
            // is cut here.
            if finish.is_none()
                && req.stop_at_json_end
                && req.json_schema.is_none()
                && scanner.complete()
            {
                finish = Some(Finish::JsonComplete);
                break;
            }
        }
        drop(stream);
        let total_ms = started.elapsed().as_secs_f64() * 1e3;
        let u = usage.unwrap_or(Value::Null);
        let t = timings.unwrap_or(Value::Null);
        let n = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_f64);
        let input = n(&u, "/prompt_tokens").unwrap_or(0.0) as u32;
        let cached = n(&u, "/prompt_tokens_details/cached_tokens")
            .or_else(|| n(&t, "/cache_n"))
            .unwrap_or(0.0) as u32;
        let prefill_ms = n(&t, "/prompt_ms").unwrap_or_else(|| first_token_ms.unwrap_or(total_ms));
        Ok(Generation {
            text,
            input_tokens: input,
            output_tokens: n(&u, "/completion_tokens").map_or(chunks, |v| v as u32),
            reused_tokens: cached,
            prefill_tokens: input.saturating_sub(cached),
            prefill_ms,
            decode_ms: n(&t, "/predicted_ms").unwrap_or(total_ms - prefill_ms),
            full_grammar_passes: 0,
            finish: finish.unwrap_or(Finish::JsonComplete),
            share: crate::share::unknown("openai-chat"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generation::{GrammarMode, Sampling};

    fn request<'a>(grammar: Option<&'a str>, schema: Option<&'a Value>) -> BackendRequest<'a> {
        BackendRequest {
            system: "sys",
            user: "user",
            prefill: "{\"type\":\"final\"",
            grammar,
            json_schema: schema,
            grammar_mode: GrammarMode::CheckFirst,
            sampling: Sampling::default(),
            max_new_tokens: 16,
            stop_at_json_end: true,
            banned_prefixes: &[],
        }
    }

    #[test]
    fn the_schema_goes_in_response_format_and_the_prefill_nowhere() {
        let schema = json!({"type": "object"});
        let body = chat_body("qwen", &request(Some("root ::= x"), Some(&schema))).unwrap();
        assert_eq!(body["response_format"]["type"], "json_schema");
        assert_eq!(body["response_format"]["json_schema"]["schema"], schema);
        assert_eq!(body["model"], "qwen");
        assert!(
            !body.to_string().contains("\\\"type\\\":\\\"final\\\""),
            "the prefill must not be sent: {body}"
        );
        assert!(
            chat_body("qwen", &request(None, None))
                .unwrap()
                .get("response_format")
                .is_none()
        );
    }

    #[test]
    fn a_grammar_without_its_schema_is_refused() {
        let err = chat_body("qwen", &request(Some("root ::= x"), None)).unwrap_err();
        assert!(err.to_string().contains("cannot send GBNF"), "{err}");
    }
}
