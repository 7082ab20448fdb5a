//! `runner --tui --user U`: replaces the runner with `oxydra-tui` on that user's running agent
//! (the TUI finds the endpoint in `.oxydra/gateway.json` and the token in `.oxydra/gateway.token`).

use std::os::unix::process::CommandExt;
use std::process::Command;

use anyhow::{Context, Result, bail};
use types::WorkspacePaths;

use crate::Global;

pub fn run(global: &Global) -> Result<()> {
    let config = global.runner_config()?;
    let users = config.select(global.user.as_deref())?;
    let [user] = users.as_slice() else {
        bail!("--tui talks to one user's agent: pass --user <id>");
    };
    let ws = WorkspacePaths::for_user(&config.workspace_root, &user.id);
    if !ws.endpoint().is_file() {
        let insecure = match user.tier {
            runner::Tier::Process => "--insecure ",
            runner::Tier::Container => "",
        };
        bail!(
            "{} is not running: start the agent first with `runner {insecure}--user {} start \
             --detach`",
            user.id,
            user.id
        );
    }
    let tls = runner::read_json::<runner::GatewayMarker>(&ws.endpoint())
        .ok()
        .flatten()
        .is_some_and(|m| m.tls());
    if tls {
        bail!(
            "{}'s gateway serves TLS ([gateway] tls_cert), which the TUI does not speak yet: use \
             the web client (`runner --user {} open`)",
            user.id,
            user.id
        );
    }
    let tui = runner::guest_binary("oxydra-tui")?;
    // `exec` only returns on failure.
    let error = Command::new(&tui)
        .arg("--user")
        .arg(user.id.as_str())
        .arg("--workspace")
        .arg(&ws.root)
        .exec();
    Err(error).with_context(|| format!("cannot start {}", tui.display()))
}
