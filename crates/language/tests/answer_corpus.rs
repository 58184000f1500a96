//! The adversarial answer corpus: tables of answer texts pinning how `forge_language::answer` reads verdicts,
//! whole words, negation (English and Chinese) and stated numbers — the cases a substring scorer got wrong.

use forge_language::answer::{
    Verdict, VerdictPhrases, mentions_value, numbers_outside, phrase_present, verdict_of,
};
use pretty_assertions::assert_eq;

fn phrases(met: &[&str], not_met: &[&str]) -> VerdictPhrases {
    VerdictPhrases {
        met: met.iter().map(|s| (*s).to_owned()).collect(),
        not_met: not_met.iter().map(|s| (*s).to_owned()).collect(),
    }
}

/// (answer, expected verdict) with the default phrases.
const DEFAULT_VERDICTS: &[(&str, Verdict)] = &[
    (
        "The release rule is met and the build is eligible.",
        Verdict::Met,
    ),
    ("met and eligible", Verdict::Met),
    (
        "Average 79 (meets 78); lowest 72 (meets 70), so the rule is met.",
        Verdict::Met,
    ),
    (
        "The rule is unmet, the build is ineligible.",
        Verdict::NotMet,
    ),
    ("The rule is unmet", Verdict::NotMet),
    ("The build is ineligible for release.", Verdict::NotMet),
    ("The average does not meet the minimum.", Verdict::NotMet),
    ("The build is not eligible.", Verdict::NotMet),
    ("The build cannot be released.", Verdict::NotMet),
    ("The rule isn't met.", Verdict::NotMet),
    ("The rule isn\u{2019}t met.", Verdict::NotMet),
    ("The rule isnt met", Verdict::NotMet),
    ("The rule was never met.", Verdict::NotMet),
    ("Neither condition is met.", Verdict::NotMet),
    ("The target has not been met.", Verdict::NotMet),
    ("The plant fails to meet the target.", Verdict::NotMet),
    ("The plant failed to be eligible.", Verdict::NotMet),
    (
        "The rule is not met but the build is eligible.",
        Verdict::Both,
    ),
    ("The rule is met, the build is not eligible.", Verdict::Both),
    (
        "The metric is reported in metres with metadata.",
        Verdict::Neither,
    ),
    ("Average 79; lowest batch A at 72.", Verdict::Neither),
    ("The pass rate is 79%.", Verdict::Neither),
    ("The build may be released.", Verdict::Met),
    ("The build may not be released.", Verdict::NotMet),
    ("No batch is below 70, so the rule is met.", Verdict::Met),
    ("There is no doubt: the rule is met.", Verdict::Met),
    ("The rule is not unmet.", Verdict::Neither),
    ("The target is not only met but exceeded.", Verdict::Met),
    ("The rule is no longer met.", Verdict::NotMet),
    ("目标达成率为80%。", Verdict::Neither),
    ("目标达成率为80%，目标达成。", Verdict::Met),
    ("满足发布条件。", Verdict::Met),
    ("平均值为79，满足发布条件，可以发布。", Verdict::Met),
    ("不满足发布条件。", Verdict::NotMet),
    ("平均值未满足要求。", Verdict::NotMet),
    ("目标未达成。", Verdict::NotMet),
    ("目标达成。", Verdict::Met),
    ("没有满足发布规则。", Verdict::NotMet),
    ("并不满足发布规则。", Verdict::NotMet),
    ("不符合规则。", Verdict::NotMet),
    ("平均值为79，最低为72。", Verdict::Neither),
    ("平均值满足要求，但最低值不满足要求。", Verdict::Both),
];

#[test]
fn default_phrases_read_verdicts() {
    let defaults = VerdictPhrases::default();
    for (text, expected) in DEFAULT_VERDICTS {
        assert_eq!(verdict_of(text, &defaults), *expected, "{text:?}");
    }
}

#[test]
fn task_phrases_read_verdicts() {
    let ship = phrases(&["may ship"], &["may not ship", "fails"]);
    let met_only = phrases(&["met"], &["fails"]);
    let zh = phrases(&["达成"], &["未达成"]);
    let pass = phrases(&["passes"], &["fails"]);
    let cases: &[(&str, &VerdictPhrases, Verdict)] = &[
        (
            "No batch fails, so the build may ship.",
            &ship,
            Verdict::Met,
        ),
        ("No batch fails.", &pass, Verdict::Neither),
        ("Batch C fails the minimum.", &pass, Verdict::NotMet),
        ("The build may not ship.", &ship, Verdict::NotMet),
        ("The rule is not met.", &met_only, Verdict::NotMet),
        ("The rule is met.", &met_only, Verdict::Met),
        ("The metric improved.", &met_only, Verdict::Neither),
        (
            "The target was met in 2023 but Batch C fails.",
            &met_only,
            Verdict::Both,
        ),
        ("目标未达成。", &zh, Verdict::NotMet),
        ("目标达成。", &zh, Verdict::Met),
        ("目标没有达成。", &zh, Verdict::NotMet),
        ("目标并非未达成。", &zh, Verdict::Neither),
        ("It passes, it never fails.", &pass, Verdict::Met),
        (
            "The pass rate is 80% and the fail rate 20%.",
            &phrases(&["pass"], &["fail"]),
            Verdict::Neither,
        ),
        (
            "All checks pass; the pass rates are high.",
            &phrases(&["pass"], &["fail"]),
            Verdict::Met,
        ),
    ];
    for (text, phrases, expected) in cases {
        assert_eq!(
            verdict_of(text, phrases),
            *expected,
            "{text:?} with {phrases:?}"
        );
    }
}

#[test]
fn phrases_are_whole_words_and_negation_aware() {
    let cases: &[(&str, &str, bool)] = &[
        ("The rule is met.", "met", true),
        ("The metric is fine.", "met", false),
        ("Measured in metres.", "met", false),
        ("See the metadata.", "met", false),
        ("The rule is unmet.", "met", false),
        ("The build is ineligible.", "eligible", false),
        ("The build is not eligible.", "eligible", false),
        ("The build is not eligible.", "not eligible", true),
        ("No batch fails.", "fails", false),
        ("Batch C fails.", "fails", true),
        (
            "It is not, however, relevant: Batch C fails.",
            "fails",
            true,
        ),
        ("Not only is it late, and it fails.", "fails", true),
        ("not  MET", "not met", true),
        ("It does not meet the target.", "does not meet", true),
        ("It doesn't really fully meet it.", "meet", false),
        (
            "We did not check all four batches and it is met.",
            "met",
            true,
        ),
        ("The lowest is Batch A.", "Batch A", true),
        ("The lowest is Batch AB.", "Batch A", false),
        ("Lowest: plant 7.", "Plant 7", true),
        ("Lowest: Plant 72.", "Plant 7", false),
        ("The lowest is St. Mary's.", "St. Mary's", true),
        ("North-East is lowest", "North-East", true),
        ("North-East is lowest", "North", false),
        ("最低的是南区门诊。", "南区", true),
        ("满足发布条件", "满足", true),
        ("不满足发布条件", "满足", false),
        ("未满足", "满足", false),
        ("不满足发布条件", "不满足", true),
        ("Batch A的值最低", "Batch A", true),
        ("", "met", false),
        ("met", "", false),
    ];
    for (text, phrase, expected) in cases {
        assert_eq!(
            phrase_present(text, phrase),
            *expected,
            "{phrase:?} in {text:?}"
        );
    }
}

#[test]
fn numbers_are_read_by_value_outside_masks() {
    let third = 250.0 / 3.0;
    let cases: &[(&str, f64, &[&str], bool)] = &[
        ("The average is 79.", 79.0, &[], true),
        ("The average is 179.", 79.0, &[], false),
        ("The average is 79.0.", 79.0, &[], true),
        ("The average is 78.9.", 79.0, &[], false),
        ("The average is 79.5.", 79.0, &[], false),
        ("Task Success averages 79%.", 79.0, &[], true),
        ("The average is 83.3.", third, &[], true),
        ("The average is 83.33.", third, &[], true),
        ("The average is 83.333.", third, &[], true),
        ("The average is 83.", third, &[], false),
        ("The average is 83.4.", third, &[], false),
        ("The average is 27.8 minutes.", 27.75, &[], true),
        ("The average is 27.75 minutes.", 27.75, &[], true),
        ("The average is 28 minutes.", 27.75, &[], false),
        ("The lowest is Plant 7.", 7.0, &["Plant 7"], false),
        ("The lowest is Plant 7 at 7 units.", 7.0, &["Plant 7"], true),
        ("The lowest is plant 7.", 7.0, &["Plant 7"], false),
        ("See obs-calculator-2.", 2.0, &["obs-calculator-2"], false),
        ("Revenue was 1,250.", 1250.0, &[], true),
        ("Change was -3.5.", 3.5, &[], false),
        ("平均值为79，最低为72。", 72.0, &[], true),
        ("No number here.", 79.0, &[], false),
    ];
    for (text, value, masks, expected) in cases {
        assert_eq!(
            mentions_value(text, *value, masks),
            *expected,
            "{value} in {text:?} masking {masks:?}"
        );
    }
}

#[test]
fn numbers_outside_masks_keep_offsets() {
    let text = "Plant 7 averages 81.5 (obs-calculator-2), Plant 72 is lowest at 64%.";
    let found = numbers_outside(text, &["Plant 7", "obs-calculator-2"]);
    let printed: Vec<(&str, &str)> = found
        .iter()
        .map(|m| (m.printed.as_str(), &text[m.start..m.end]))
        .collect();
    assert_eq!(printed, [("81.5", "81.5"), ("72", "72"), ("64", "64%")]);
}

#[test]
fn the_corpus_is_large_enough_to_mean_something() {
    assert!(DEFAULT_VERDICTS.len() >= 30, "{}", DEFAULT_VERDICTS.len());
}

/// `template` with every `<a / b>` slot set to its `pick`-th alternative and every other slot to a label.
fn fill(template: &str, pick: usize) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('<') {
        let close = open + rest[open..].find('>').expect("slots close");
        out.push_str(&rest[..open]);
        let slot = &rest[open + 1..close];
        let alternatives: Vec<&str> = slot.split(" / ").collect();
        out.push_str(if alternatives.len() > 1 {
            alternatives[pick].trim()
        } else {
            "North"
        });
        rest = &rest[close + 1..];
    }
    out + rest
}

#[test]
fn every_task_template_reads_as_the_verdict_it_is_filled_with() {
    let tasks = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/tasks");
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(tasks).unwrap() {
        let path = entry.unwrap().path().join("task.json");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let task: serde_json::Value = serde_json::from_str(&text).unwrap();
        let template = task["answer_template"].as_str().unwrap();
        if !template.contains(" / ") {
            continue;
        }
        let phrases: VerdictPhrases = match task.get("verdict_phrases") {
            Some(value) => serde_json::from_value(value.clone()).unwrap(),
            None => VerdictPhrases::default(),
        };
        for (pick, verdict) in [(0, Verdict::Met), (1, Verdict::NotMet)] {
            let answer = fill(template, pick);
            assert_eq!(
                verdict_of(&answer, &phrases),
                verdict,
                "{}: {answer}",
                path.display()
            );
        }
        checked.push(task["name"].as_str().unwrap().to_owned());
    }
    assert!(checked.len() >= 2, "{checked:?}");
}
