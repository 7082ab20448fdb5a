//! `runner.toml`: a raw, all-optional file struct (unknown keys rejected), resolved into a
//! validated [`RunnerConfig`]. Relative paths resolve against the directory of `runner.toml`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use types::{AgentConfig, UserId};

use crate::container_config::RawContainer;
use crate::toml_error::toml_problem;
use crate::{ContainerSettings, RunnerError, ShellNetwork, Tier};

/// The file name looked for in the current directory, then in `~/.oxydra/`.
pub const CONFIG_FILE_NAME: &str = "runner.toml";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    workspace_root: Option<PathBuf>,
    tier: Option<Tier>,
    agent_config: Option<PathBuf>,
    supervision: Option<RawSupervision>,
    container: Option<RawContainer>,
    guest_uid_base: Option<u32>,
    memory_encryption: Option<crate::memory_key::RawMemoryEncryption>,
    #[serde(default)]
    users: BTreeMap<String, RawUser>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSupervision {
    ready_timeout_secs: Option<u64>,
    stop_timeout_secs: Option<u64>,
    restart: Option<RestartPolicy>,
    max_restarts: Option<u32>,
    restart_window_secs: Option<u64>,
    backoff_initial_ms: Option<u64>,
    backoff_max_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUser {
    tier: Option<Tier>,
    gateway_port: Option<u16>,
    agent_config: Option<PathBuf>,
    shell_network: Option<ShellNetwork>,
    /// The model the user's sessions start on (a `[models.<name>]` of their agent.toml).
    model: Option<String>,
}

/// What happens when a guest exits on its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RestartPolicy {
    /// Restart it with backoff (a clean exit too), up to `max_restarts` within the window.
    Always,
    /// Restart it with backoff when it crashed (non-zero exit or killed by a signal).
    #[default]
    OnFailure,
    /// Stop the user's other guest and exit.
    Never,
}

/// Supervision settings, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Supervision {
    pub ready_timeout: Duration,
    pub stop_timeout: Duration,
    pub restart: RestartPolicy,
    pub max_restarts: u32,
    pub restart_window: Duration,
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
}

impl Default for Supervision {
    fn default() -> Self {
        Self {
            ready_timeout: Duration::from_secs(30),
            stop_timeout: Duration::from_secs(10),
            restart: RestartPolicy::OnFailure,
            max_restarts: 5,
            restart_window: Duration::from_secs(60),
            backoff_initial: Duration::from_millis(500),
            backoff_max: Duration::from_secs(10),
        }
    }
}

impl Supervision {
    /// The wait before restart number `n` (1-based): initial × 2^(n−1), at most `backoff_max`.
    pub fn backoff(&self, n: u32) -> Duration {
        let factor = 2u32.saturating_pow(n.saturating_sub(1));
        self.backoff_initial
            .saturating_mul(factor)
            .min(self.backoff_max)
    }
}

impl RawSupervision {
    /// The settings with their defaults; both timeouts at least a second.
    fn resolve(self) -> Result<Supervision, String> {
        let d = Supervision::default();
        let supervision = Supervision {
            ready_timeout: self
                .ready_timeout_secs
                .map_or(d.ready_timeout, Duration::from_secs),
            stop_timeout: self
                .stop_timeout_secs
                .map_or(d.stop_timeout, Duration::from_secs),
            restart: self.restart.unwrap_or(d.restart),
            max_restarts: self.max_restarts.unwrap_or(d.max_restarts),
            restart_window: self
                .restart_window_secs
                .map_or(d.restart_window, Duration::from_secs),
            backoff_initial: self
                .backoff_initial_ms
                .map_or(d.backoff_initial, Duration::from_millis),
            backoff_max: self
                .backoff_max_ms
                .map_or(d.backoff_max, Duration::from_millis),
        };
        if supervision.ready_timeout.is_zero() || supervision.stop_timeout.is_zero() {
            return Err(
                "supervision.ready_timeout_secs and stop_timeout_secs must be at least 1".into(),
            );
        }
        Ok(supervision)
    }
}

impl RawUser {
    /// The entry of `[users.<name>]`: its tier (else the file's), its agent config (an existing file, a relative path taken
    /// from runner.toml's folder by `abs`; else `default_agent`), port and shell network.
    fn resolve(
        self,
        name: &str,
        abs: &impl Fn(&Path) -> PathBuf,
        default_agent: Option<&PathBuf>,
        defaults: (Tier, &ContainerSettings),
    ) -> Result<UserEntry, String> {
        let (default_tier, container) = defaults;
        let id = UserId::parse(name).map_err(|e| format!("[users.{name}]: {e}"))?;
        let agent_config = match self.agent_config.as_deref().map(abs) {
            Some(p) if !p.is_file() => {
                return Err(format!(
                    "[users.{name}] agent_config {} does not exist",
                    p.display()
                ));
            }
            Some(p) => Some(p),
            None => default_agent.cloned(),
        };
        if let Some(model) = self.model.as_deref()
            && !types::valid_model_name(model)
        {
            return Err(format!(
                "[users.{name}] model {model:?} is not a model name: name a [models.<name>] \
                 entry of the user's agent.toml, e.g. model = \"fast\""
            ));
        }
        Ok(UserEntry {
            id,
            tier: self.tier.unwrap_or(default_tier),
            gateway_port: self.gateway_port.unwrap_or(0),
            agent_config,
            shell_network: self.shell_network.unwrap_or(container.shell_network),
            model: self.model,
        })
    }
}

/// One user of `runner.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserEntry {
    pub id: UserId,
    /// Where this user's agent runs: `[users.<id>] tier`, else the file's `tier`.
    pub tier: Tier,
    pub gateway_port: u16,
    /// The user's `agent.toml` (absolute), if one exists.
    pub agent_config: Option<PathBuf>,
    /// The network of the user's `shell-vm` container (container tier only).
    pub shell_network: ShellNetwork,
    /// The model the user's sessions start on (`model = "<name>"`); `None`: `[provider]`'s.
    pub model: Option<String>,
}

/// `runner.toml`, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerConfig {
    /// The file it was read from (absolute).
    pub path: PathBuf,
    pub workspace_root: PathBuf,
    /// The default tier of users whose entry names none (see [`UserEntry::tier`]).
    pub tier: Tier,
    pub supervision: Supervision,
    pub container: ContainerSettings,
    /// First uid handed to a user's guests when the runner runs as root (see `privilege`).
    pub guest_uid_base: u32,
    /// `[memory_encryption]`: users' local memory files encrypted at rest with per-user keys.
    pub memory_encryption: crate::MemoryEncryption,
    pub users: Vec<UserEntry>,
}

impl RunnerConfig {
    /// The config file to use: `explicit`, else `./runner.toml`, else `~/.oxydra/runner.toml`.
    pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, RunnerError> {
        if let Some(path) = explicit {
            return Ok(path.to_owned());
        }
        let local = PathBuf::from(CONFIG_FILE_NAME);
        if local.is_file() {
            return Ok(local);
        }
        if let Some(home) = std::env::var_os("HOME") {
            let home = Path::new(&home).join(".oxydra").join(CONFIG_FILE_NAME);
            if home.is_file() {
                return Ok(home);
            }
        }
        Err(RunnerError::Config {
            path: local,
            problem: "not found here or in ~/.oxydra/; create one with `runner init` or pass \
                      --config PATH"
                .into(),
        })
    }

    /// Reads and resolves `path`.
    pub fn load(path: &Path) -> Result<Self, RunnerError> {
        let text = std::fs::read_to_string(path).map_err(RunnerError::io("read", path))?;
        let path = std::path::absolute(path).map_err(RunnerError::io("resolve", path))?;
        Self::parse(&text, &path)
    }

    /// Resolves the TOML `text` of the file at the absolute `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Self, RunnerError> {
        let problem = |problem: String| RunnerError::Config {
            path: path.to_owned(),
            problem,
        };
        let raw: RawConfig = toml::from_str(text).map_err(|e| problem(toml_problem(text, &e)))?;
        let base = path.parent().unwrap_or(Path::new("/"));
        let abs = |p: &Path| {
            if p.is_absolute() {
                p.to_owned()
            } else {
                base.join(p)
            }
        };
        let workspace_root = abs(raw
            .workspace_root
            .as_deref()
            .unwrap_or(Path::new("workspaces")));
        let default_agent = raw.agent_config.as_deref().map(abs);
        if let Some(p) = &default_agent
            && !p.is_file()
        {
            return Err(problem(format!(
                "agent_config {} does not exist",
                p.display()
            )));
        }
        // Without a setting, an agent.toml next to runner.toml is used when present.
        let default_agent = default_agent.or_else(|| {
            let next = base.join("agent.toml");
            next.is_file().then_some(next)
        });
        let container = raw.container.unwrap_or_default().resolve(&problem)?;
        let tier = raw.tier.unwrap_or_default();
        let users = raw
            .users
            .into_iter()
            .map(|(name, user)| {
                user.resolve(&name, &abs, default_agent.as_ref(), (tier, &container))
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(problem)?;
        let supervision = raw
            .supervision
            .unwrap_or_default()
            .resolve()
            .map_err(problem)?;
        if raw
            .guest_uid_base
            .is_some_and(|b| !(1000..=u32::MAX / 2).contains(&b))
        {
            return Err(problem(format!(
                "guest_uid_base must be between 1000 and {} (default {})",
                u32::MAX / 2,
                crate::DEFAULT_GUEST_UID_BASE
            )));
        }
        let memory_encryption = raw
            .memory_encryption
            .unwrap_or_default()
            .resolve()
            .map_err(problem)?;
        Ok(Self {
            path: path.to_owned(),
            memory_encryption,
            workspace_root,
            tier,
            supervision,
            container,
            guest_uid_base: raw.guest_uid_base.unwrap_or(crate::DEFAULT_GUEST_UID_BASE),
            users,
        })
    }

    /// The users selected by `--user` (all configured users without it). A user not in the file
    /// is an error naming the ones that are.
    pub fn select(&self, user: Option<&str>) -> Result<Vec<UserEntry>, RunnerError> {
        let Some(name) = user else {
            if self.users.is_empty() {
                return Err(RunnerError::Config {
                    path: self.path.clone(),
                    problem: "no [users.<id>] entries; add one (e.g. [users.alice])".into(),
                });
            }
            return Ok(self.users.clone());
        };
        let id = UserId::parse(name).map_err(|source| RunnerError::User {
            user: name.to_owned(),
            source,
        })?;
        match self.users.iter().find(|u| u.id == id) {
            Some(u) => Ok(vec![u.clone()]),
            None => {
                let known: Vec<&str> = self.users.iter().map(|u| u.id.as_str()).collect();
                let hint = match closest(name, &known) {
                    Some(near) => format!(
                        "did you mean `{near}`? Or add {name} with `runner --user {name} init`"
                    ),
                    None => format!("add {name} with `runner --user {name} init`"),
                };
                Err(RunnerError::Config {
                    path: self.path.clone(),
                    problem: format!(
                        "no user `{name}` (configured: {}); {hint}",
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                })
            }
        }
    }
}

/// The configured user `name` was most likely meant to be: the nearest by edit distance, when
/// that is at most a third of its length (at least 1), so `alcie` finds `alice`.
fn closest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(name, k), *k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Reads and validates an `agent.toml`; defaults without one.
pub fn load_agent_config(path: Option<&Path>) -> Result<AgentConfig, RunnerError> {
    let Some(path) = path else {
        return Ok(AgentConfig::default());
    };
    let text = std::fs::read_to_string(path).map_err(RunnerError::io("read", path))?;
    let problem = |problem: String| RunnerError::Config {
        path: path.to_owned(),
        problem,
    };
    // `api_key_env = ""` ("no key", for local servers) is understood by `types::ProviderConfig`.
    let config: AgentConfig =
        toml::from_str(&text).map_err(|e: toml::de::Error| problem(toml_problem(&text, &e)))?;
    config.validate().map_err(|e| problem(e.to_string()))?;
    // `types` has no time zone database: the name is checked here, where one is at hand (the
    // memory search, recall and schedules all read the user's words about time in it; an unknown
    // name must not quietly become the host's zone).
    if let Some(name) = config.user.timezone.as_deref() {
        tools::resolve_timezone(Some(name))
            .map_err(|e| problem(format!("invalid setting `user.timezone`: {e}")))?;
    }
    Ok(config)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
