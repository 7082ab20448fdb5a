//! `runner images build|status` (placeholder until the image builder lands).

use anyhow::{Result, bail};

use crate::Global;
use crate::cli::ImagesCommand;

pub async fn run(_global: &Global, _command: ImagesCommand) -> Result<()> {
    bail!("runner images is not implemented yet")
}
