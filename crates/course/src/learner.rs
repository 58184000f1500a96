//! Where a learner's work lives: the `learn/` workspace, one copy per stage (`learn/NN-name/`, package
//! `<stage package>-learn`) and `learn/progress.json`. Paths and names only, so `learn`, `check`, `watch`,
//! `progress` and the scratch manifests agree on them without importing each other.

use std::path::PathBuf;

use crate::course::{Course, Stage};

pub fn learn_dir(course: &Course) -> PathBuf {
    course.root.join("learn")
}

pub fn progress_path(course: &Course) -> PathBuf {
    learn_dir(course).join("progress.json")
}

/// Suffix of a learner copy's package name: the `learn/` workspace may also depend on the real
/// stage crates (stage 07 builds on 02 and 06), and two packages cannot share a name.
pub const LEARN_SUFFIX: &str = "-learn";

pub fn learn_package(stage: &Stage) -> String {
    format!("{}{LEARN_SUFFIX}", stage.package)
}

pub fn copy_dir(course: &Course, stage: &Stage) -> PathBuf {
    learn_dir(course).join(&stage.id)
}

pub fn has_copy(course: &Course, stage: &Stage) -> bool {
    copy_dir(course, stage).join("Cargo.toml").is_file()
}
