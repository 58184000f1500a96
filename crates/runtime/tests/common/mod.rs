//! Shared helpers for the runtime's integration tests: repository paths and fixture runs.
// Every test binary compiles this module and uses a part of it: what one binary leaves unused is not dead.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use runtime::fixture::Fixture;
use runtime::policy::{Policy, RunControl};
use runtime::{RunConfig, RunResult, Task, TraceEvent};

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

pub fn fixtures_dir() -> PathBuf {
    repo_root().join("fixtures")
}

pub fn knowledge_dir() -> PathBuf {
    repo_root().join("knowledge")
}

pub fn fixture(name: &str) -> Fixture {
    Fixture::load(fixtures_dir().join(format!("{name}.json"))).expect("fixture loads")
}

/// One finished run with its trace and the artifact directory it wrote to.
pub struct Outcome {
    pub result: RunResult,
    pub events: Vec<TraceEvent>,
    pub artifact_dir: tempfile::TempDir,
}

impl Outcome {
    pub fn phases(&self) -> Vec<&str> {
        self.events.iter().map(|e| e.phase.as_str()).collect()
    }
    pub fn count(&self, phase: &str) -> usize {
        self.events.iter().filter(|e| e.phase == phase).count()
    }
    pub fn first(&self, phase: &str) -> &TraceEvent {
        self.events
            .iter()
            .find(|e| e.phase == phase)
            .unwrap_or_else(|| panic!("no {phase} event in {:?}", self.phases()))
    }
    pub fn last(&self, phase: &str) -> &TraceEvent {
        self.events
            .iter()
            .rev()
            .find(|e| e.phase == phase)
            .unwrap_or_else(|| panic!("no {phase} event in {:?}", self.phases()))
    }
    /// The message of the run's first final-answer validation (its first rejection in the runs that have one).
    pub fn first_gate_message(&self) -> String {
        self.first("final.validated").data["message"]
            .as_str()
            .unwrap_or_else(|| panic!("no message in {}", self.first("final.validated").data))
            .to_owned()
    }
    /// The codes of the run's rejected finals, in order.
    pub fn rejection_codes(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e.phase == "final.validated" && e.data["accepted"] == false)
            .map(|e| e.data["code"].as_str().unwrap().to_owned())
            .collect()
    }
    pub fn metrics(&self) -> &runtime::Metrics {
        self.result.metrics.as_ref().expect("metrics")
    }
    pub fn trace_json(&self) -> String {
        serde_json::to_string(&self.events).unwrap()
    }
}

pub fn run_fixture(name: &str) -> Outcome {
    let fixture = fixture(name);
    let artifact_dir = tempfile::tempdir().unwrap();
    let mut events = Vec::new();
    let result = fixture
        .run(
            &format!("run-{name}"),
            knowledge_dir(),
            artifact_dir.path(),
            &mut |e: &TraceEvent| events.push(e.clone()),
        )
        .expect("fixture runs");
    Outcome {
        result,
        events,
        artifact_dir,
    }
}

/// Runs a task folder with any policy and config tweaks.
pub fn run_with(
    task: &Task,
    policy: &mut dyn Policy,
    tweak: impl FnOnce(&mut RunConfig),
) -> Outcome {
    let artifact_dir = tempfile::tempdir().unwrap();
    let mut config = RunConfig::new("run-test", knowledge_dir(), artifact_dir.path());
    tweak(&mut config);
    let control =
        RunControl::new(Instant::now() + Duration::from_secs(config.budgets.wall_clock_s));
    let mut events = Vec::new();
    let result = runtime::run_task(task, policy, &config, &control, &mut |e: &TraceEvent| {
        events.push(e.clone())
    });
    Outcome {
        result,
        events,
        artifact_dir,
    }
}

pub fn task(name: &str) -> Task {
    Task::load(fixtures_dir().join("tasks").join(name)).expect("task loads")
}
