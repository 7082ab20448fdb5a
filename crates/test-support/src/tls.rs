//! [`self_signed_cert`]: a TLS server certificate for `127.0.0.1` and `localhost` with its key,
//! made by the `openssl` command (which `scripts/test.sh` installs), for tests of the gateway's
//! own TLS.

#![allow(
    clippy::expect_used,
    reason = "a fixture that cannot make its certificate fails the test loudly"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Writes `<name>-cert.pem` (self-signed, P-256, two days, a server certificate rather than a CA:
/// rustls refuses a CA as the server's certificate) and `<name>-key.pem` (0600) into `dir`.
pub fn self_signed_cert(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let cert = dir.join(format!("{name}-cert.pem"));
    let key = dir.join(format!("{name}-key.pem"));
    let status = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
        .args(["-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the openssl command runs (scripts/test.sh installs it)");
    assert!(status.success(), "openssl made no certificate");
    let private = std::os::unix::fs::PermissionsExt::from_mode(0o600);
    std::fs::set_permissions(&key, private).expect("the key made private");
    (cert, key)
}
