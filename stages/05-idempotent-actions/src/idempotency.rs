//! A registry keyed by idempotency key, guarded by the request fingerprint.

use std::collections::HashMap;
use std::convert::Infallible;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdempotencyError<E = Infallible> {
    #[error("idempotency key is required")]
    EmptyKey,
    #[error("request fingerprint is required")]
    EmptyFingerprint,
    /// Two different requests reused one key: refusing is the only safe answer.
    #[error(
        "request fingerprint does not match for key {key:?}: stored {stored:?}, got {received:?}"
    )]
    FingerprintMismatch {
        key: String,
        stored: String,
        received: String,
    },
    /// The operation itself failed; nothing was stored, so a later call may try again.
    #[error("operation failed: {0}")]
    Operation(E),
}

/// Key → (fingerprint, stored value).
#[derive(Debug, Clone)]
pub struct IdempotencyRegistry<V> {
    entries: HashMap<String, (String, V)>,
}

impl<V> Default for IdempotencyRegistry<V> {
    fn default() -> Self {
        Self {
            entries: HashMap::new(),
        }
    }
}

impl<V: Clone> IdempotencyRegistry<V> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Runs `operation` the first time `key` is seen; afterwards returns the stored
    /// value without running it. The flag is `true` when the value was replayed.
    pub fn execute_once(
        &mut self,
        key: &str,
        fingerprint: &str,
        operation: impl FnOnce() -> V,
    ) -> Result<(V, bool), IdempotencyError> {
        self.try_execute_once(key, fingerprint, || Ok::<V, Infallible>(operation()))
    }

    /// Like [`Self::execute_once`] for operations that can fail. A failure is not
    /// stored, so no orphan entry is left behind.
    pub fn try_execute_once<E>(
        &mut self,
        key: &str,
        fingerprint: &str,
        operation: impl FnOnce() -> Result<V, E>,
    ) -> Result<(V, bool), IdempotencyError<E>> {
        if key.is_empty() {
            return Err(IdempotencyError::EmptyKey);
        }
        if fingerprint.is_empty() {
            return Err(IdempotencyError::EmptyFingerprint);
        }
        if let Some((stored, value)) = self.entries.get(key) {
            if stored != fingerprint {
                return Err(IdempotencyError::FingerprintMismatch {
                    key: key.to_owned(),
                    stored: stored.clone(),
                    received: fingerprint.to_owned(),
                });
            }
            return Ok((value.clone(), true));
        }
        let value = operation().map_err(IdempotencyError::Operation)?;
        self.entries
            .insert(key.to_owned(), (fingerprint.to_owned(), value.clone()));
        Ok((value, false))
    }
}
