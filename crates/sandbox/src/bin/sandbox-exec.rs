//! `sandbox-exec`: confine yourself as a role, then become a program.
//!
//! ```text
//! sandbox-exec --role shell-vm|oxydra-vm --workspace <root>/<user> [--ro PATH]...
//!              [--allow-unconfined] -- PROGRAM [ARGS...]
//! ```
//!
//! The launcher the process tier can put in front of any binary (it is single-threaded, so the
//! Landlock ruleset covers everything it execs), and the helper the sandbox tests run. Without
//! `--allow-unconfined` it refuses to run PROGRAM when the kernel enforces nothing.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use sandbox::guest::{Confined, GuestPolicy, Unenforced, decide};
use sandbox::{Role, confine};
use types::WorkspacePaths;

struct Args {
    role: Role,
    workspace: PathBuf,
    extra: Vec<PathBuf>,
    allow_unconfined: bool,
    program: Vec<String>,
}

const USAGE: &str = "usage: sandbox-exec --role shell-vm|oxydra-vm --workspace DIR [--ro PATH]... \
                     [--allow-unconfined] -- PROGRAM [ARGS...]";

fn parse(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut role, mut workspace, mut extra, mut allow_unconfined) = (None, None, vec![], false);
    while let Some(arg) = argv.next() {
        match arg.as_str() {
            "--role" => role = Some(argv.next().ok_or(USAGE)?.parse::<Role>()?),
            "--workspace" => workspace = Some(PathBuf::from(argv.next().ok_or(USAGE)?)),
            "--ro" => extra.push(PathBuf::from(argv.next().ok_or(USAGE)?)),
            "--allow-unconfined" => allow_unconfined = true,
            "--" => break,
            other => return Err(format!("unexpected argument `{other}`\n{USAGE}")),
        }
    }
    let program: Vec<String> = argv.collect();
    match (role, workspace, program.is_empty()) {
        (Some(role), Some(workspace), false) => Ok(Args {
            role,
            workspace,
            extra,
            allow_unconfined,
            program,
        }),
        _ => Err(USAGE.to_owned()),
    }
}

fn run() -> Result<(), String> {
    let args = parse(std::env::args().skip(1))?;
    let ws = WorkspacePaths::new(&args.workspace);
    let confinement = confine(args.role, &ws, &args.extra).map_err(|e| error_chain(&e))?;
    // The guests' decision table (`sandbox::guest`), outside any container.
    let policy = GuestPolicy {
        container: false,
        unenforced: if args.allow_unconfined {
            Unenforced::RunLoudly
        } else {
            Unenforced::Refuse
        },
    };
    let confined = decide(args.role, confinement.enforcement, policy).map_err(|e| e.to_string())?;
    if confined == Confined::Unconfined {
        warn("WARNING: running UNCONFINED (--allow-unconfined): Landlock is not available");
    }
    let (program, rest) = args.program.split_at(1);
    let error = Command::new(&program[0]).args(rest).exec();
    Err(format!("cannot run {}: {error}", program[0]))
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

#[allow(
    clippy::print_stderr,
    reason = "a launcher reports to its caller on stderr"
)]
fn warn(message: &str) {
    eprintln!("sandbox-exec: {message}");
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            warn(&message);
            ExitCode::from(126)
        }
    }
}
