//! Hand-rolled argument parsing: positionals plus `--flag` / `--option VALUE` / `--option=VALUE`.
//!
//! Not a general CLI library: every verb lists the flags it accepts and anything else is an error
//! naming the flag, so typos never pass silently.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, bail};

/// A flag a verb accepts: its name without dashes and whether it takes a value.
pub type Flag = (&'static str, bool);

/// Options every verb accepts (they locate the course and its outputs).
const COMMON: &[Flag] = &[
    ("root", true),
    ("scratch-dir", true),
    ("evidence", true),
    ("lang", true),
];

#[derive(Debug, Default)]
pub struct Args {
    pub positional: Vec<String>,
    values: BTreeMap<String, String>,
    switches: Vec<String>,
}

impl Args {
    pub fn parse(raw: Vec<String>, accepted: &[Flag]) -> anyhow::Result<Args> {
        let mut args = Args::default();
        let mut iter = raw.into_iter();
        while let Some(item) = iter.next() {
            let Some(flag) = item.strip_prefix("--") else {
                args.positional.push(item);
                continue;
            };
            let (name, inline) = match flag.split_once('=') {
                Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
                None => (flag.to_owned(), None),
            };
            let Some(&(_, takes_value)) = accepted.iter().chain(COMMON).find(|(n, _)| *n == name)
            else {
                let known: Vec<String> = accepted
                    .iter()
                    .chain(COMMON)
                    .map(|(n, _)| format!("--{n}"))
                    .collect();
                bail!(
                    "unknown option `--{name}` (this verb accepts {})",
                    known.join(", ")
                );
            };
            if takes_value {
                let value = match inline {
                    Some(value) => value,
                    None => iter
                        .next()
                        .with_context(|| format!("option `--{name}` needs a value"))?,
                };
                args.values.insert(name, value);
            } else if inline.is_some() {
                bail!("option `--{name}` takes no value");
            } else {
                args.switches.push(name);
            }
        }
        Ok(args)
    }

    pub fn flag(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    pub fn value(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    pub fn path(&self, name: &str) -> Option<PathBuf> {
        self.value(name).map(PathBuf::from)
    }

    pub fn number(&self, name: &str) -> anyhow::Result<Option<u64>> {
        self.value(name)
            .map(|v| {
                v.parse::<u64>()
                    .with_context(|| format!("`--{name} {v}` is not a whole number"))
            })
            .transpose()
    }

    pub fn at_most_positionals(&self, n: usize, usage: &str) -> anyhow::Result<()> {
        if self.positional.len() > n {
            bail!(
                "unexpected argument `{}`; usage: {usage}",
                self.positional[n]
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_positionals_switches_and_values() {
        let args = Args::parse(
            strings(&["01", "--json", "--jobs", "3", "--lang=zh-CN"]),
            &[("json", false), ("jobs", true)],
        )
        .unwrap();
        assert_eq!(args.positional, vec!["01"]);
        assert!(args.flag("json"));
        assert_eq!(args.number("jobs").unwrap(), Some(3));
        assert_eq!(args.value("lang"), Some("zh-CN"));
    }

    #[test]
    fn rejects_unknown_options_and_missing_values() {
        let err = Args::parse(strings(&["--jsn"]), &[("json", false)]).unwrap_err();
        assert!(err.to_string().contains("unknown option `--jsn`"), "{err}");
        let err = Args::parse(strings(&["--jobs"]), &[("jobs", true)]).unwrap_err();
        assert!(err.to_string().contains("needs a value"), "{err}");
        let args = Args::parse(strings(&["--jobs", "many"]), &[("jobs", true)]).unwrap();
        assert!(
            args.number("jobs")
                .unwrap_err()
                .to_string()
                .contains("not a whole number")
        );
    }
}
