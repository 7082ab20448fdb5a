//! [`VmBootstrap`]: what the runner hands an `oxydra-vm` at start (JSON on stdin or in a file).
//!
//! ```json
//! {"user_id":"alice","workspace_root":"/srv/oxydra","tier":"process","sandbox":"best_effort",
//!  "agent_config":"/etc/oxydra/agent.toml","gateway_port":0}
//! ```
//!
//! Everything but `user_id` and `workspace_root` has a default. Its one secret is the user's
//! memory encryption key (`memory_key`, when `[memory_encryption]` is on): it travels only here,
//! on `oxydra-vm`'s stdin in both tiers (in the container tier through the engine's attach
//! stream), never in a file a guest can read nor on a command line. The gateway token is read from
//! (or created in) the user's `.oxydra/`, API keys come from the environment.

use std::path::{Path, PathBuf};

use gateway::GatewayToken;
use serde::{Deserialize, Serialize};
use types::{UserId, WorkspacePaths, shell_socket_path};

use crate::RunnerError;

/// Where the guests run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Host processes confined with Landlock (`runner --insecure`).
    Process,
    /// Docker containers with role-differentiated mounts (the default).
    #[default]
    Container,
}

impl Tier {
    fn process() -> Self {
        Tier::Process
    }

    pub fn name(self) -> &'static str {
        match self {
            Tier::Process => "process",
            Tier::Container => "container",
        }
    }
}

/// How `oxydra-vm` confines itself before its runtime starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Landlock must be enforced; without kernel support `oxydra-vm` refuses to start.
    #[default]
    Required,
    /// Landlock when the kernel has it; otherwise run unconfined and say so loudly.
    BestEffort,
    /// No self-confinement (the container tier confines with mounts instead).
    Off,
}

/// The bootstrap of one user's `oxydra-vm`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmBootstrap {
    /// The only user this process serves; `hello` frames naming anyone else are refused.
    pub user_id: UserId,
    /// The directory holding every user's workspace (absolute).
    pub workspace_root: PathBuf,
    #[serde(default = "Tier::process")]
    pub tier: Tier,
    #[serde(default)]
    pub sandbox: SandboxMode,
    /// The user's `agent.toml`; defaults apply when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_config: Option<PathBuf>,
    /// The gateway token file; default `<user>/.oxydra/gateway.token` (created when missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_path: Option<PathBuf>,
    /// The shell daemon's socket; default `<user>/ipc/shell.sock`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell_socket: Option<PathBuf>,
    /// Gateway port on 127.0.0.1; 0 picks a free one.
    #[serde(default)]
    pub gateway_port: u16,
    /// The key the user's local memory file (or replica) is encrypted with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_key: Option<SecretText>,
    /// The model new sessions start on (`runner.toml`'s `model` for the user); `None`: the
    /// agent's `[provider]` model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// The gateway's TLS certificate chain and key (PEM), read by the runner from
    /// `[gateway] tls_cert` / `tls_key` (the guest may not be able to read them there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsPem>,
}

/// A TLS certificate chain and its private key, as PEM text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsPem {
    pub cert: String,
    pub key: SecretText,
}

impl TlsPem {
    /// Reads `[gateway] tls_cert` and `tls_key` (none when unset) and checks they can be served:
    /// a missing file, bad PEM or a key that is not the certificate's is an error saying so.
    pub fn read(gateway: &types::GatewayLimitsConfig) -> Result<Option<Self>, RunnerError> {
        let (Some(cert), Some(key)) = (&gateway.tls_cert, &gateway.tls_key) else {
            return Ok(None);
        };
        let read = |setting: &str, path: &std::path::Path| {
            std::fs::read_to_string(path).map_err(|e| {
                RunnerError::Tls(format!(
                    "cannot read gateway.{setting} {}: {e}",
                    path.display()
                ))
            })
        };
        let pem = Self {
            cert: read("tls_cert", cert)?,
            key: SecretText(read("tls_key", key)?),
        };
        pem.identity()?;
        Ok(Some(pem))
    }

    /// The identity the gateway serves.
    pub fn identity(&self) -> Result<gateway::TlsIdentity, RunnerError> {
        gateway::TlsIdentity::from_pem(self.cert.as_bytes(), self.key.0.as_bytes())
            .map_err(|e| RunnerError::Tls(e.to_string()))
    }
}

/// A secret in the bootstrap: serialised as its text, never shown by `Debug`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SecretText(pub String);

impl std::fmt::Debug for SecretText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretText(..)")
    }
}

impl VmBootstrap {
    pub fn new(user_id: UserId, workspace_root: impl Into<PathBuf>) -> Self {
        Self {
            user_id,
            workspace_root: workspace_root.into(),
            tier: Tier::Process,
            sandbox: SandboxMode::Required,
            agent_config: None,
            token_path: None,
            shell_socket: None,
            gateway_port: 0,
            memory_key: None,
            default_model: None,
            tls: None,
        }
    }

    /// The memory key as the store takes it (checked: a malformed key is a bootstrap error).
    pub fn memory_key(&self) -> Result<Option<memory::EncryptionKey>, RunnerError> {
        self.memory_key
            .as_ref()
            .map(|k| memory::EncryptionKey::parse(&k.0))
            .transpose()
            .map_err(|e| RunnerError::Bootstrap(format!("memory_key: {e}")))
    }

    pub fn workspace(&self) -> WorkspacePaths {
        WorkspacePaths::for_user(&self.workspace_root, &self.user_id)
    }

    pub fn token_path(&self) -> PathBuf {
        self.token_path
            .clone()
            .unwrap_or_else(|| self.workspace().internal().join(GatewayToken::FILE_NAME))
    }

    pub fn shell_socket(&self) -> PathBuf {
        self.shell_socket
            .clone()
            .unwrap_or_else(|| shell_socket_path(&self.workspace()))
    }

    /// Paths must be absolute; the token must sit in `.oxydra/` (never in a tool-visible
    /// directory) and the shell socket in `ipc/`.
    pub fn validate(&self) -> Result<(), RunnerError> {
        let bad = |m: &str| Err(RunnerError::Bootstrap(m.to_owned()));
        if !self.workspace_root.is_absolute() {
            return bad("workspace_root must be an absolute path");
        }
        let ws = self.workspace();
        if !inside(&self.token_path(), &ws.internal()) {
            return bad("token_path must be a file directly inside the user's .oxydra/ directory");
        }
        if !inside(&self.shell_socket(), &ws.ipc()) {
            return bad("shell_socket must be a file directly inside the user's ipc/ directory");
        }
        self.memory_key()?;
        if self
            .agent_config
            .as_deref()
            .is_some_and(|p| !p.is_absolute())
        {
            return bad("agent_config must be an absolute path");
        }
        Ok(())
    }

    pub fn from_json(text: &str) -> Result<Self, RunnerError> {
        let boot: Self = serde_json::from_str(text)
            .map_err(|e| RunnerError::Bootstrap(format!("not valid JSON for oxydra-vm: {e}")))?;
        boot.validate()?;
        Ok(boot)
    }
}

fn inside(file: &Path, dir: &Path) -> bool {
    let plain = file
        .file_name()
        .is_some_and(|n| n != ".." && n != "." && !n.is_empty());
    plain && file.parent() == Some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(json: &str, expected: Result<(), &str>) {
        let got = VmBootstrap::from_json(json)
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert_eq!(got, expected.map_err(str::to_owned), "{json}");
    }

    #[test]
    fn defaults_and_validation() {
        let boot =
            VmBootstrap::from_json(r#"{"user_id":"alice","workspace_root":"/srv/w"}"#).unwrap();
        assert_eq!(
            boot,
            VmBootstrap::new(UserId::parse("alice").unwrap(), "/srv/w")
        );
        assert_eq!(
            boot.token_path(),
            PathBuf::from("/srv/w/alice/.oxydra/gateway.token")
        );
        assert_eq!(
            boot.shell_socket(),
            PathBuf::from("/srv/w/alice/ipc/shell.sock")
        );
        check(
            r#"{"user_id":"alice","workspace_root":"/srv/w","sandbox":"best_effort","gateway_port":8080}"#,
            Ok(()),
        );
        check(
            r#"{"user_id":"alice","workspace_root":"srv"}"#,
            Err("invalid bootstrap: workspace_root must be an absolute path"),
        );
        check(
            r#"{"user_id":"alice","workspace_root":"/srv/w","token_path":"/srv/w/alice/shared/t"}"#,
            Err(
                "invalid bootstrap: token_path must be a file directly inside the user's .oxydra/ directory",
            ),
        );
        check(
            r#"{"user_id":"alice","workspace_root":"/srv/w","shell_socket":"/srv/w/bob/ipc/shell.sock"}"#,
            Err(
                "invalid bootstrap: shell_socket must be a file directly inside the user's ipc/ directory",
            ),
        );
        assert!(VmBootstrap::from_json(r#"{"user_id":"../x","workspace_root":"/srv"}"#).is_err());
        assert!(VmBootstrap::from_json(r#"{"user_id":"a","workspace_root":"/s","x":1}"#).is_err());
    }
}
