//! The command line and where it leads: which gateway, as which user, with which token.
//!
//! Explicit flags (`--url`, `--token-file`) win; `--workspace <root>/<user>` fills in what they
//! leave out from the files oxydra-vm writes there (`.oxydra/gateway.json`, `.oxydra/gateway.token`).
//! The endpoint comes from `.oxydra/`, never from the copy in `ipc/`: the shell can rewrite `ipc/`,
//! and a forged address there would receive the token.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;
use types::{SessionId, UserId, WorkspacePaths};

use crate::error::TuiError;

/// `oxydra-tui`: chat with your Oxydra agent from the terminal.
#[derive(Debug, Clone, Parser)]
#[command(name = "oxydra-tui", version, about)]
pub struct Args {
    /// The gateway's WebSocket address, e.g. ws://127.0.0.1:7801
    #[arg(long)]
    pub url: Option<String>,
    /// Your user id on this agent.
    #[arg(long)]
    pub user: String,
    /// The file holding your gateway token (64 hex characters).
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Your workspace, `<workspace_root>/<user>`: reads `.oxydra/gateway.json` and
    /// `.oxydra/gateway.token` for whatever --url and --token-file leave out.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Resume this session instead of starting a new one.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Continue your most recent conversation.
    #[arg(long = "continue", short = 'c', conflicts_with = "session")]
    pub continue_last: bool,
    /// The model name to show in the status bar until the gateway names its own.
    #[arg(long)]
    pub model: Option<String>,
    /// For tests: keys pressed this many milliseconds after an approval prompt appears are
    /// ignored (default 500).
    #[arg(long, value_name = "MS", hide = true)]
    pub approval_arm_ms: Option<u64>,
}

/// Everything needed to connect, resolved and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub url: String,
    pub user: UserId,
    pub token: String,
    pub session: Option<SessionId>,
    /// Continue the most recent conversation (`--continue`).
    pub continue_last: bool,
    pub model: Option<String>,
    /// Where to look again before each reconnect (a restarted agent may have moved).
    pub source: Source,
    /// Keys pressed this soon after an approval prompt appears do not count.
    pub approval_arm_delay: Duration,
}

/// The files the endpoint and token came from, re-read before each reconnect: with
/// `gateway_port = 0` a restarted agent listens on a new port and rewrites its marker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Source {
    /// `.oxydra/gateway.json`, when `--url` was not given.
    pub endpoint: Option<PathBuf>,
    /// The token file.
    pub token: Option<PathBuf>,
}

impl Source {
    /// The current url and token per the files; `None` for what is unreadable right now (an
    /// agent between stop and start) or was given on the command line.
    pub fn read(&self) -> (Option<String>, Option<String>) {
        let url = self
            .endpoint
            .as_deref()
            .and_then(|p| read_endpoint(p).ok())
            .map(|e| e.url);
        let token = self.token.as_deref().and_then(|p| read_token(p).ok());
        (url, token)
    }
}

impl Args {
    /// Resolves the flags against the workspace files.
    pub fn resolve(&self) -> Result<Target, TuiError> {
        let user = UserId::parse(&self.user)
            .map_err(|e| TuiError::Usage(format!("--user {:?}: {e}", self.user)))?;
        let workspace = self.workspace.as_deref().map(WorkspacePaths::new);
        let endpoint = match (&self.url, &workspace) {
            (Some(_), _) | (None, None) => None,
            (None, Some(ws)) => Some(read_endpoint(&ws.endpoint())?),
        };
        let url = match (&self.url, &endpoint) {
            (Some(url), _) => url.clone(),
            (None, Some(endpoint)) => endpoint.url.clone(),
            (None, None) => {
                return Err(TuiError::Usage(
                    "say where the gateway is: --url ws://127.0.0.1:PORT or --workspace <root>/<user>"
                        .into(),
                ));
            }
        };
        let token_file = match (&self.token_file, &workspace) {
            (Some(path), _) => path.clone(),
            (None, Some(ws)) => ws.internal().join("gateway.token"),
            (None, None) => {
                return Err(TuiError::Usage(
                    "say where your token is: --token-file PATH or --workspace <root>/<user>"
                        .into(),
                ));
            }
        };
        let token = read_token(&token_file)?;
        let session = self
            .session
            .as_deref()
            .map(|s| {
                SessionId::parse(s).map_err(|e| TuiError::Usage(format!("--session {s:?}: {e}")))
            })
            .transpose()?;
        let model = self
            .model
            .clone()
            .or_else(|| endpoint.and_then(|e| e.model));
        let source = Source {
            endpoint: match (&self.url, &workspace) {
                (None, Some(ws)) => Some(ws.endpoint()),
                _ => None,
            },
            token: Some(token_file),
        };
        let approval_arm_delay = self
            .approval_arm_ms
            .map_or(crate::model::ARM_DELAY, Duration::from_millis);
        Ok(Target {
            url,
            user,
            token,
            session,
            continue_last: self.continue_last,
            model,
            source,
            approval_arm_delay,
        })
    }
}

/// What `.oxydra/gateway.json` tells a client.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Endpoint {
    url: String,
    model: Option<String>,
}

fn read_endpoint(path: &Path) -> Result<Endpoint, TuiError> {
    let text = read(path).map_err(|e| match e {
        TuiError::ReadFile { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            TuiError::NotRunning {
                path: path.to_owned(),
            }
        }
        other => other,
    })?;
    let invalid = |reason: &str| TuiError::Endpoint {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| invalid(&e.to_string()))?;
    let url = value
        .get("url")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| invalid("no \"url\" string"))?;
    let model = value
        .get("model")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    Ok(Endpoint {
        url: url.to_owned(),
        model,
    })
}

fn read_token(path: &Path) -> Result<String, TuiError> {
    let token = read(path)?.trim().to_owned();
    if token.is_empty() {
        return Err(TuiError::Usage(format!(
            "{} is empty: it should hold the gateway token",
            path.display()
        )));
    }
    Ok(token)
}

fn read(path: &Path) -> Result<String, TuiError> {
    std::fs::read_to_string(path).map_err(|source| TuiError::ReadFile {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("oxydra-tui").chain(list.iter().copied()))
            .expect("flags parse")
    }

    #[test]
    fn explicit_flags() {
        let dir = tempfile::tempdir().expect("tempdir");
        let token = dir.path().join("t");
        std::fs::write(&token, "abc\n").expect("write");
        let target = args(&[
            "--url",
            "ws://127.0.0.1:1",
            "--user",
            "alice",
            "--token-file",
            token.to_str().expect("utf8"),
            "--session",
            "s-1",
        ])
        .resolve()
        .expect("resolves");
        assert_eq!(
            target,
            Target {
                url: "ws://127.0.0.1:1".into(),
                user: UserId::parse("alice").expect("id"),
                token: "abc".into(),
                session: Some(SessionId::parse("s-1").expect("id")),
                continue_last: false,
                model: None,
                source: Source {
                    endpoint: None,
                    token: Some(token.clone()),
                },
                approval_arm_delay: crate::model::ARM_DELAY,
            }
        );
    }

    #[test]
    fn workspace_fills_in_url_token_and_model() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = WorkspacePaths::new(dir.path());
        std::fs::create_dir_all(ws.ipc()).expect("ipc");
        std::fs::create_dir_all(ws.internal()).expect("internal");
        std::fs::write(
            ws.endpoint(),
            r#"{"url":"ws://127.0.0.1:9","pid":4,"model":"gpt-x"}"#,
        )
        .expect("write");
        // What the shell may have written into ipc/ is never where the token goes.
        std::fs::write(
            ws.public_endpoint(),
            r#"{"url":"ws://127.0.0.1:6666","pid":4,"model":"forged"}"#,
        )
        .expect("write");
        std::fs::write(ws.internal().join("gateway.token"), "f00d").expect("write");
        let target = args(&[
            "--user",
            "bob",
            "--workspace",
            dir.path().to_str().expect("utf8"),
        ])
        .resolve()
        .expect("resolves");
        assert_eq!(target.url, "ws://127.0.0.1:9");
        assert_eq!(target.token, "f00d");
        assert_eq!(target.model.as_deref(), Some("gpt-x"));

        // Only the public copy (no agent has run here): not running, not a forged address.
        std::fs::remove_file(ws.endpoint()).expect("remove");
        let error = args(&[
            "--user",
            "bob",
            "--workspace",
            dir.path().to_str().expect("utf8"),
        ])
        .resolve();
        assert!(
            matches!(error, Err(TuiError::NotRunning { .. })),
            "{error:?}"
        );
    }

    #[test]
    fn missing_pieces_are_usage_errors() {
        assert!(matches!(
            args(&["--user", "bob"]).resolve(),
            Err(TuiError::Usage(_))
        ));
        assert!(matches!(
            args(&["--user", "bob", "--url", "ws://x"]).resolve(),
            Err(TuiError::Usage(_))
        ));
        assert!(matches!(
            args(&[
                "--user",
                "bob",
                "--url",
                "ws://x",
                "--token-file",
                "/nonexistent/t"
            ])
            .resolve(),
            Err(TuiError::ReadFile { .. })
        ));
    }
}
