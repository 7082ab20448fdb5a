//! SIGINT and SIGTERM as an event to await. `start` listens before it launches anything, so a
//! Ctrl+C that lands while guests are being created stops them instead of killing the runner
//! with the default action and orphaning them.

use anyhow::{Context, Result};
use futures::FutureExt;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The exit status of a command stopped by Ctrl+C before it finished (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// SIGINT and SIGTERM, listened for from creation on.
#[derive(Debug)]
pub struct Interrupt {
    int: Signal,
    term: Signal,
}

impl Interrupt {
    pub fn listen() -> Result<Self> {
        Ok(Self {
            int: signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?,
            term: signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?,
        })
    }

    /// Waits for the next signal; its name.
    pub async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.int.recv() => "SIGINT",
            _ = self.term.recv() => "SIGTERM",
        }
    }

    /// A signal that already arrived, without waiting.
    pub fn arrived(&mut self) -> Option<&'static str> {
        self.recv().now_or_never()
    }
}

/// A command stopped by SIGINT or SIGTERM before it was done, after undoing what it began; the
/// runner exits with [`EXIT_INTERRUPTED`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Interrupted(pub String);
