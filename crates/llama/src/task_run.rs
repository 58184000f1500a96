//! One real run of a task folder with a `ModelPolicy`: the glue the tests, the examples and eval share.
//!
//! Not a loop of its own: it builds a `RunConfig` and calls `runtime::run_task`, then hands back the result
//! together with the policy's per-decision measurements.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use runtime::policy::RunControl;
use runtime::{Budgets, RunConfig, RunResult, Task, TraceEvent};

use forge_decoding::policy::{DecisionStats, ModelPolicySettings};

/// Workspace-relative defaults (the runner resolves them against its root).
pub const DEFAULT_TASKS_DIR: &str = "fixtures/tasks";
pub const DEFAULT_KNOWLEDGE_DIR: &str = "knowledge";

#[derive(Debug, Clone)]
pub struct RunSpec {
    pub run_id: String,
    pub task_dir: PathBuf,
    pub knowledge_dir: PathBuf,
    pub artifact_dir: PathBuf,
    pub budgets: Budgets,
}

#[derive(Debug, Clone)]
pub struct ModelRun {
    pub result: RunResult,
    pub decisions: Vec<DecisionStats>,
    pub wall_ms: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum TaskRunError {
    #[error("cannot load task: {0}")]
    Task(#[from] runtime::task::TaskError),
}

/// Run `spec` with a fresh `ModelPolicy` built from `config` (the model itself comes from the process-wide
/// cache, so only the first run of a process pays for loading). `control` carries cancel + deadline.
pub fn run_with_model(
    spec: &RunSpec,
    config: ModelPolicySettings,
    control: &RunControl,
    sink: &mut dyn FnMut(&TraceEvent),
) -> Result<ModelRun, TaskRunError> {
    let task = Task::load_checked(&spec.task_dir, &spec.knowledge_dir)?;
    let mut policy = crate::policy(config);
    let mut run_config =
        RunConfig::new(spec.run_id.clone(), &spec.knowledge_dir, &spec.artifact_dir);
    run_config.budgets = spec.budgets.clone();
    let started = Instant::now();
    let result = runtime::run_task(&task, &mut policy, &run_config, control, sink);
    Ok(ModelRun {
        result,
        decisions: policy.take_stats(),
        wall_ms: started.elapsed().as_secs_f64() * 1e3,
    })
}

/// A control whose deadline is the budget's wall clock from now.
pub fn control_for(budgets: &Budgets) -> RunControl {
    RunControl::new(Instant::now() + Duration::from_secs(budgets.wall_clock_s))
}

/// `root/fixtures/tasks/<task>` with the repository's knowledge and a fresh artifact dir under `artifact_root`.
pub fn spec_for(root: &Path, task: &str, run_id: &str, artifact_root: &Path) -> RunSpec {
    RunSpec {
        run_id: run_id.to_string(),
        task_dir: root.join(DEFAULT_TASKS_DIR).join(task),
        knowledge_dir: root.join(DEFAULT_KNOWLEDGE_DIR),
        artifact_dir: artifact_root.join(run_id),
        budgets: Budgets::default(),
    }
}
