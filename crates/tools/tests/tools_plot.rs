//! plot tool tests: argument checks (Rust API and registry path), a real decoded
//! PNG with the average line, and write-once artifacts (no orphan files).

use std::fs;
use std::path::Path;

use forge_tools::plot::{self, PlotRequest};
use forge_tools::registry::{ArgumentError, ToolRegistry};
use forge_tools::{ArtifactStore, ToolContext, ToolError, call_tool};
use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};

fn request(values: &[f64], average: Option<f64>) -> PlotRequest {
    PlotRequest {
        labels: (0..values.len())
            .map(|i| format!("Batch {}", (b'A' + i as u8) as char))
            .collect(),
        values: values.to_vec(),
        title: "AgentEval Mini Task Success".into(),
        average,
        y_label: Some("Task Success (%)".into()),
        column: None,
    }
}

fn batches() -> PlotRequest {
    request(&[72.0, 78.0, 81.0, 85.0], Some(79.0))
}

fn run(
    req: &PlotRequest,
    dir: &Path,
    store: &ArtifactStore,
) -> Result<forge_tools::ToolOutput, ToolError> {
    plot::run(req, dir, store)
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn decode(bytes: &[u8]) -> (png::OutputInfo, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (info, buf)
}

fn count_pixels(
    info: &png::OutputInfo,
    rgb: &[u8],
    rows: std::ops::Range<u32>,
    pred: impl Fn(&[u8]) -> bool,
) -> usize {
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let stride = info.width as usize * 3;
    rows.flat_map(|y| {
        rgb[y as usize * stride..(y as usize + 1) * stride]
            .chunks(3)
            .filter(|p| pred(p))
            .collect::<Vec<_>>()
    })
    .count()
}

#[test]
fn writes_a_real_png_with_bars_average_line_and_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::new();
    let out = run(&batches(), dir.path(), &store).unwrap();

    assert_eq!(out.artifacts.len(), 1);
    let record = &out.artifacts[0];
    assert_eq!(record.media_type, "image/png");
    assert!(
        record.id.starts_with("art-") && record.id.len() == 20,
        "{}",
        record.id
    );
    assert_eq!(record.file_name, format!("{}.png", record.id));
    let bytes = fs::read(dir.path().join(&record.file_name)).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(record.bytes, bytes.len() as u64);
    assert_eq!(record.blake3, blake3::hash(&bytes).to_hex().to_string());

    let (info, rgb) = decode(&bytes);
    assert_eq!((info.width, info.height), (plot::WIDTH, plot::HEIGHT));
    let all_rows = 0..info.height;
    let red = |p: &[u8]| p == [214, 39, 40];
    let blue = |p: &[u8]| p == [66, 114, 196];
    // A horizontal red average line spans most of the plot width in some row.
    let widest_red_row = (0..info.height)
        .map(|y| count_pixels(&info, &rgb, y..y + 1, red))
        .max()
        .unwrap();
    assert!(
        widest_red_row > 500,
        "average line: {widest_red_row} red pixels in the best row"
    );
    assert!(
        count_pixels(&info, &rgb, all_rows, blue) > 20_000,
        "bars missing"
    );
    // Title text is rendered with the bundled font: dark pixels in the top band.
    let dark = |p: &[u8]| p.iter().all(|c| *c < 100);
    assert!(
        count_pixels(&info, &rgb, 0..40, dark) > 100,
        "title text missing"
    );

    // The result carries spec + artifact metadata, never the image.
    assert_eq!(
        out.result["spec"],
        json!({
            "kind": "bar",
            "labels": ["Batch A", "Batch B", "Batch C", "Batch D"],
            "values": [72, 78, 81, 85],
            "average": 79,
            "title": "AgentEval Mini Task Success",
            "y_label": "Task Success (%)",
        })
    );
    assert_eq!(out.result["artifact"]["id"], json!(record.id));
    assert!(out.result.to_string().len() < 1_000);
    assert_eq!(out.digest_basis, out.result["spec"]);
}

#[test]
fn no_average_means_no_average_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &request(&[72.0, 78.0], None),
        dir.path(),
        &ArtifactStore::new(),
    )
    .unwrap();
    let (info, rgb) = decode(&fs::read(dir.path().join(&out.artifacts[0].file_name)).unwrap());
    assert_eq!(
        count_pixels(&info, &rgb, 0..info.height, |p| p == [214, 39, 40]),
        0
    );
    assert_eq!(out.result["spec"]["average"], Value::Null);
}

#[test]
fn same_arguments_twice_give_one_file_and_the_same_artifact() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::new();
    let first = run(&batches(), dir.path(), &store).unwrap();
    let second = run(&batches(), dir.path(), &store).unwrap();
    assert_eq!(first.artifacts, second.artifacts);
    assert!(second.summary.contains("reused"));
    assert_eq!(files_in(dir.path()), [first.artifacts[0].file_name.clone()]);
    assert_eq!(store.len(), 1);

    // A different chart is a second artifact.
    let other = run(
        &request(&[72.0, 78.0, 81.0, 86.0], Some(79.25)),
        dir.path(),
        &store,
    )
    .unwrap();
    assert_ne!(other.artifacts[0].id, first.artifacts[0].id);
    assert_eq!(files_in(dir.path()).len(), 2);
    assert_eq!(store.len(), 2);
}

#[test]
fn equivalent_json_arguments_share_one_artifact() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = ArtifactStore::new();
    let knowledge = Path::new("/nonexistent");
    let mut ctx = ToolContext {
        knowledge_dir: knowledge,
        allowed_sources: &[],
        artifact_dir: dir.path(),
        artifacts: &mut store,
        columns: &forge_tools::NoColumns,
    };
    let registry = ToolRegistry::builtin();
    let a = json!({ "labels": ["A", "B"], "values": [72, 78], "title": "T", "average": 75 });
    // Different key order, floats for integers, the default y_label spelled out.
    let b = json!({ "y_label": "value", "average": 75.0, "title": "T", "values": [72.0, 78.0], "labels": ["A", "B"] });
    let ids: Vec<String> = [a, b]
        .iter()
        .map(|raw| {
            let args = registry
                .validate_arguments("plot", raw.as_object().unwrap())
                .unwrap();
            call_tool("plot", &args, &mut ctx).unwrap().artifacts[0]
                .id
                .clone()
        })
        .collect();
    assert_eq!(ids[0], ids[1]);
    assert_eq!(files_in(dir.path()).len(), 1);
}

#[test]
fn concurrent_attempts_share_one_write() {
    // A timed-out attempt still running on another thread and its retry.
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::new();
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let (store, path) = (store.clone(), dir.path().to_owned());
            std::thread::spawn(move || {
                plot::run(&batches(), &path, &store).unwrap().artifacts[0].clone()
            })
        })
        .collect();
    let records: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(records[0], records[1]);
    assert_eq!(files_in(dir.path()).len(), 1);
}

#[test]
fn a_failed_write_leaves_no_file_and_no_entry() {
    let parent = tempfile::tempdir().unwrap();
    let blocked = parent.path().join("not-a-dir");
    fs::write(&blocked, b"x").unwrap();
    let store = ArtifactStore::new();
    let error = run(&batches(), &blocked, &store).unwrap_err();
    assert_eq!(error.code, "artifact_write_failed");
    assert!(error.retryable);
    assert!(
        !error.message.contains(&parent.path().display().to_string()),
        "{}",
        error.message
    );
    assert!(store.is_empty());
    assert_eq!(files_in(parent.path()), ["not-a-dir"]);

    // Nothing was stored, so a retry into a usable directory renders and writes.
    let dir = parent.path().join("artifacts");
    let out = run(&batches(), &dir, &store).unwrap();
    assert_eq!(files_in(&dir), [out.artifacts[0].file_name.clone()]);
}

#[test]
fn a_replayed_record_must_still_match_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::new();
    let out = run(&batches(), dir.path(), &store).unwrap();
    fs::remove_file(dir.path().join(&out.artifacts[0].file_name)).unwrap();
    assert_eq!(
        run(&batches(), dir.path(), &store).unwrap_err().code,
        "artifact_missing"
    );
}

#[test]
fn rust_api_rejects_mismatch_nan_infinity_and_61_points() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::new();
    let mut mismatched = batches();
    mismatched.values.pop();
    let code = |req: &PlotRequest| run(req, dir.path(), &store).unwrap_err().code;
    assert_eq!(code(&mismatched), "plot_length_mismatch");
    assert_eq!(code(&request(&[72.0, f64::NAN], None)), "plot_non_finite");
    assert_eq!(
        code(&request(&[72.0, f64::INFINITY], None)),
        "plot_non_finite"
    );
    assert_eq!(code(&request(&[72.0], Some(f64::NAN))), "plot_non_finite");
    assert_eq!(code(&request(&[1.0; 61], None)), "plot_too_many_points");
    assert_eq!(code(&request(&[], None)), "plot_empty");
    assert_eq!(
        run(&request(&[72.0, f64::NAN], None), dir.path(), &store)
            .unwrap_err()
            .message,
        "values[1] is NaN, not a finite number"
    );
    // Nothing was written for any rejected request.
    assert!(files_in(dir.path()).is_empty());
    assert!(store.is_empty());
    // Twenty is fine.
    assert!(run(&request(&[1.0; 60], None), dir.path(), &store).is_ok());
}

fn registry_error(raw: Value) -> ArgumentError {
    ToolRegistry::builtin()
        .validate_arguments("plot", raw.as_object().unwrap())
        .unwrap_err()
}

#[test]
fn registry_rejects_bad_plot_arguments_with_the_field_named() {
    let base = || json!({ "labels": ["A", "B"], "values": [1, 2], "title": "T" });
    let with = |key: &str, value: Value| {
        let mut raw = base();
        raw[key] = value;
        raw
    };

    let error = registry_error(with("values", json!([1])));
    assert_eq!(
        error,
        ArgumentError::LengthMismatch {
            tool: "plot".into(),
            fields: vec!["labels".into(), "values".into()],
            lengths: vec![2, 1],
        }
    );
    // JSON has no NaN: a model writing "NaN" or null sends a string / null.
    for bad in [json!("NaN"), Value::Null, json!("72")] {
        let error = registry_error(with("values", json!([1, bad.clone()])));
        assert_eq!(error.kind(), "wrong_type");
        assert_eq!(error.field(), Some("values[1]"));
        assert!(
            error
                .to_string()
                .starts_with("plot.values[1]: expected a number"),
            "{error}"
        );
    }
    let labels: Vec<String> = (0..61).map(|i| format!("L{i}")).collect();
    let values: Vec<i32> = (0..61).collect();
    let error = registry_error(json!({ "labels": labels, "values": values, "title": "T" }));
    assert_eq!(error.kind(), "out_of_range");
    assert_eq!(error.field(), Some("labels"));
    assert_eq!(
        error.to_string().split(", got").next().unwrap(),
        "plot.labels: must have 1..=60 items"
    );

    assert_eq!(
        registry_error(with("labels", json!([]))).field(),
        Some("labels")
    );
    assert_eq!(
        registry_error(with("average", json!("79"))).field(),
        Some("average")
    );
    assert_eq!(
        registry_error(with("kind", json!("bar"))).kind(),
        "unexpected"
    );
    let mut no_title = base();
    no_title.as_object_mut().unwrap().remove("title");
    assert_eq!(
        registry_error(no_title),
        ArgumentError::Missing {
            tool: "plot".into(),
            fields: vec!["title".into()]
        }
    );
}

#[test]
fn call_tool_never_panics_on_unvalidated_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = ArtifactStore::new();
    let mut ctx = ToolContext {
        knowledge_dir: Path::new("."),
        allowed_sources: &[],
        artifact_dir: dir.path(),
        artifacts: &mut store,
        columns: &forge_tools::NoColumns,
    };
    let raw: Map<String, Value> = json!({ "labels": "A", "values": [1], "title": "T" })
        .as_object()
        .unwrap()
        .clone();
    assert_eq!(
        call_tool("plot", &raw, &mut ctx).unwrap_err().code,
        "invalid_arguments"
    );
    assert!(files_in(dir.path()).is_empty());
}

#[test]
fn awkward_but_valid_charts_render() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::new();
    let cases = [
        request(&[-5.0, 3.5, 0.0], Some(-0.5)),
        request(&[0.0], None),
        request(&[1e9, -1e9], Some(0.0)),
        request(&(0..20).map(f64::from).collect::<Vec<_>>(), Some(9.5)),
        PlotRequest {
            labels: vec![
                "a label that is much longer than the bar is wide".into(),
                "Ünïcödé ✓".into(),
            ],
            values: vec![0.001, 0.002],
            title: "Tiny values, long labels".into(),
            average: None,
            y_label: None,
            column: None,
        },
    ];
    for req in &cases {
        let out = run(req, dir.path(), &store).unwrap_or_else(|e| panic!("{req:?}: {e}"));
        let (info, _) = decode(&fs::read(dir.path().join(&out.artifacts[0].file_name)).unwrap());
        assert_eq!((info.width, info.height), (plot::WIDTH, plot::HEIGHT));
    }
    assert_eq!(files_in(dir.path()).len(), cases.len());
    assert_eq!(
        run(&cases[4], dir.path(), &store).unwrap().result["spec"]["y_label"],
        json!("value")
    );
}

/// A table of `n` rows observed by a knowledge search, as the loop's ledger offers it to tools.
fn observed_column(n: usize) -> forge_tools::calculator::TableColumns {
    forge_tools::calculator::TableColumns {
        tables: vec![forge_tools::calculator::ColumnTable {
            rows_label: "Depot".into(),
            units: Vec::new(),
            labels: (0..n).map(|i| format!("Depot {i:03}")).collect(),
            columns: vec![(
                "Fuel use".into(),
                (0..n)
                    .map(|i| {
                        if i == 3 {
                            None
                        } else {
                            Some(40.0 + (i % 20) as f64)
                        }
                    })
                    .collect(),
            )],
        }],
    }
}

#[test]
fn a_chart_by_column_reference_draws_every_row_and_says_what_it_thins_or_leaves_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = ArtifactStore::new();
    let knowledge = Path::new("../../knowledge");
    for (rows, labelled_every) in [(5, None), (26, None), (200, Some(5))] {
        let columns = observed_column(rows);
        let mut ctx = ToolContext {
            knowledge_dir: knowledge,
            allowed_sources: &[],
            artifact_dir: dir.path(),
            artifacts: &mut store,
            columns: &columns,
        };
        let args = json!({"column": "[Fuel use]", "title": "Fuel use per depot", "average": 45.5});
        let out =
            call_tool("plot", args.as_object().unwrap(), &mut ctx).expect("a chart by reference");
        let spec = &out.result["spec"];
        // Every row with a value is a bar, in table order; the row without one is named, not drawn.
        assert_eq!(
            spec["labels"].as_array().unwrap().len(),
            rows - 1,
            "{rows} rows"
        );
        assert_eq!(spec["values"].as_array().unwrap().len(), rows - 1);
        assert_eq!(spec["labels"][3], "Depot 004");
        assert_eq!(spec["column"], "[Depot | Fuel use]");
        assert_eq!(spec["missing"], json!(["Depot 003"]));
        assert_eq!(spec["labelled_every"].as_u64(), labelled_every);
        let summary = out.result["summary"].as_str().unwrap();
        assert!(
            summary.contains("no bar for Depot 003 (no value)"),
            "{summary}"
        );
        assert_eq!(
            summary.contains("th bar labelled"),
            labelled_every.is_some(),
            "{summary}"
        );
        let png = fs::read(dir.path().join(out.artifacts[0].file_name.as_str())).unwrap();
        assert!(png.starts_with(b"\x89PNG"));
    }
    // An unknown column is the calculator's own refusal, named; a listed chart still stops at its cap.
    let columns = observed_column(5);
    let mut ctx = ToolContext {
        knowledge_dir: knowledge,
        allowed_sources: &[],
        artifact_dir: dir.path(),
        artifacts: &mut store,
        columns: &columns,
    };
    let err = call_tool(
        "plot",
        json!({"column": "[Wait]", "title": "t"})
            .as_object()
            .unwrap(),
        &mut ctx,
    )
    .unwrap_err();
    assert_eq!(err.code, "unknown_column", "{err:?}");
    assert!(err.message.contains("[Fuel use]"), "{}", err.message);
    let err = call_tool(
        "plot",
        json!({"column": "Fuel use", "title": "t"})
            .as_object()
            .unwrap(),
        &mut ctx,
    )
    .unwrap_err();
    assert_eq!(err.code, "invalid_arguments", "{err:?}");
    let many: Vec<String> = (0..61).map(|i| format!("r{i}")).collect();
    let err = call_tool(
        "plot",
        json!({"labels": many, "values": vec![1.0; 61], "title": "t"})
            .as_object()
            .unwrap(),
        &mut ctx,
    )
    .unwrap_err();
    assert_eq!(err.code, "plot_too_many_points");
    assert!(err.message.contains("by reference"), "{}", err.message);
}

#[test]
fn a_chart_gives_its_bars_one_way_only() {
    let registry = ToolRegistry::builtin();
    for (args, ok) in [
        (json!({"column": "[Wait]", "title": "t"}), true),
        (json!({"labels": ["a"], "values": [1], "title": "t"}), true),
        (json!({"title": "t"}), false),
        (
            json!({"column": "[Wait]", "labels": ["a"], "values": [1], "title": "t"}),
            false,
        ),
        (
            json!({"column": "[Wait]", "values": [1], "title": "t"}),
            false,
        ),
        (json!({"labels": ["a"], "title": "t"}), false),
    ] {
        let result = registry.validate_arguments("plot", args.as_object().unwrap());
        assert_eq!(result.is_ok(), ok, "{args}: {result:?}");
        if let Err(e) = result {
            assert!(matches!(e, ArgumentError::Alternatives { .. }), "{e}");
            assert!(
                e.to_string()
                    .contains("give exactly one of column, or labels and values"),
                "{e}"
            );
        }
    }
}
