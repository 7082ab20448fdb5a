//! The daemon's proof of itself, asked before a client sends anything it must keep.
//!
//! `ipc/` (and so the daemon's socket) is writable by the shell: a command can rename the
//! daemon's socket away and bind a listener of its own at that path. Before the secret and the
//! request (an MCP server's `env` included) go out, a client therefore writes a
//! [`ShellChallenge`] (32 random bytes, hex) and the daemon answers
//! [`crate::ShellResponse::Proof`]: HMAC-SHA256 under the daemon's [`ProofKey`] of
//! [`PROOF_DOMAIN`], the challenge's bytes and the peer's uid and pid as the daemon sees them
//! (`SO_PEERCRED`, 4 bytes little-endian each; pid 0 for a peer in a pid namespace the daemon
//! does not see, as the agent's container is to the shell's). The key is SHA-256 of [`PROOF_KEY_DOMAIN`] followed by the secret: the
//! client derives it from the secret it holds, the daemon is given only the key (in its
//! bootstrap, never on a command line), and neither the key nor the proof tells anything of the
//! secret or its verifier. A listener that is not the daemon cannot answer; one that relays the
//! challenge to the real daemon gets a proof for its own uid and pid: the agent accepts only its
//! own uid with its own pid or pid 0, so a relay in the shell's pid namespace is refused even
//! when it shares the agent's uid (a runner not started as root, process tier).
//!
//! ```text
//! → {"challenge":"5be2…"}
//! ← {"type":"proof","proof":"0c41…"}
//! → {"auth":"9f86d081884c7d65…"}
//! ```

use serde::{Deserialize, Serialize};

/// Prefix of the secret in the proof key's SHA-256.
pub const PROOF_KEY_DOMAIN: &[u8] = b"oxydra shell daemon proof key v1\0";
/// Prefix of the challenge in the proof's HMAC.
pub const PROOF_DOMAIN: &[u8] = b"oxydra shell daemon proof v1\0";

/// A client's first line when it wants the daemon to prove itself: 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellChallenge {
    pub challenge: String,
}

/// The daemon's proof key, 64 lowercase hex digits (see the module docs). Never printed.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProofKey(pub String);

impl std::fmt::Debug for ProofKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProofKey(<redacted>)")
    }
}

/// 64 lowercase hex digits (32 bytes)?
pub fn is_hex32(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_never_printed_and_frames_are_plain_json() {
        let key = ProofKey("ab".repeat(32));
        assert_eq!(format!("{key:?}"), "ProofKey(<redacted>)");
        assert_eq!(
            serde_json::to_string(&ShellChallenge {
                challenge: "00".into()
            })
            .unwrap(),
            r#"{"challenge":"00"}"#
        );
        assert!(serde_json::from_str::<ShellChallenge>(r#"{"auth":"x"}"#).is_err());
        assert!(is_hex32(&"0f".repeat(32)));
        assert!(!is_hex32(&"0F".repeat(32)));
        assert!(!is_hex32(&"0f".repeat(31)));
    }

    #[test]
    fn a_bootstrap_needs_a_proof_key() {
        let mut boot = crate::ShellBootstrap::new(crate::UserId::parse("alice").unwrap(), "/w");
        boot.secret_sha256 = Some("ab".repeat(32));
        boot.proof_key = Some(ProofKey("cd".repeat(32)));
        assert_eq!(boot.validate(), Ok(()));
        for key in [None, Some("CD".repeat(32)), Some("cd".repeat(31))] {
            let bad = crate::ShellBootstrap {
                proof_key: key.map(ProofKey),
                ..boot.clone()
            };
            assert_eq!(bad.validate(), Err(crate::ShellBootstrapError::BadProofKey));
        }
    }
}
