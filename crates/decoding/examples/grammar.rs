//! Developer aid: print the GBNF a guided or free decision would be constrained by, for a sample grounding.
//!
//! usage: grammar <free|free-final|final|knowledge_search|calculator|calculator-boolean|plot>

use forge_decoding::grammar::{self, Caps, Inputs};
use runtime::policy::{Grounding, ResultKind};

/// The language data's verdict words (what a task without `verdict_phrases` uses).
static PHRASES_DEFAULT: std::sync::LazyLock<forge_language::answer::VerdictPhrases> =
    std::sync::LazyLock::new(Default::default);

/// Print the GBNF a guided or free decision would be constrained by, for a sample grounding.
#[derive(clap::Parser)]
struct Cli {
    /// free, free-final, final, calculator-boolean, or a tool name (knowledge_search, calculator, plot)
    #[arg(default_value = "free")]
    what: String,
}

fn main() {
    let what = <Cli as clap::Parser>::parse().what;
    let cards = runtime::registry::ToolRegistry::builtin().cards();
    let grounding = Grounding {
        numbers: ["72", "78", "81", "85", "79", "70"]
            .map(String::from)
            .to_vec(),
        stated: ["72", "78", "81", "85", "70"].map(String::from).to_vec(),
        counts: ["0", "1", "2", "3", "4"].map(String::from).to_vec(),
        labels: ["Batch A", "Batch B", "Batch C", "Batch D"]
            .map(String::from)
            .to_vec(),
        evidence_ids: vec!["obs-knowledge_search-1".into(), "obs-calculator-2".into()],
        series: Vec::new(),
        computed: Vec::new(),
        computed_exact: Vec::new(),
        units: Vec::new(),
    };
    let inputs = Inputs {
        tools: &cards,
        grounding: &grounding,
        answer_template: "Average is <average>; the rule is <met / not met>.",
        verdict_phrases: &PHRASES_DEFAULT,
        decision_summary: None,
        caps: Caps::default(),
        answer_form: grammar::AnswerForm::Slots,
        done: &[],
    };
    let built = match what.as_str() {
        "free" => grammar::free(&inputs, runtime::decision::decision_schema(), None),
        "free-final" => grammar::free(
            &inputs,
            runtime::decision::decision_schema(),
            Some(&grounding.evidence_ids),
        ),
        "final" => grammar::guided_final(&inputs, &grounding.evidence_ids),
        "calculator-boolean" => {
            grammar::guided_tool(&inputs, "calculator", Some(ResultKind::Boolean))
        }
        tool => grammar::guided_tool(&inputs, tool, None),
    };
    match built {
        Ok(g) => print!("{}", g.render()),
        Err(e) => {
            eprintln!("grammar: {e}");
            std::process::exit(2);
        }
    }
}
