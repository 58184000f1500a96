//! Forge's agent runtime (skeleton: the runtime helper fills this in).

pub mod policy;
