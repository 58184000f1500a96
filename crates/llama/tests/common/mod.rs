//! Shared helpers for tests that need the real GGUF model: where it is, and what to do when it is absent.

use std::path::{Path, PathBuf};

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// The model under test: `$FORGE_MODEL` or `models/qwen2.5-coder-0.5b.gguf`. When it is absent the test
/// is skipped with a clear message — unless `FORGE_REQUIRE_MODEL=1` (set by .ci/run), which makes it fail.
/// Real-model tests run one at a time: two llama.cpp decodes sharing 2 cores slow each other down many
/// times over (OpenMP threads spin against each other), which would only make every test slower.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn model_or_skip(test: &str) -> Option<PathBuf> {
    let path = std::env::var_os("FORGE_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(forge_llama::DEFAULT_MODEL_PATH));
    if path.is_file() {
        return Some(path);
    }
    let required = std::env::var("FORGE_REQUIRE_MODEL").is_ok_and(|v| v == "1");
    if required {
        panic!(
            "{test}: FORGE_REQUIRE_MODEL=1 but the model file {} is missing; run `cargo xtask model fetch`",
            path.display()
        );
    }
    eprintln!(
        "SKIPPED {test}: real-model test, but {} is missing. Run `cargo xtask model fetch` (or set FORGE_MODEL) \
         to run it; FORGE_REQUIRE_MODEL=1 turns this skip into a failure.",
        path.display()
    );
    None
}
