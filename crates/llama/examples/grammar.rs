//! Developer aid: print the GBNF grammars the policy decodes with (guided per tool, guided final, free).

use forge_llama::engine::schema_to_gbnf;
use forge_llama::grammar::{self, Caps};
use runtime::registry::ToolRegistry;

fn main() {
    let cards = ToolRegistry::builtin().cards();
    let caps = Caps::default();
    let decision = runtime::decision::decision_schema();
    let which = std::env::args().nth(1).unwrap_or_else(|| "free".into());
    let schema = match which.as_str() {
        "free" => grammar::free_schema(decision, &cards, &caps).unwrap(),
        "final" => grammar::guided_final_schema(decision, &caps).unwrap(),
        tool => grammar::guided_tool_schema(&cards, tool, &caps).unwrap(),
    };
    println!("{}", schema_to_gbnf(&schema).unwrap());
}
