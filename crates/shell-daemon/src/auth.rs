//! Connection authentication: the first line of every connection must be a [`types::ShellAuth`]
//! frame whose secret hashes (SHA-256) to the verifier the daemon was started with.
//!
//! The daemon holds only the verifier, never the secret: reading the daemon's memory or its
//! bootstrap (which a command in its own sandbox might) does not let anyone connect. The secret
//! itself sits in the user's `.oxydra/`, which only `oxydra-vm` sees. Comparison is constant-time.
//!
//! Before that line a client may send a [`types::ShellChallenge`]; the daemon answers with its
//! proof ([`Prover`], see `types::shell_proof`), bound to the peer's uid, so that the agent never
//! hands its secret to a listener the shell put at the socket's path.

use std::time::Duration;

use sha2::{Digest, Sha256};
use types::{PROOF_DOMAIN, ShellAuth, ShellChallenge};

/// How long a client has to send its [`ShellAuth`] line.
pub const AUTH_DEADLINE: Duration = Duration::from_secs(10);

/// The SHA-256 a client's secret must hash to.
#[derive(Clone, PartialEq, Eq)]
pub struct Verifier([u8; 32]);

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Verifier(<redacted>)")
    }
}

/// What became of a connection's first line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Accepted,
    /// The line was a [`ShellAuth`] with the wrong secret.
    WrongSecret,
    /// The line was not a [`ShellAuth`] frame (a request sent without authenticating, garbage).
    Malformed,
    /// Nothing arrived within [`AUTH_DEADLINE`].
    TimedOut,
    /// The client closed the connection before writing anything (a liveness probe).
    HungUp,
}

impl Verdict {
    /// The message sent to a refused client; `None` when accepted.
    pub fn refusal(self) -> Option<&'static str> {
        match self {
            Verdict::Accepted => None,
            Verdict::HungUp => Some("closed"),
            _ => Some("not authenticated: the first line must carry this user's shell secret"),
        }
    }

    /// Why a connection was refused, for the log.
    pub fn reason(self) -> &'static str {
        match self {
            Verdict::Accepted => "accepted",
            Verdict::WrongSecret => "wrong secret",
            Verdict::Malformed => "no secret (the first line was not an auth frame)",
            Verdict::TimedOut => "no secret within the deadline",
            Verdict::HungUp => "hung up before authenticating",
        }
    }
}

impl Verifier {
    /// From 64 lowercase hex digits.
    pub fn from_hex(hex: &str) -> Option<Self> {
        let bytes = hex.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            *slot = (nibble(pair[0])? << 4) | nibble(pair[1])?;
        }
        Some(Self(out))
    }

    /// The verifier of `secret`.
    pub fn of_secret(secret: &str) -> Self {
        Self(Sha256::digest(secret.as_bytes()).into())
    }

    /// True when `secret` hashes to this verifier (constant-time in the digest).
    pub fn accepts(&self, secret: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
        let diff = digest
            .iter()
            .zip(self.0.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }

    /// Judges a connection's first line.
    pub fn check_line(&self, line: &str) -> Verdict {
        match serde_json::from_str::<ShellAuth>(line) {
            Ok(auth) if self.accepts(&auth.auth) => Verdict::Accepted,
            Ok(_) => Verdict::WrongSecret,
            Err(_) => Verdict::Malformed,
        }
    }
}

/// Who connected, as `SO_PEERCRED` tells the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    pub uid: u32,
    /// 0 when the peer is in a pid namespace the daemon does not see (the agent's container).
    pub pid: u32,
}

/// Proves the daemon to a client: HMAC-SHA256 under the bootstrap's proof key.
#[derive(Clone, PartialEq, Eq)]
pub struct Prover([u8; 32]);

impl std::fmt::Debug for Prover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prover(<redacted>)")
    }
}

impl Prover {
    /// From the bootstrap's key (64 lowercase hex digits).
    pub fn from_hex(hex: &str) -> Option<Self> {
        Verifier::from_hex(hex).map(|v| Self(v.0))
    }

    /// The challenge `line` carries, if it is a [`ShellChallenge`] of 32 bytes.
    pub fn challenge(line: &str) -> Option<[u8; 32]> {
        let frame = serde_json::from_str::<ShellChallenge>(line).ok()?;
        Verifier::from_hex(&frame.challenge).map(|v| v.0)
    }

    /// The proof (hex) for `challenge` asked by `peer` (its uid, and its pid as this daemon
    /// sees it: 0 for a process in a pid namespace the daemon does not see).
    pub fn prove(&self, challenge: &[u8; 32], peer: Peer) -> String {
        let mut message = PROOF_DOMAIN.to_vec();
        message.extend_from_slice(challenge);
        message.extend_from_slice(&peer.uid.to_le_bytes());
        message.extend_from_slice(&peer.pid.to_le_bytes());
        hmac_sha256(&self.0, &message)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// HMAC-SHA256 (RFC 2104) with a 32-byte key.
fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let pad = |byte: u8| {
        let mut block = [byte; 64];
        for (slot, k) in block.iter_mut().zip(key) {
            *slot ^= k;
        }
        block
    };
    let inner: [u8; 32] = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize()
        .into();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

fn nibble(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(line: &str, expected: Verdict) {
        let v = Verifier::of_secret("s3cret");
        assert_eq!(v.check_line(line), expected, "{line}");
    }

    #[test]
    fn only_the_right_secret_in_an_auth_frame_is_accepted() {
        check(r#"{"auth":"s3cret"}"#, Verdict::Accepted);
        check("{\"auth\":\"s3cret\"}\n", Verdict::Accepted);
        check(r#"{"auth":"s3cre"}"#, Verdict::WrongSecret);
        check(r#"{"auth":""}"#, Verdict::WrongSecret);
        check(r#"{"id":1,"command":"id"}"#, Verdict::Malformed);
        check(r#"{"auth":"s3cret","id":1}"#, Verdict::Malformed);
        check("garbage", Verdict::Malformed);
    }

    #[test]
    fn hmac_matches_rfc_4231_and_proofs_bind_the_uid() {
        // RFC 4231 test case 1: its 20-byte key, zero-padded to 32 bytes, is the same key (HMAC
        // pads every key shorter than a block with zeros).
        let mut key = [0u8; 32];
        key[..20].copy_from_slice(&[0x0b; 20]);
        let mac: String = hmac_sha256(&key, b"Hi There")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            mac,
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        let prover = Prover::from_hex(&"ab".repeat(32)).unwrap();
        let challenge = Prover::challenge(&format!(r#"{{"challenge":"{}"}}"#, "01".repeat(32)));
        let challenge = challenge.unwrap();
        let peer = |uid, pid| Peer { uid, pid };
        let proof = prover.prove(&challenge, peer(1000, 7));
        assert_ne!(proof, prover.prove(&challenge, peer(1001, 7)));
        assert_ne!(proof, prover.prove(&challenge, peer(1000, 8)));
        assert_eq!(Prover::challenge(r#"{"challenge":"01"}"#), None);
        assert_eq!(Prover::challenge(r#"{"auth":"x"}"#), None);
    }

    #[test]
    fn hex_verifiers() {
        // sha256("abc")
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(Verifier::from_hex(abc), Some(Verifier::of_secret("abc")));
        assert_eq!(Verifier::from_hex(&abc.to_uppercase()), None);
        assert_eq!(Verifier::from_hex(&abc[..62]), None);
    }
}
