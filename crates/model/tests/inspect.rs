//! Inspection of GGUF files without llama.cpp: synthetic headers, errors that name only the file, and the
//! model identity (the file's own hash, never a manifest's claim).

use std::io::Write;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::json;

fn gguf_string(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

/// A minimal GGUF v3: a few metadata keys and one F32 tensor of `elements` values.
fn synthetic_gguf(elements: u64, data_bytes: usize) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(1u64.to_le_bytes()); // tensors
    b.extend(4u64.to_le_bytes()); // kv
    gguf_string(&mut b, "general.architecture");
    b.extend(8u32.to_le_bytes());
    gguf_string(&mut b, "tiny");
    gguf_string(&mut b, "general.file_type");
    b.extend(4u32.to_le_bytes());
    b.extend(15u32.to_le_bytes());
    gguf_string(&mut b, "tiny.context_length");
    b.extend(4u32.to_le_bytes());
    b.extend(2048u32.to_le_bytes());
    gguf_string(&mut b, "tokenizer.ggml.scores");
    b.extend(9u32.to_le_bytes());
    b.extend(6u32.to_le_bytes()); // f32 array
    b.extend(3u64.to_le_bytes());
    b.extend([0u8; 12]);
    gguf_string(&mut b, "weight");
    b.extend(1u32.to_le_bytes());
    b.extend(elements.to_le_bytes());
    b.extend(0u32.to_le_bytes()); // F32
    b.extend(0u64.to_le_bytes());
    while !b.len().is_multiple_of(32) {
        b.push(0);
    }
    b.extend(vec![0u8; data_bytes]);
    b
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
    p
}

#[test]
fn inspect_reads_a_synthetic_gguf() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "tiny.gguf", &synthetic_gguf(8, 32));
    let info = forge_model::inspect(&p).unwrap();
    assert_eq!(info.architecture, "tiny");
    assert_eq!(info.quantization.as_deref(), Some("Q4_K_M"));
    assert_eq!(info.context_length, Some(2048));
    assert_eq!(info.parameter_count, 8);
    assert_eq!(info.tensor_count, 1);
    assert!(!info.chat_template_present);
    assert_eq!(info.sha256_source, "computed");
    assert_eq!(forge_model::inspect(&p).unwrap().sha256_source, "cache");
}

#[test]
fn bad_files_are_model_unavailable_naming_only_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let shown = dir.path().display().to_string();
    let cases = [
        (
            write(dir.path(), "short.gguf", &synthetic_gguf(8, 31)),
            "truncated",
        ),
        (
            write(dir.path(), "cut-header.gguf", &synthetic_gguf(8, 32)[..40]),
            "header ends early",
        ),
        (
            write(dir.path(), "notes.gguf", b"this is not a model at all"),
            "not a GGUF file",
        ),
        (dir.path().join("absent.gguf"), "file not found"),
    ];
    for (path, expected) in cases {
        let err = forge_model::inspect(&path).unwrap_err();
        assert_eq!(err.file, path.file_name().unwrap().to_string_lossy());
        assert!(err.reason.contains(expected), "{}: {err}", err.file);
        assert!(!err.to_string().contains(&shown), "directory leaked: {err}");
        // "this" is 74 68 69 73: a refusal never shows what the file holds.
        assert!(
            !err.to_string().contains("74, 68") && !err.to_string().contains("this is"),
            "file bytes echoed: {err}"
        );
    }
}

/// Issue 23, item 6: the model identity is the hash of the file. A manifest newer than the file is not
/// taken at its word (a same-size replaced file used to be "verified" with the manifest's hash), and a
/// file replaced under the same path, size and mtime (renamed over it: a new inode) is hashed again.
#[test]
fn the_model_identity_is_the_files_hash_never_the_manifests_claim() {
    let dir = tempfile::tempdir().unwrap();
    let original = synthetic_gguf(8, 32);
    let p = write(dir.path(), "tiny.gguf", &original);
    let first = forge_model::inspect(&p).unwrap();
    // The same size, other bytes, written in place with the old mtime put back.
    let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
    let mut replaced = original.clone();
    *replaced.last_mut().unwrap() = 1;
    std::fs::write(&p, &replaced).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    // A fetch manifest, newer than the file, that vouches for the original bytes.
    let manifest = json!({
        "model": "tiny", "file": "tiny.gguf", "bytes": original.len(), "sha256": first.sha256,
        "hash_pinned": true, "source": "test", "parts": [], "fetched_at": "2026-12-01T00:00:00Z",
    });
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(dir.path().join("tiny.manifest.json"), manifest.to_string()).unwrap();
    let after = forge_model::inspect(&p).unwrap();
    assert_eq!(after.sha256_source, "computed");
    assert_ne!(after.sha256, first.sha256, "the replaced file's own hash");
    assert!(
        !after.manifest.as_ref().unwrap().sha256_matches,
        "the manifest no longer matches the file"
    );
    // Renamed over it: same path, size and mtime, a new inode.
    let other = write(dir.path(), "other.tmp", &original);
    std::fs::File::options()
        .write(true)
        .open(&other)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    std::fs::rename(&other, &p).unwrap();
    let again = forge_model::inspect(&p).unwrap();
    assert_eq!(again.sha256_source, "computed");
    assert_eq!(again.sha256, first.sha256);
    assert!(again.manifest.unwrap().sha256_matches);
}
