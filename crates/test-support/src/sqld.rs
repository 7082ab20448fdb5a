//! [`Sqld`]: a real libSQL server (`sqld`) on a loopback address of its own with a free port, for
//! remote-memory tests.
//!
//! Each server listens on its own address in `127.0.0.0/8` (from this process's id and a counter):
//! test processes that run side by side (the memory suite runs itself again, with the approximate
//! vector leg, while it runs) never probe and bind the same address and port, so a server that
//! answers `/health` is the one this handle started, never another process's.
//!
//! Each server gets its own data directory under the system temporary directory, removed when the
//! handle drops (the process is killed and reaped first). [`Sqld::start_with_auth`] also creates an
//! Ed25519 key pair (with the `openssl` command) so tests can mint JWTs: read-write, read-only,
//! expired, or signed by another key. A test calls `need(Need::Sqld)` first.

#![allow(
    clippy::expect_used,
    clippy::panic,
    reason = "a test fixture: failing loudly is what the test wants"
)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::need::sqld_binary;

/// How long a server may take to answer `/health` (it takes ~70 ms; CI machines can be slow).
const READY_WITHIN: Duration = Duration::from_secs(30);

/// Ports tried before giving up on starting a server.
const LAUNCH_ATTEMPTS: usize = 5;

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

/// A running `sqld`; killed and its data removed on drop.
#[derive(Debug)]
pub struct Sqld {
    child: Child,
    dir: PathBuf,
    ip: Ipv4Addr,
    port: u16,
    private_key: Option<PathBuf>,
}

impl Sqld {
    /// A server without authentication (any client, empty token).
    pub fn start() -> Self {
        Self::launch(false)
    }

    /// A server that checks JWTs signed by a key made for it; mint tokens with [`Sqld::token`].
    pub fn start_with_auth() -> Self {
        Self::launch(true)
    }

    /// The client URL (`http://127.A.B.C:PORT`, a loopback address of this server's own).
    pub fn url(&self) -> String {
        format!("http://{}:{}", self.ip, self.port)
    }

    /// The data directory (the server's files live under it).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A token with these JSON claims (`{"a":"rw"}`, `{"a":"ro"}`, `{"exp":1}`), signed by this
    /// server's key. Panics for a server started without authentication.
    pub fn token(&self, claims: &str) -> String {
        let key = self
            .private_key
            .as_ref()
            .expect("the server was started without authentication");
        mint_jwt(key, claims)
    }

    /// A read-write token signed by a key this server does not know.
    pub fn foreign_token(&self) -> String {
        let other = self.dir.join("other_private.pem");
        openssl(&["genpkey", "-algorithm", "ed25519", "-out"], &other);
        mint_jwt(&other, r#"{"a":"rw"}"#)
    }

    /// Stops the server (a primary going away); [`Sqld::restart`] brings it back with its data.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on the same port and data (after [`Sqld::stop`]).
    pub fn restart(&mut self) {
        self.stop();
        self.child = spawn(&self.dir, self.ip, self.port, self.private_key.is_some());
        assert!(
            wait_ready(&mut self.child, self.ip, self.port),
            "sqld did not come back on port {}",
            self.port
        );
    }

    fn launch(auth: bool) -> Self {
        let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("oxydra-sqld-{}-{n}", std::process::id()));
        let ip = own_loopback(std::process::id(), n);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating the sqld directory");
        let private_key = auth.then(|| {
            let private = dir.join("jwt_private.pem");
            openssl(&["genpkey", "-algorithm", "ed25519", "-out"], &private);
            let status = Command::new("openssl")
                .args(["pkey", "-pubout", "-in"])
                .arg(&private)
                .arg("-out")
                .arg(dir.join("jwt_public.pem"))
                .status()
                .expect("running openssl");
            assert!(status.success(), "openssl pkey failed");
            private
        });
        // A free port can be taken by another listener between our probe and sqld's bind: then
        // sqld exits at once and we try another port.
        for _ in 0..LAUNCH_ATTEMPTS {
            let port = free_port(ip);
            let mut child = spawn(&dir, ip, port, private_key.is_some());
            if wait_ready(&mut child, ip, port) {
                return Self {
                    child,
                    dir,
                    ip,
                    port,
                    private_key,
                };
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        panic!("sqld exited before it was ready, {LAUNCH_ATTEMPTS} times");
    }
}

impl Drop for Sqld {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Polls `/health` until it answers 200 (true), or the process exits (false). Panics if it never
/// answers.
fn wait_ready(child: &mut Child, ip: Ipv4Addr, port: u16) -> bool {
    let deadline = Instant::now() + READY_WITHIN;
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if health_ok(ip, port) {
            // Ours, not another server that won the port (the loser exits at once).
            return matches!(child.try_wait(), Ok(None));
        }
        assert!(Instant::now() < deadline, "sqld never answered /health");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `sqld` on `ip:port` with its data (and, with `auth`, its public key) in `dir`.
fn spawn(dir: &Path, ip: Ipv4Addr, port: u16, auth: bool) -> Child {
    let binary = sqld_binary().expect("sqld is not available: call need(Need::Sqld) first");
    let mut cmd = Command::new(binary);
    cmd.arg("--no-welcome")
        .arg("--db-path")
        .arg(dir.join("data.sqld"))
        .arg("--http-listen-addr")
        .arg(format!("{ip}:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if auth {
        cmd.arg("--auth-jwt-key-file")
            .arg(dir.join("jwt_public.pem"));
    }
    cmd.spawn().expect("starting sqld")
}

/// The loopback address of server `n` of process `pid`: `127.P.P.N` with the process id's low 16
/// bits (never 0.0, which would be `127.0.0.x`, shared with everything else on loopback) and the
/// counter's low byte (never 0 or 255).
fn own_loopback(pid: u32, n: usize) -> Ipv4Addr {
    let [_, _, hi, lo] = pid.to_be_bytes();
    let hi = if hi == 0 && lo == 0 { 1 } else { hi };
    let last = u8::try_from(n % 254 + 1).unwrap_or(1);
    Ipv4Addr::new(127, hi, lo, last)
}

fn free_port(ip: Ipv4Addr) -> u16 {
    let listener = TcpListener::bind((ip, 0)).expect("binding a free port");
    listener.local_addr().expect("reading the free port").port()
}

fn health_ok(ip: Ipv4Addr, port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect((ip, port)) else {
        return false;
    };
    let request = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200")
}

fn openssl(args: &[&str], out: &Path) {
    let status = Command::new("openssl")
        .args(args)
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("running openssl");
    assert!(status.success(), "openssl {args:?} failed");
}

fn b64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            let index = (n >> (18 - 6 * i)) & 63;
            out.push(char::from(ALPHABET[index as usize]));
        }
    }
    out
}

/// An EdDSA JWT signed with `openssl pkeyutl -rawin` (the same as the tool's `mint_jwt.sh`).
fn mint_jwt(private_key: &Path, claims: &str) -> String {
    let signing_input = format!(
        "{}.{}",
        b64url(br#"{"alg":"EdDSA","typ":"JWT"}"#),
        b64url(claims.as_bytes())
    );
    let dir = private_key.parent().unwrap_or(Path::new("."));
    let input = dir.join(format!(
        "jwt-input-{}",
        NEXT_DIR.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&input, &signing_input).expect("writing the JWT input");
    let output = Command::new("openssl")
        .args(["pkeyutl", "-sign", "-rawin", "-inkey"])
        .arg(private_key)
        .arg("-in")
        .arg(&input)
        .output()
        .expect("running openssl");
    let _ = std::fs::remove_file(&input);
    assert!(output.status.success(), "openssl pkeyutl failed");
    format!("{signing_input}.{}", b64url(&output.stdout))
}

#[cfg(test)]
mod tests {
    use super::b64url;

    #[test]
    fn base64url_without_padding() {
        assert_eq!(b64url(b""), "");
        assert_eq!(b64url(b"f"), "Zg");
        assert_eq!(b64url(b"fo"), "Zm8");
        assert_eq!(b64url(b"foo"), "Zm9v");
        assert_eq!(b64url(&[0xfb, 0xff]), "-_8");
    }
}
