//! The course on disk: the workspace root, its stage crates, their fault contracts and metadata.
//!
//! This module reads and validates; it never builds, runs or writes anything.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;

use crate::args::Args;

/// The repository this course library was built from (schemas always come from here).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the course crate lives at crates/course, two levels below the root")
        .to_path_buf()
}

pub fn schema_path(name: &str) -> PathBuf {
    repo_root().join("schemas").join(name)
}

/// A course root: a cargo workspace with a `stages/` directory.
#[derive(Debug, Clone)]
pub struct Course {
    pub root: PathBuf,
    /// Root `Cargo.toml` `[workspace.dependencies]`, used to make stage copies standalone.
    pub workspace_deps: toml::Table,
    /// Root `[workspace.package]`, for `edition.workspace = true` and friends.
    pub workspace_package: toml::Table,
    /// Root `[profile.*]` tables, copied into scratch workspaces so dependency builds are reused.
    pub profiles: Option<toml::Value>,
    pub scratch: PathBuf,
    pub evidence: PathBuf,
    pub stages: Vec<Stage>,
}

#[derive(Debug, Clone)]
pub struct Stage {
    /// Directory name, e.g. `01-action-selection`.
    pub id: String,
    pub dir: PathBuf,
    pub package: String,
}

impl Stage {
    pub fn number(&self) -> &str {
        &self.id[..2]
    }

    /// The library name the tests `use`: `[lib] name`, else the package name with `_` for `-`.
    pub fn lib_name(&self) -> anyhow::Result<String> {
        let path = self.dir.join("Cargo.toml");
        let manifest: toml::Table = toml::from_str(
            &fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?,
        )
        .with_context(|| format!("parsing {}", path.display()))?;
        Ok(manifest
            .get("lib")
            .and_then(|l| l.get("name"))
            .and_then(|n| n.as_str())
            .map(str::to_owned)
            .unwrap_or_else(|| self.package.replace('-', "_")))
    }
    pub fn failure_json(&self) -> PathBuf {
        self.dir.join("fixtures/failure.json")
    }
}

impl Course {
    pub fn open(args: &Args) -> anyhow::Result<Course> {
        let root = match args.path("root") {
            Some(root) => absolute(&root)?,
            None => repo_root(),
        };
        let manifest_path = root.join("Cargo.toml");
        let manifest: toml::Table = toml::from_str(
            &fs::read_to_string(&manifest_path)
                .with_context(|| format!("reading {}", manifest_path.display()))?,
        )
        .with_context(|| format!("parsing {}", manifest_path.display()))?;
        let workspace_deps = manifest
            .get("workspace")
            .and_then(|w| w.get("dependencies"))
            .and_then(|d| d.as_table())
            .cloned()
            .unwrap_or_default();
        let workspace_package = manifest
            .get("workspace")
            .and_then(|w| w.get("package"))
            .and_then(|d| d.as_table())
            .cloned()
            .unwrap_or_default();
        let profiles = manifest.get("profile").cloned();
        let scratch = match args.path("scratch-dir") {
            Some(dir) => absolute(&dir)?,
            None => root.join("target/xtask-scratch"),
        };
        let evidence = match args.path("evidence") {
            Some(dir) => absolute(&dir)?,
            None => root.join("evidence"),
        };
        let stages = discover_stages(&root.join("stages"))?;
        Ok(Course {
            root,
            workspace_deps,
            workspace_package,
            profiles,
            scratch,
            evidence,
            stages,
        })
    }

    /// Resolves `01`, `1`, `01-action-selection` or `action-selection` to a stage.
    pub fn stage(&self, selector: &str) -> anyhow::Result<&Stage> {
        let wanted = selector.trim().trim_end_matches('/');
        let wanted = wanted.rsplit('/').next().unwrap_or(wanted);
        let by_number = wanted.parse::<u32>().ok().map(|n| format!("{n:02}"));
        self.stages
            .iter()
            .find(|s| {
                s.id == wanted
                    || by_number.as_deref() == Some(s.number())
                    || s.id.get(3..) == Some(wanted)
                    || s.package == wanted
            })
            .with_context(|| {
                let known: Vec<&str> = self.stages.iter().map(|s| s.id.as_str()).collect();
                format!("no stage `{selector}` (stages: {})", known.join(", "))
            })
    }

    pub fn select(&self, selectors: &[String]) -> anyhow::Result<Vec<Stage>> {
        if selectors.is_empty() {
            return Ok(self.stages.clone());
        }
        let mut chosen: Vec<Stage> = Vec::new();
        for selector in selectors {
            let stage = self.stage(selector)?;
            if !chosen.iter().any(|s| s.id == stage.id) {
                chosen.push(stage.clone());
            }
        }
        chosen.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(chosen)
    }

    pub fn relative<'a>(&self, path: &'a Path) -> std::borrow::Cow<'a, str> {
        match path.strip_prefix(&self.root) {
            Ok(rel) => rel.to_string_lossy(),
            Err(_) => path.to_string_lossy(),
        }
    }
}

pub fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    if path.is_absolute() {
        Ok(path.to_path_buf())
    } else {
        Ok(std::env::current_dir()
            .context("reading the current directory")?
            .join(path))
    }
}

fn discover_stages(dir: &Path) -> anyhow::Result<Vec<Stage>> {
    let entries = fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut stages = Vec::new();
    for entry in entries {
        let entry = entry?;
        let id = entry.file_name().to_string_lossy().into_owned();
        let is_stage = id.len() > 3
            && id.as_bytes()[..2].iter().all(u8::is_ascii_digit)
            && id.as_bytes()[2] == b'-';
        if !is_stage || !entry.file_type()?.is_dir() {
            continue;
        }
        let manifest_path = entry.path().join("Cargo.toml");
        let manifest: toml::Table = toml::from_str(
            &fs::read_to_string(&manifest_path)
                .with_context(|| format!("reading {}", manifest_path.display()))?,
        )
        .with_context(|| format!("parsing {}", manifest_path.display()))?;
        let package = manifest
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
            .with_context(|| format!("{} has no [package] name", manifest_path.display()))?
            .to_owned();
        stages.push(Stage {
            id,
            dir: entry.path(),
            package,
        });
    }
    stages.sort_by(|a, b| a.id.cmp(&b.id));
    if stages.is_empty() {
        bail!("no stage directories (NN-name) under {}", dir.display());
    }
    Ok(stages)
}

/// `fixtures/failure.json`: the fault contract (schemas/failure.schema.json).
#[derive(Debug, Clone, Deserialize)]
pub struct Contract {
    /// Checked by the schema (`const: 1`); kept so the type mirrors the file.
    #[allow(dead_code)]
    pub format_version: u32,
    pub stage_id: String,
    pub experiment_id: String,
    pub fault_id: String,
    pub fault_file: String,
    pub faulty_source_path: String,
    pub fault_run_targets: Vec<String>,
    pub target_test: String,
    pub expected_failure_excerpt: String,
    pub must_still_pass: Vec<String>,
    pub diagnosis: Vec<String>,
    pub repair: String,
    pub evidence_dir: String,
}

/// Why a contract file cannot be used; the message names the file and every offending field.
#[derive(Debug, Clone)]
pub struct ContractProblem(pub String);

impl std::fmt::Display for ContractProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub fn compile_schema(name: &str) -> anyhow::Result<jsonschema::Validator> {
    let path = schema_path(name);
    let schema: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?,
    )
    .with_context(|| format!("parsing {}", path.display()))?;
    jsonschema::validator_for(&schema)
        .map_err(|e| anyhow::anyhow!("{} is not a valid JSON schema: {e}", path.display()))
}

/// Every schema violation of `instance`, as `/json/pointer: message` lines.
pub fn schema_errors(
    validator: &jsonschema::Validator,
    instance: &serde_json::Value,
) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!("{}: {e}", if at.is_empty() { "/".to_owned() } else { at })
        })
        .collect()
}

/// Loads and checks a stage's contract: schema, stage id, referenced files, fault ≠ solution.
pub fn load_contract(
    stage: &Stage,
    validator: &jsonschema::Validator,
) -> Result<Contract, ContractProblem> {
    let path = stage.failure_json();
    let shown = format!("stages/{}/fixtures/failure.json", stage.id);
    let text = fs::read_to_string(&path)
        .map_err(|e| ContractProblem(format!("cannot read {shown}: {e}")))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| ContractProblem(format!("{shown} is not JSON: {e}")))?;
    let errors = schema_errors(validator, &value);
    if !errors.is_empty() {
        return Err(ContractProblem(format!(
            "{shown} violates schemas/failure.schema.json:\n  {}",
            errors.join("\n  ")
        )));
    }
    let contract: Contract = serde_json::from_value(value)
        .map_err(|e| ContractProblem(format!("{shown} does not match the contract shape: {e}")))?;
    let mut problems = Vec::new();
    if contract.stage_id != stage.id {
        problems.push(format!(
            "stage_id is `{}` but the directory is `{}`",
            contract.stage_id, stage.id
        ));
    }
    let expected_experiment = format!("single-agent-loop-{}", stage.id);
    if contract.experiment_id != expected_experiment {
        problems.push(format!(
            "experiment_id is `{}`, expected `{expected_experiment}`",
            contract.experiment_id
        ));
    }
    if contract.must_still_pass.contains(&contract.target_test) {
        problems.push(format!(
            "must_still_pass lists the target test `{}`",
            contract.target_test
        ));
    }
    for target in &contract.fault_run_targets {
        if !stage
            .dir
            .join("tests")
            .join(format!("{target}.rs"))
            .is_file()
        {
            problems.push(format!(
                "fault_run_targets names `{target}` but tests/{target}.rs does not exist"
            ));
        }
    }
    let fault = fs::read(stage.dir.join(&contract.fault_file));
    let solution = fs::read(stage.dir.join(&contract.faulty_source_path));
    match (&fault, &solution) {
        (Err(e), _) => problems.push(format!(
            "fault_file `{}` cannot be read: {e}",
            contract.fault_file
        )),
        (_, Err(e)) => problems.push(format!(
            "faulty_source_path `{}` cannot be read: {e}",
            contract.faulty_source_path
        )),
        (Ok(f), Ok(s)) if f == s => problems.push(format!(
            "fault_file `{}` is identical to `{}`: there is no fault",
            contract.fault_file, contract.faulty_source_path
        )),
        _ => {}
    }
    if problems.is_empty() {
        Ok(contract)
    } else {
        Err(ContractProblem(format!("{shown}: {}", problems.join("; "))))
    }
}

/// `stage.toml`: titles, the prediction question and the three graded hints.
#[derive(Debug, Clone, Deserialize)]
pub struct StageMeta {
    pub id: String,
    pub experiment_id: String,
    pub package: String,
    pub title: Localized,
    pub prediction: Prediction,
    pub hints: Vec<Localized>,
    #[serde(default)]
    pub mutants: MutantsMeta,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Localized {
    pub en: String,
    #[serde(rename = "zh-CN")]
    pub zh_cn: String,
}

impl Localized {
    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.en,
            Lang::ZhCn => &self.zh_cn,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Prediction {
    pub question: Localized,
    pub options: LocalizedList,
    /// The right option's label, `A` to `D` (the same labels the guides print).
    pub answer: String,
    /// Why that option is right and the others are not; shown once the learner has committed.
    pub explanation: Localized,
}

/// The labels of prediction options, in order: `A`, `B`, `C`, `D`.
pub const OPTION_LABELS: [&str; 4] = ["A", "B", "C", "D"];

impl Prediction {
    /// Index of a label (`b` and `B` both work), or None for anything else.
    pub fn index_of(label: &str) -> Option<usize> {
        let label = label.trim().to_ascii_uppercase();
        OPTION_LABELS.iter().position(|l| *l == label)
    }

    pub fn answer_index(&self) -> usize {
        Self::index_of(&self.answer).expect("checked by load_meta")
    }
}

/// A surviving cargo-mutants mutant the stage's tests deliberately do not kill, with the reason.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainedMutant {
    /// cargo-mutants' description without the line and column, e.g.
    /// `src/retry.rs: replace RetryResult::attempts -> u32 with 1`.
    pub mutant: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MutantsMeta {
    #[serde(default)]
    pub explained: Vec<ExplainedMutant>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LocalizedList {
    pub en: Vec<String>,
    #[serde(rename = "zh-CN")]
    pub zh_cn: Vec<String>,
}

impl LocalizedList {
    pub fn get(&self, lang: Lang) -> &[String] {
        match lang {
            Lang::En => &self.en,
            Lang::ZhCn => &self.zh_cn,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    En,
    ZhCn,
}

impl Lang {
    /// The code used in file names and stage.toml keys: `en` or `zh-CN`.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::ZhCn => "zh-CN",
        }
    }

    /// The stage guide in this language.
    pub fn guide_file(self) -> &'static str {
        match self {
            Lang::En => "README.md",
            Lang::ZhCn => "README.zh-CN.md",
        }
    }

    /// `--lang` wins; otherwise `LC_ALL` / `LC_MESSAGES` / `LANG` starting with `zh` picks Chinese.
    pub fn choose(args: &Args) -> anyhow::Result<Lang> {
        if let Some(lang) = args.value("lang") {
            return match lang {
                "en" => Ok(Lang::En),
                "zh-CN" | "zh" | "zh_CN" => Ok(Lang::ZhCn),
                other => bail!("unknown language `{other}` (use `en` or `zh-CN`)"),
            };
        }
        let env = ["LC_ALL", "LC_MESSAGES", "LANG"]
            .iter()
            .filter_map(|k| std::env::var(k).ok())
            .find(|v| !v.is_empty())
            .unwrap_or_default();
        Ok(if env.starts_with("zh") {
            Lang::ZhCn
        } else {
            Lang::En
        })
    }
}

pub fn load_meta(stage: &Stage) -> anyhow::Result<StageMeta> {
    let path = stage.dir.join("stage.toml");
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let meta: StageMeta =
        toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    if meta.id != stage.id {
        bail!(
            "{}: id is `{}` but the directory is `{}`",
            path.display(),
            meta.id,
            stage.id
        );
    }
    if meta.package != stage.package {
        bail!(
            "{}: package is `{}` but Cargo.toml says `{}`",
            path.display(),
            meta.package,
            stage.package
        );
    }
    if meta.experiment_id != format!("single-agent-loop-{}", stage.id) {
        bail!(
            "{}: experiment_id `{}` does not match the stage",
            path.display(),
            meta.experiment_id
        );
    }
    let Some(answer) = Prediction::index_of(&meta.prediction.answer) else {
        bail!(
            "{}: prediction.answer is `{}`; it must be one of {}",
            path.display(),
            meta.prediction.answer,
            OPTION_LABELS.join(", ")
        );
    };
    for lang in [Lang::En, Lang::ZhCn] {
        let options = meta.prediction.options.get(lang).len();
        if options != OPTION_LABELS.len() {
            bail!(
                "{}: prediction.options.{} has {options} options; every prediction has exactly four (A-D)",
                path.display(),
                lang.code()
            );
        }
        if answer >= options {
            bail!(
                "{}: prediction.answer {} has no matching option",
                path.display(),
                meta.prediction.answer
            );
        }
    }
    if meta.hints.len() != 3 {
        bail!(
            "{}: expected exactly three [[hints]], found {}",
            path.display(),
            meta.hints.len()
        );
    }
    Ok(meta)
}

/// Every file under `dir` (relative path → blake3 hex), skipping `target/` directories.
pub fn hash_tree(dir: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out)?;
    Ok(out)
}

fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) -> anyhow::Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if entry.file_name() == "target" {
                continue;
            }
            walk(base, &path, out)?;
        } else if kind.is_file() {
            let rel = path
                .strip_prefix(base)
                .expect("walked below base")
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel, hash_file(&path)?);
        }
    }
    Ok(())
}

pub fn hash_file(path: &Path) -> anyhow::Result<String> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(blake3::hash(&bytes).to_hex().to_string())
}

/// The tree hash documented in docs/xtask.md: blake3 over `<path>\n<file hash>\n` in path order.
pub fn tree_hash(files: &BTreeMap<String, String>) -> String {
    let mut hasher = blake3::Hasher::new();
    for (path, hash) in files {
        hasher.update(path.as_bytes());
        hasher.update(b"\n");
        hasher.update(hash.as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize().to_hex().to_string()
}

/// Names of `#[test]` functions in a Rust test file (top level or in modules, by bare name).
pub fn test_fns_in_source(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut pending_test = false;
    for line in source.lines() {
        let line = line.trim();
        if line.starts_with("//") {
            continue;
        }
        if line.starts_with("#[test]") {
            pending_test = true;
            continue;
        }
        if pending_test {
            if line.starts_with("#[") || line.is_empty() {
                continue;
            }
            let after_fn = line.split_once("fn ").map(|(_, rest)| rest);
            if let Some(rest) = after_fn {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    names.push(name);
                }
            }
            pending_test = false;
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_test_functions_with_attributes_between() {
        let source = "#[test]\nfn a() {}\n// #[test]\nfn not_me() {}\n#[test]\n#[should_panic(expected = \"x\")]\npub fn b_2() {}\nfn helper() {}\n";
        assert_eq!(test_fns_in_source(source), vec!["a", "b_2"]);
    }

    #[test]
    fn tree_hash_depends_on_paths_and_contents() {
        let mut files = BTreeMap::new();
        files.insert("a".to_owned(), "1".to_owned());
        let one = tree_hash(&files);
        files.insert("a".to_owned(), "2".to_owned());
        assert_ne!(one, tree_hash(&files));
    }
}
