//! `cargo xtask model …`, `bench` (model part) and `eval` — owned by the llama helper (placeholder).

pub fn run(args: &[String]) -> anyhow::Result<()> {
    anyhow::bail!("model verbs are not implemented yet: {args:?}")
}
