//! llama.cpp's JSON-Schema-to-GBNF converter, compacted (benchmarks use it for a grammar that does not
//! depend on a run).

use forge_decoding::generation::EngineError;

/// Convert a JSON Schema to GBNF with llama.cpp's converter, compacted (benchmarks use it for a grammar
/// that does not depend on a run; decisions use `grammar`, which builds GBNF itself).
pub fn schema_to_gbnf(schema: &serde_json::Value) -> Result<String, EngineError> {
    let text = serde_json::to_string(schema).expect("schema serialises");
    let gbnf = llama_cpp_2::json_schema_to_grammar(&text)
        .map_err(|e| EngineError::Grammar(e.to_string()))?;
    Ok(compact_gbnf(&gbnf))
}

/// No optional whitespace between JSON tokens, no escapes inside strings, at most four decimals: the
/// converter's defaults cost tokens a small model wanders into.
fn compact_gbnf(gbnf: &str) -> String {
    gbnf.lines()
        .map(|line| {
            let rule = line.trim_start();
            if rule.starts_with("space ::=") {
                "space ::= \"\"".to_string()
            } else if rule.starts_with("char ::=") {
                r#"char ::= [^"\\\x7F\x00-\x1F]"#.to_string()
            } else if rule.starts_with("decimal-part ::=") {
                "decimal-part ::= [0-9]{1,4}".to_string()
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
