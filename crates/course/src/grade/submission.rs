//! A class folder read as submissions: one folder (or zip) per learner, their `learn/` as handed in. Only
//! each stage's `src/**.rs` and `tests/transfer.rs` are taken (never a manifest, build script or state file
//! as proof), read without following a symlink and within size caps; `progress.json` is read only for the
//! times the learner's own log records.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::course::Stage;

/// Largest source file taken from a submission.
const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Largest total of one learner's taken files.
const MAX_LEARNER_BYTES: u64 = 8 * 1024 * 1024;

/// Why a class folder or a learner's hand-in cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SubmissionError {
    #[error("{0} is not a folder of learner folders")]
    NotAClass(PathBuf),
    #[error("learner name {0:?}: use letters, digits, `.`, `_` and `-` only")]
    BadName(String),
    #[error("{path}: {why}")]
    Unreadable { path: PathBuf, why: String },
}

/// One learner's hand-in: what was taken, per stage, and what was left out and why.
#[derive(Debug, Clone, Default)]
pub struct Learner {
    pub name: String,
    /// `folder` or `zip`.
    pub source: &'static str,
    /// `stage id` → the files taken (`src/…` and `tests/transfer.rs`).
    pub stages: BTreeMap<String, Files>,
    /// `progress.json` as handed in (a claim: only its times are used).
    pub progress: Option<serde_json::Value>,
    /// Files left out (symlinks, too large, outside the taken paths), named.
    pub notes: Vec<String>,
}

/// One stage's files from a hand-in.
#[derive(Debug, Clone, Default)]
pub struct Files {
    pub src: Vec<(String, Vec<u8>)>,
    pub transfer: Option<String>,
}

/// Every learner of the class folder, in name order. Entries starting with `.` or `_` are not learners.
pub fn read_class(dir: &Path, stages: &[Stage]) -> Result<Vec<Learner>, SubmissionError> {
    let entries = fs::read_dir(dir).map_err(|_| SubmissionError::NotAClass(dir.to_path_buf()))?;
    let mut learners = Vec::new();
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if file_name.starts_with('.') || file_name.starts_with('_') {
            continue;
        }
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).map_err(|e| unreadable(&path, e))?;
        let learner = if meta.is_dir() {
            let zip = path.join("learn.zip");
            if fs::symlink_metadata(&zip).is_ok_and(|m| m.is_file()) {
                read_zip(&zip, learner_name(&file_name)?, stages)?
            } else {
                read_folder(&path, learner_name(&file_name)?, stages)?
            }
        } else if meta.is_file() && file_name.ends_with(".zip") {
            read_zip(
                &path,
                learner_name(&file_name[..file_name.len() - 4])?,
                stages,
            )?
        } else {
            continue;
        };
        learners.push(learner);
    }
    learners.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(learners)
}

fn learner_name(raw: &str) -> Result<String, SubmissionError> {
    let ok = !raw.is_empty()
        && raw.len() <= 64
        && raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(raw.to_owned())
    } else {
        Err(SubmissionError::BadName(raw.to_owned()))
    }
}

fn unreadable(path: &Path, e: impl std::fmt::Display) -> SubmissionError {
    SubmissionError::Unreadable {
        path: path.to_path_buf(),
        why: e.to_string(),
    }
}

/// What a path inside a hand-in is, relative to its `learn/` root.
enum Taken<'a> {
    Src(&'a str, String),
    Transfer(&'a str),
    Progress,
    Other,
}

fn classify<'a>(rel: &str, stages: &'a [Stage]) -> Taken<'a> {
    let rel = rel.strip_prefix("learn/").unwrap_or(rel);
    if rel == "progress.json" {
        return Taken::Progress;
    }
    let Some((first, rest)) = rel.split_once('/') else {
        return Taken::Other;
    };
    let Some(stage) = stages.iter().find(|s| s.id == first) else {
        return Taken::Other;
    };
    if rest == "tests/transfer.rs" {
        Taken::Transfer(&stage.id)
    } else if rest.starts_with("src/")
        && rest.ends_with(".rs")
        && !rest.split('/').any(|p| p == ".." || p.is_empty())
    {
        Taken::Src(&stage.id, rest.to_owned())
    } else {
        Taken::Other
    }
}

struct Collector<'a> {
    learner: Learner,
    stages: &'a [Stage],
    total: u64,
}

impl Collector<'_> {
    fn take(&mut self, rel: &str, size: u64, read: &mut dyn FnMut() -> std::io::Result<Vec<u8>>) {
        let taken = classify(rel, self.stages);
        if matches!(taken, Taken::Other) {
            return;
        }
        if size > MAX_FILE_BYTES || self.total + size > MAX_LEARNER_BYTES {
            self.learner
                .notes
                .push(format!("{rel}: left out ({size} bytes is over the cap)"));
            return;
        }
        let bytes = match read() {
            Ok(bytes) => bytes,
            Err(e) => {
                self.learner.notes.push(format!("{rel}: unreadable ({e})"));
                return;
            }
        };
        self.total += bytes.len() as u64;
        match taken {
            Taken::Src(stage, path) => self
                .learner
                .stages
                .entry(stage.to_owned())
                .or_default()
                .src
                .push((path, bytes)),
            Taken::Transfer(stage) => {
                self.learner
                    .stages
                    .entry(stage.to_owned())
                    .or_default()
                    .transfer = Some(String::from_utf8_lossy(&bytes).into_owned())
            }
            Taken::Progress => self.learner.progress = serde_json::from_slice(&bytes).ok(),
            Taken::Other => {}
        }
    }

    fn finish(mut self) -> Learner {
        for files in self.learner.stages.values_mut() {
            files.src.sort();
        }
        // A stage with a transfer test but no source (or the reverse) is still judged: the missing half fails.
        self.learner
    }
}

fn read_folder(dir: &Path, name: String, stages: &[Stage]) -> Result<Learner, SubmissionError> {
    let root = if dir.join("learn").is_dir() {
        dir.join("learn")
    } else {
        dir.to_path_buf()
    };
    let mut collector = Collector {
        learner: Learner {
            name,
            source: "folder",
            ..Default::default()
        },
        stages,
        total: 0,
    };
    walk(&root, &root, &mut collector)?;
    Ok(collector.finish())
}

fn walk(root: &Path, dir: &Path, collector: &mut Collector) -> Result<(), SubmissionError> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map_err(|e| unreadable(dir, e))?
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let rel = path
            .strip_prefix(root)
            .expect("below the root")
            .to_string_lossy()
            .replace('\\', "/");
        // Never followed: a symlink could point at anything on the instructor's machine.
        let meta = fs::symlink_metadata(&path).map_err(|e| unreadable(&path, e))?;
        if meta.file_type().is_symlink() {
            collector
                .learner
                .notes
                .push(format!("{rel}: a symlink, left out"));
        } else if meta.is_dir() {
            if entry.file_name() != "target" {
                walk(root, &path, collector)?;
            }
        } else if meta.is_file() {
            collector.take(&rel, meta.len(), &mut || fs::read(&path));
        }
    }
    Ok(())
}

fn read_zip(path: &Path, name: String, stages: &[Stage]) -> Result<Learner, SubmissionError> {
    let file = fs::File::open(path).map_err(|e| unreadable(path, e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| unreadable(path, e))?;
    let mut collector = Collector {
        learner: Learner {
            name,
            source: "zip",
            ..Default::default()
        },
        stages,
        total: 0,
    };
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(|e| unreadable(path, e))?;
        // `enclosed_name` is None for absolute paths and `..`: nothing lands outside the hand-in.
        let Some(rel) = entry.enclosed_name() else {
            collector.learner.notes.push(format!(
                "{}: a path outside the archive, left out",
                entry.name()
            ));
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        if entry.is_symlink() {
            collector
                .learner
                .notes
                .push(format!("{rel}: a symlink, left out"));
            continue;
        }
        if !entry.is_file() {
            continue;
        }
        let size = entry.size();
        collector.take(&rel, size, &mut || {
            // Read at most the cap: a zip's declared size is the archive's claim.
            let mut bytes = Vec::new();
            (&mut entry)
                .take(MAX_FILE_BYTES + 1)
                .read_to_end(&mut bytes)?;
            Ok(bytes)
        });
    }
    Ok(collector.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stages() -> Vec<Stage> {
        vec![Stage {
            id: "01-a".into(),
            dir: PathBuf::from("/nonexistent"),
            package: "a".into(),
        }]
    }

    #[test]
    fn only_sources_and_the_transfer_test_are_taken_and_symlinks_never_followed() {
        let class = tempfile::tempdir().unwrap();
        let copy = class.path().join("ann/learn/01-a");
        fs::create_dir_all(copy.join("src/deep")).unwrap();
        fs::create_dir_all(copy.join("tests")).unwrap();
        fs::write(copy.join("src/lib.rs"), "mod deep;").unwrap();
        fs::write(copy.join("src/deep/mod.rs"), "pub fn f() {}").unwrap();
        fs::write(copy.join("tests/transfer.rs"), "#[test]\nfn t() {}").unwrap();
        fs::write(copy.join("tests/stage.rs"), "edited").unwrap();
        fs::write(copy.join("Cargo.toml"), "[package]\nbuild = \"evil.rs\"").unwrap();
        fs::write(copy.join("src/huge.rs"), vec![b' '; 300 * 1024]).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", copy.join("src/passwd.rs")).unwrap();
        let learners = read_class(class.path(), &stages()).unwrap();
        let ann = &learners[0];
        let files = &ann.stages["01-a"];
        let taken: Vec<&str> = files.src.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(taken, ["src/deep/mod.rs", "src/lib.rs"]);
        assert_eq!(files.transfer.as_deref(), Some("#[test]\nfn t() {}"));
        assert!(
            ann.notes
                .iter()
                .any(|n| n.contains("src/huge.rs") && n.contains("over the cap")),
            "{:?}",
            ann.notes
        );
        assert!(
            ann.notes
                .iter()
                .any(|n| n.contains("src/passwd.rs: a symlink")),
            "{:?}",
            ann.notes
        );
    }

    #[test]
    fn bad_class_folders_and_names_are_refused() {
        let missing = read_class(Path::new("/nonexistent/class"), &stages()).unwrap_err();
        assert!(matches!(missing, SubmissionError::NotAClass(_)));
        let class = tempfile::tempdir().unwrap();
        fs::create_dir_all(class.path().join("semi;colon")).unwrap();
        let err = read_class(class.path(), &stages()).unwrap_err();
        assert!(err.to_string().contains("semi;colon"), "{err}");
        let broken = tempfile::tempdir().unwrap();
        fs::write(broken.path().join("bob.zip"), b"not a zip").unwrap();
        let err = read_class(broken.path(), &stages()).unwrap_err();
        assert!(err.to_string().contains("bob.zip"), "{err}");
    }
}
