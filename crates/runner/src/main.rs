//! `runner`: the operator's command. Today it manages a user's memory (`runner memory ...`) and
//! prints the tool catalogue (`runner tools --json`); provisioning and tiers build on the same CLI.

mod cli;
mod memory_cmd;
mod tools_cmd;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    init_tracing(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&anyhow::Error::new(e).context("cannot start the async runtime")),
    };
    let result = runtime.block_on(async move {
        match cli.command {
            cli::Command::Memory(args) => memory_cmd::run(args).await,
            cli::Command::Tools { json } => tools_cmd::run(json),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// One line on stderr, the cause chain joined, then a non-zero exit.
fn fail(error: &anyhow::Error) -> ExitCode {
    let line: Vec<String> = error.chain().map(ToString::to_string).collect();
    #[allow(
        clippy::print_stderr,
        reason = "the CLI reports its one-line error on stderr"
    )]
    {
        eprintln!("error: {}", line.join(": "));
    }
    ExitCode::FAILURE
}

fn init_tracing(verbose: bool) {
    let default = if verbose { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("OXYDRA_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
