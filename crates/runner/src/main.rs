//! `runner`: provisions users and launches their guests. (Being built: see docs/ARCHITECTURE.md.)

fn main() -> anyhow::Result<()> {
    anyhow::bail!("runner: not built yet")
}
