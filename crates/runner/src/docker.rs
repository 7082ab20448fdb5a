//! The container tier's shared vocabulary: connecting to the Docker engine, how containers are
//! named and labelled, and where the workspace appears inside them.

use std::path::Path;

use bollard::Docker;
use sha2::{Digest, Sha256};
use types::UserId;

use crate::RunnerError;

/// Where a user's workspace appears inside both containers: `/workspace/<user>/...`.
pub const CONTAINER_WORKSPACE_ROOT: &str = "/workspace";
/// Where the user's `agent.toml` is mounted (read-only) in the `oxydra-vm` container.
pub const CONTAINER_AGENT_CONFIG: &str = "/etc/oxydra/agent.toml";

/// Label on every container and image the runner makes (value `true`).
pub const LABEL_MANAGED: &str = "org.oxydra.managed";
/// Label: the user a container serves.
pub const LABEL_USER: &str = "org.oxydra.user";
/// Label: `oxydra-vm` or `shell-vm`.
pub const LABEL_ROLE: &str = "org.oxydra.role";
/// Label: the host path of the user's workspace (`<root>/<user>`).
pub const LABEL_WORKSPACE: &str = "org.oxydra.workspace";

/// Connects to the engine (`DOCKER_HOST`, else `/var/run/docker.sock`) and agrees on an API
/// version it speaks, so an older engine works too.
pub async fn connect_docker() -> Result<Docker, RunnerError> {
    let place =
        std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".into());
    let unreachable = |e: bollard::errors::Error| {
        RunnerError::Docker(format!(
            "no Docker engine answers at {place} ({e}); start Docker (or set DOCKER_HOST), or use \
             tier = \"process\" with --insecure"
        ))
    };
    let docker = Docker::connect_with_defaults().map_err(unreachable)?;
    docker.negotiate_version().await.map_err(unreachable)
}

/// The name of `role`'s container for `user` under `workspace_root`:
/// `oxydra-<user>-<role>-<8 hex>`, where the hex digits hash the workspace root and the user, so
/// two runners with different roots (or users whose ids differ only in characters a container
/// name cannot hold) never collide.
pub fn container_name(workspace_root: &Path, user: &UserId, role: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(workspace_root.as_os_str().as_encoded_bytes());
    hash.update([0]);
    hash.update(user.as_str().as_bytes());
    let digest = hash.finalize();
    let short: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let user: String = user
        .as_str()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("oxydra-{user}-{role}-{short}")
}

/// A short text for a failed engine request: the engine's own message when it gave one.
pub fn docker_message(error: &bollard::errors::Error) -> String {
    match error {
        bollard::errors::Error::DockerResponseServerError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// True when the engine answered 404 (no such container or image).
pub fn is_not_found(error: &bollard::errors::Error) -> bool {
    matches!(
        error,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_predictable_valid_and_distinct() {
        let alice = UserId::parse("alice").unwrap();
        let a = container_name(Path::new("/srv/ws"), &alice, "shell-vm");
        assert_eq!(a, container_name(Path::new("/srv/ws"), &alice, "shell-vm"));
        assert!(a.starts_with("oxydra-alice-shell-vm-"), "{a}");
        assert_ne!(
            a,
            container_name(Path::new("/srv/other"), &alice, "shell-vm")
        );
        let mail = UserId::parse("a@b").unwrap();
        let m = container_name(Path::new("/srv/ws"), &mail, "oxydra-vm");
        assert!(m.starts_with("oxydra-a_b-oxydra-vm-"), "{m}");
        assert!(
            m.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        );
        let under = UserId::parse("a_b").unwrap();
        assert_ne!(m, container_name(Path::new("/srv/ws"), &under, "oxydra-vm"));
    }
}
