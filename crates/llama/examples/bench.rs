//! Model benchmark (`cargo xtask bench` runs it): llama.cpp's own llama-bench first (the physical limit, same
//! model and threads, measured in this run), then the runner's prompt processing and generation speed, greedy
//! vs grammar-constrained (check-first vs full-vocabulary), as ratios to it; per-decision latency and KV
//! prefill saved, and the wall time of real AgentEval Mini runs. Both llama.cpp versions are recorded. Prompt
//! processing and generation are also measured in paired rounds (llama-bench, then the runner, in turn):
//! this VM's speed drifts by tens of percent within a minute, and within a pair the drift mostly cancels.
//! Writes evidence/bench/llama.json. Not a test: nothing is asserted.
//!
//! usage: bench [--gguf PATH] [--out FILE] [--runs N] [--free-runs N] [--rounds N] [--llama-bench BIN]
//!        (default BIN: target/llama-tools/llama-bench, built by `cargo xtask llama-tools`)

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use forge_llama::engine::{self, EngineSettings, GenerateRequest, GrammarMode, Sampling};
use forge_llama::{Mode, ModelPolicySettings, task_run};
use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// Model benchmark: llama-bench first, then the runner's speed as ratios to it; writes evidence/bench/llama.json.
#[derive(clap::Parser)]
struct Cli {
    /// The GGUF model (default models/qwen2.5-coder-0.5b.gguf)
    #[arg(long)]
    gguf: Option<PathBuf>,
    /// The report (default evidence/bench/llama.json)
    #[arg(long)]
    out: Option<PathBuf>,
    /// Real AgentEval Mini runs, guided
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Real AgentEval Mini runs, free
    #[arg(long, default_value_t = 1)]
    free_runs: usize,
    /// Paired rounds (llama-bench and the runner in turn) for prompt processing and for generation
    #[arg(long, default_value_t = 7)]
    rounds: usize,
    /// The llama-bench binary (default target/llama-tools/llama-bench, built by `cargo xtask llama-tools`)
    #[arg(long)]
    llama_bench: Option<PathBuf>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn main() {
    let cli = <Cli as clap::Parser>::parse();
    let root = root();
    let model = cli
        .gguf
        .unwrap_or_else(|| root.join(forge_llama::DEFAULT_MODEL_PATH));
    let out = cli
        .out
        .unwrap_or_else(|| root.join("evidence/bench/llama.json"));
    let runs = cli.runs;
    let free_runs = cli.free_runs;
    // Paired rounds (llama-bench and the runner in turn) for prompt processing and for generation.
    let pp_rounds = cli.rounds;

    let info = match forge_llama::inspect(&model) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
    };
    let config = EngineSettings::default();
    let bench_bin = cli
        .llama_bench
        .unwrap_or_else(|| root.join("target/llama-tools/llama-bench"));
    if !bench_bin.is_file() {
        eprintln!(
            "bench: no llama-bench at {} (run `cargo xtask llama-tools`)",
            bench_bin.display()
        );
        std::process::exit(2);
    }
    let load_at_start = std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_string();
    eprintln!(
        "bench: {} ({}), {} threads",
        info.file_name,
        info.quantization.as_deref().unwrap_or("?"),
        config.threads
    );

    // --- the physical limit first: llama-bench with the same model and threads, in this run ---
    let reference = match llama_bench(&bench_bin, &model, config.threads) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bench: llama-bench failed: {e}");
            std::process::exit(2);
        }
    };
    eprintln!(
        "bench: llama-bench pp200 {:.1} tok/s (64-token batches {:.1}), tg64 {:.1} tok/s",
        reference.pp, reference.pp_batch64, reference.tg
    );

    let t = Instant::now();
    let session = engine::load(&model, config).expect("model loads");
    let load_ms = t.elapsed().as_secs_f64() * 1e3;

    // --- raw speed: prompt processing and generation ---
    let mut s = session.lock().unwrap();
    let filler =
        "The agent reads observations, checks evidence and writes one JSON decision per step. "
            .repeat(12);
    let pp_prompt = s.chat_prompt("You are a benchmark.", &filler).unwrap();
    let pp_tokens = s.count_tokens(&pp_prompt);
    let mut pp = Vec::new();
    for _ in 0..3 {
        s.clear_cache();
        let g = s
            .generate(
                &raw(&pp_prompt, "", None, GrammarMode::CheckFirst, 1),
                &mut |_| None,
            )
            .unwrap();
        pp.push(g.prefill_tokens as f64 / (g.prefill_ms / 1e3));
    }
    let pp_tps = median(pp);
    eprintln!(
        "bench: prompt processing {pp_tps:.1} tok/s ({pp_tokens} tokens, cold cache, {}-token chunks)",
        config.prefill_chunk
    );
    drop(s);
    // The same prompt decoded in one llama.cpp call (what llama-bench's pp200 does): how much the runner's
    // cancellation-friendly chunking costs.
    let one_batch = EngineSettings {
        prefill_chunk: config.n_batch,
        ..config
    };
    let pp_one_batch = {
        let single = engine::load(&model, one_batch).expect("model loads");
        let mut s1 = single.lock().unwrap();
        let mut v = Vec::new();
        for _ in 0..3 {
            s1.clear_cache();
            let g = s1
                .generate(
                    &raw(&pp_prompt, "", None, GrammarMode::CheckFirst, 1),
                    &mut |_| None,
                )
                .unwrap();
            v.push(g.prefill_tokens as f64 / (g.prefill_ms / 1e3));
        }
        median(v)
    };
    let mut s = session.lock().unwrap();
    eprintln!("bench: prompt processing in one batch {pp_one_batch:.1} tok/s");

    // Paired rounds: llama-bench on a prompt of the same length (one repetition after its warm-up), then
    // the runner's cold-cache prefill, in turn. This VM's speed drifts by tens of percent within a minute
    // (other tenants on the host), so two figures taken minutes apart divide drift by drift; within a pair
    // the drift mostly cancels, and the median pair is the figure to compare with the target.
    let mut pairs = Vec::new();
    for round in 0..pp_rounds {
        let t = config.threads.to_string();
        let p = pp_tokens.to_string();
        let reference_tps = match run_llama_bench(
            &bench_bin,
            &model,
            &["-p", &p, "-n", "0", "-r", "1", "-t", &t],
        ) {
            Ok(rows) => rows.first().and_then(|r| r["avg_ts"].as_f64()),
            Err(e) => {
                eprintln!("bench: llama-bench failed in round {round}: {e}");
                std::process::exit(2);
            }
        };
        let Some(reference_tps) = reference_tps else {
            eprintln!("bench: llama-bench printed no pp{p} row in round {round}");
            std::process::exit(2);
        };
        s.clear_cache();
        let g = s
            .generate(
                &raw(&pp_prompt, "", None, GrammarMode::CheckFirst, 1),
                &mut |_| None,
            )
            .unwrap();
        let runner_tps = g.prefill_tokens as f64 / (g.prefill_ms / 1e3);
        eprintln!(
            "bench: paired round {round}: llama-bench {reference_tps:.1} tok/s, runner {runner_tps:.1} tok/s ({:.2}x)",
            runner_tps / reference_tps
        );
        pairs.push((reference_tps, runner_tps));
    }
    let paired_ratio = median(pairs.iter().map(|(r, x)| x / r).collect());

    let count_prompt = s
        .chat_prompt(
            "You write JSON.",
            "Count from 1 to 300 separated by commas, inside the \"numbers\" string.",
        )
        .unwrap();
    let count_schema = json!({"type":"object","properties":{"numbers":{"type":"string","maxLength":480}},"required":["numbers"],"additionalProperties":false});
    let gbnf = engine::schema_to_gbnf(&count_schema).unwrap();
    let prefill = "{\"numbers\":\"1, 2, 3, ";
    let mut measure = |grammar: Option<&str>, mode: GrammarMode| {
        let mut tps = Vec::new();
        let mut last = None;
        for _ in 0..3 {
            let g = s
                .generate(&raw(&count_prompt, prefill, grammar, mode, 64), &mut |_| {
                    None
                })
                .unwrap();
            tps.push(g.output_tokens as f64 / (g.decode_ms / 1e3));
            last = Some(g);
        }
        (median(tps), last.unwrap())
    };
    let (tg_greedy, g_greedy) = measure(None, GrammarMode::CheckFirst);
    let (tg_check_first, g_check) = measure(Some(&gbnf), GrammarMode::CheckFirst);
    let (tg_full, g_full) = measure(Some(&gbnf), GrammarMode::Full);
    eprintln!(
        "bench: generation greedy {tg_greedy:.1} tok/s, grammar check-first {tg_check_first:.1} tok/s ({} full passes), grammar full {tg_full:.1} tok/s",
        g_check.full_grammar_passes
    );
    let same_text = g_check.text == g_full.text;

    // Paired rounds for generation too: llama-bench tg64 (one repetition), then the runner's greedy and
    // grammar-constrained (check-first) decode of 64 tokens, in turn.
    let mut tg_pairs = Vec::new();
    for round in 0..pp_rounds {
        let t = config.threads.to_string();
        let reference_tps = run_llama_bench(
            &bench_bin,
            &model,
            &["-p", "0", "-n", "64", "-r", "1", "-t", &t],
        )
        .ok()
        .and_then(|rows| rows.first().and_then(|r| r["avg_ts"].as_f64()));
        let Some(reference_tps) = reference_tps else {
            eprintln!("bench: llama-bench tg64 failed in round {round}");
            std::process::exit(2);
        };
        let mut tps = |grammar: Option<&str>| {
            let g = s
                .generate(
                    &raw(&count_prompt, prefill, grammar, GrammarMode::CheckFirst, 64),
                    &mut |_| None,
                )
                .unwrap();
            g.output_tokens as f64 / (g.decode_ms / 1e3)
        };
        let (greedy, grammar) = (tps(None), tps(Some(&gbnf)));
        eprintln!(
            "bench: paired round {round}: llama-bench tg64 {reference_tps:.1} tok/s, greedy {greedy:.1} ({:.2}x), grammar {grammar:.1} ({:.2}x)",
            greedy / reference_tps,
            grammar / reference_tps
        );
        tg_pairs.push((reference_tps, greedy, grammar));
    }
    let paired_greedy = median(tg_pairs.iter().map(|(r, g, _)| g / r).collect());
    let paired_grammar = median(tg_pairs.iter().map(|(r, _, c)| c / r).collect());
    drop(s);

    let (ref_pp, ref_tg) = (reference.pp, reference.tg);

    // --- real runs ---
    let artifacts = tempfile::tempdir().unwrap();
    let mut run_reports = Vec::new();
    let mut plan: Vec<(Mode, usize)> = (0..runs).map(|i| (Mode::Guided, i)).collect();
    plan.extend((0..free_runs).map(|i| (Mode::Free, i)));
    for (mode, i) in plan {
        if i == 0 {
            // The first run of each mode starts from an empty KV cache; later ones reuse the system prompt.
            session.lock().unwrap().clear_cache();
        }
        let spec = task_run::spec_for(
            &root,
            "agent_eval_mini",
            &format!("bench-{mode}-{i}"),
            artifacts.path(),
        );
        let mut cfg = ModelPolicySettings::new(&model, mode);
        cfg.engine = config;
        let run = task_run::run_with_model(
            &spec,
            cfg,
            &task_run::control_for(&spec.budgets),
            &mut |_| {},
        )
        .unwrap();
        let r = &run.result;
        let m = r.metrics.as_ref();
        eprintln!(
            "bench: {mode} run {i}: {}/{} in {:.1}s, task_success={:?}, decisions={}",
            r.status.as_str(),
            r.stop_reason.as_str(),
            run.wall_ms / 1e3,
            m.and_then(|m| m.task_success),
            run.decisions.len()
        );
        run_reports.push(json!({
            "mode": mode.to_string(),
            "run": i,
            "kv_cache": if i == 0 { "cold" } else { "warm (system prompt reused from the previous run)" },
            "status": r.status.as_str(),
            "stop_reason": r.stop_reason.as_str(),
            "task_success": m.and_then(|m| m.task_success),
            "wall_s": round(run.wall_ms / 1e3),
            "steps": r.steps,
            "input_tokens": m.map(|m| m.input_tokens),
            "output_tokens": m.map(|m| m.output_tokens),
            "prefill_tokens_saved": m.map(|m| m.prefill_tokens_saved),
            "decisions": run.decisions.iter().map(|d| json!({
                "step": d.step, "attempt": d.attempt, "gap": d.gap,
                "input_tokens": d.input_tokens, "reused_tokens": d.reused_tokens, "prefill_tokens": d.prefill_tokens,
                "output_tokens": d.output_tokens,
                "prefill_tok_s": round(d.prefill_tokens as f64 / (d.prefill_ms / 1e3).max(1e-9)),
                "decode_tok_s": round(d.output_tokens as f64 / (d.decode_ms / 1e3).max(1e-9)),
                "latency_ms": d.latency_ms.round(),
                "full_grammar_passes": d.full_grammar_passes,
                "finish": d.finish,
            })).collect::<Vec<_>>(),
            "final_answer": r.final_answer,
        }));
    }
    let guided: Vec<&Value> = run_reports
        .iter()
        .filter(|r| r["mode"] == "guided")
        .collect();
    let latencies: Vec<f64> = run_reports
        .iter()
        .flat_map(|r| {
            r["decisions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["latency_ms"].as_f64().unwrap())
        })
        .collect();

    let report = json!({
        "what": "forge-llama model benchmark: llama.cpp via llama-cpp-2 against llama-bench measured in the same run, this machine",
        "model": { "file": info.file_name, "sha256": info.sha256, "architecture": info.architecture,
                   "quantization": info.quantization, "parameters": info.parameter_count },
        "threads": config.threads,
        // Other work on this 2-core machine slows everything here; the load average says how much there was.
        "loadavg_at_start": load_at_start,
        "loadavg_at_end": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
        "n_ctx": config.n_ctx,
        "load_ms": load_ms.round(),
        "llama_cpp": {
            "runner": { "bindings": "llama-cpp-2 0.1.160 / llama-cpp-sys-2 0.1.161", "ggml_version": engine::ggml_version(),
                        "system_info": engine::runtime_info().system_info },
            "llama_bench": reference.tools,
        },
        "reference": {
            "pp_tok_s": round(ref_pp), "pp_batch64_tok_s": round(reference.pp_batch64), "tg_tok_s": round(ref_tg),
            "source": format!("llama-bench -p 200 -n 64 -t {} -r 3 (and -p 200 -n 0 -b 64 -ub 64), measured right before the runner in this run", config.threads),
        },
        "prompt_processing": {
            "tokens": pp_tokens, "tok_s": round(pp_tps), "ratio_to_reference": round(pp_tps / ref_pp), "target_ratio": 0.9,
            "prefill_chunk": config.prefill_chunk,
            "one_batch_tok_s": round(pp_one_batch), "one_batch_ratio_to_reference": round(pp_one_batch / ref_pp),
            "paired_rounds": pairs.iter().map(|(r, x)| json!({ "llama_bench_tok_s": round(*r), "runner_tok_s": round(*x), "ratio": round(x / r) })).collect::<Vec<_>>(),
            "paired_ratio_median": round(paired_ratio),
            "paired_source": format!("llama-bench -p {pp_tokens} -n 0 -r 1 -t {} then the runner's cold-cache prefill of the same {pp_tokens} tokens ({}-token chunks), {pp_rounds} times in turn; the median ratio", config.threads, config.prefill_chunk),
        },
        "generation": {
            "tokens_per_measure": g_greedy.output_tokens,
            "greedy_tok_s": round(tg_greedy), "greedy_ratio": round(tg_greedy / ref_tg), "greedy_target_ratio": 0.95,
            "grammar_check_first_tok_s": round(tg_check_first), "grammar_check_first_ratio": round(tg_check_first / ref_tg),
            "grammar_check_first_full_passes": g_check.full_grammar_passes, "grammar_target_ratio": 0.95,
            "grammar_full_tok_s": round(tg_full), "grammar_full_ratio": round(tg_full / ref_tg),
            "check_first_and_full_produce_the_same_text": same_text,
            "paired_rounds": tg_pairs.iter().map(|(r, g, c)| json!({ "llama_bench_tg64_tok_s": round(*r), "greedy_tok_s": round(*g), "grammar_check_first_tok_s": round(*c), "greedy_ratio": round(g / r), "grammar_ratio": round(c / r) })).collect::<Vec<_>>(),
            "paired_greedy_ratio_median": round(paired_greedy),
            "paired_grammar_ratio_median": round(paired_grammar),
            "paired_source": format!("llama-bench -p 0 -n 64 -r 1 -t {} then the runner's greedy and grammar-constrained (check-first) decode of 64 tokens, {pp_rounds} times in turn; the median ratios", config.threads),
        },
        "decision_latency_ms": { "median": median(latencies.clone()).round(), "max": latencies.iter().cloned().fold(0.0, f64::max).round() },
        "guided_run_wall_s": { "median": round(median(guided.iter().map(|r| r["wall_s"].as_f64().unwrap()).collect())), "target": 15.0 },
        "runs": run_reports,
    });
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(&out, serde_json::to_string_pretty(&report).unwrap() + "\n").unwrap();
    eprintln!("bench: wrote {}", out.display());
}

fn raw<'a>(
    prompt: &'a str,
    prefill: &'a str,
    grammar: Option<&'a str>,
    mode: GrammarMode,
    n: u32,
) -> GenerateRequest<'a> {
    GenerateRequest {
        prompt,
        prefill,
        grammar,
        grammar_mode: mode,
        sampling: Sampling::default(),
        max_new_tokens: n,
        stop_at_json_end: false,
        banned_prefixes: &[],
    }
}

struct Reference {
    pp: f64,
    pp_batch64: f64,
    tg: f64,
    /// The tools' own record (`target/llama-tools/manifest.json`): package, sdist hash, ggml version.
    tools: Value,
}

fn run_llama_bench(bin: &Path, model: &Path, args: &[&str]) -> Result<Vec<Value>, String> {
    let out = Command::new(bin)
        .args(args)
        .args(["-o", "json", "-m"])
        .arg(model)
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} exited {}: {}",
            bin.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    let v: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("llama-bench output is not JSON: {e}"))?;
    v.as_array()
        .cloned()
        .ok_or_else(|| "llama-bench output is not a JSON array".into())
}

/// llama-bench pp200 / tg64 (3 repetitions each) and pp200 in 64-token batches, same model and threads.
fn llama_bench(bin: &Path, model: &Path, threads: i32) -> Result<Reference, String> {
    let t = threads.to_string();
    let rows = run_llama_bench(bin, model, &["-p", "200", "-n", "64", "-r", "3", "-t", &t])?;
    let pick = |rows: &[Value], p: u64, n: u64| {
        rows.iter()
            .find(|r| r["n_prompt"].as_u64() == Some(p) && r["n_gen"].as_u64() == Some(n))
            .and_then(|r| r["avg_ts"].as_f64())
            .ok_or_else(|| format!("llama-bench printed no pp{p}/tg{n} row"))
    };
    let pp = pick(&rows, 200, 0)?;
    let tg = pick(&rows, 0, 64)?;
    let small = run_llama_bench(
        bin,
        model,
        &[
            "-p", "200", "-n", "0", "-b", "64", "-ub", "64", "-r", "3", "-t", &t,
        ],
    )?;
    let pp_batch64 = pick(&small, 200, 0)?;
    let manifest = bin.parent().map(|d| d.join("manifest.json"));
    let mut tools: Value = manifest
        .and_then(|m| std::fs::read_to_string(m).ok())
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    if let Some(first) = rows.first() {
        tools["llama_bench_build"] = json!({ "commit": first["build_commit"], "number": first["build_number"], "cpu_info": first["cpu_info"] });
    }
    Ok(Reference {
        pp,
        pp_batch64,
        tg,
        tools,
    })
}
