//! Forge's decoding: what the model may write at each step and how it is asked — the GBNF model (builder,
//! parser, recogniser, advance past a prefill), the grounded grammars of a decision, the prompts, the
//! `Backend` seam with its generation types, the remote backends (llama-server, OpenAI-compatible) and
//! `ModelPolicy`, the runtime's `Policy` over any backend. No llama.cpp here: the in-process engine lives in
//! `forge-llama`, which hands `ModelPolicy` its way of opening the in-process backend. So the code with the
//! most invariants — the grammars and their offline tests — builds and tests in seconds.

pub mod answer_form;
pub mod backend;
pub mod gbnf;
pub mod generation;
pub mod grammar;
pub mod http_client;
pub mod openai_backend;
pub mod policy;
pub mod prompt;
pub mod remote;
pub mod server_backend;
pub mod server_process;
pub mod share;

pub use backend::{Backend, BackendConfig, BackendError};
pub use policy::{DEFAULT_MODEL_PATH, Mode, ModelPolicy, ModelPolicySettings};
