//! `runner init`: writes `runner.toml` (with one user) and `agent.toml` from the examples shipped
//! in the binary and provisions the user's workspace; on an existing `runner.toml` it adds the
//! user instead (appending their table, leaving every other byte of the file as it was). An
//! `agent.toml` already there (a user who copied the example and chose a model) is kept; a new
//! one takes the provider from `--provider …` or from questions on a terminal (`init_provider`),
//! whose key is checked with one request before anything is written.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use runner::{CONFIG_FILE_NAME, RunnerConfig, Tier, provision};
use types::UserId;

use crate::Global;
use crate::args::TierArg;
use crate::init_provider::{self, Choice, ProviderFlags};
use crate::out::say;

const RUNNER_EXAMPLE: &str = include_str!("../../../../runner.toml.example");
const AGENT_EXAMPLE: &str = include_str!("../../../../agent.toml.example");
/// The user entry of the example, replaced by the chosen user.
const EXAMPLE_USER: &str = "[users.alice]";

pub async fn run(
    global: &Global,
    workspace_root: Option<PathBuf>,
    tier: Option<TierArg>,
    provider: ProviderFlags,
) -> Result<()> {
    let config_path = global
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from(CONFIG_FILE_NAME));
    if config_path.exists() {
        if provider.any() {
            bail!(
                "{} already exists: --provider, --model, --base-url and --api-key-env only shape a \
                 new agent.toml; edit [provider] in the agent.toml it uses instead",
                config_path.display()
            );
        }
        if workspace_root.is_some() {
            bail!(
                "{} already exists: --workspace-root only shapes a new file; edit \
                 `workspace_root` in it instead",
                config_path.display()
            );
        }
        return add_user(global, &config_path, tier);
    }
    let dir = config_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_owned();
    let agent_path = dir.join("agent.toml");
    let user = pick_user(global.user.as_deref())?;
    let kept = agent_path.exists();
    let choice = if kept {
        if provider.any() {
            bail!(
                "{} already exists: edit its [provider] instead of passing --provider (or remove \
                 it to start over)",
                agent_path.display()
            );
        }
        // An edited file with a mistake is reported now, with its line and key.
        runner::load_agent_config(Some(&agent_path))?;
        None
    } else {
        init_provider::choose(&provider)?
    };
    if let Some(choice) = &choice
        && !provider.no_check
    {
        init_provider::check_key(choice).await?;
    }
    let mut runner_text = RUNNER_EXAMPLE.replace(EXAMPLE_USER, &user_table(&user));
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
    let agent_text = match &choice {
        Some(choice) => Some(init_provider::agent_toml(AGENT_EXAMPLE, choice)?),
        None if kept => None,
        None => Some(AGENT_EXAMPLE.to_owned()),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    write_new(&config_path, &runner_text)?;
    if let Some(text) = &agent_text {
        write_new(&agent_path, text)?;
    }
    let config = RunnerConfig::load(&config_path)?;
    let ws = provision(&config.workspace_root, &user)?;
    report_written(&config_path, &agent_path, kept, choice.as_ref());
    say(format!("provisioned {}", ws.root.display()));
    if !kept && choice.is_none() {
        say("next: set [provider] in agent.toml (and export its API key), then:");
    } else {
        say("next:");
    }
    next_steps(&config, &user);
    Ok(())
}

fn report_written(config_path: &Path, agent_path: &Path, kept: bool, choice: Option<&Choice>) {
    if kept {
        say(format!(
            "wrote {}; kept your {}",
            config_path.display(),
            agent_path.display()
        ));
        return;
    }
    say(format!(
        "wrote {} and {}",
        config_path.display(),
        agent_path.display()
    ));
    if let Some(choice) = choice {
        say(format!("  model: {}", choice.describe()));
    }
}

/// Adds `--user` to the existing `runner.toml` at `path`: appends `[users.<id>]` (with `tier`
/// when one was asked for; the rest of the file is kept byte for byte) and provisions the
/// workspace.
fn add_user(global: &Global, path: &Path, tier: Option<TierArg>) -> Result<()> {
    let Some(name) = global.user.as_deref() else {
        bail!(
            "{} already exists; add a user with `runner --user NAME init`, or edit it",
            path.display()
        );
    };
    let user = pick_user(Some(name))?;
    let config = RunnerConfig::load(path)?;
    if config.users.iter().any(|u| u.id == user) {
        bail!(
            "user {user} already exists in {}; start them with `runner --user {user} start`",
            path.display()
        );
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let separator = if text.is_empty() || text.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    let table = match tier {
        Some(tier) => format!(
            "{}\ntier = \"{}\"",
            user_table(&user),
            Tier::from(tier).name()
        ),
        None => user_table(&user),
    };
    let updated = format!("{text}{separator}\n{table}\n");
    // The file must still parse and now name the user (e.g. not when `users` is an inline table).
    let check = RunnerConfig::parse(&updated, &config.path);
    if !check.is_ok_and(|c| c.users.iter().any(|u| u.id == user)) {
        bail!(
            "cannot add {user} to {} by appending a [users] table; add `{}` there by hand",
            path.display(),
            user_table(&user)
        );
    }
    write_atomic(path, &updated)?;
    let ws = provision(&config.workspace_root, &user)?;
    let config = RunnerConfig::load(path)?;
    say(format!("added {user} to {}", path.display()));
    say(format!("provisioned {}", ws.root.display()));
    next_steps(&config, &user);
    Ok(())
}

fn next_steps(config: &RunnerConfig, user: &UserId) {
    let tier = config
        .users
        .iter()
        .find(|u| &u.id == user)
        .map_or(config.tier, |u| u.tier);
    match tier {
        Tier::Container => {
            say("  scripts/build-guest-images.sh      (once: builds the container images)");
            say(format!("  runner --user {user} start"));
        }
        Tier::Process => say(format!("  runner --insecure --user {user} start")),
    }
}

/// `[users.<id>]`, the id quoted when it is not a bare TOML key (it may hold `.` or `@`).
fn user_table(user: &UserId) -> String {
    let id = user.as_str();
    let bare = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if bare {
        format!("[users.{id}]")
    } else {
        format!("[users.{}]", toml_string(id))
    }
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

/// Replaces `path` with `text` through a temporary file and a rename.
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_tables_quote_ids_that_are_not_bare_keys() {
        let table = |id: &str| user_table(&UserId::parse(id).unwrap());
        assert_eq!(table("alice"), "[users.alice]");
        assert_eq!(table("a-b_c9"), "[users.a-b_c9]");
        assert_eq!(table("bob.smith"), "[users.\"bob.smith\"]");
        assert_eq!(table("eve@example.org"), "[users.\"eve@example.org\"]");
    }
}
