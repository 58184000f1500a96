//! The generation seam under `ModelPolicy`: a `Backend` turns one fully planned request (system prompt, user
//! message, prefill, GBNF, sampling, token cap) into text plus token counts and timings. Three exist: the
//! in-process llama.cpp session (`forge_llama::in_process`), a llama.cpp server (`server_backend`) and an
//! OpenAI-compatible chat server (`openai_backend`); `forge_llama::open_backend` builds the one a
//! `BackendConfig` names (`remote::open` the server kinds, without llama.cpp).
//!
//! It sits *below* prompts and grammars: it never decides what to ask or how to constrain it, and it never
//! parses a decision. `BackendConfig` is plain data, so a backend can be built from a config value on any
//! thread (every backend is `Send`).

use runtime::policy::PolicyError;

use crate::gbnf::GbnfError;
use crate::generation::{EngineError, Generation, GrammarMode, Sampling, StopCause};
use crate::http_client::{HttpConfig, HttpError};

/// Which backend generates, as plain data (`--backend` on the command line, a field in a config file).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum BackendConfig {
    /// llama.cpp in this process, with the policy's model file and engine settings.
    #[default]
    InProcess,
    /// A llama.cpp server's native `/completion` endpoint (the runner's prompt, prefill and grammar).
    LlamaServer(HttpConfig),
    /// An OpenAI-compatible `/v1/chat/completions` endpoint (JSON-schema output; see `openai_backend`).
    OpenaiChat {
        #[serde(flatten)]
        http: HttpConfig,
        /// The `model` field of each request (servers such as vLLM require it).
        #[serde(default)]
        model: Option<String>,
    },
}

impl BackendConfig {
    /// The kind as written on the command line: `in-process`, `llama-server`, `openai-chat`.
    pub fn kind(&self) -> &'static str {
        match self {
            BackendConfig::InProcess => "in-process",
            BackendConfig::LlamaServer(_) => "llama-server",
            BackendConfig::OpenaiChat { .. } => "openai-chat",
        }
    }

    /// Build from a kind name and an optional URL (what `runner --backend KIND --url URL` passes).
    pub fn from_kind(kind: &str, url: Option<&str>) -> Result<Self, BackendError> {
        let need_url = |k: &str| {
            url.map(HttpConfig::new).ok_or_else(|| {
                BackendError::Config(format!("--backend {k} needs --url http://HOST:PORT"))
            })
        };
        match kind {
            "in-process" => match url {
                None => Ok(BackendConfig::InProcess),
                Some(u) => Err(BackendError::Config(format!(
                    "--url {u} makes no sense with --backend in-process"
                ))),
            },
            "llama-server" => Ok(BackendConfig::LlamaServer(need_url(kind)?)),
            "openai-chat" => Ok(BackendConfig::OpenaiChat {
                http: need_url(kind)?,
                model: None,
            }),
            other => Err(BackendError::Config(format!(
                "unknown backend {other:?} (in-process, llama-server, openai-chat)"
            ))),
        }
    }

    /// The server URL, for remote kinds.
    pub fn url(&self) -> Option<&str> {
        match self {
            BackendConfig::InProcess => None,
            BackendConfig::LlamaServer(h) | BackendConfig::OpenaiChat { http: h, .. } => {
                Some(&h.url)
            }
        }
    }
}

/// One generation, fully planned by the policy.
#[derive(Debug, Clone)]
pub struct BackendRequest<'a> {
    pub system: &'a str,
    pub user: &'a str,
    /// Assistant text the runner writes before the model continues (part of the returned text).
    pub prefill: &'a str,
    /// GBNF (root rule `root`) that prefill + generated text must follow.
    pub grammar: Option<&'a str>,
    /// The JSON Schema the grammar was derived from, for backends that accept only a schema.
    pub json_schema: Option<&'a serde_json::Value>,
    /// How the in-process engine applies the grammar (servers use their own sampler).
    pub grammar_mode: GrammarMode,
    pub sampling: Sampling,
    pub max_new_tokens: u32,
    /// Stop as soon as the first top-level JSON value is complete.
    pub stop_at_json_end: bool,
    /// Texts the output must never start with (the in-process engine masks them token by token; servers
    /// cannot, so there free mode relies on the runtime's loop guard instead).
    pub banned_prefixes: &'a [String],
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BackendError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("model server: {0}")]
    Http(#[from] HttpError),
    #[error("model server answer: {0}")]
    Protocol(String),
    #[error("grammar for the server: {0}")]
    Grammar(#[from] GbnfError),
    #[error("backend configuration: {0}")]
    Config(String),
    #[error("cancelled after {generated} generated tokens")]
    Cancelled { generated: u32 },
    #[error("deadline reached after {generated} generated tokens")]
    Timeout { generated: u32 },
}

impl BackendError {
    /// The error for a stop the caller asked for.
    pub fn stopped(cause: StopCause, generated: u32) -> Self {
        match cause {
            StopCause::Cancelled => BackendError::Cancelled { generated },
            StopCause::Timeout => BackendError::Timeout { generated },
        }
    }
}

/// What a remote backend checks before it sends anything: the run may still go on (`check(0)`), and the
/// request asks for the model's own sampling — the grammar-only baseline draws tokens itself, which only the
/// in-process engine can (`kind` names the server in the refusal).
pub fn ready_to_send(
    kind: &str,
    req: &BackendRequest<'_>,
    check: &mut dyn FnMut(u32) -> Option<StopCause>,
) -> Result<(), BackendError> {
    if let Some(cause) = check(0) {
        return Err(BackendError::stopped(cause, 0));
    }
    if req.sampling.chooser != crate::generation::Chooser::Model {
        return Err(BackendError::Config(format!(
            "grammar-only generation runs in process (a {kind} server always samples from its model)"
        )));
    }
    Ok(())
}

impl From<BackendError> for PolicyError {
    /// Down, stalled, closed or garbled servers are `model_unavailable` (the run could not get a model answer);
    /// a request the server refused (4xx) or a grammar that cannot be rewritten is a policy failure.
    fn from(e: BackendError) -> Self {
        match e {
            BackendError::Engine(EngineError::Unavailable(u)) => {
                PolicyError::ModelUnavailable(u.to_string())
            }
            BackendError::Engine(EngineError::Cancelled { .. })
            | BackendError::Cancelled { .. } => PolicyError::Cancelled,
            BackendError::Engine(EngineError::Timeout { .. }) | BackendError::Timeout { .. } => {
                PolicyError::Timeout
            }
            BackendError::Http(HttpError::Status { status, .. })
                if (400..500).contains(&status) && status != 404 =>
            {
                PolicyError::Runtime(e.to_string())
            }
            BackendError::Http(_) | BackendError::Protocol(_) | BackendError::Config(_) => {
                PolicyError::ModelUnavailable(e.to_string())
            }
            other => PolicyError::Runtime(other.to_string()),
        }
    }
}

/// Whatever generates text for the policy.
pub trait Backend: Send {
    /// Short description for logs and reports (`in-process`, `llama-server http://…`).
    fn describe(&self) -> String;
    /// Generate. `check(generated)` is polled while waiting (before every decode in process, between streamed
    /// events for servers); `Some(cause)` stops generation and abandons the request.
    fn generate(
        &mut self,
        req: &BackendRequest<'_>,
        check: &mut dyn FnMut(u32) -> Option<StopCause>,
    ) -> Result<Generation, BackendError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_are_plain_data() {
        let c: BackendConfig = serde_json::from_str(
            r#"{"kind":"llama-server","url":"http://127.0.0.1:8080","stall_timeout_ms":5000}"#,
        )
        .unwrap();
        assert_eq!(
            c,
            BackendConfig::LlamaServer(HttpConfig {
                stall_timeout_ms: 5000,
                ..HttpConfig::new("http://127.0.0.1:8080")
            })
        );
        let o: BackendConfig = serde_json::from_str(
            r#"{"kind":"openai-chat","url":"http://gpu:8000/v1","model":"qwen"}"#,
        )
        .unwrap();
        assert_eq!(o.kind(), "openai-chat");
        assert_eq!(o.url(), Some("http://gpu:8000/v1"));
        assert_eq!(
            serde_json::from_str::<BackendConfig>(r#"{"kind":"in-process"}"#).unwrap(),
            BackendConfig::InProcess
        );
        let err = serde_json::from_str::<BackendConfig>(
            r#"{"kind":"llama-server","url":"http://x","timeout":1}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("timeout"), "{err}");
    }

    #[test]
    fn kinds_from_the_command_line() {
        assert_eq!(
            BackendConfig::from_kind("in-process", None).unwrap(),
            BackendConfig::InProcess
        );
        assert_eq!(
            BackendConfig::from_kind("llama-server", Some("http://h:1"))
                .unwrap()
                .url(),
            Some("http://h:1")
        );
        for (kind, url, needle) in [
            ("llama-server", None, "needs --url"),
            ("in-process", Some("http://h:1"), "makes no sense"),
            ("vllm", None, "unknown backend \"vllm\""),
        ] {
            let e = BackendConfig::from_kind(kind, url).unwrap_err();
            assert!(e.to_string().contains(needle), "{e}");
        }
    }

    #[test]
    fn server_failures_map_to_the_runtime_error_codes() {
        let url = "http://127.0.0.1:9".to_string();
        let down = BackendError::Http(HttpError::Unreachable {
            url: url.clone(),
            reason: "connection refused".into(),
        });
        assert!(
            matches!(PolicyError::from(down), PolicyError::ModelUnavailable(m) if m.contains("connection refused"))
        );
        let garbage = BackendError::Http(HttpError::Malformed {
            url: url.clone(),
            what: "JSON",
            detail: "x".into(),
        });
        assert!(matches!(
            PolicyError::from(garbage),
            PolicyError::ModelUnavailable(_)
        ));
        let refused = BackendError::Http(HttpError::Status {
            url,
            status: 400,
            message: "bad grammar".into(),
        });
        assert!(
            matches!(PolicyError::from(refused), PolicyError::Runtime(m) if m.contains("bad grammar"))
        );
        assert_eq!(
            PolicyError::from(BackendError::Cancelled { generated: 3 }),
            PolicyError::Cancelled
        );
        assert_eq!(
            PolicyError::from(BackendError::Timeout { generated: 0 }),
            PolicyError::Timeout
        );
    }
}
