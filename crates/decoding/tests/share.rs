//! The token share counted over a real grammar mask: a small GBNF grammar, a toy vocabulary masked by the
//! recogniser llama.cpp's grammar sampler mirrors (`accepts_prefix`), tokens chosen from a script. Positions
//! where the allowed tokens spell one text are forced, the others a choice; the runtime's prefix is neither.

use forge_decoding::gbnf::Grammar;
use forge_decoding::share::{Allowance, AllowedTexts, ShareCount, TokenShare};

const GRAMMAR: &str = r#"root ::= "{\"verdict\":\"" ("met" | "not met") "\",\"n\":" [0-9] "}""#;

/// A toy byte-pair vocabulary: fixed texts can be spelled several ways (`{` / `{"`, `"` / `",` / `","n":`).
const VOCAB: &[&str] = &[
    "{",
    "{\"",
    "verdict",
    "\":\"",
    "\"",
    "met",
    "not",
    " met",
    "n",
    "\",",
    "\",\"n\":",
    "0",
    "1",
    "2",
    "7",
    "}",
    "x",
];

/// Walks the grammar from `prefix` (text the runtime wrote: not counted), taking the scripted tokens in
/// order; at each position the allowed tokens are those the grammar accepts as a continuation (plus the end
/// once the text is complete), folded into forced or choice. A scripted token the mask refuses is an error.
fn walk(prefix: &str, script: &[&str]) -> Result<(String, ShareCount), String> {
    let grammar = Grammar::parse(GRAMMAR).map_err(|e| e.to_string())?;
    let mut text = prefix.to_string();
    let mut count = ShareCount::default();
    for &pick in script {
        let allowed: Vec<&str> = VOCAB
            .iter()
            .copied()
            .filter(|t| grammar.accepts_prefix(&format!("{text}{t}")))
            .collect();
        if !allowed.contains(&pick) {
            return Err(format!(
                "{pick:?} is masked after {text:?} (allowed {allowed:?})"
            ));
        }
        let mut texts = AllowedTexts::default();
        if grammar.accepts(&text) {
            texts.add(None);
        }
        for t in &allowed {
            texts.add(Some(t.as_bytes()));
        }
        count.push(texts.allowance());
        text.push_str(pick);
    }
    Ok((text, count))
}

#[test]
fn fixed_text_is_forced_in_any_spelling_and_alternatives_are_a_choice() {
    use Allowance::{Choice, Forced};
    let script = [
        "{\"",
        "verdict",
        "\":\"",
        "not",
        " met",
        "\",\"n\":",
        "7",
        "}",
    ];
    let (text, count) = walk("", &script).unwrap();
    assert_eq!(text, r#"{"verdict":"not met","n":7}"#);
    assert_eq!(
        count.positions(),
        [
            Forced, Forced, Forced, Choice, Forced, Forced, Choice, Forced
        ],
        "`{{` or `{{\"`, then the key, are one text; met / not met and the digit are choices"
    );
    assert_eq!(
        count.share(),
        TokenShare::Counted {
            forced: 6,
            choice: 2
        }
    );
    assert_eq!(count.share().forced_share(), Some(0.75));
}

#[test]
fn the_runtimes_prefix_is_not_counted_and_leaves_the_choices_to_the_chooser() {
    // Guided mode: the runtime wrote the branch up to the verdict; only the rest is counted.
    let (text, count) = walk(r#"{"verdict":""#, &["met", "\",\"n\":", "0", "}"]).unwrap();
    assert_eq!(text, r#"{"verdict":"met","n":0}"#);
    assert_eq!(
        count.share(),
        TokenShare::Counted {
            forced: 2,
            choice: 2
        }
    );
}

#[test]
fn a_token_the_mask_refuses_cannot_be_scripted() {
    let err = walk("", &["{\"", "x"]).unwrap_err();
    assert!(err.contains("\"x\" is masked"), "{err}");
}
