//! `oxydra-tui`: the terminal chat client.
//!
//! `oxydra-tui --url ws://127.0.0.1:PORT --user U --token-file PATH [--session ID]`, or
//! `oxydra-tui --user U --workspace <root>/<user>` to read both from the workspace.

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = tui::Args::parse();
    let target = args.resolve()?;
    tui::run(target).await?;
    Ok(())
}
