//! Transfer challenge: the same loop state, music-release data instead of software delivery.
//!
//! Runs on the solution only.

use observation_state::{LoopState, ObservationStatus, StateError};
use pretty_assertions::assert_eq;

#[derive(Debug, Clone, PartialEq)]
enum Release {
    Track(&'static str),
    HttpStatus(u16),
}

#[test]
fn music_release_keeps_going_after_a_publish_503() {
    let mut state = LoopState::new();

    let lookup = state
        .record("lookup", ObservationStatus::Ok, Release::Track("song-a"))
        .expect("lookup recorded")
        .clone();
    let publish = state
        .record(
            "publish",
            ObservationStatus::RetryableError,
            Release::HttpStatus(503),
        )
        .expect("503 recorded")
        .clone();

    assert_eq!(
        (lookup.sequence(), lookup.tool_name(), lookup.status()),
        (1, "lookup", ObservationStatus::Ok)
    );
    assert_eq!(lookup.payload(), &Release::Track("song-a"));
    assert_eq!(
        (publish.sequence(), publish.tool_name(), publish.status()),
        (2, "publish", ObservationStatus::RetryableError)
    );
    assert!(!state.terminal());
    assert_eq!(state.observations().len(), 2);
}

#[test]
fn music_release_retry_succeeds_as_the_third_observation() {
    let mut state = LoopState::new();
    state
        .record("lookup", ObservationStatus::Ok, Release::Track("song-a"))
        .expect("lookup");
    state
        .record(
            "publish",
            ObservationStatus::RetryableError,
            Release::HttpStatus(503),
        )
        .expect("503");

    let retry = state
        .record("publish", ObservationStatus::Ok, Release::HttpStatus(201))
        .expect("retry recorded");

    assert_eq!(
        (retry.sequence(), retry.status()),
        (3, ObservationStatus::Ok)
    );
    assert!(!state.terminal());
}

#[test]
fn music_release_stops_when_the_label_denies_publishing() {
    let mut state = LoopState::new();
    state
        .record("lookup", ObservationStatus::Ok, Release::Track("song-a"))
        .expect("lookup");
    state
        .record(
            "publish",
            ObservationStatus::RetryableError,
            Release::HttpStatus(503),
        )
        .expect("503");
    state
        .record(
            "publish",
            ObservationStatus::FatalError,
            Release::HttpStatus(403),
        )
        .expect("403 recorded");

    assert!(state.terminal());
    let error = state
        .record("publish", ObservationStatus::Ok, Release::HttpStatus(201))
        .expect_err("a denied release is final");
    assert_eq!(
        error,
        StateError::Terminal {
            tool_name: "publish".to_owned()
        }
    );
    assert_eq!(state.observations().len(), 3);
}
