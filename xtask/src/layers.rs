//! `cargo xtask layers`: the crates' dependency direction — the runtime's layers point down, never up.
//!
//! [`LAYERS`] is the one statement of the rule, bottom first: the stage crates, then the course (the learner's
//! loop and grading, which drives the stage crates through cargo and links no Forge crate), language (vocabulary and
//! readers of text), tools, evidence (task, ledger, grounding, claims, rules applied), runtime (the loop), then
//! what runs a model (model files and decoding, then llama.cpp), the server and the runner binary. A crate may
//! depend on crates of its own layer or of a lower one; an edge from a lower layer to a higher one
//! (normal, build or dev dependency) is an upward edge and fails, named. The edges are read from
//! `cargo metadata --format-version 1 --no-deps`, so a manifest cannot hide one.
//! `the_crate_layers_point_down` keeps it in `cargo test`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, ExitCode};

use anyhow::Context;
use serde_json::Value;

use forge_course::args::{Args, Verb};

pub const LAYERS_VERB: Verb = Verb {
    name: "layers",
    about: "Check that no lower crate depends on a higher one (stages, course, language, tools, evidence, runtime, …, runner)",
    positionals: "",
    flags: &[],
};

/// The layers, bottom first: a package may depend only on packages of its own layer or a lower one. A
/// package name ending in `*` is a prefix (`forge-stage*`: every stage crate).
pub const LAYERS: &[(&str, &[&str])] = &[
    ("stages", &["forge-stage*"]),
    ("course", &["forge-course"]),
    ("language", &["forge-language"]),
    ("tools", &["forge-tools"]),
    ("evidence", &["forge-evidence"]),
    ("runtime", &["forge-runtime"]),
    ("model and decoding", &["forge-model", "forge-decoding"]),
    ("llama", &["forge-llama"]),
    ("server", &["forge-server"]),
    ("runner", &["runner"]),
];

/// One dependency that points up: `from` (in layer `from_layer`) depends on `to` (in the higher `to_layer`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpwardEdge {
    pub from: String,
    pub from_layer: &'static str,
    pub to: String,
    pub to_layer: &'static str,
    pub kind: String,
}

impl std::fmt::Display for UpwardEdge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}) -> {} ({}), a {} dependency: a lower layer never depends on a higher one",
            self.from, self.from_layer, self.to, self.to_layer, self.kind
        )
    }
}

/// The layer a package belongs to: its index in [`LAYERS`] and the layer's name; `None` for a package
/// outside the stack (xtask, the developer tasks on top of everything, is not constrained here).
pub fn layer_of(package: &str) -> Option<(usize, &'static str)> {
    LAYERS
        .iter()
        .enumerate()
        .find_map(|(index, (name, members))| {
            members
                .iter()
                .any(|m| match m.strip_suffix('*') {
                    Some(prefix) => package.starts_with(prefix),
                    None => package == *m,
                })
                .then_some((index, *name))
        })
}

/// Every upward edge among the workspace packages of a `cargo metadata --no-deps` document.
pub fn upward_edges(metadata: &Value) -> Vec<UpwardEdge> {
    let mut found = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let from = package["name"].as_str().unwrap_or_default();
        let Some((from_rank, from_layer)) = layer_of(from) else {
            continue;
        };
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            let to = dependency["name"].as_str().unwrap_or_default();
            let Some((to_rank, to_layer)) = layer_of(to) else {
                continue;
            };
            if to_rank > from_rank {
                found.push(UpwardEdge {
                    from: from.to_owned(),
                    from_layer,
                    to: to.to_owned(),
                    to_layer,
                    kind: dependency["kind"].as_str().unwrap_or("normal").to_owned(),
                });
            }
        }
    }
    found
}

/// `cargo metadata --format-version 1 --no-deps` for the workspace at `root`.
pub fn workspace_metadata(root: &Path) -> anyhow::Result<Value> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .context("running cargo metadata")?;
    anyhow::ensure!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).context("reading cargo metadata's JSON")
}

pub fn cmd_layers(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(0, "cargo xtask layers [--root DIR]")?;
    let root = args.path("root").unwrap_or_else(crate::workspace_root);
    let metadata = workspace_metadata(&root)?;
    let found = upward_edges(&metadata);
    if found.is_empty() {
        let mut per_layer: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
        for package in metadata["packages"].as_array().into_iter().flatten() {
            let name = package["name"].as_str().unwrap_or_default();
            if let Some((rank, _)) = layer_of(name) {
                per_layer.entry(rank).or_default().push(name);
            }
        }
        let stack: Vec<String> = per_layer
            .iter()
            .map(|(rank, names)| format!("{} ({})", LAYERS[*rank].0, names.len()))
            .collect();
        println!("no upward edge: {}", stack.join(" <- "));
        return Ok(ExitCode::SUCCESS);
    }
    for edge in &found {
        println!("upward  {edge}");
    }
    println!("{} upward edge(s)", found.len());
    Ok(ExitCode::FAILURE)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_crate_layers_point_down() {
        let metadata = workspace_metadata(&crate::workspace_root()).unwrap();
        let names: Vec<&str> = metadata["packages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        for (layer, members) in LAYERS {
            for member in members.iter().filter(|m| !m.ends_with('*')) {
                assert!(names.contains(member), "layer {layer}: no package {member}");
            }
        }
        let found: Vec<String> = upward_edges(&metadata)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            found.is_empty(),
            "upward dependency edges (`cargo xtask layers`):\n  {}",
            found.join("\n  ")
        );
    }

    #[test]
    fn an_upward_edge_is_named_and_a_downward_one_is_not() {
        let package = |name: &str, deps: &[(&str, Option<&str>)]| {
            let deps: Vec<Value> = deps
                .iter()
                .map(|(name, kind)| json!({"name": name, "kind": kind}))
                .collect();
            json!({"name": name, "dependencies": deps})
        };
        let metadata = json!({"packages": [
            package("forge-runtime", &[("forge-evidence", None), ("forge-stage02-observation-state", None)]),
            package("forge-evidence", &[("forge-tools", None), ("serde", None)]),
            package("forge-tools", &[("forge-language", None), ("forge-evidence", Some("dev"))]),
            package("forge-language", &[("forge-runtime", None)]),
            package("forge-decoding", &[("forge-runtime", None), ("forge-model", None)]),
            package("forge-llama", &[("forge-server", None)]),
        ]});
        let found: Vec<String> = upward_edges(&metadata)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            [
                "forge-tools (tools) -> forge-evidence (evidence), a dev dependency: a lower layer never \
                 depends on a higher one",
                "forge-language (language) -> forge-runtime (runtime), a normal dependency: a lower layer \
                 never depends on a higher one",
                "forge-llama (llama) -> forge-server (server), a normal dependency: a lower layer never \
                 depends on a higher one",
            ]
        );
    }
}
