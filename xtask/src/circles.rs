//! `cargo xtask circles`: import circles between the modules of every crate in the workspace.
//!
//! An import circle is a missing module: two modules that need each other are one concern split in two, or
//! share a third they should both import. Each crate is read with `syn` (no hand-written lexer): every
//! `use crate::…`, `use super::…` and path expression naming a module of the same crate is an edge between
//! the two sibling modules under their nearest common parent (a child naming its own parent's items is
//! not an edge: a parent and its children are one module tree). Test modules (`#[cfg(test)]`) are left out;
//! doc links are comments, so they are never edges. A strongly connected group of two or more siblings is a
//! circle. `the_workspace_has_no_import_circles` keeps the count at zero in `cargo test`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use syn::visit::Visit;

use forge_course::args::{Args, Verb};

pub const CIRCLES: Verb = Verb {
    name: "circles",
    about: "List import circles between the modules of every crate (none is the rule)",
    positionals: "",
    flags: &[],
};

/// A module path inside one crate: `[]` is the crate root, `["grammar", "value"]` is `grammar::value`.
type ModPath = Vec<String>;

/// One circle: the crate, the parent module the siblings share, and the siblings in the circle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circle {
    pub krate: String,
    pub parent: ModPath,
    pub members: Vec<String>,
}

impl std::fmt::Display for Circle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scope = if self.parent.is_empty() {
            String::new()
        } else {
            format!("::{}", self.parent.join("::"))
        };
        write!(f, "{}{scope}: {}", self.krate, self.members.join(" ↔ "))
    }
}

pub fn cmd_circles(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(0, "cargo xtask circles [--root DIR]")?;
    let root = args.path("root").unwrap_or_else(crate::workspace_root);
    let found = workspace_circles(&root)?;
    if found.is_empty() {
        println!("no import circles in {} crates", source_roots(&root)?.len());
        return Ok(ExitCode::SUCCESS);
    }
    for circle in &found {
        println!("circle  {circle}");
    }
    println!("{} import circle(s)", found.len());
    Ok(ExitCode::FAILURE)
}

/// Every crate's `src/` in the workspace: `crates/*`, `stages/*`, `xtask`.
pub fn source_roots(root: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let mut roots = Vec::new();
    for group in ["crates", "stages"] {
        let dir = root.join(group);
        let entries = fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
        for entry in entries {
            let path = entry?.path();
            if path.join("src").is_dir() {
                roots.push((format!("{group}/{}", file_name(&path)), path.join("src")));
            }
        }
    }
    roots.push(("xtask".to_owned(), root.join("xtask/src")));
    roots.sort();
    Ok(roots)
}

/// The circles among the modules of the crate whose sources are under `src`.
pub fn circles_in(krate: &str, src: &Path) -> anyhow::Result<Vec<Circle>> {
    let files = module_files(src)?;
    let modules: BTreeSet<ModPath> = files.iter().map(|(m, _)| m.clone()).collect();
    // scope (the common parent) → sibling → siblings it names
    let mut edges: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (module, path) in &files {
        let text =
            fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let file =
            syn::parse_file(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let mut refs = References {
            module: module.clone(),
            found: Vec::new(),
        };
        refs.visit_file(&file);
        for target in refs.found {
            let Some(target) = longest_module(&modules, &target) else {
                continue;
            };
            let common = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common == module.len() || common == target.len() {
                continue; // one is the other's ancestor: the same module tree
            }
            edges
                .entry(module[..common].to_vec())
                .or_default()
                .entry(module[common].clone())
                .or_default()
                .insert(target[common].clone());
        }
    }
    let mut circles = Vec::new();
    for (parent, graph) in edges {
        for members in strongly_connected(&graph) {
            circles.push(Circle {
                krate: krate.to_owned(),
                parent: parent.clone(),
                members,
            });
        }
    }
    Ok(circles)
}

/// Every `.rs` file under `src` with its module path (`lib.rs`/`main.rs` the root, `x/mod.rs` is `x`).
fn module_files(src: &Path) -> anyhow::Result<Vec<(ModPath, PathBuf)>> {
    fn walk(dir: &Path, prefix: &ModPath, out: &mut Vec<(ModPath, PathBuf)>) -> anyhow::Result<()> {
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        entries.sort();
        for path in entries {
            let name = file_name(&path);
            if path.is_dir() {
                let mut inner = prefix.clone();
                inner.push(name);
                walk(&path, &inner, out)?;
            } else if let Some(stem) = name.strip_suffix(".rs") {
                let mut module = prefix.clone();
                if !(matches!(stem, "mod") || (prefix.is_empty() && matches!(stem, "lib" | "main")))
                {
                    module.push(stem.to_owned());
                }
                out.push((module, path));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(src, &Vec::new(), &mut out)?;
    // `src/bin/*.rs` are crates of their own; their modules are not this crate's.
    out.retain(|(m, _)| m.first().is_none_or(|first| first != "bin"));
    Ok(out)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The longest prefix of `path` that is a module of the crate (`crate::grammar::Caps` → `grammar`).
fn longest_module(modules: &BTreeSet<ModPath>, path: &ModPath) -> Option<ModPath> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
}

/// Collects the module paths a file names, resolved to crate-absolute paths.
struct References {
    module: ModPath,
    found: Vec<ModPath>,
}

impl References {
    /// `crate::a::b`, `super::a`, `self::a` as a crate-absolute path; anything else (an external crate,
    /// a local name) is not a module of this crate.
    fn resolve(&self, segments: &[String]) -> Option<ModPath> {
        let mut base: ModPath;
        let mut rest = segments;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                base = Vec::new();
                rest = &rest[1..];
            }
            Some("super") | Some("self") => {
                base = self.module.clone();
                while let Some(word) = rest.first().map(String::as_str) {
                    match word {
                        "super" => {
                            base.pop()?;
                        }
                        "self" => {}
                        _ => break,
                    }
                    rest = &rest[1..];
                }
            }
            _ => return None,
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn push(&mut self, segments: &[String]) {
        if let Some(path) = self.resolve(segments) {
            self.found.push(path);
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.push(prefix);
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.push(prefix);
                prefix.pop();
            }
            syn::UseTree::Glob(_) => self.push(prefix),
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(prefix, item);
                }
            }
        }
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

impl<'ast> Visit<'ast> for References {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if !is_cfg_test(&item.attrs) {
            self.use_tree(&mut Vec::new(), &item.tree);
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        // `mod tests { … }` under `#[cfg(test)]` is test code; other inline modules are walked.
        if !is_cfg_test(&item.attrs) {
            syn::visit::visit_item_mod(self, item);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_cfg_test(&item.attrs) {
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.push(&segments);
        syn::visit::visit_path(self, path);
    }
}

/// Tarjan's strongly connected components with two or more members, each sorted, in name order.
fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    fn connect<'g>(s: &mut State<'g>, v: &'g str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                connect(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                group.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                s.out.push(group);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            connect(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

/// The circles of every crate in the workspace at `root`.
pub fn workspace_circles(root: &Path) -> anyhow::Result<Vec<Circle>> {
    let mut found = Vec::new();
    for (name, src) in source_roots(root)? {
        found.extend(circles_in(&name, &src)?);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn the_workspace_has_no_import_circles() {
        let found = workspace_circles(&crate::workspace_root()).unwrap();
        let list: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert!(
            list.is_empty(),
            "import circles (`cargo xtask circles`):\n  {}",
            list.join("\n  ")
        );
    }

    #[test]
    fn circles_through_use_paths_and_nested_siblings_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path();
        write(src, "lib.rs", "mod a; mod b; mod c; mod g;");
        write(
            src,
            "a.rs",
            "use crate::b::Thing;\n/// [`crate::c::Doc`] is a doc link, not an edge.\npub struct A;",
        );
        write(
            src,
            "b.rs",
            "pub struct Thing; fn f() { let _ = crate::a::A; }",
        );
        write(src, "c.rs", "use crate::{a::A, g::inner::X};");
        write(src, "g/mod.rs", "mod inner; mod other; pub use inner::X;");
        write(src, "g/inner.rs", "pub struct X; use super::other::Y;");
        write(
            src,
            "g/other.rs",
            "pub struct Y; use super::super::g::inner::X; #[cfg(test)] mod tests { use crate::c; }",
        );
        let circles = circles_in("demo", src).unwrap();
        assert_eq!(
            circles.iter().map(ToString::to_string).collect::<Vec<_>>(),
            vec![
                "demo: a ↔ b".to_owned(),
                "demo::g: inner ↔ other".to_owned()
            ]
        );
    }

    #[test]
    fn a_parent_and_its_children_are_one_tree_not_a_circle() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path();
        write(src, "lib.rs", "mod m; pub struct Root;");
        write(
            src,
            "m/mod.rs",
            "mod child; pub use child::C; pub struct P;",
        );
        write(
            src,
            "m/child.rs",
            "use super::P; use crate::Root; pub struct C;",
        );
        assert_eq!(circles_in("demo", src).unwrap(), Vec::<Circle>::new());
    }

    #[test]
    fn a_file_that_does_not_parse_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "lib.rs", "fn broken( {");
        let err = circles_in("demo", dir.path()).unwrap_err().to_string();
        assert!(err.contains("lib.rs"), "{err}");
    }
}
