//! No build step: this script exists so `[build-dependencies]` can pin host features (see Cargo.toml) — one
//! llama.cpp build shared by `cargo test --workspace`, `cargo run -p runner` and the examples.

fn main() {}
