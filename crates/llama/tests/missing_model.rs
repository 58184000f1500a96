//! A run whose model file is missing ends `failed/model_unavailable`, naming only the file: the task run
//! and the engine's load path, with no model needed.

use std::path::Path;

use forge_llama::Mode;
use pretty_assertions::assert_eq;

#[test]
fn a_missing_model_ends_a_run_failed_model_unavailable() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = forge_llama::task_run::spec_for(&root, "agent_eval_mini", "missing", dir.path());
    let cfg = forge_llama::ModelPolicySettings::new(dir.path().join("nowhere.gguf"), Mode::Guided);
    let run = forge_llama::task_run::run_with_model(
        &spec,
        cfg,
        &forge_llama::task_run::control_for(&spec.budgets),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(run.result.status, runtime::RunStatus::Failed);
    assert_eq!(
        run.result.stop_reason,
        runtime::StopReason::ModelUnavailable
    );
    let message = run.result.error.unwrap().message;
    assert!(
        message.contains("nowhere.gguf") && !message.contains(&dir.path().display().to_string()),
        "{message}"
    );
}
