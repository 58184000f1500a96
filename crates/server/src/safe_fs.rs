//! Reading a file a route serves: below a trusted root, never through a symbolic link, regular files only, size-capped.
//!
//! Every component below the root is checked with `symlink_metadata` and the file itself is opened with
//! `O_NOFOLLOW | O_NONBLOCK` (a link swapped in after the check fails to open; a FIFO does not block), then
//! checked on the open descriptor (`fstat`): a committed `evidence/eval/x/success.png -> /proc/self/environ`
//! is refused, never served.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path};

/// The largest file any file route reads (the example package has its own, smaller per-file limit).
pub const MAX_SERVED_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum SafeReadError {
    #[error("{path} is a symbolic link (file routes never follow links)")]
    Symlink { path: String },
    #[error("{path} is not a regular file")]
    NotAFile { path: String },
    #[error("{path} is larger than {max} bytes")]
    TooLarge { path: String, max: u64 },
    #[error("{path} is not a plain relative path")]
    BadPath { path: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

impl SafeReadError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, SafeReadError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// Read `root/rel` (at most `max` bytes) with no link followed anywhere below `root`.
pub fn read_under(root: &Path, rel: &Path, max: u64) -> Result<Vec<u8>, SafeReadError> {
    let shown = rel.display().to_string();
    let mut at = root.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    if parts.is_empty() {
        return Err(SafeReadError::BadPath { path: shown });
    }
    for (i, part) in parts.iter().enumerate() {
        let Component::Normal(name) = part else {
            return Err(SafeReadError::BadPath { path: shown });
        };
        at.push(name);
        let meta = std::fs::symlink_metadata(&at).map_err(|source| SafeReadError::Io {
            path: shown.clone(),
            source,
        })?;
        if meta.file_type().is_symlink() {
            return Err(SafeReadError::Symlink { path: shown });
        }
        if i + 1 < parts.len() && !meta.is_dir() {
            return Err(SafeReadError::NotAFile { path: shown });
        }
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&at)
        .map_err(|source| {
            if source.raw_os_error() == Some(libc::ELOOP) {
                SafeReadError::Symlink {
                    path: shown.clone(),
                }
            } else {
                SafeReadError::Io {
                    path: shown.clone(),
                    source,
                }
            }
        })?;
    let meta = file.metadata().map_err(|source| SafeReadError::Io {
        path: shown.clone(),
        source,
    })?;
    if !meta.is_file() {
        return Err(SafeReadError::NotAFile { path: shown });
    }
    if meta.len() > max {
        return Err(SafeReadError::TooLarge { path: shown, max });
    }
    let mut data = Vec::with_capacity(meta.len() as usize);
    // The cap holds even for a file growing while it is read (or a size the kernel reports as 0).
    file.take(max + 1)
        .read_to_end(&mut data)
        .map_err(|source| SafeReadError::Io {
            path: shown.clone(),
            source,
        })?;
    if data.len() as u64 > max {
        return Err(SafeReadError::TooLarge { path: shown, max });
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_anywhere_below_the_root_fifos_and_big_files_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        std::fs::create_dir_all(r.join("a/b")).unwrap();
        std::fs::write(r.join("a/b/ok.txt"), "ok").unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", r.join("a/b/env")).unwrap();
        std::os::unix::fs::symlink(r.join("a/b"), r.join("a/linked")).unwrap();
        std::fs::write(r.join("a/big"), vec![0u8; 11]).unwrap();
        assert_eq!(read_under(r, Path::new("a/b/ok.txt"), 10).unwrap(), b"ok");
        assert!(matches!(
            read_under(r, Path::new("a/b/env"), 10),
            Err(SafeReadError::Symlink { .. })
        ));
        assert!(matches!(
            read_under(r, Path::new("a/linked/ok.txt"), 10),
            Err(SafeReadError::Symlink { .. })
        ));
        assert!(matches!(
            read_under(r, Path::new("a/big"), 10),
            Err(SafeReadError::TooLarge { .. })
        ));
        assert!(matches!(
            read_under(r, Path::new("a/b"), 10),
            Err(SafeReadError::NotAFile { .. })
        ));
        assert!(matches!(
            read_under(r, Path::new("../x"), 10),
            Err(SafeReadError::BadPath { .. })
        ));
        assert!(
            read_under(r, Path::new("a/nope"), 10)
                .unwrap_err()
                .is_not_found()
        );
        let fifo = r.join("a/fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            read_under(r, Path::new("a/fifo"), 10),
            Err(SafeReadError::NotAFile { .. })
        ));
    }
}
