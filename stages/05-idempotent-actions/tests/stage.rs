//! The stage 05 seed tests: replay on a matching fingerprint, refusal on a
//! mismatching one, and refusal of an empty identity. Not a test of the runtime.

use std::cell::Cell;

use idempotent_actions::{IdempotencyError, IdempotencyRegistry};
use pretty_assertions::assert_eq;

#[test]
fn duplicate_request_returns_cached_result_without_side_effect() {
    let mut registry = IdempotencyRegistry::new();
    let calls = Cell::new(0);
    let write = || {
        calls.set(calls.get() + 1);
        "written"
    };

    let first = registry.execute_once("op-1", "hash-a", write).unwrap();
    let second = registry.execute_once("op-1", "hash-a", write).unwrap();

    assert_eq!(first, ("written", false));
    assert_eq!(second, ("written", true));
    assert_eq!(calls.get(), 1, "the side effect must run exactly once");
    assert_eq!(registry.len(), 1);
}

#[test]
fn reused_key_with_different_fingerprint_is_rejected() {
    let mut registry = IdempotencyRegistry::new();
    let calls = Cell::new(0);
    registry
        .execute_once("op-1", "hash-a", || {
            calls.set(calls.get() + 1);
            "first"
        })
        .unwrap();

    let error = registry
        .execute_once("op-1", "hash-b", || {
            calls.set(calls.get() + 1);
            "second"
        })
        .expect_err("a reused key with a different fingerprint must be refused, not replayed");

    assert_eq!(
        error,
        IdempotencyError::FingerprintMismatch {
            key: "op-1".to_owned(),
            stored: "hash-a".to_owned(),
            received: "hash-b".to_owned(),
        }
    );
    assert_eq!(
        calls.get(),
        1,
        "the refused request must not run its operation"
    );
    // The refusal leaves the first request's entry untouched.
    assert_eq!(
        registry.execute_once("op-1", "hash-a", || "third").unwrap(),
        ("first", true)
    );
}

#[test]
fn empty_identity_is_rejected() {
    let mut registry = IdempotencyRegistry::new();
    let calls = Cell::new(0);
    let operation = || {
        calls.set(calls.get() + 1);
        "value"
    };

    assert_eq!(
        registry.execute_once("", "hash-a", operation),
        Err(IdempotencyError::EmptyKey)
    );
    assert_eq!(
        registry.execute_once("op-1", "", operation),
        Err(IdempotencyError::EmptyFingerprint)
    );
    assert_eq!(
        calls.get(),
        0,
        "an operation without an identity must not run"
    );
    assert!(registry.is_empty());
}
