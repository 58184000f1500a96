//! The source browser's explanations over HTTP: public items and chain stages of files, the chain as data, "follow one decision" for a finished run, their refusals, and the completeness of `crates/server/chain.toml`.

mod common;

use std::collections::BTreeSet;

use axum::http::StatusCode;
use common::*;
use forge_server::example::ExamplePackage;
use forge_server::sources::{chain, glob_match};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Files of the live tree (the page's own enumeration) under `crates/`.
fn crate_files() -> Vec<String> {
    let listing = ExamplePackage::new(project_root())
        .enumerate()
        .expect("the project tree enumerates");
    listing
        .files
        .into_iter()
        .map(|f| f.path)
        .filter(|p| p.starts_with("crates/"))
        .collect()
}

fn is_source(path: &str) -> bool {
    glob_match("crates/*/src/**", path)
}

#[test]
fn every_file_under_crates_has_a_stage_and_every_source_file_is_placed_by_name() {
    let chain = chain().expect("chain.toml parses");
    let files = crate_files();
    assert!(
        files.iter().filter(|p| is_source(p)).count() > 50,
        "the source files were found"
    );
    let mut problems = Vec::new();
    for path in &files {
        if chain.stage_of(path).is_none() {
            problems.push(format!("{path}: no stage"));
        }
        if is_source(path) {
            // By exact path, in exactly one stage: a pattern never places a source file.
            let placed = chain
                .stages
                .iter()
                .filter(|s| s.files.contains(path))
                .count();
            if placed != 1 {
                problems.push(format!(
                    "{path}: listed by name in {placed} stages (need exactly 1)"
                ));
            }
        }
    }
    for stage in &chain.stages {
        for f in &stage.files {
            if !project_root().join(f).is_file() {
                problems.push(format!("stage {}: {f} does not exist", stage.id));
            }
        }
        for p in &stage.patterns {
            if files.iter().any(|f| is_source(f) && glob_match(p, f)) {
                problems.push(format!(
                    "stage {}: pattern {p} matches a file under crates/*/src/",
                    stage.id
                ));
            }
            if !files.iter().any(|f| glob_match(p, f)) {
                problems.push(format!("stage {}: pattern {p} matches nothing", stage.id));
            }
        }
    }
    assert_eq!(problems, Vec::<String>::new());
    // A source file nobody placed yet has no stage, so adding one without a stage fails this test.
    assert!(
        chain
            .stage_of("crates/runtime/src/brand_new_module.rs")
            .is_none()
    );
    assert!(chain.stage_of("crates/server/src/nested/new.rs").is_none());
}

#[test]
fn every_trace_phase_has_one_source_that_really_emits_it() {
    let chain = chain().expect("chain.toml parses");
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(project_root().join("schemas/trace_event.schema.json")).unwrap(),
    )
    .unwrap();
    let phases: BTreeSet<&str> = schema["properties"]["phase"]["enum"]
        .as_array()
        .expect("the schema lists the phases")
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    let mapped: Vec<&str> = chain.events.iter().map(|e| e.phase.as_str()).collect();
    assert_eq!(
        mapped.len(),
        mapped.iter().collect::<BTreeSet<_>>().len(),
        "a phase is mapped twice"
    );
    assert_eq!(mapped.into_iter().collect::<BTreeSet<_>>(), phases);
    for e in &chain.events {
        let text = std::fs::read_to_string(project_root().join(&e.emitted_by))
            .unwrap_or_else(|err| panic!("{}: {} unreadable: {err}", e.phase, e.emitted_by));
        assert!(
            text.contains(&format!("\"{}\"", e.phase)),
            "{} does not emit {}",
            e.emitted_by,
            e.phase
        );
        let stage = chain.stage(&e.stage).expect("known stage");
        assert!(stage.chain, "{} maps to a stage outside the chain", e.phase);
        for f in std::iter::once(&e.emitted_by).chain(&e.explained_by) {
            assert!(
                chain.stage_of(f).is_some_and(|s| s.chain),
                "{}: {f} is not a file of the chain",
                e.phase
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_carry_their_stage_and_rust_files_their_public_items() {
    let h = harness(Options::default());
    let m = send(&h.router, get("/example/manifest")).await.json();
    let files = m["files"].as_array().unwrap();
    let unstaged: Vec<&Value> = files
        .iter()
        .filter(|f| f["path"].as_str().unwrap().starts_with("crates/") && !f["stage"].is_string())
        .collect();
    assert_eq!(unstaged, Vec::<&Value>::new());
    let readme = files.iter().find(|f| f["path"] == "README.md").unwrap();
    assert_eq!(
        readme["stage"],
        Value::Null,
        "outside the mapping: no stage, not a guess"
    );

    let r = send(
        &h.router,
        get("/example/file?path=crates/server/src/sources.rs"),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    let f = r.json();
    assert_eq!(f["stage"], "serving");
    let items = f["items"].as_array().unwrap();
    let lines: Vec<&str> = f["content"].as_str().unwrap().lines().collect();
    let find = |name: &str| {
        items
            .iter()
            .find(|i| i["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed: {items:?}"))
    };
    for (name, kind) in [
        ("public_items", "fn"),
        ("Chain", "struct"),
        ("ChainError", "enum"),
        ("stage_of", "fn"),
    ] {
        let item = find(name);
        assert_eq!(item["kind"], kind, "{item}");
        // The line number points at the declaration itself.
        let line = lines[item["line"].as_u64().unwrap() as usize - 1];
        assert!(
            line.contains(&format!("pub {kind} {name}")),
            "{name} at line {}: {line:?}",
            item["line"]
        );
    }
    assert_eq!(find("stage_of")["parent"], "impl Chain");
    // Private and test-only code is not listed; items come in line order.
    assert!(
        items
            .iter()
            .all(|i| i["name"] != "item_of" && i["name"] != "names"),
        "{items:?}"
    );
    let order: Vec<u64> = items.iter().map(|i| i["line"].as_u64().unwrap()).collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");

    let r = send(
        &h.router,
        get("/example/file?path=crates/server/chain.toml"),
    )
    .await
    .json();
    assert_eq!(r["stage"], "serving");
    assert_eq!(r["items"], json!([]));
    let r = send(
        &h.router,
        get("/example/file?path=crates/server/tests/http_api.rs"),
    )
    .await
    .json();
    assert_eq!(r["stage"], "support");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chain_is_served_in_order_with_its_event_sources() {
    let h = harness(Options::default());
    let r = send(&h.router, get("/example/chain")).await;
    assert_eq!(r.status, StatusCode::OK);
    let c = r.json();
    let ids: Vec<&str> = c["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "run",
            "decision",
            "validate",
            "tool",
            "observation",
            "guard",
            "final",
            "scoring",
            "serving",
            "support"
        ]
    );
    assert_eq!(c["stages"][9]["chain"], false);
    let valid = c["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["phase"] == "decision.valid")
        .unwrap();
    assert_eq!(valid["stage"], "validate");
    assert_eq!(
        valid["explained_by"],
        json!(["crates/runtime/src/decision.rs"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn following_a_finished_run_links_every_event_to_its_files() {
    let h = harness(Options::default());
    let id = start_run(
        &h.router,
        json!({ "policy": "scripted:fixtures/happy.json" }),
    )
    .await;
    let done = wait_terminal(&h.router, &id).await;
    assert_eq!(done["status"], "completed");
    let r = send(&h.router, get(&format!("/agent/runs/{id}/follow"))).await;
    assert_eq!(r.status, StatusCode::OK);
    let f = r.json();
    assert_eq!(f["id"], id.as_str());
    assert_eq!(f["status"], "completed");
    assert_eq!(f["stop_reason"], "completed");
    let events = f["events"].as_array().unwrap();
    let run_events = done["events"].as_array().unwrap();
    assert_eq!(events.len(), run_events.len());
    // In order, the same phases, each with a stage and at least the file that emitted it.
    for (followed, original) in events.iter().zip(run_events) {
        assert_eq!(followed["seq"], original["seq"]);
        assert_eq!(followed["phase"], original["phase"]);
        assert!(followed["stage"].is_string(), "{followed}");
        assert_eq!(followed["files"][0], followed["emitted_by"]);
    }
    let phases: Vec<&str> = events
        .iter()
        .map(|e| e["phase"].as_str().unwrap())
        .collect();
    for p in [
        "run.started",
        "model.completed",
        "decision.valid",
        "tool.started",
        "tool.observation",
        "final.validated",
        "run.finished",
    ] {
        assert!(phases.contains(&p), "{p} missing from {phases:?}");
    }
    let valid = events
        .iter()
        .find(|e| e["phase"] == "decision.valid")
        .unwrap();
    assert_eq!(valid["stage"], "validate");
    assert!(
        valid["files"]
            .as_array()
            .unwrap()
            .contains(&json!("crates/runtime/src/decision.rs"))
    );
    let gate = events
        .iter()
        .find(|e| e["phase"] == "final.validated")
        .unwrap();
    assert_eq!(gate["stage"], "final");
    assert_eq!(gate["data"]["accepted"], true);
    // Every linked file is one the source browser can open.
    let m = send(&h.router, get("/example/manifest")).await.json();
    let listed: BTreeSet<&str> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    for e in events {
        for file in e["files"].as_array().unwrap() {
            assert!(
                listed.contains(file.as_str().unwrap()),
                "{} links {file}, not in the package",
                e["phase"]
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_source_and_follow_requests_are_typed_refusals() {
    let h = harness(Options {
        hold: true,
        ..Options::default()
    });
    for (q, status, code) in [
        (
            "crates/server/src/nope.rs",
            StatusCode::NOT_FOUND,
            "file_not_in_package",
        ),
        ("../Cargo.toml", StatusCode::BAD_REQUEST, "invalid_path"),
        (
            "crates/server/../../etc/passwd",
            StatusCode::BAD_REQUEST,
            "invalid_path",
        ),
        ("/etc/passwd", StatusCode::BAD_REQUEST, "invalid_path"),
    ] {
        let r = send(&h.router, get(&format!("/example/file?path={q}"))).await;
        assert_eq!((r.status, r.code().as_str()), (status, code), "{q}");
    }
    let r = send(&h.router, get("/agent/runs/run-0-00000000/follow")).await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (StatusCode::NOT_FOUND, "run_not_found")
    );
    // A run still running cannot be followed yet.
    let id = start_run(&h.router, json!({})).await;
    wait_status(&h.router, &id, "running").await;
    let r = send(&h.router, get(&format!("/agent/runs/{id}/follow"))).await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (StatusCode::CONFLICT, "run_not_finished")
    );
    let r = send(&h.router, post_json("/example/chain", &json!({}))).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
}
