//! One test per `StateError` variant (value and Display text), plus edge cases of the status
//! set and of a refused record.
//!
//! These also run with the fault swapped in, so none of them records anything after a
//! retryable error.

use std::str::FromStr;

use observation_state::{LoopState, ObservationStatus, StateError};
use pretty_assertions::assert_eq;

#[test]
fn terminal_error_names_the_refused_tool() {
    let mut state = LoopState::new();
    state
        .record("write", ObservationStatus::FatalError, "permission denied")
        .expect("fatal result is recorded");

    let error = state
        .record("deploy", ObservationStatus::Ok, "done")
        .expect_err("state is terminal");

    assert_eq!(
        error,
        StateError::Terminal {
            tool_name: "deploy".to_owned()
        }
    );
    assert_eq!(
        error.to_string(),
        "loop state is terminal: cannot record deploy after a fatal error"
    );
}

#[test]
fn refused_record_loses_nothing_and_changes_nothing() {
    let mut state = LoopState::new();
    state
        .record("read", ObservationStatus::Ok, "main.py")
        .expect("first");
    state
        .record("write", ObservationStatus::FatalError, "permission denied")
        .expect("fatal");
    let before = state.clone();

    for status in ObservationStatus::ALL {
        let error = state
            .record("read", status, "again")
            .expect_err("every status is refused once terminal");
        assert_eq!(
            error,
            StateError::Terminal {
                tool_name: "read".to_owned()
            }
        );
    }

    assert_eq!(state, before);
    let sequences: Vec<usize> = state
        .observations()
        .iter()
        .map(|observation| observation.sequence())
        .collect();
    assert_eq!(sequences, vec![1, 2]);
}

#[test]
fn unknown_status_is_rejected_with_its_text() {
    let error = ObservationStatus::from_str("retry").expect_err("retry is not a status");

    assert_eq!(error, StateError::UnknownStatus("retry".to_owned()));
    assert_eq!(
        error.to_string(),
        "unknown observation status \"retry\" (expected ok, retryable_error or fatal_error)"
    );
}

#[test]
fn status_parsing_is_exact() {
    // Near misses are not quietly accepted: case, padding and the empty string all fail.
    for text in ["OK", " ok", "ok ", "", "fatal", "retryable-error", "error"] {
        assert_eq!(
            text.parse::<ObservationStatus>(),
            Err(StateError::UnknownStatus(text.to_owned())),
            "{text:?} must not parse"
        );
    }
}

#[test]
fn every_status_round_trips_through_its_text() {
    let texts: Vec<&str> = ObservationStatus::ALL
        .iter()
        .map(|status| status.as_str())
        .collect();
    assert_eq!(texts, vec!["ok", "retryable_error", "fatal_error"]);

    for status in ObservationStatus::ALL {
        assert_eq!(status.to_string().parse::<ObservationStatus>(), Ok(status));
    }
}

#[test]
fn only_fatal_error_is_a_terminal_status() {
    let terminal: Vec<ObservationStatus> = ObservationStatus::ALL
        .into_iter()
        .filter(|status| status.is_terminal())
        .collect();

    assert_eq!(terminal, vec![ObservationStatus::FatalError]);
}

#[test]
fn new_state_is_empty_and_running() {
    let state: LoopState<()> = LoopState::new();

    assert!(state.observations().is_empty());
    assert!(!state.terminal());
    assert_eq!(state, LoopState::default());
}

#[test]
fn fatal_error_after_ok_results_keeps_the_history() {
    let mut state = LoopState::new();
    state
        .record("read", ObservationStatus::Ok, 1_u32)
        .expect("first");
    state
        .record("search", ObservationStatus::Ok, 2_u32)
        .expect("second");
    state
        .record("write", ObservationStatus::FatalError, 3_u32)
        .expect("fatal");

    let history: Vec<(usize, String, ObservationStatus, u32)> = state
        .into_observations()
        .into_iter()
        .map(|o| {
            (
                o.sequence(),
                o.tool_name().to_owned(),
                o.status(),
                *o.payload(),
            )
        })
        .collect();
    assert_eq!(
        history,
        vec![
            (1, "read".to_owned(), ObservationStatus::Ok, 1),
            (2, "search".to_owned(), ObservationStatus::Ok, 2),
            (3, "write".to_owned(), ObservationStatus::FatalError, 3),
        ]
    );
}
