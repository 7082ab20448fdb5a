//! `runner --user U open`: asks U's running gateway for a one-time web sign-in link (an
//! authenticated `POST /auth/link` with the user's gateway token, which the runner can read) and
//! prints it; on a desktop (`DISPLAY` or `WAYLAND_DISPLAY` set) it also opens it with `xdg-open`.
//! The token itself never leaves this process except in that request's `Authorization` header:
//! the link carries only the code, dead after its first use or 60 s. When the gateway serves TLS
//! the request goes over it, to exactly the certificate in the user's `[gateway] tls_cert`
//! (pinned: the runner reaches the gateway by address, which the certificate need not name), and
//! the link is `https://`.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use runner::{GatewayMarker, TlsPem, read_json};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use types::WorkspacePaths;

use crate::Global;

const TIMEOUT: Duration = Duration::from_secs(5);

pub async fn run(global: &Global, no_browser: bool) -> Result<()> {
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
    let pinned = if marker.tls() {
        let agent = runner::load_agent_config(user.agent_config.as_deref())?;
        let pem = TlsPem::read(&agent.gateway)?.with_context(|| {
            format!(
                "{}'s gateway serves TLS but its agent.toml names no tls_cert now: restart it \
                 with `runner --user {} restart`",
                user.id, user.id
            )
        })?;
        Some(pem.identity()?.chain()[0].clone())
    } else {
        None
    };
    let scheme = if pinned.is_some() { "https" } else { "http" };
    let base = format!("{scheme}://{addr}");
    let path = request_link(&base, token.trim(), pinned).await?;
    let link = format!("{base}{path}");
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
async fn request_link(
    base: &str,
    token: &str,
    pinned: Option<CertificateDer<'static>>,
) -> Result<String> {
    let cannot = || format!("cannot reach the gateway at {base}");
    let mut client = reqwest::Client::builder().timeout(TIMEOUT).no_proxy();
    if let Some(leaf) = pinned {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Pinned { leaf, provider }))
            .with_no_client_auth();
        client = client.use_preconfigured_tls(config);
    }
    let response = client
        .build()?
        .post(format!("{base}/auth/link"))
        .bearer_auth(token)
        .send()
        .await
        .with_context(cannot)?;
    let status = response.status();
    let body = response.text().await.with_context(cannot)?;
    if !status.is_success() {
        bail!(
            "the gateway refused a sign-in link ({}): {}",
            status.as_u16(),
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

/// Accepts exactly one certificate, whatever name it carries; the handshake's signatures are
/// still checked against it.
#[derive(Debug)]
struct Pinned {
    leaf: CertificateDer<'static>,
    provider: Arc<CryptoProvider>,
}

/// A handshake signature: the message, the certificate, the signature.
type Signed<'a> = (&'a [u8], &'a CertificateDer<'a>, &'a DigitallySignedStruct);

type Verify = fn(
    &[u8],
    &CertificateDer<'_>,
    &DigitallySignedStruct,
    &WebPkiSupportedAlgorithms,
) -> Result<HandshakeSignatureValid, rustls::Error>;

impl Pinned {
    /// Checks a handshake signature with the provider's algorithms (TLS 1.2 or 1.3 rules).
    fn signed(
        &self,
        verify: Verify,
        (message, cert, dss): Signed<'_>,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.leaf.as_ref() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(
                "the gateway's certificate is not the one in [gateway] tls_cert".to_owned(),
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.signed(rustls::crypto::verify_tls12_signature, (message, cert, dss))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.signed(rustls::crypto::verify_tls13_signature, (message, cert, dss))
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
