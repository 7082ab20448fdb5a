//! What already serves a user: the live runner named by the runner marker, whether it runs in
//! the background (`start --detach`), and whether it was started with today's settings (a digest
//! of the user's `agent.toml` and runner settings, kept in the marker).

use runner::{GatewayMarker, RunnerConfig, RunnerMarker, UserEntry, read_json};
use sha2::{Digest, Sha256};
use types::WorkspacePaths;

/// A live runner serving one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    pub pid: u32,
    /// The gateway's URL, once it serves.
    pub url: Option<String>,
    /// The settings digest it started with (`None` from a runner that predates digests).
    pub digest: Option<String>,
    /// A background supervisor (`start --detach`), not a foreground `start`.
    pub detached: bool,
}

impl Running {
    /// True when the settings changed since this runner started.
    pub fn is_stale(&self, digest: &str) -> bool {
        self.digest.as_deref().is_some_and(|d| d != digest)
    }
}

/// The live runner serving the user of `ws` (not this process), if any.
pub fn running(ws: &WorkspacePaths) -> Option<Running> {
    let marker = read_json::<RunnerMarker>(&runner::runner_marker_path(ws))
        .ok()
        .flatten()?;
    if marker.pid == std::process::id() || !runner::looks_like(marker.pid, "runner") {
        return None;
    }
    let url = read_json::<GatewayMarker>(&ws.endpoint())
        .ok()
        .flatten()
        .map(|m| m.url);
    Some(Running {
        pid: marker.pid,
        url,
        digest: marker.config_digest,
        detached: is_supervisor(marker.pid),
    })
}

/// True when `pid`'s command line is a background supervisor's (`start --supervisor`).
fn is_supervisor(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| raw.split(|b| *b == 0).any(|arg| arg == b"--supervisor"))
        .unwrap_or(false)
}

/// A digest of everything that shapes `user`'s guests: the bytes of their `agent.toml` and the
/// runner settings they are launched with. Editing either changes it; adding another user to
/// `runner.toml` does not.
pub fn config_digest(config: &RunnerConfig, user: &UserEntry) -> String {
    let mut hash = Sha256::new();
    match &user.agent_config {
        Some(path) => {
            hash.update(path.as_os_str().as_encoded_bytes());
            hash.update(std::fs::read(path).unwrap_or_default());
        }
        None => hash.update(b"(no agent.toml)"),
    }
    hash.update(
        format!(
            "{:?} {:?} {:?}",
            config.workspace_root, config.container, user
        )
        .as_bytes(),
    );
    let bytes = hash.finalize();
    bytes.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_follows_the_users_settings_only() {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("agent.toml");
        let conf = dir.path().join("runner.toml");
        std::fs::write(&agent, "[provider]\nmodel = \"a\"\n").unwrap();
        let load = |text: &str| RunnerConfig::parse(text, &conf).unwrap();
        let one = load("[users.alice]\n");
        let alice = |c: &RunnerConfig| c.users[0].clone();
        let first = config_digest(&one, &alice(&one));
        assert_eq!(first, config_digest(&one, &alice(&one)));
        let two = load("[users.alice]\n[users.bob]\n");
        assert_eq!(first, config_digest(&two, &alice(&two)), "another user");
        let port = load("[users.alice]\ngateway_port = 9000\n");
        assert_ne!(first, config_digest(&port, &alice(&port)), "her port");
        std::fs::write(&agent, "[provider]\nmodel = \"b\"\n").unwrap();
        assert_ne!(first, config_digest(&one, &alice(&one)), "agent.toml");
    }
}
