//! The claims gate, probed without a model over the whole suite: it verifies the right answers it can read and
//! certifies none of the wrong ones made from them (the verdict flipped, a row or a value swapped).

mod common;

use runtime::gate_probe::{Tally, probe_all};

#[test]
fn over_the_suite_the_gate_certifies_no_wrong_answer_and_verifies_the_right_ones() {
    let tally = probe_all(
        &common::fixtures_dir().join("tasks"),
        &common::knowledge_dir(),
        false,
    )
    .expect("the suite folder reads");
    assert!(
        tally.certified_wrong.is_empty(),
        "{:#?}",
        tally.certified_wrong
    );
    let [verified, abstained, disputed, refused] = tally.right;
    // Measured at stop 56: 70 probed, every right answer of the 68 that answer verified, 207 wrong answers, none
    // certified. Two tasks abstain by design (no rule; an annual rule over a quarter's table): each verdict
    // option stated is a wrong answer, and before stop 56 the annual rule's "met" was certified.
    // A right answer abstained is a suite shape the gate stopped reading (at stop 49 the pence, "15 % above last
    // season's 80 kg" and count-after-rows tasks were three); one disputed is a reading that refuses the truth.
    assert!(
        tally.tasks >= 70 && verified >= 68 && abstained == 0 && disputed == 0 && refused == 0,
        "{tally:?}"
    );
    assert!(tally.abstaining >= 2, "{tally:?}");
    assert!(tally.wrong.iter().sum::<usize>() >= 200, "{tally:?}");
}

#[test]
fn over_the_probe_folders_the_gate_certifies_no_wrong_answer() {
    // Folders written by sessions that never read the code (fixtures/probe/README.md): the gate may abstain
    // on what it cannot read, never verify a wrong answer.
    let probe = common::fixtures_dir().join("probe");
    let tally = probe_all(&probe.join("tasks"), &probe.join("knowledge"), false)
        .expect("the probe folders read");
    assert!(
        tally.certified_wrong.is_empty(),
        "{:#?}",
        tally.certified_wrong
    );
    // Measured at stop 51: 74 of 91 probed (the rest ask for what no aggregate computes: a median, a weighted
    // mean, a duration in mm:ss), 34 right answers verified (38 abstained, 2 disputed), 225 wrong answers made,
    // none verified. Of the six folders stop 51 added, four (a limit on the rows a text column's value names;
    // points with no base; "all but one") had their flipped verdicts certified before it, and two (a total row
    // labelled "全区" or "Σ") could not be probed: the total was read as a row.
    // Stop 56: 94 of 110 probed (3 abstaining by design, each verdict option stated), 51 right answers verified,
    // 40 abstained, 282 wrong answers, none verified; an annual rule over a quarter's table had its "达标" certified
    // before that stop.
    assert!(tally.tasks >= 90, "{tally:?}");
    assert!(tally.abstaining >= 3, "{tally:?}");
    assert!(tally.wrong.iter().sum::<usize>() >= 270, "{tally:?}");
}

#[test]
fn a_folder_that_cannot_be_probed_is_named_and_a_missing_suite_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken_task");
    std::fs::create_dir(&broken).unwrap();
    std::fs::write(broken.join("task.json"), "{ not json").unwrap();
    let tally: Tally = probe_all(dir.path(), &common::knowledge_dir(), false).unwrap();
    assert_eq!(tally.tasks, 0);
    assert_eq!(tally.skipped.len(), 1, "{tally:?}");
    assert!(tally.skipped[0].starts_with("broken_task: "), "{tally:?}");
    assert!(probe_all(&dir.path().join("absent"), &common::knowledge_dir(), false).is_err());
}
