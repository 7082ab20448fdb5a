//! `runner --user U open`: asks U's running gateway for a one-time web sign-in link (an
//! authenticated `POST /auth/link` with the user's gateway token, which the runner can read) and
//! prints it; on a desktop (`DISPLAY` or `WAYLAND_DISPLAY` set) it also opens it with `xdg-open`.
//! The token itself never leaves this process except in that request's `Authorization` header:
//! the link carries only the code, dead after its first use or 60 s.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use runner::{GatewayMarker, read_json};
use types::WorkspacePaths;

use crate::Global;

const TIMEOUT: Duration = Duration::from_secs(5);

pub fn run(global: &Global, no_browser: bool) -> Result<()> {
    let config = global.runner_config()?;
    let users = config.select(global.user.as_deref())?;
    let [user] = users.as_slice() else {
        bail!("open signs you in to one user's agent: pass --user <id>");
    };
    let ws = WorkspacePaths::for_user(&config.workspace_root, &user.id);
    let marker = read_json::<GatewayMarker>(&ws.endpoint())
        .ok()
        .flatten()
        .with_context(|| {
            format!(
                "{} is not running: start the agent first with `runner --user {} start --detach`",
                user.id, user.id
            )
        })?;
    let addr = marker
        .socket_addr()
        .with_context(|| format!("the gateway's address {:?} is not ip:port", marker.url))?;
    let token_path = ws.internal().join(gateway::GatewayToken::FILE_NAME);
    let token = std::fs::read_to_string(&token_path)
        .with_context(|| format!("cannot read {}", token_path.display()))?;
    let path = request_link(addr, token.trim())?;
    let link = format!("http://{addr}{path}");
    crate::out::say(format!(
        "Open this link in your browser to sign in as {} (it works once, within 60 s):",
        user.id
    ));
    crate::out::say(format!("  {link}"));
    if !no_browser && has_desktop() {
        let opened = Command::new("xdg-open")
            .arg(&link)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        if opened.is_err() {
            crate::out::say("(xdg-open is not available: open the link yourself)");
        }
    }
    Ok(())
}

fn has_desktop() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// `POST /auth/link` with the token as a bearer; the sign-in path the gateway answers.
fn request_link(addr: SocketAddr, token: &str) -> Result<String> {
    let cannot = || format!("cannot reach the gateway at {addr}");
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT).with_context(cannot)?;
    stream
        .set_read_timeout(Some(TIMEOUT))
        .with_context(cannot)?;
    stream
        .set_write_timeout(Some(TIMEOUT))
        .with_context(cannot)?;
    let request = format!(
        "POST /auth/link HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).with_context(cannot)?;
    let mut response = String::new();
    stream
        .take(64 * 1024)
        .read_to_string(&mut response)
        .with_context(cannot)?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .context("the gateway's answer was not HTTP")?;
    let status = head.split(' ').nth(1).unwrap_or("");
    if status != "200" {
        bail!(
            "the gateway refused a sign-in link ({status}): {}",
            body.trim()
        );
    }
    let answer: serde_json::Value =
        serde_json::from_str(body.trim()).context("the gateway's answer was not JSON")?;
    match answer.get("path").and_then(|p| p.as_str()) {
        Some(path) if path.starts_with("/signin/") => Ok(path.to_owned()),
        _ => bail!("the gateway's answer had no sign-in path"),
    }
}
