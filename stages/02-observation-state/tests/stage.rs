//! The stage's three core tests: contiguous sequence numbers, a retryable error that keeps
//! the loop going, a fatal error that ends it.
//!
//! These run with the fault swapped in; only `retryable_error_does_not_end_the_loop` may fail then.

use observation_state::{LoopState, ObservationStatus, StateError};
use pretty_assertions::assert_eq;

/// What the tests record as payloads: the shapes a tool result takes in the seed's examples.
#[derive(Debug, Clone, PartialEq)]
enum Payload {
    Text(&'static str),
    Code(u16),
    Denied,
}

#[test]
fn observations_receive_contiguous_sequence_numbers() {
    let mut state = LoopState::new();

    let first = state
        .record("read", ObservationStatus::Ok, Payload::Text("main.py"))
        .expect("first record")
        .sequence();
    let second = state
        .record("search", ObservationStatus::Ok, Payload::Text("fn main"))
        .expect("second record")
        .sequence();
    let third = state
        .record("write", ObservationStatus::Ok, Payload::Text("main.py"))
        .expect("third record")
        .sequence();

    assert_eq!((first, second, third), (1, 2, 3));
    let recorded: Vec<(usize, &str)> = state
        .observations()
        .iter()
        .map(|observation| (observation.sequence(), observation.tool_name()))
        .collect();
    assert_eq!(recorded, vec![(1, "read"), (2, "search"), (3, "write")]);
    assert!(!state.terminal(), "ok results never end the loop");
}

#[test]
fn retryable_error_does_not_end_the_loop() {
    let mut state = LoopState::new();
    state
        .record("read", ObservationStatus::Ok, Payload::Text("main.py"))
        .expect("first record");

    let observation = state
        .record(
            "search",
            ObservationStatus::RetryableError,
            Payload::Code(503),
        )
        .expect("a retryable error is recorded like any other result");
    assert_eq!(observation.sequence(), 2);
    assert_eq!(observation.status(), ObservationStatus::RetryableError);
    assert_eq!(observation.payload(), &Payload::Code(503));

    assert!(
        !state.terminal(),
        "a retryable error (503) must leave the loop running so it can retry or replan, but the state became terminal"
    );
    let retried = state
        .record("search", ObservationStatus::Ok, Payload::Text("fn main"))
        .expect("after a retryable error the loop may record the retry");
    assert_eq!(retried.sequence(), 3);
}

#[test]
fn fatal_error_is_terminal() {
    let mut state = LoopState::new();

    let observation = state
        .record("write", ObservationStatus::FatalError, Payload::Denied)
        .expect("the fatal result itself is recorded");
    assert_eq!(observation.sequence(), 1);
    assert!(state.terminal(), "a fatal error must end the loop");

    let error = state
        .record("read", ObservationStatus::Ok, Payload::Text("main.py"))
        .expect_err("nothing may be recorded after a fatal error");
    assert_eq!(
        error,
        StateError::Terminal {
            tool_name: "read".to_owned()
        }
    );
    assert_eq!(state.observations().len(), 1);
}
