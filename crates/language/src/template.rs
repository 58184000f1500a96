//! An answer template (`Average wait: <average> min; the standard is <met / not met>.`) as parts, and
//! an answer read back against it: which text fills each slot and which option each choice took.
//!
//! The grammar writes answers by the same parts, so a guided answer always reads back; a free answer
//! that strays from the template does not, and its slot claims are then unverified (never guessed).

/// One piece of an answer template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Text(String),
    /// `<a / b>`: one of the alternatives, as written.
    Choice(Vec<String>),
    /// `<name>`: a value or label slot, named by what it holds.
    Slot(String),
}

/// Splits a template into text, choices (`<met / not met>`) and slots (`<average>`); a `<` without its
/// `>` is text.
pub fn parse(template: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>').map(|c| open + c) else {
            break;
        };
        if open > 0 {
            parts.push(Part::Text(rest[..open].to_owned()));
        }
        let inner = rest[open + 1..close].trim();
        let options: Vec<String> = inner
            .split('/')
            .map(|o| o.trim().to_owned())
            .filter(|o| !o.is_empty())
            .collect();
        parts.push(if options.len() >= 2 {
            Part::Choice(options)
        } else {
            Part::Slot(inner.to_owned())
        });
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest.to_owned()));
    }
    parts
}

/// The name each slot and choice of `parts` goes by when an answer is given slot by slot (the decision's
/// `slots`), in template order: a slot by its name, a choice by its options joined with ` / `; a name that
/// repeats takes ` #2`, ` #3` after it, so every name is one part.
pub fn slot_names(parts: &[Part]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for part in parts {
        let base = match part {
            Part::Text(_) => continue,
            Part::Slot(name) => name.clone(),
            Part::Choice(options) => options.join(" / "),
        };
        let seen = names
            .iter()
            .filter(|n| **n == base || n.starts_with(&format!("{base} #")))
            .count();
        names.push(if seen == 0 {
            base
        } else {
            format!("{base} #{}", seen + 1)
        });
    }
    names
}

/// The key under which an answer given slot by slot states what its rule check came out as
/// (`"rule check":"true"`), right before its first choice: the model's verdict, as the truth value of its own
/// boolean calculator step, from which the guided grammar writes each verdict choice in the task's words. Not
/// a slot: the answer's text holds no trace of it, and the gate checks the verdict words against the rule.
pub const RULE_CHECK_KEY: &str = "rule check";

/// Whether an answer under `parts`, given slot by slot, states its rule check ([`RULE_CHECK_KEY`]) before
/// its first choice: it has a choice, and none of its own slots goes by that name.
pub fn states_rule_check(parts: &[Part]) -> bool {
    parts.iter().any(|p| matches!(p, Part::Choice(_)))
        && !slot_names(parts).iter().any(|n| n == RULE_CHECK_KEY)
}

/// The answer `parts` spell with `values` in their slots and choices (template order, one per name of
/// [`slot_names`]): the template's fixed text is copied as written, each value put where its part stands.
/// Whether a choice's value is one of its options is the caller's check.
pub fn fill(parts: &[Part], values: &[&str]) -> String {
    let mut values = values.iter();
    let mut answer = String::new();
    for part in parts {
        match part {
            Part::Text(text) => answer.push_str(text),
            Part::Slot(_) | Part::Choice(_) => {
                answer.push_str(values.next().copied().unwrap_or(""))
            }
        }
    }
    answer
}

/// What an answer put into one slot or choice, in template order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fill {
    Slot { name: String, text: String },
    Choice { options: Vec<String>, chosen: usize },
}

/// Reads `answer` back against `parts`: `None` when the answer does not follow the template (a fixed
/// text is missing, or a choice took none of its options). Fixed texts compare with collapsed white
/// space; a slot's fill is the shortest text up to the next fixed text.
pub fn read_back(parts: &[Part], answer: &str) -> Option<Vec<Fill>> {
    read_back_spans(parts, answer).map(|fills| fills.into_iter().map(|(f, _)| f).collect())
}

/// [`read_back`] with where each fill stands in `answer` (byte range, a slot's without its surrounding
/// white space).
pub fn read_back_spans(
    parts: &[Part],
    answer: &str,
) -> Option<Vec<(Fill, std::ops::Range<usize>)>> {
    let mut fills = Vec::new();
    let mut pos = 0usize;
    let mut pending: Option<String> = None;
    let close_slot = |pending: &mut Option<String>,
                      fills: &mut Vec<(Fill, std::ops::Range<usize>)>,
                      from: usize,
                      to: usize| {
        if let Some(name) = pending.take() {
            let raw = &answer[from..to];
            let start = from + (raw.len() - raw.trim_start().len());
            let end = start + raw.trim().len();
            fills.push((
                Fill::Slot {
                    name,
                    text: raw.trim().to_owned(),
                },
                start..end,
            ));
        }
    };
    for part in parts {
        match part {
            Part::Text(text) => {
                let wanted = text.trim();
                if wanted.is_empty() {
                    continue;
                }
                let at = if pending.is_some() {
                    answer[pos..].find(wanted)? + pos
                } else {
                    let rest = &answer[pos..];
                    let skipped = rest.len() - rest.trim_start().len();
                    if !rest.trim_start().starts_with(wanted) {
                        return None;
                    }
                    pos + skipped
                };
                close_slot(&mut pending, &mut fills, pos, at);
                pos = at + wanted.len();
            }
            Part::Slot(name) => {
                if pending.is_some() {
                    return None; // two slots with no text between: no way to tell them apart
                }
                pending = Some(name.clone());
            }
            Part::Choice(options) => {
                // Longest option first: "not met" before "met".
                let mut order: Vec<usize> = (0..options.len()).collect();
                order.sort_by_key(|&i| std::cmp::Reverse(options[i].len()));
                let found = if pending.is_some() {
                    order
                        .iter()
                        .filter_map(|&i| {
                            answer[pos..]
                                .find(options[i].as_str())
                                .map(|at| (pos + at, i))
                        })
                        .min_by_key(|(at, i)| (*at, std::cmp::Reverse(options[*i].len())))
                } else {
                    let rest = &answer[pos..];
                    let skipped = rest.len() - rest.trim_start().len();
                    order
                        .iter()
                        .find(|&&i| rest.trim_start().starts_with(options[i].as_str()))
                        .map(|&i| (pos + skipped, i))
                };
                let (at, chosen) = found?;
                close_slot(&mut pending, &mut fills, pos, at);
                fills.push((
                    Fill::Choice {
                        options: options.clone(),
                        chosen,
                    },
                    at..at + options[chosen].len(),
                ));
                pos = at + options[chosen].len();
            }
        }
    }
    close_slot(&mut pending, &mut fills, pos, answer.len());
    Some(fills)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unclosed_bracket_is_text_and_choices_split_on_slashes() {
        assert_eq!(
            parse("Average is <average>; rule <met / not met>. <oops"),
            vec![
                Part::Text("Average is ".into()),
                Part::Slot("average".into()),
                Part::Text("; rule ".into()),
                Part::Choice(vec!["met".into(), "not met".into()]),
                Part::Text(". <oops".into()),
            ]
        );
        assert_eq!(
            parse("规则<满足/不满足>。")[1],
            Part::Choice(vec!["满足".into(), "不满足".into()])
        );
    }

    #[test]
    fn slots_are_named_as_written_and_a_filled_template_reads_back() {
        let parts = parse("<site> at <value>%, then <site> at <value>%; rule <met / not met>.");
        let names = slot_names(&parts);
        assert_eq!(
            names,
            ["site", "value", "site #2", "value #2", "met / not met"]
        );
        let answer = fill(&parts, &["Ash", "91", "Birch", "88.5", "not met"]);
        assert_eq!(answer, "Ash at 91%, then Birch at 88.5%; rule not met.");
        let fills = read_back(&parts, &answer).unwrap();
        assert_eq!(
            fills[4],
            Fill::Choice {
                options: vec!["met".into(), "not met".into()],
                chosen: 1
            }
        );
    }

    #[test]
    fn templates_split_into_parts() {
        let parts = parse("Average: <average>%; <lowest site> is lowest; rule <met / not met>.");
        assert_eq!(parts.len(), 7);
        assert_eq!(parts[1], Part::Slot("average".into()));
        assert_eq!(parts[5], Part::Choice(vec!["met".into(), "not met".into()]));
        assert_eq!(parse("a < b"), vec![Part::Text("a < b".into())]);
    }

    #[test]
    fn answers_read_back_slot_by_slot() {
        let parts = parse("Average: <average>%; <lowest site> is lowest; rule <met / not met>.");
        let fills = read_back(&parts, "Average: 81.5%; Site C is lowest; rule not met.").unwrap();
        assert_eq!(
            fills,
            vec![
                Fill::Slot {
                    name: "average".into(),
                    text: "81.5".into()
                },
                Fill::Slot {
                    name: "lowest site".into(),
                    text: "Site C".into()
                },
                Fill::Choice {
                    options: vec!["met".into(), "not met".into()],
                    chosen: 1
                },
            ]
        );
        assert!(read_back(&parts, "The average is 81.5 and the rule is met").is_none());
        let two = parse("The target is <met / not met>, so it <may / may not> be renewed.");
        let fills = read_back(&two, "The target is met, so it may not be renewed.").unwrap();
        assert_eq!(
            fills[1],
            Fill::Choice {
                options: vec!["may".into(), "may not".into()],
                chosen: 1
            }
        );
    }
}
