//! One test per `IdempotencyError` variant (value and Display text), plus the
//! edge cases of failed operations and independent keys. Not the seed tests.

use std::cell::Cell;

use idempotent_actions::{IdempotencyError, IdempotencyRegistry};
use pretty_assertions::assert_eq;

#[test]
fn empty_key_is_refused_with_a_clear_message() {
    let mut registry = IdempotencyRegistry::<&str>::new();
    let error = registry.execute_once("", "hash-a", || "value").unwrap_err();
    assert_eq!(error, IdempotencyError::EmptyKey);
    assert_eq!(error.to_string(), "idempotency key is required");
}

#[test]
fn empty_key_is_reported_before_empty_fingerprint() {
    let mut registry = IdempotencyRegistry::<&str>::new();
    assert_eq!(
        registry.execute_once("", "", || "value"),
        Err(IdempotencyError::EmptyKey)
    );
}

#[test]
fn empty_fingerprint_is_refused_with_a_clear_message() {
    let mut registry = IdempotencyRegistry::<&str>::new();
    let error = registry.execute_once("op-1", "", || "value").unwrap_err();
    assert_eq!(error, IdempotencyError::EmptyFingerprint);
    assert_eq!(error.to_string(), "request fingerprint is required");
}

#[test]
fn fingerprint_mismatch_message_carries_key_and_both_fingerprints() {
    let error: IdempotencyError = IdempotencyError::FingerprintMismatch {
        key: "op-1".to_owned(),
        stored: "hash-a".to_owned(),
        received: "hash-b".to_owned(),
    };
    assert_eq!(
        error.to_string(),
        r#"request fingerprint does not match for key "op-1": stored "hash-a", got "hash-b""#
    );
}

#[test]
fn failed_operation_is_reported_and_not_stored() {
    let mut registry = IdempotencyRegistry::<String>::new();
    let error = registry
        .try_execute_once("op-1", "hash-a", || Err::<String, _>("disk full"))
        .unwrap_err();
    assert_eq!(error, IdempotencyError::Operation("disk full"));
    assert_eq!(error.to_string(), "operation failed: disk full");
    assert!(
        registry.is_empty(),
        "a failure must not leave an orphan entry"
    );
}

#[test]
fn key_can_be_retried_after_a_failed_operation() {
    let mut registry = IdempotencyRegistry::<String>::new();
    let calls = Cell::new(0);
    let _ = registry.try_execute_once("op-1", "hash-a", || {
        calls.set(calls.get() + 1);
        Err::<String, _>("timeout")
    });

    let retried = registry.try_execute_once("op-1", "hash-a", || {
        calls.set(calls.get() + 1);
        Ok::<_, &str>("written".to_owned())
    });

    assert_eq!(retried, Ok(("written".to_owned(), false)));
    assert_eq!(calls.get(), 2);
    assert_eq!(registry.len(), 1);
}

#[test]
fn different_keys_are_independent_slots() {
    let mut registry = IdempotencyRegistry::new();
    assert_eq!(
        registry.execute_once("op-1", "hash-a", || 1).unwrap(),
        (1, false)
    );
    assert_eq!(
        registry.execute_once("op-2", "hash-a", || 2).unwrap(),
        (2, false)
    );
    assert_eq!(
        registry.execute_once("op-2", "hash-a", || 3).unwrap(),
        (2, true)
    );
    assert_eq!(registry.len(), 2);
    assert!(!registry.is_empty());
}

#[test]
fn a_fresh_registry_is_empty() {
    let registry = IdempotencyRegistry::<u8>::default();
    assert!(registry.is_empty());
    assert_eq!(registry.len(), 0);
}
