//! Every verb's command line, parsed by clap: positionals plus `--flag` / `--option VALUE` / `--option=VALUE`,
//! and `--help` per verb.
//!
//! Every verb lists the flags it accepts (with what each does) and anything else is an error naming the
//! flag and the accepted ones, so typos never pass silently.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::error::ErrorKind;
use clap::{Arg, ArgAction, Command};

/// A flag a verb accepts: its name without dashes, whether it takes a value (named by the third field, e.g.
/// `N`, empty for a switch), and what it does.
pub type Flag = (&'static str, Option<&'static str>, &'static str);

/// One verb's command line: what `cargo xtask VERB --help` shows and what `parse` accepts.
pub struct Verb {
    pub name: &'static str,
    pub about: &'static str,
    /// The positional arguments, as the usage line writes them (`[STAGE…]`, `STAGE <A-D>`, empty for none).
    pub positionals: &'static str,
    pub flags: &'static [Flag],
}

/// Options every verb accepts (they locate the course and its outputs).
const COMMON: &[Flag] = &[
    ("root", Some("DIR"), "course root (default: this workspace)"),
    (
        "scratch-dir",
        Some("DIR"),
        "scratch workspace for solution and fault copies and their target dir (default: ROOT/target/xtask-scratch)",
    ),
    (
        "evidence",
        Some("DIR"),
        "where verification.json goes (default: ROOT/evidence)",
    ),
    (
        "lang",
        Some("en|zh-CN"),
        "language of hints and titles (default from $LANG)",
    ),
];

#[derive(Debug, Default)]
pub struct Args {
    pub positional: Vec<String>,
    values: BTreeMap<String, String>,
    switches: Vec<String>,
}

impl Verb {
    /// The verb as a clap command: its flags, the common ones, and any number of positionals (each verb
    /// checks how many it takes, with its own usage in the message).
    fn command(&self) -> Command {
        let usage = format!(
            "cargo xtask {} {}[OPTIONS]",
            self.name,
            if self.positionals.is_empty() {
                String::new()
            } else {
                format!("{} ", self.positionals)
            }
        );
        let mut command = Command::new(self.name)
            .bin_name(format!("cargo xtask {}", self.name))
            .about(self.about)
            .override_usage(usage)
            .no_binary_name(true)
            .disable_version_flag(true)
            // Positionals are named by the usage line; each verb checks their number itself.
            .arg(
                Arg::new(POSITIONAL)
                    .num_args(0..)
                    .action(ArgAction::Append)
                    .hide(true),
            );
        for &(name, value, help) in self.flags.iter().chain(COMMON) {
            let arg = Arg::new(name).long(name).help(help);
            command = command.arg(match value {
                Some(value) => arg
                    .value_name(value)
                    .action(ArgAction::Set)
                    .allow_hyphen_values(true),
                None => arg.action(ArgAction::SetTrue),
            });
        }
        command
    }

    /// What `--help` prints.
    pub fn help(&self) -> String {
        self.command().render_help().to_string()
    }
}

const POSITIONAL: &str = "positional";

impl Args {
    /// Parses a verb's arguments with clap. `--help` prints the verb's help and exits 0; anything the verb
    /// does not accept is an error naming it and the flags it does accept, so typos never pass silently.
    pub fn parse(verb: &Verb, raw: Vec<String>) -> anyhow::Result<Args> {
        let matches = match verb.command().try_get_matches_from(&raw) {
            Ok(matches) => matches,
            Err(e) if e.kind() == ErrorKind::DisplayHelp => {
                print!("{}", verb.help());
                std::process::exit(0);
            }
            Err(e) => bail!("{}", message(verb, &raw, &e)),
        };
        let mut args = Args {
            positional: matches
                .get_many::<String>(POSITIONAL)
                .map(|v| v.cloned().collect())
                .unwrap_or_default(),
            ..Args::default()
        };
        for &(name, value, _) in verb.flags.iter().chain(COMMON) {
            if value.is_some() {
                if let Some(v) = matches.get_one::<String>(name) {
                    args.values.insert(name.to_owned(), v.clone());
                }
            } else if matches.get_flag(name) {
                args.switches.push(name.to_owned());
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

/// clap's error in the words this tool has always used (and its tests check): which option, what it needs.
fn message(verb: &Verb, raw: &[String], e: &clap::Error) -> String {
    let offending = || {
        e.get(clap::error::ContextKind::InvalidArg)
            .map(|v| v.to_string())
            .unwrap_or_else(|| {
                raw.iter()
                    .find(|a| a.starts_with("--"))
                    .cloned()
                    .unwrap_or_default()
            })
    };
    match e.kind() {
        ErrorKind::UnknownArgument => {
            let known: Vec<String> = verb
                .flags
                .iter()
                .chain(COMMON)
                .map(|(n, _, _)| format!("--{n}"))
                .collect();
            let arg = offending();
            let arg = arg.split('=').next().unwrap_or_default();
            format!(
                "unknown option `{arg}` (this verb accepts {}; see `cargo xtask {} --help`)",
                known.join(", "),
                verb.name
            )
        }
        ErrorKind::InvalidValue | ErrorKind::TooFewValues | ErrorKind::NoEquals => {
            let arg = offending();
            let name = arg.split_whitespace().next().unwrap_or_default();
            format!("option `{name}` needs a value")
        }
        _ => {
            let rendered = e.render().to_string();
            let first = rendered.lines().next().unwrap_or_default();
            format!(
                "{} (see `cargo xtask {} --help`)",
                first.trim_start_matches("error: "),
                verb.name
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    const DEMO: Verb = Verb {
        name: "demo",
        about: "A verb for the tests",
        positionals: "[STAGE…]",
        flags: &[
            ("json", None, "print JSON"),
            ("jobs", Some("N"), "at a time"),
        ],
    };

    #[test]
    fn parses_positionals_switches_and_values() {
        let args = Args::parse(
            &DEMO,
            strings(&["01", "--json", "--jobs", "3", "--lang=zh-CN"]),
        )
        .unwrap();
        assert_eq!(args.positional, vec!["01"]);
        assert!(args.flag("json"));
        assert_eq!(args.number("jobs").unwrap(), Some(3));
        assert_eq!(args.value("lang"), Some("zh-CN"));
        let none = Args::parse(&DEMO, Vec::new()).unwrap();
        assert!(none.positional.is_empty() && !none.flag("json") && none.value("jobs").is_none());
    }

    #[test]
    fn rejects_unknown_options_and_missing_values() {
        let err = Args::parse(&DEMO, strings(&["--jsn"])).unwrap_err();
        assert!(
            err.to_string().contains("unknown option `--jsn`")
                && err.to_string().contains("--json"),
            "{err}"
        );
        let err = Args::parse(&DEMO, strings(&["--jobs"])).unwrap_err();
        assert!(err.to_string().contains("`--jobs` needs a value"), "{err}");
        let args = Args::parse(&DEMO, strings(&["--jobs", "many"])).unwrap();
        assert!(
            args.number("jobs")
                .unwrap_err()
                .to_string()
                .contains("not a whole number")
        );
    }

    #[test]
    fn every_verb_has_help_naming_its_flags_and_the_common_ones() {
        let help = DEMO.help();
        for wanted in [
            "A verb for the tests",
            "cargo xtask demo [STAGE…]",
            "--json",
            "--jobs <N>",
            "at a time",
            "--root <DIR>",
            "--help",
        ] {
            assert!(help.contains(wanted), "{wanted:?} missing from:\n{help}");
        }
    }
}
