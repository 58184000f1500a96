//! The vocabulary every reader of language shares (rule clauses, answer slots, column focus, verdicts),
//! loaded once from `lexicon.json`, and the one matcher that finds its entries in a text.
//!
//! Latin entries match whole words, case-insensitively, after light folding (`averages` → `average`,
//! `boxes` → `box`); entries with CJK characters match as substrings (Chinese has no spaces); symbol
//! entries (`≤`, `>=`) match as substrings. Callers never compare words themselves: they ask here.

use std::sync::LazyLock;

use serde::Deserialize;

/// A comparison operator read from language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Comparison {
    #[serde(rename = ">=")]
    AtLeast,
    #[serde(rename = ">")]
    Above,
    #[serde(rename = "<=")]
    AtMost,
    #[serde(rename = "<")]
    Below,
}

impl Comparison {
    pub fn holds(self, value: f64, threshold: f64) -> bool {
        match self {
            Self::AtLeast => value >= threshold,
            Self::Above => value > threshold,
            Self::AtMost => value <= threshold,
            Self::Below => value < threshold,
        }
    }
    pub fn symbol(self) -> &'static str {
        match self {
            Self::AtLeast => ">=",
            Self::Above => ">",
            Self::AtMost => "<=",
            Self::Below => "<",
        }
    }
    /// "not at least" is "below".
    pub fn negated(self) -> Comparison {
        match self {
            Self::AtLeast => Self::Below,
            Self::Above => Self::AtMost,
            Self::AtMost => Self::Above,
            Self::Below => Self::AtLeast,
        }
    }
    /// Whether the operator is a lower limit (the lowest row is the one that can break it).
    pub fn is_lower_limit(self) -> bool {
        matches!(self, Self::AtLeast | Self::Above)
    }
}

/// One comparison phrase; `after` when it follows its number ("30 or more", "85%以上").
#[derive(Debug, Clone, Deserialize)]
pub struct ComparisonPhrase {
    pub phrase: String,
    pub op: Comparison,
    #[serde(default)]
    pub after: bool,
}

#[derive(Debug, Deserialize)]
pub struct Aggregates {
    pub mean: Vec<String>,
    pub sum: Vec<String>,
    pub min: Vec<String>,
    pub max: Vec<String>,
    pub count: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub struct Extremes {
    pub lowest: Vec<String>,
    pub highest: Vec<String>,
    pub either: Vec<String>,
}

/// Words that type a rule clause beyond one comparison (see `rule_terms` in `lexicon.json`).
#[derive(Debug, Deserialize)]
pub struct RuleTerms {
    /// Words that promise a range ("between"): without one after them the clause is unread.
    pub range_openers: Vec<String>,
    /// Words a range may follow that are also bounds of their own ("within 30 minutes").
    pub range_or_bound: Vec<String>,
    pub range_joiners: Vec<String>,
    pub plus_minus: Vec<String>,
    pub relative_of: Vec<String>,
    /// Words that may stand between "of" and the number a spread is taken around ("within ±3 s of the
    /// 28-second target").
    pub centre_determiners: Vec<String>,
    /// Relative terms that put the share after the quantity it is taken of ("去年平均处理时长的110%"); in
    /// the other terms' word order a number after the quantity is the quantity itself ("the regional
    /// figure of 20").
    pub share_after_quantity: Vec<String>,
    pub percent_words: Vec<String>,
    /// A difference between two percentages ("5 percentage points", "5个百分点"): a limit's offset in
    /// percent, never a share of what it is relative to.
    pub percentage_point_words: Vec<String>,
    pub ratio_words: Vec<String>,
    pub definition_links: Vec<String>,
    /// Words that tie a ratio's terms to one row ("its passes divided by its tests"): such a sentence says how
    /// each row's value is computed, so it defines no ratio of totals.
    pub row_possessives: Vec<String>,
    /// Words that single out each row ("each line's mean fill", "每条压片线的平均片重"): beside an average in a
    /// subject they leave open whether each row's own average or the average of the rows is limited.
    pub single_row_words: Vec<String>,
    /// Words that leave some rows out of what a rule or slot is about ("excluding the pilot site", "各食堂（不含
    /// 试点食堂）"): which rows, the reader does not type, so such a subject or slot is never read over every row.
    pub row_exclusions: Vec<String>,
    pub per_words: Vec<String>,
    pub untyped_connectives: Vec<String>,
    /// Words after which a rule sentence states what follows when its conditions fail ("…; otherwise the
    /// grant lapses", "…；否则扣分"): with no comparison after them, the conditions before them are the rule.
    pub alternative_outcomes: Vec<String>,
    /// Words that end a CJK word glued to a limit's number (`90分的门店`: the unit is `分`; `90且`: none).
    pub glued_word_ends: Vec<String>,
    /// Words that may stand between a comparison and the count it bounds ("最多有一个小区": at most one).
    pub count_fillers: Vec<String>,
    /// Words that join a row condition to the rows it picks when the count comes last ("低于95%的网点至多两个":
    /// the outlets below 95% are at most two).
    pub row_condition_links: Vec<String>,
    /// Words that make a count word part of a bigger number ("三百", "one hundred").
    pub numeral_multipliers: Vec<String>,
    /// Counts written as words ("no more than one depot"), with their value.
    pub count_words: std::collections::BTreeMap<String, u32>,
}

/// Rank and tie vocabulary (see `ranks` in `lexicon.json`).
#[derive(Debug, Deserialize)]
pub struct Ranks {
    pub ordinals: std::collections::BTreeMap<String, u32>,
    pub rank_ends: RankEnds,
    pub tie_words: Vec<String>,
    /// Per language (`en`, `zh`): what joins the rows of a list, the first the one to write.
    pub list_joiners: std::collections::BTreeMap<String, Vec<String>>,
}

/// End words by end, for ranks (no "either").
#[derive(Debug, Deserialize)]
pub struct RankEnds {
    pub lowest: Vec<String>,
    pub highest: Vec<String>,
}

/// The whole vocabulary (see `lexicon.json` for what each list is for).
#[derive(Debug, Deserialize)]
pub struct Lexicon {
    pub aggregates: Aggregates,
    pub extremes: Extremes,
    pub unsupported_quantities: Vec<String>,
    pub own_value: Vec<String>,
    pub comparisons: Vec<ComparisonPhrase>,
    pub key_comparisons: Vec<ComparisonPhrase>,
    pub negations: Vec<String>,
    pub universal_negations: Vec<String>,
    pub quantity_each: Vec<String>,
    pub rule_terms: RuleTerms,
    pub ranks: Ranks,
    /// Per language (`en`, `zh`): the mark written after a claim the runtime could not verify.
    pub unverified_marker: std::collections::BTreeMap<String, String>,
    pub excluded_rows: Vec<String>,
    pub answer_cues: Vec<String>,
    /// Words that carry no subject of their own (articles, prepositions, pronouns, auxiliaries, question
    /// words): left out of column matching, retrieval terms and the words a search query may use.
    pub function_words: Vec<String>,
    /// Words that may stand between a row's label and the number stated for it ("Site C with a score of
    /// 67", "C医院满意度为70%"); CJK entries match as substrings.
    pub row_links: Vec<String>,
    /// How an answer's text is read: its negation cues, clause words, rate words and default verdict phrases.
    pub answer_reading: AnswerReading,
    /// Words that make a verdict option negative when the verdict reader finds no verdict in it ("not …",
    /// "未…"), matched like every entry.
    pub option_negations: Vec<String>,
    /// Aggregate words a column header may carry ("Avg basket ($)"): left out when a rule's words name a column.
    pub header_aggregate_words: Vec<String>,
}

/// The words `answer.rs` reads an answer with (see `answer_reading` in `lexicon.json`).
#[derive(Debug, Deserialize)]
pub struct AnswerReading {
    /// Words that negate a phrase when they precede it in the same clause.
    pub negation_words: Vec<String>,
    /// `n't` forms written without the apostrophe (an apostrophe form is recognised by its suffix).
    pub bare_nt_forms: Vec<String>,
    /// `fails to`, `failed to` …: the first word of a two-word negation cue ending in `to`.
    pub fail_forms: Vec<String>,
    /// Words that start a new clause: a negation before them does not reach a phrase after them.
    pub clause_words: Vec<String>,
    /// A word after a phrase that makes the phrase part of a rate's name ("pass rate").
    pub rate_words: Vec<String>,
    /// The same for CJK ("达成率").
    pub rate_cjk: char,
    /// Words that negate a CJK phrase they directly precede.
    pub cjk_negations: Vec<String>,
    /// The default verdict phrases saying the rule holds.
    pub verdict_met: Vec<String>,
    /// The default verdict phrases saying the rule does not hold.
    pub verdict_not_met: Vec<String>,
}

static LEXICON: LazyLock<Lexicon> = LazyLock::new(|| {
    serde_json::from_str(include_str!("lexicon.json")).expect("lexicon.json is valid (tested)")
});

/// The vocabulary.
pub fn lexicon() -> &'static Lexicon {
    &LEXICON
}

/// Whether `word` (any case) is one of the lexicon's function words.
pub fn is_function_word(word: &str) -> bool {
    let lower = word.to_lowercase();
    lexicon().function_words.contains(&lower)
}

/// An aggregate a text names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aggregate {
    Mean,
    Sum,
    Min,
    Max,
    Count,
}

impl Aggregate {
    pub const ALL: [Aggregate; 5] = [
        Aggregate::Mean,
        Aggregate::Sum,
        Aggregate::Min,
        Aggregate::Max,
        Aggregate::Count,
    ];

    /// The calculator function computing it.
    pub fn function(self) -> &'static str {
        match self {
            Aggregate::Mean => "mean",
            Aggregate::Sum => "sum",
            Aggregate::Min => "min",
            Aggregate::Max => "max",
            Aggregate::Count => "count",
        }
    }

    fn words(self) -> &'static [String] {
        let a = &lexicon().aggregates;
        match self {
            Aggregate::Mean => &a.mean,
            Aggregate::Sum => &a.sum,
            Aggregate::Min => &a.min,
            Aggregate::Max => &a.max,
            Aggregate::Count => &a.count,
        }
    }

    /// Applies it to `values` (`None` for an empty list).
    pub fn apply(self, values: &[f64]) -> Option<f64> {
        if values.is_empty() {
            return None;
        }
        Some(match self {
            Aggregate::Mean => values.iter().sum::<f64>() / values.len() as f64,
            Aggregate::Sum => values.iter().sum(),
            Aggregate::Min => values.iter().copied().fold(f64::INFINITY, f64::min),
            Aggregate::Max => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            Aggregate::Count => values.len() as f64,
        })
    }
}

/// Which end of a column a text names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Lowest,
    Highest,
    /// "worst"/"best": an end, but the text does not say which.
    Either,
}

/// One match of a vocabulary entry in a text: byte range and the entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit<'a> {
    pub start: usize,
    pub end: usize,
    pub entry: &'a str,
}

fn has_cjk(text: &str) -> bool {
    text.chars().any(is_cjk)
}

/// Han (with radicals and extensions), kana, bopomofo and Hangul: scripts written without spaces between
/// words, so a run of them is not split into words at spaces.
pub fn is_cjk_script(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x2FDF      // CJK and Kangxi radicals
        | 0x3040..=0x30FF    // Hiragana, Katakana
        | 0x3100..=0x312F    // Bopomofo
        | 0x3190..=0x31FF    // Kanbun, strokes, Katakana extensions
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F) // CJK Extensions B..
}

/// CJK text: the scripts above plus CJK punctuation and full-width forms (full-width digits and letters
/// are not Latin words).
pub fn is_cjk(c: char) -> bool {
    is_cjk_script(c) || matches!(c, '\u{3000}'..='\u{303f}' | '\u{ff00}'..='\u{ffef}')
}

/// A word token: byte range and its folded lowercase form.
#[derive(Debug, Clone)]
pub struct Word {
    pub start: usize,
    pub end: usize,
    pub folded: String,
}

/// Folds an English word for matching: lowercase, then `-ies` → `-y`, `-es` after ss/x/ch/sh → stem, `-s` →
/// stem (`batches` → `batch`, `categories` → `category`, `expenses` → `expense`). Short words, Latin
/// `-ss`/`-us`/`-is` words and words outside ASCII are left as they are: no English rule is guessed for them.
pub fn fold(word: &str) -> String {
    let w = word.to_lowercase();
    let n = w.len();
    if !w.is_ascii() || n <= 3 || w.ends_with("ss") || w.ends_with("us") || w.ends_with("is") {
        return w;
    }
    if n > 4 && w.ends_with("ies") {
        return format!("{}y", &w[..n - 3]);
    }
    if n > 4
        && ["sses", "xes", "ches", "shes"]
            .iter()
            .any(|s| w.ends_with(s))
    {
        return w[..n - 2].to_owned();
    }
    match w.strip_suffix('s') {
        Some(stem) => stem.to_owned(),
        None => w,
    }
}

/// The Latin/digit words of `text` (runs of alphanumeric non-CJK characters, `'` inside a word kept,
/// a possessive `'s` dropped).
pub fn words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        let part = (c.is_alphanumeric() && !is_cjk(c)) || (c == '\'' && start.is_some());
        match (part, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                // A possessive names the thing itself: "each hotel's occupancy" is about hotels.
                let raw = text[s..i].trim_end_matches('\'');
                let raw = raw
                    .strip_suffix("'s")
                    .or_else(|| raw.strip_suffix("'S"))
                    .unwrap_or(raw);
                out.push(Word {
                    start: s,
                    end: s + raw.len(),
                    folded: fold(raw),
                });
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// Every place `entry` occurs in `text` (see the module doc for how entries match).
pub fn find<'a>(text: &str, entry: &'a str) -> Vec<Hit<'a>> {
    let mut out = Vec::new();
    let is_word_entry = entry.chars().any(|c| c.is_alphanumeric() && !is_cjk(c)) && !has_cjk(entry);
    if is_word_entry {
        let wanted: Vec<String> = words(entry).iter().map(|w| w.folded.clone()).collect();
        // A prefix entry (`exclud`) ends without a word boundary; everything else matches whole words.
        let have = words(text);
        if wanted.is_empty() {
            return out;
        }
        for i in 0..have.len() {
            if i + wanted.len() > have.len() {
                break;
            }
            let all = wanted.iter().zip(&have[i..]).all(|(w, h)| &h.folded == w);
            if all {
                out.push(Hit {
                    start: have[i].start,
                    end: have[i + wanted.len() - 1].end,
                    entry,
                });
            }
        }
        return out;
    }
    let lower = text.to_lowercase();
    if lower.len() != text.len() {
        // Lowercasing changed byte lengths (rare scripts): match on the original text only.
        for (i, _) in text.match_indices(entry) {
            out.push(Hit {
                start: i,
                end: i + entry.len(),
                entry,
            });
        }
        return out;
    }
    for (i, _) in lower.match_indices(&entry.to_lowercase()) {
        out.push(Hit {
            start: i,
            end: i + entry.len(),
            entry,
        });
    }
    out
}

/// Every hit of any of `entries` in `text`, leftmost first, longest first at one place, overlaps dropped.
pub fn scan<'a>(text: &str, entries: impl IntoIterator<Item = &'a str>) -> Vec<Hit<'a>> {
    let mut hits: Vec<Hit<'a>> = entries.into_iter().flat_map(|e| find(text, e)).collect();
    hits.sort_by_key(|h| (h.start, std::cmp::Reverse(h.end)));
    let mut kept: Vec<Hit<'a>> = Vec::new();
    for hit in hits {
        if kept.last().is_none_or(|k| hit.start >= k.end) {
            kept.push(hit);
        }
    }
    kept
}

/// Whether any of `entries` occurs in `text`.
pub fn contains_any<'a>(text: &str, entries: impl IntoIterator<Item = &'a String>) -> bool {
    entries.into_iter().any(|e| !find(text, e).is_empty())
}

/// The aggregates `text` names ("the average wait" → [Mean]), in a fixed order.
pub fn aggregates_in(text: &str) -> Vec<Aggregate> {
    Aggregate::ALL
        .into_iter()
        .filter(|a| contains_any(text, a.words()))
        .collect()
}

/// The end of a column `text` names, if exactly one kind of end word occurs.
pub fn end_in(text: &str) -> Option<End> {
    let e = &lexicon().extremes;
    match (
        contains_any(text, &e.lowest),
        contains_any(text, &e.highest),
        contains_any(text, &e.either),
    ) {
        (true, false, _) => Some(End::Lowest),
        (false, true, _) => Some(End::Highest),
        (false, false, true) | (true, true, _) => Some(End::Either),
        _ => None,
    }
}

/// The rank from an end `text` names with an ordinal right before an end word ("second-lowest" →
/// (Lowest, 2), "3rd highest", "第二低"), if any.
pub fn rank_in(text: &str) -> Option<(End, u32)> {
    let ranks = &lexicon().ranks;
    let e = &lexicon().extremes;
    let ends = [
        (End::Lowest, e.lowest.iter().chain(&ranks.rank_ends.lowest)),
        (
            End::Highest,
            e.highest.iter().chain(&ranks.rank_ends.highest),
        ),
    ];
    for hit in scan(text, ranks.ordinals.keys().map(String::as_str)) {
        let rest = text[hit.end..].trim_start_matches([' ', '-', '\u{2011}']);
        for (end, words) in ends.clone() {
            let starts = words
                .into_iter()
                .any(|w| find(rest, w).first().is_some_and(|h| h.start == 0));
            if starts {
                return Some((end, ranks.ordinals[hit.entry]));
            }
        }
    }
    None
}

/// A list of rows from an end `text` names with a count beside an end word ("top 3", "3 lowest", "three
/// highest", "bottom 2"): the end and how many rows. A count of 1 is no list.
pub fn list_in(text: &str) -> Option<(End, u32)> {
    let e = &lexicon().extremes;
    let counts = &lexicon().rule_terms.count_words;
    let count_at = |word: &Word| -> Option<u32> {
        word.folded
            .parse::<u32>()
            .ok()
            .or_else(|| counts.get(&word.folded).copied())
    };
    let all = words(text);
    for (i, word) in all.iter().enumerate() {
        let end = if e.lowest.contains(&word.folded) {
            End::Lowest
        } else if e.highest.contains(&word.folded) {
            End::Highest
        } else {
            continue;
        };
        let before = i.checked_sub(1).and_then(|j| count_at(&all[j]));
        let after = all.get(i + 1).and_then(count_at);
        if let Some(n) = before.or(after).filter(|n| *n > 1) {
            return Some((end, n));
        }
    }
    None
}

/// The words that say an answer names a tie ("tied", "jointly", "并列").
pub fn names_a_tie(text: &str) -> bool {
    contains_any(text, &lexicon().ranks.tie_words)
}

/// The text that joins the rows of a list in the language of `sample` (Chinese when it holds CJK).
pub fn list_joiner(sample: &str) -> &'static str {
    let language = if sample.chars().any(is_cjk_script) {
        "zh"
    } else {
        "en"
    };
    lexicon().ranks.list_joiners[language][0].as_str()
}

/// The mark written after a claim the runtime could not verify, in the language of `sample`.
pub fn unverified_marker(sample: &str) -> &'static str {
    let language = if sample.chars().any(is_cjk_script) {
        "zh"
    } else {
        "en"
    };
    lexicon().unverified_marker[language].as_str()
}

/// A quantity the tools cannot compute that `text` names ("median"), if any.
pub fn unsupported_in(text: &str) -> Option<&'static str> {
    lexicon()
        .unsupported_quantities
        .iter()
        .find(|q| !find(text, q).is_empty())
        .map(String::as_str)
}

/// Of column headers a text names by the very same words, the one those words name whole ("the average
/// rating": `Rating`, not `Ratings received`), by index; `None` when the words differ or that does not decide.
pub fn named_whole(headers: &[&str], text: &str) -> Option<usize> {
    let words = content_words(text);
    let matched = |name: &str| -> (Vec<String>, usize) {
        let mut header = content_words(name);
        header.sort();
        header.dedup();
        let hit: Vec<String> = header
            .iter()
            .filter(|h| words.contains(h))
            .cloned()
            .collect();
        let rest = header.len() - hit.len();
        (hit, rest)
    };
    let first = matched(headers.first()?).0;
    if first.is_empty() || headers.iter().any(|h| matched(h).0 != first) {
        return None;
    }
    let whole: Vec<usize> = (0..headers.len())
        .filter(|&i| matched(headers[i]).1 == 0)
        .collect();
    match whole.as_slice() {
        [only] => Some(*only),
        _ => None,
    }
}

/// The words of `text` that name a quantity: its [`content_words`] without the words of comparisons and
/// negations (`no`, `below`, `lte`, `不得超过`' bigrams): what a rule's clause says it limits.
pub fn quantity_words(text: &str) -> Vec<String> {
    let lex = lexicon();
    let phrases = lex
        .comparisons
        .iter()
        .chain(&lex.key_comparisons)
        .map(|c| c.phrase.as_str())
        .chain(lex.negations.iter().map(String::as_str))
        .chain(lex.universal_negations.iter().map(String::as_str));
    let mut functional: Vec<String> = Vec::new();
    for phrase in phrases {
        for w in content_words(phrase) {
            if !functional.contains(&w) {
                functional.push(w);
            }
        }
    }
    content_words(text)
        .into_iter()
        .filter(|w| !functional.contains(w))
        .collect()
}

/// Words of `text` that carry meaning for column matching: folded, without aggregate, end and
/// comparison words (so "average basket" and "Avg basket" meet on "basket").
pub fn content_words(text: &str) -> Vec<String> {
    let lex = lexicon();
    let mut functional: Vec<String> = Vec::new();
    for list in [
        &lex.aggregates.mean,
        &lex.aggregates.sum,
        &lex.extremes.lowest,
        &lex.extremes.highest,
        &lex.extremes.either,
    ] {
        for entry in list.iter().filter(|e| !has_cjk(e) && !e.contains(' ')) {
            functional.push(fold(entry));
        }
    }
    let mut out: Vec<String> = words(text)
        .into_iter()
        .map(|w| w.folded)
        .filter(|w| {
            !functional.contains(w)
                && !is_function_word(w)
                && !w.chars().all(|c| c.is_ascii_digit())
        })
        .collect();
    // CJK runs as overlapping bigrams, without the aggregate and end words.
    let mut cjk = text.to_owned();
    for list in [
        &lex.aggregates.mean,
        &lex.aggregates.sum,
        &lex.extremes.lowest,
        &lex.extremes.highest,
        &lex.extremes.either,
    ] {
        for entry in list.iter().filter(|e| has_cjk(e)) {
            cjk = cjk.replace(entry.as_str(), " ");
        }
    }
    let mut run: Vec<char> = Vec::new();
    for c in cjk.chars().chain(std::iter::once(' ')) {
        if is_cjk(c) && !matches!(c, '，' | '。' | '：' | '；' | '（' | '）' | '、') {
            run.push(c);
        } else {
            if run.len() == 1 {
                out.push(run[0].to_string());
            }
            for pair in run.windows(2) {
                out.push(pair.iter().collect());
            }
            run.clear();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_header_named_whole_breaks_a_tie_of_the_same_words() {
        assert_eq!(
            named_whole(
                &["Ratings received", "Rating"],
                "the average rating of all operators"
            ),
            Some(1)
        );
        assert_eq!(named_whole(&["Staff", "Wait time"], "staff and wait"), None);
        assert_eq!(
            named_whole(&["满意度", "满意度调查人数"], "计算平均满意度"),
            Some(0)
        );
    }

    use super::*;

    #[test]
    fn one_fold_for_column_matching_and_retrieval() {
        for (plural, singular) in [
            ("batches", "batch"),
            ("categories", "category"),
            ("expenses", "expense"),
            ("responses", "response"),
            ("cases", "case"),
            ("classes", "class"),
            ("boxes", "box"),
            ("Rules", "rule"),
        ] {
            assert_eq!(fold(plural), fold(singular), "{plural} / {singular}");
            assert_eq!(fold(plural), singular);
        }
        for kept in ["bus", "status", "analysis", "success", "gas", "días"] {
            assert_eq!(fold(kept), kept.to_lowercase(), "{kept}");
        }
    }

    #[test]
    fn cjk_script_and_cjk_text_are_two_classes() {
        for c in ['平', 'ひ', 'カ', '한', 'ㄅ', '⺀'] {
            assert!(is_cjk_script(c) && is_cjk(c), "{c}");
        }
        for c in ['，', '。', '（', '１', 'Ａ'] {
            assert!(!is_cjk_script(c) && is_cjk(c), "{c}");
        }
        for c in ['a', '1', ' ', 'é', '-'] {
            assert!(!is_cjk(c), "{c}");
        }
    }

    #[test]
    fn lexicon_loads_and_every_list_is_filled() {
        let l = lexicon();
        assert!(
            !l.comparisons.is_empty()
                && !l.negations.is_empty()
                && !l.unsupported_quantities.is_empty()
        );
    }

    #[test]
    fn function_words_are_one_list_read_in_any_case() {
        assert!(is_function_word("The") && is_function_word("which") && is_function_word("THEIR"));
        assert!(
            !is_function_word("used") && !is_function_word("turbidity") && !is_function_word("")
        );
        // Content words of a header keep what the column is about, whatever function words surround it.
        assert_eq!(
            content_words("What is the turbidity of each sample point"),
            ["turbidity", "sample", "point"]
        );
        assert!(
            lexicon().row_links.iter().any(|w| w.chars().any(is_cjk)),
            "row links cover CJK text"
        );
    }

    #[test]
    fn words_match_whole_and_folded_cjk_as_substrings() {
        assert_eq!(aggregates_in("compute the average wait"), [Aggregate::Mean]);
        assert_eq!(
            aggregates_in("the averages of all sites"),
            [Aggregate::Mean]
        );
        assert_eq!(aggregates_in("计算平均满意度"), [Aggregate::Mean]);
        assert_eq!(aggregates_in("the total output"), [Aggregate::Sum]);
        assert!(aggregates_in("meantime").is_empty());
        assert_eq!(end_in("highest fridge"), Some(End::Highest));
        assert_eq!(end_in("最低的分馆"), Some(End::Lowest));
        assert_eq!(end_in("worst line"), Some(End::Either));
        assert_eq!(end_in("line name"), None);
        assert_eq!(unsupported_in("the median delay"), Some("median"));
        assert_eq!(unsupported_in("中位数"), Some("中位数"));
        assert_eq!(unsupported_in("the mean delay"), None);
    }

    #[test]
    fn possessives_name_the_thing_itself() {
        assert_eq!(
            content_words("chart each hotel's occupancy"),
            ["chart", "hotel", "occupancy"]
        );
        assert_eq!(content_words("the stores' rates"), ["store", "rate"]);
        assert_eq!(content_words("don't"), ["don't"]);
    }

    #[test]
    fn content_words_drop_aggregate_and_end_words() {
        assert_eq!(content_words("Avg basket"), ["basket"]);
        assert_eq!(
            content_words("the average basket of all stores"),
            ["basket", "store"]
        );
        assert!(content_words("平均满意度").contains(&"满意".to_string()));
    }

    #[test]
    fn scan_prefers_the_longest_entry_at_a_place() {
        let hits = scan("no more than 30", ["no", "no more than", "more than"]);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].entry, "no more than");
    }
}
