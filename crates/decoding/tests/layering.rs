//! The decoding and model crates never link llama.cpp: their tests build in seconds, and a change to the
//! grammar is tested without compiling the engine. Read from cargo's own dependency tree.

use std::process::Command;

fn dependencies(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--locked",
            "-e",
            "normal,build,dev",
            "--prefix",
            "none",
            "-p",
            package,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn the_decoding_crates_do_not_link_llama_cpp() {
    for package in ["forge-decoding", "forge-model"] {
        let deps = dependencies(package);
        assert!(
            deps.iter().any(|d| d == package),
            "{package} is in its own tree: {deps:?}"
        );
        let engine: Vec<&String> = deps
            .iter()
            .filter(|d| d.starts_with("llama-cpp") || *d == "forge-llama")
            .collect();
        assert!(engine.is_empty(), "{package} depends on {engine:?}");
    }
    // The check can fail: the engine crate's own tree has llama.cpp.
    assert!(
        dependencies("forge-llama")
            .iter()
            .any(|d| d == "llama-cpp-sys-2")
    );
}
