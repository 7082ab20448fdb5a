//! `runner init`: writes `runner.toml` (with one user) and `agent.toml` from the examples shipped
//! in the binary, refusing to overwrite either, and provisions the user's workspace.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use runner::{CONFIG_FILE_NAME, RunnerConfig, Tier, provision};
use types::UserId;

use crate::Global;
use crate::cli::TierArg;
use crate::out::say;

const RUNNER_EXAMPLE: &str = include_str!("../../../runner.toml.example");
const AGENT_EXAMPLE: &str = include_str!("../../../agent.toml.example");
/// The user entry of the example, replaced by the chosen user.
const EXAMPLE_USER: &str = "[users.alice]";

pub fn run(global: &Global, workspace_root: Option<PathBuf>, tier: Option<TierArg>) -> Result<()> {
    let config_path = global
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from(CONFIG_FILE_NAME));
    let dir = config_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_owned();
    let agent_path = dir.join("agent.toml");
    for path in [&config_path, &agent_path] {
        if path.exists() {
            bail!(
                "{} already exists; edit it, or remove it to start over",
                path.display()
            );
        }
    }
    let user = pick_user(global.user.as_deref())?;
    let mut runner_text = RUNNER_EXAMPLE.replace(EXAMPLE_USER, &format!("[users.{user}]"));
    if let Some(root) = &workspace_root {
        let line = format!(
            "workspace_root = {}",
            toml_string(&root.display().to_string())
        );
        runner_text = runner_text.replace("workspace_root = \"workspaces\"", &line);
    }
    if tier == Some(TierArg::Process) {
        runner_text = runner_text.replace("tier = \"container\"", "tier = \"process\"");
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    write_new(&config_path, &runner_text)?;
    write_new(&agent_path, AGENT_EXAMPLE)?;
    let config = RunnerConfig::load(&config_path)?;
    let ws = provision(&config.workspace_root, &user)?;
    say(format!(
        "wrote {} and {}",
        config_path.display(),
        agent_path.display()
    ));
    say(format!("provisioned {}", ws.root.display()));
    say("next: set [provider] in agent.toml (and export its API key), then:");
    match config.tier {
        Tier::Container => {
            say("  scripts/build-guest-images.sh      (once: builds the container images)");
            say(format!("  runner --user {user} start"));
        }
        Tier::Process => say(format!("  runner --insecure --user {user} start")),
    }
    Ok(())
}

/// `--user`, else `$USER` when it is a valid user id, else `me`.
fn pick_user(explicit: Option<&str>) -> Result<UserId> {
    if let Some(name) = explicit {
        return UserId::parse(name).with_context(|| format!("invalid --user `{name}`"));
    }
    let from_env = std::env::var("USER")
        .ok()
        .and_then(|u| UserId::parse(&u).ok());
    Ok(match from_env {
        Some(id) => id,
        None => UserId::parse("me")?,
    })
}

fn write_new(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}
