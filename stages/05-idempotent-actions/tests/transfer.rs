//! Transfer challenge (office research): a decision brief requested twice, then
//! a different brief under the same key. Runs on the solution only.

use std::cell::Cell;

use idempotent_actions::{IdempotencyError, IdempotencyRegistry};
use pretty_assertions::assert_eq;

#[test]
fn repeated_brief_request_is_drafted_once_and_a_different_brief_is_refused() {
    let mut registry = IdempotencyRegistry::new();
    let drafts = Cell::new(0);
    let draft = || {
        drafts.set(drafts.get() + 1);
        "brief-draft"
    };

    assert_eq!(
        registry.execute_once("brief-1", "fp-alpha", draft).unwrap(),
        ("brief-draft", false)
    );
    assert_eq!(
        registry.execute_once("brief-1", "fp-alpha", draft).unwrap(),
        ("brief-draft", true)
    );
    assert_eq!(drafts.get(), 1);

    let refused = registry
        .execute_once("brief-1", "fp-beta", || "other")
        .unwrap_err();
    assert_eq!(
        refused,
        IdempotencyError::FingerprintMismatch {
            key: "brief-1".to_owned(),
            stored: "fp-alpha".to_owned(),
            received: "fp-beta".to_owned(),
        }
    );
    assert!(refused.to_string().contains("does not match"));
}
