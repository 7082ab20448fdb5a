//! Command-line surface of `runner` (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "runner",
    version,
    about = "Oxydra runner: per-user agents, their memory and tools"
)]
pub struct Cli {
    /// Log progress (also settable with OXYDRA_LOG=info|debug).
    #[arg(long, short, global = true)]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read and change a user's memory directly (the same store the memory tools use).
    Memory(MemoryArgs),
    /// List every built-in tool the model can be offered.
    Tools {
        /// Print JSON (name, description, parameters schema, safety tier, timeout) for scripts.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// The workspace root holding one directory per user.
    #[arg(long)]
    pub root: PathBuf,
    /// The user whose memory to use.
    #[arg(long)]
    pub user: String,
    /// agent.toml to read [memory] and [retrieval] from (defaults apply without it).
    #[arg(long = "agent-config")]
    pub agent_config: Option<PathBuf>,
    #[command(subcommand)]
    pub action: MemoryAction,
}

#[derive(Debug, Subcommand)]
pub enum MemoryAction {
    /// Save a note; prints {"note_id": ...}.
    Save { text: String },
    /// Search the user's notes.
    Search {
        query: String,
        #[arg(long = "top-k")]
        top_k: Option<usize>,
        /// Print a JSON array instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Print one note as JSON.
    Get { note_id: String },
    /// Replace a note's text, keeping its id.
    Update { note_id: String, text: String },
    /// Delete a note.
    Delete { note_id: String },
    /// Counts and sizes, as JSON.
    Stats,
    /// Re-embed every stored chunk with the configured model.
    Reindex,
    /// Write every note as JSON Lines to stdout.
    Export,
    /// Read notes as JSON Lines (from a file, or stdin when none is given); keeps their ids.
    Import { file: Option<PathBuf> },
}
