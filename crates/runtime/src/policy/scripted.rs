//! Scripted policy (tests only) — placeholder.
