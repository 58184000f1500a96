//! Reading an answer text: whole-word, negation-aware phrase matching (Latin script and CJK),
//! the verdict an answer states, and the numbers it states outside masked labels and ids.
//!
//! Pure functions, no I/O. Shared by the scorer (`metrics`) and the runtime's claims gate, so both
//! read an answer the same way. It knows no task: phrases, values and masks come from the caller;
//! every number goes through [`crate::numbers`].

use serde::{Deserialize, Serialize};

use crate::lexicon::{is_cjk_script, lexicon};
use crate::numbers::{self, NumberMention};

/// How many words before a phrase a negation cue may stand.
pub const NEGATION_WINDOW: usize = 3;

/// The words that state a task's verdict. `task.json` writes it as `{"true": [...], "false": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictPhrases {
    /// Phrases saying the rule holds.
    #[serde(rename = "true")]
    pub met: Vec<String>,
    /// Phrases saying the rule does not hold.
    #[serde(rename = "false")]
    pub not_met: Vec<String>,
}

impl Default for VerdictPhrases {
    /// The language data's verdict phrases for a task that names none (`answer_reading` in `lexicon.json`):
    /// words that do not occur in ordinary task prose as nouns, in English and Chinese. Negated forms of a
    /// met-phrase ("isn't met", "未满足") count as not met even when not listed there.
    fn default() -> Self {
        let reading = &lexicon().answer_reading;
        VerdictPhrases {
            met: reading.verdict_met.clone(),
            not_met: reading.verdict_not_met.clone(),
        }
    }
}

/// Why a task's verdict phrases cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerdictPhrasesError {
    #[error("verdict_phrases.{side} must list at least one phrase")]
    Empty { side: &'static str },
    #[error("verdict_phrases.{side} holds a blank phrase")]
    Blank { side: &'static str },
    #[error("verdict_phrases lists {phrase:?} under both \"true\" and \"false\"")]
    Both { phrase: String },
}

impl VerdictPhrases {
    /// Both sides non-empty, no blank phrase, no phrase on both sides (compared as matched: case-insensitively).
    pub fn check(&self) -> Result<(), VerdictPhrasesError> {
        for (side, phrases) in [("true", &self.met), ("false", &self.not_met)] {
            if phrases.is_empty() {
                return Err(VerdictPhrasesError::Empty { side });
            }
            if phrases.iter().any(|p| normalize(p).trim().is_empty()) {
                return Err(VerdictPhrasesError::Blank { side });
            }
        }
        if let Some(phrase) = self.met.iter().find(|m| {
            self.not_met
                .iter()
                .any(|n| normalize(n).trim() == normalize(m).trim())
        }) {
            return Err(VerdictPhrasesError::Both {
                phrase: phrase.clone(),
            });
        }
        Ok(())
    }
}

/// What an answer says about the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Met,
    NotMet,
    /// Says both (a contradiction: never an acceptable verdict).
    Both,
    /// Says neither.
    Neither,
}

/// Whether `text` contains `phrase`, not negated. Case-insensitive. A Latin-script phrase matches whole
/// words only ("met" is not in "metric", "eligible" not in "ineligible"); a phrase with CJK characters
/// matches as a substring. Negated — so not present — when a negation cue precedes it in the same clause
/// within [`NEGATION_WINDOW`] words (Latin; "not only" is no negation), or when a CJK negation directly
/// precedes it (CJK). A phrase directly followed by "rate"/"率" is part of a rate's name ("pass rate",
/// "达成率"), not a statement, and does not count.
pub fn phrase_present(text: &str, phrase: &str) -> bool {
    let reader = Reader::new(text);
    reader.occurrences(phrase).iter().any(|o| !o.negated)
}

/// The verdict `text` states with `phrases`: an un-negated met-phrase says met; an un-negated not_met
/// phrase, or a negated met-phrase ("the rule is not met" with only "met" listed), says not met; a negated
/// not_met phrase says nothing (no double negation). Where a longer phrase covers a shorter one at the same
/// place ("not met" ⊃ "met", "不满足" ⊃ "满足"), only the longer one counts.
pub fn verdict_of(text: &str, phrases: &VerdictPhrases) -> Verdict {
    let reader = Reader::new(text);
    let mut found: Vec<(bool, Occurrence)> = Vec::new();
    for (is_met, list) in [(true, &phrases.met), (false, &phrases.not_met)] {
        for phrase in list {
            found.extend(reader.occurrences(phrase).into_iter().map(|o| (is_met, o)));
        }
    }
    let covered = |o: &Occurrence| {
        found.iter().any(|(_, other)| {
            other.start <= o.start
                && o.end <= other.end
                && other.end - other.start > o.end - o.start
        })
    };
    let (mut met, mut not_met) = (false, false);
    for (is_met, occurrence) in &found {
        if covered(occurrence) {
            continue;
        }
        match (is_met, occurrence.negated) {
            (true, false) => met = true,
            (true, true) | (false, false) => not_met = true,
            (false, true) => {}
        }
    }
    match (met, not_met) {
        (true, true) => Verdict::Both,
        (true, false) => Verdict::Met,
        (false, true) => Verdict::NotMet,
        (false, false) => Verdict::Neither,
    }
}

/// Whether `text` states `value` as a number outside the `masked` strings: some printed number stands for
/// it by the same rule the claims gate and the grammar use ([`NumberMention::stands_for`]: exact, or a
/// rounding with at least one decimal). "179", "79.5" do not state 79; "79.0" and "79%" do; "82%" does
/// not state 81.5.
pub fn mentions_value(text: &str, value: f64, masked: &[&str]) -> bool {
    numbers_outside(text, masked)
        .iter()
        .any(|m| m.stands_for(value))
}

/// Every number `text` states outside the `masked` strings (row labels such as "Plant 7", observation ids
/// such as "obs-calculator-2"), in order, with byte offsets into `text`. A mask matches case-insensitively
/// and as a whole ("Plant 7" does not mask the start of "Plant 72"); a mask that is itself just a number is
/// ignored, so a label can never hide a stated value.
pub fn numbers_outside(text: &str, masked: &[&str]) -> Vec<NumberMention> {
    numbers::scan(&mask(text, masked))
}

/// Strings in a tool result whose digits name things rather than state values: the values of `label`,
/// `key`, `id` and `chunk_id` fields and the items of `labels` arrays, anywhere in the result (row labels,
/// fact keys, citation ids, plot labels). Callers add the observation ids themselves.
pub fn result_masks(result: &serde_json::Value) -> Vec<String> {
    use serde_json::Value;
    fn walk(value: &Value, key: Option<&str>, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => map.iter().for_each(|(k, v)| walk(v, Some(k), out)),
            Value::Array(items) => items
                .iter()
                .for_each(|v| walk(v, key.filter(|k| *k == "labels"), out)),
            Value::String(s)
                if matches!(key, Some("label" | "labels" | "key" | "id" | "chunk_id")) =>
            {
                out.push(s.clone())
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(result, None, &mut out);
    out
}

/// A number `text` states *for a row*: the row label (index into `labels`) written right before it with
/// only a column's name and linking words between ("Site C with Pass Rate 70" states 70 for
/// "Site C"; "Site C is below the 70 minimum" states nothing for it). Another number or label in
/// between ends the claim, and so does a sentence break (`.` `;` `。` `；` `!` `?`).
/// Numbers inside `masked` strings (labels, observation ids) are names, not claims.
pub fn row_claims(
    text: &str,
    labels: &[&str],
    masked: &[&str],
    columns: &[&str],
) -> Vec<(usize, NumberMention)> {
    let mut occurrences: Vec<(usize, usize, usize)> = Vec::new();
    let mut order: Vec<usize> = (0..labels.len())
        .filter(|&i| !labels[i].trim().is_empty())
        .collect();
    // Longest first: "Plant 72" is found whole before "Plant 7" is looked for.
    order.sort_by_key(|&i| std::cmp::Reverse(labels[i].trim().len()));
    for i in order {
        for (start, end) in find_whole_ci(text, labels[i].trim()) {
            if !occurrences.iter().any(|&(s, e, _)| start < e && s < end) {
                occurrences.push((start, end, i));
            }
        }
    }
    occurrences.sort();
    let mentions = numbers_outside(text, masked);
    let mut column_names: Vec<String> = columns
        .iter()
        .map(|c| normalize(c.trim()))
        .filter(|c| !c.is_empty())
        .collect();
    column_names.sort_by_key(|c| std::cmp::Reverse(c.len()));
    let column_words: Vec<String> = column_names
        .iter()
        .flat_map(|c| {
            c.split(|ch: char| !ch.is_alphanumeric())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let links_only = |gap: &str| {
        if gap.contains(['.', ';', '!', '?', '。', '；', '！', '？'])
            || gap.chars().any(|c| c.is_ascii_digit())
        {
            return false;
        }
        let mut rest = normalize(gap);
        for name in &column_names {
            rest = rest.replace(name.as_str(), " ");
        }
        // Words that may link a label to its number (the lexicon's `row_links`): anything else between
        // them ("below", "needs", "minimum") makes the number something other than the row's value.
        let links = &lexicon().row_links;
        for word in links.iter().filter(|w| w.chars().any(is_cjk_script)) {
            rest = rest.replace(word.as_str(), " ");
        }
        rest.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .all(|w| links.iter().any(|l| l == w) || column_words.iter().any(|c| c == w))
    };
    mentions
        .into_iter()
        .filter_map(|m| {
            let &(_, end, label) = occurrences
                .iter()
                .rev()
                .find(|&&(_, end, _)| end <= m.start)?;
            links_only(&text[end..m.start]).then_some((label, m))
        })
        .collect()
}

/// `text` with every whole occurrence of a mask replaced by spaces of the same byte length (offsets stay valid).
fn mask(text: &str, masked: &[&str]) -> String {
    let mut masks: Vec<&str> = masked
        .iter()
        .map(|m| m.trim())
        .filter(|m| !m.is_empty() && numbers::parse_quantity(m).is_none())
        .collect();
    // Longest first: "Plant 72" is masked whole before "Plant 7" is looked for.
    masks.sort_by_key(|m| std::cmp::Reverse(m.len()));
    let mut bytes = text.as_bytes().to_vec();
    for m in masks {
        let current = String::from_utf8(bytes.clone()).expect("masking keeps UTF-8");
        for (start, end) in find_whole_ci(&current, m) {
            bytes[start..end].fill(b' ');
        }
    }
    String::from_utf8(bytes).expect("masking keeps UTF-8")
}

/// Case-insensitive, non-overlapping occurrences of `needle` in `hay` that do not cut a Latin word or number.
fn find_whole_ci(hay: &str, needle: &str) -> Vec<(usize, usize)> {
    let wanted: Vec<char> = needle.chars().flat_map(char::to_lowercase).collect();
    let first = needle.chars().next();
    let last = needle.chars().last();
    let mut out = Vec::new();
    let mut from = 0;
    for (start, _) in hay.char_indices() {
        if start < from {
            continue;
        }
        let Some(end) = match_ci_at(hay, start, &wanted) else {
            continue;
        };
        let before = hay[..start].chars().next_back();
        let mut after = hay[end..].chars();
        let (next, next_but_one) = (after.next(), after.next());
        let cuts_before =
            first.is_some_and(is_latin_word_char) && before.is_some_and(is_latin_word_char);
        // "Plant 7" must not mask the start of "Plant 72" or of "Plant 7.5".
        let continues_number = last.is_some_and(|c| c.is_ascii_digit())
            && matches!(next, Some('.' | ','))
            && next_but_one.is_some_and(|c| c.is_ascii_digit());
        let cuts_after = (last.is_some_and(is_latin_word_char)
            && next.is_some_and(is_latin_word_char))
            || continues_number;
        if !cuts_before && !cuts_after {
            out.push((start, end));
            from = end;
        }
    }
    out
}

/// The end of `wanted` (lower-cased chars) matched at byte `start` of `hay`, if it matches there.
fn match_ci_at(hay: &str, start: usize, wanted: &[char]) -> Option<usize> {
    let mut k = 0;
    for (offset, c) in hay[start..].char_indices() {
        if k == wanted.len() {
            return Some(start + offset);
        }
        for lower in c.to_lowercase() {
            if wanted.get(k) != Some(&lower) {
                return None;
            }
            k += 1;
        }
    }
    (k == wanted.len()).then_some(hay.len())
}

fn is_latin_word_char(c: char) -> bool {
    c.is_alphanumeric() && !is_cjk_script(c)
}

/// Lower case, typographic apostrophes folded to `'`.
fn normalize(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .map(|c| {
            if matches!(c, '\u{2019}' | '\u{2018}' | '`' | '\u{00B4}') {
                '\''
            } else {
                c
            }
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Word,
    /// One CJK character, or one punctuation mark: both end a Latin clause.
    Break,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Kind,
    start: usize,
    end: usize,
}

/// Splits normalized text into words (letters and digits, with `'`, `-` or `.` inside joining them:
/// "isn't", "non-compliant", "78.5") and single-character breaks; whitespace is dropped.
fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if !is_latin_word_char(c) {
            tokens.push(Token {
                kind: Kind::Break,
                start,
                end: start + c.len_utf8(),
            });
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < chars.len() {
            let c = chars[j].1;
            let joins = matches!(c, '\'' | '-' | '.')
                && chars
                    .get(j + 1)
                    .is_some_and(|&(_, n)| is_latin_word_char(n))
                && (c != '.'
                    || (chars[j - 1].1.is_ascii_digit() && chars[j + 1].1.is_ascii_digit()));
            if is_latin_word_char(c) || joins {
                j += 1;
            } else {
                break;
            }
        }
        let end = chars.get(j).map_or(text.len(), |&(at, _)| at);
        tokens.push(Token {
            kind: Kind::Word,
            start,
            end,
        });
        i = j;
    }
    tokens
}

/// One place a phrase occurs, as a byte span of the normalized text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Occurrence {
    start: usize,
    end: usize,
    negated: bool,
}

/// A text prepared once for many phrase look-ups.
struct Reader {
    text: String,
    tokens: Vec<Token>,
}

impl Reader {
    fn new(text: &str) -> Self {
        let text = normalize(text);
        let tokens = tokenize(&text);
        Reader { text, tokens }
    }

    fn word(&self, token: &Token) -> &str {
        &self.text[token.start..token.end]
    }

    /// Occurrences of `phrase`, negated or not, except those naming a rate.
    fn occurrences(&self, phrase: &str) -> Vec<Occurrence> {
        let phrase = normalize(phrase);
        let phrase = phrase.trim();
        if phrase.is_empty() {
            return Vec::new();
        }
        let found = if phrase.chars().any(is_cjk_script) {
            self.cjk_occurrences(phrase)
        } else {
            self.latin_occurrences(phrase)
        };
        found
            .into_iter()
            .filter(|o| !self.names_a_rate(o))
            .collect()
    }

    /// "pass rate", "达成率": the phrase is the first half of a noun.
    fn names_a_rate(&self, occurrence: &Occurrence) -> bool {
        let rest = &self.text[occurrence.end..];
        let reading = &lexicon().answer_reading;
        if rest.starts_with(reading.rate_cjk) {
            return true;
        }
        let next_word = self.tokens.iter().find(|t| t.start >= occurrence.end);
        next_word
            .is_some_and(|t| t.kind == Kind::Word && is_one_of(self.word(t), &reading.rate_words))
    }

    /// Token-sequence matches: whole words, punctuation inside the phrase matched as written.
    fn latin_occurrences(&self, phrase: &str) -> Vec<Occurrence> {
        let wanted: Vec<&str> = tokenize(phrase)
            .iter()
            .map(|t| &phrase[t.start..t.end])
            .collect();
        let n = wanted.len();
        if n == 0 || n > self.tokens.len() {
            return Vec::new();
        }
        (0..=self.tokens.len() - n)
            .filter(|&i| {
                self.tokens[i..i + n]
                    .iter()
                    .zip(&wanted)
                    .all(|(t, w)| self.word(t) == *w)
            })
            .map(|i| Occurrence {
                start: self.tokens[i].start,
                end: self.tokens[i + n - 1].end,
                negated: self.latin_negated(i),
            })
            .collect()
    }

    /// A negation cue among the [`NEGATION_WINDOW`] words before token `i`, in the same clause.
    fn latin_negated(&self, i: usize) -> bool {
        let mut j = i;
        let mut seen = 0;
        while j > 0 && seen < NEGATION_WINDOW {
            j -= 1;
            let token = &self.tokens[j];
            if token.kind != Kind::Word {
                return false;
            }
            let word = self.word(token);
            if is_one_of(word, &lexicon().answer_reading.clause_words) {
                return false;
            }
            // "not only met but exceeded" affirms.
            let not_only = word == "not"
                && self
                    .tokens
                    .get(j + 1)
                    .is_some_and(|t| self.word(t) == "only");
            if is_negation_word(word) && !not_only {
                return true;
            }
            // "fails to meet", "failed to be met": the cue is two words ending in "to".
            if word == "to"
                && j > 0
                && self.tokens[j - 1].kind == Kind::Word
                && is_one_of(
                    self.word(&self.tokens[j - 1]),
                    &lexicon().answer_reading.fail_forms,
                )
            {
                return true;
            }
            seen += 1;
        }
        false
    }

    fn cjk_occurrences(&self, phrase: &str) -> Vec<Occurrence> {
        self.text
            .match_indices(phrase)
            .map(|(start, matched)| {
                let before = self.text[..start].trim_end();
                Occurrence {
                    start,
                    end: start + matched.len(),
                    negated: lexicon()
                        .answer_reading
                        .cjk_negations
                        .iter()
                        .any(|cue| before.ends_with(cue.as_str())),
                }
            })
            .collect()
    }
}

fn is_negation_word(word: &str) -> bool {
    let reading = &lexicon().answer_reading;
    is_one_of(word, &reading.negation_words)
        || word.ends_with("n't")
        || is_one_of(word, &reading.bare_nt_forms)
}

/// Whether `word` is exactly one of `words` (an answer's words are already normalised).
fn is_one_of(word: &str, words: &[String]) -> bool {
    words.iter().any(|w| w == word)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let text = normalize(text);
        tokenize(&text)
            .iter()
            .map(|t| text[t.start..t.end].to_owned())
            .collect()
    }

    fn claimed(text: &str, labels: &[&str], columns: &[&str]) -> Vec<(String, String)> {
        row_claims(text, labels, labels, columns)
            .into_iter()
            .map(|(i, m)| (labels[i].to_owned(), m.printed))
            .collect()
    }

    #[test]
    fn a_number_written_right_after_a_row_label_is_claimed_for_that_row() {
        let labels = ["Site C", "Site B", "Plant 7", "Plant 72", "C医院"];
        let columns = ["Pass Rate", "满意度"];
        let pairs = |items: &[(&str, &str)]| {
            items
                .iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            claimed(
                "Average is 78; the lowest site is Site C with Pass Rate 70. The rule is not met.",
                &labels,
                &columns
            ),
            pairs(&[("Site C", "70")])
        );
        assert_eq!(
            claimed(
                "Site C (67) and Site B: 74%, with a value of 74",
                &labels,
                &columns
            ),
            pairs(&[("Site C", "67"), ("Site B", "74")])
        );
        assert_eq!(
            claimed("Plant 72 at 91 and Plant 7 at 88", &labels, &columns),
            pairs(&[("Plant 72", "91"), ("Plant 7", "88")])
        );
        assert_eq!(
            claimed("满意度最低的是C医院，满意度为70%。", &labels, &columns),
            pairs(&[("C医院", "70")])
        );
        // The row's own number is claimed; the threshold after other words is not.
        assert_eq!(
            claimed("Site C (67) falls short of 70", &labels, &columns),
            pairs(&[("Site C", "67")])
        );
        // Other words, another number, or a sentence break between them: not a claim about the row.
        for text in [
            "Site C is below the 70 minimum",
            "the lowest is Site C. 70 is the minimum",
            "Site C needs 70",
            "Average 78",
        ] {
            assert_eq!(claimed(text, &labels, &columns), [], "{text}");
        }
    }

    #[test]
    fn tokens_keep_contractions_compounds_and_decimals_whole() {
        assert_eq!(
            words("It isn't met, non-compliant: 78.5."),
            ["it", "isn't", "met", ",", "non-compliant", ":", "78.5", "."]
        );
        assert_eq!(
            words("Batch A的平均值"),
            ["batch", "a", "的", "平", "均", "值"]
        );
        assert_eq!(words("Doesn\u{2019}t meet"), ["doesn't", "meet"]);
    }

    #[test]
    fn masks_are_whole_and_case_insensitive() {
        assert_eq!(
            mask("plant 7 and Plant 72", &["PLANT 7"]),
            "        and Plant 72"
        );
        assert_eq!(mask("Plant 7号", &["Plant 7"]), "       号");
        assert_eq!(
            mask("Plant 7.5, Plant 7.", &["Plant 7"]),
            "Plant 7.5,        ."
        );
        assert_eq!(
            mask("value 79", &["79"]),
            "value 79",
            "a bare number is never a mask"
        );
    }

    #[test]
    fn phrases_read_as_task_json_writes_them() {
        let zh: VerdictPhrases =
            serde_json::from_str(r#"{"true": ["达成"], "false": ["未达成"]}"#).unwrap();
        assert_eq!(
            zh,
            VerdictPhrases {
                met: vec!["达成".into()],
                not_met: vec!["未达成".into()]
            }
        );
        let error = serde_json::from_str::<VerdictPhrases>(
            r#"{"true": ["met"], "false": [], "maybe": []}"#,
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("unknown field `maybe`"),
            "{error}"
        );
    }

    #[test]
    fn default_phrases_are_usable() {
        assert_eq!(VerdictPhrases::default().check(), Ok(()));
        let both = VerdictPhrases {
            met: vec!["Met".into()],
            not_met: vec!["met ".into()],
        };
        assert_eq!(
            both.check(),
            Err(VerdictPhrasesError::Both {
                phrase: "Met".into()
            })
        );
        let empty = VerdictPhrases {
            met: vec![],
            not_met: vec!["x".into()],
        };
        assert_eq!(
            empty.check(),
            Err(VerdictPhrasesError::Empty { side: "true" })
        );
    }
}
