//! No build step: this script exists so `[build-dependencies]` can pin host features (see Cargo.toml) — the
//! runner's build shares the test command's units, so `scripts/start.sh` after the tests compiles little.

fn main() {}
