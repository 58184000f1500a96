//! Developer aid: one guided or free decision for a hand-made state (prompt experiments without a whole run).
//!
//! usage: probe [tool|final] [--free]

use std::path::Path;
use std::time::{Duration, Instant};

use forge_llama::{LlamaConfig, LlamaPolicy, Mode};
use runtime::policy::{DecisionRequest, Gap, Policy, RunControl};
use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let model = root.join(forge_llama::DEFAULT_MODEL_PATH);
    let mode = if args.iter().any(|a| a == "--free") { Mode::Free } else { Mode::Guided };
    let mut policy = LlamaPolicy::load(LlamaConfig::new(&model, mode)).unwrap();
    let task = runtime::Task::load(root.join("fixtures/tasks/agent_eval_mini")).unwrap();
    let ks = json!({"id":"obs-knowledge_search-1","tool":"knowledge_search","ok":true,"step":1,"result":{"summary":"3 section(s): release-rule, agenteval-mini, task-success-by-batch; Task Success: Batch A=72, Batch B=78, Batch C=81, Batch D=85; release rule: average_gte=78, every_batch_gte=70"}});
    let calc = json!({"id":"obs-calculator-2","tool":"calculator","ok":true,"step":2,"result":{"expression":"(72 + 78 + 81 + 85) / 4","value":79,"summary":"(72 + 78 + 81 + 85) / 4 = 79"}});
    let plot = json!({"id":"obs-plot-3","tool":"plot","ok":true,"step":3,"result":{"summary":"bar chart of 4 bars (Batch A..Batch D) with an average line at 79"}});
    let which = args.first().map(String::as_str).unwrap_or("calculator");
    let (obs, gap) = match which {
        "knowledge_search" => (vec![], task.gap(&Default::default())),
        "calculator" => (vec![ks], Gap::Tool { tool: "calculator".into(), hint: task.file.required_evidence[1].hint.clone() }),
        "plot" => (vec![ks, calc], Gap::Tool { tool: "plot".into(), hint: task.file.required_evidence[2].hint.clone() }),
        _ => (vec![ks, calc, plot], Gap::Final {
            evidence_ids: vec!["obs-knowledge_search-1".into(), "obs-calculator-2".into(), "obs-plot-3".into()],
            answer_template: task.file.answer_template.clone(),
        }),
    };
    let req = DecisionRequest {
        step: obs.len() as u32 + 1,
        attempt: 0,
        task: task.text().into(),
        tools: runtime::registry::ToolRegistry::builtin().cards(),
        state: json!({"observations": obs, "feedback": [], "budget": {"steps_left":9,"tool_calls_left":8,"seconds_left":267,"input_tokens_left":30784,"output_tokens_left":3970}}),
        gap,
        repair: None,
        max_new_tokens: 256,
    };
    println!("{}\n---", forge_llama::prompt::user_message(&req, mode));
    let t = Instant::now();
    let out = policy.decide(&req, &RunControl::new(Instant::now() + Duration::from_secs(120))).unwrap();
    println!("{}\n{:.1}s {:?}", out.raw_text, t.elapsed().as_secs_f64(), policy.stats().last());
}
