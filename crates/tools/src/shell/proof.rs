//! The client's half of the daemon's proof (see `types::shell_proof`): before the secret or a
//! request leaves `oxydra-vm`, whatever listens at the socket's path must show it holds the proof
//! key derived from the secret, for this process's uid and pid (or pid 0: the daemon runs in
//! another pid namespace, the container tier). The shell writes `ipc/`: a listener of its
//! own there (the daemon's socket renamed away) would otherwise be handed the secret and every
//! request, an MCP server's `env` included.

use std::io::{self, ErrorKind};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use types::{PROOF_DOMAIN, PROOF_KEY_DOMAIN, ProofKey, ShellChallenge, ShellResponse, encode_line};

/// How long the daemon has to answer the challenge.
pub const PROOF_DEADLINE: Duration = Duration::from_secs(10);

/// What the model is told when the listener is not the user's shell daemon.
pub const NOT_THE_DAEMON: &str = "something other than the user's shell daemon listens at its \
     socket (it could not prove itself), so nothing was sent; restart the agent with the runner";

/// The proof key of `secret`, for the daemon's bootstrap.
pub fn proof_key_of(secret: &str) -> ProofKey {
    let key: [u8; 32] = Sha256::new()
        .chain_update(PROOF_KEY_DOMAIN)
        .chain_update(secret.as_bytes())
        .finalize()
        .into();
    ProofKey(hex(&key))
}

/// Asks the daemon behind `reader`/`writer` to prove itself and checks its answer; an error of
/// kind `PermissionDenied` (message [`NOT_THE_DAEMON`]) when it cannot.
pub(crate) async fn check_daemon<R, W>(
    reader: &mut R,
    writer: &mut W,
    secret: &str,
) -> io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut challenge = [0u8; 32];
    getrandom::fill(&mut challenge).map_err(|e| io::Error::other(e.to_string()))?;
    let line = encode_line(&ShellChallenge {
        challenge: hex(&challenge),
    })
    .map_err(io::Error::other)?;
    writer.write_all(line.as_bytes()).await?;
    let answer = tokio::time::timeout(PROOF_DEADLINE, super::client::next_reply(reader))
        .await
        .map_err(|_| io::Error::from(ErrorKind::TimedOut))??
        .ok_or_else(|| io::Error::from(ErrorKind::UnexpectedEof))?;
    let key = proof_key_of(secret);
    let uid = rustix::process::geteuid().as_raw();
    // The daemon sees this process as it is, or as pid 0 from another pid namespace (the
    // container tier); a relay of the shell is a process of its own, seen with its own pid.
    let expected = [std::process::id(), 0].map(|pid| proof(&key, &challenge, uid, pid));
    match serde_json::from_slice::<ShellResponse>(&answer) {
        Ok(ShellResponse::Proof { proof })
            if expected
                .iter()
                .any(|e| same(proof.as_bytes(), e.as_bytes())) =>
        {
            Ok(())
        }
        _ => Err(io::Error::new(ErrorKind::PermissionDenied, NOT_THE_DAEMON)),
    }
}

/// HMAC-SHA256 under `key` of the domain, the challenge, `uid` and `pid` (hex).
fn proof(key: &ProofKey, challenge: &[u8; 32], uid: u32, pid: u32) -> String {
    let mut message = PROOF_DOMAIN.to_vec();
    message.extend_from_slice(challenge);
    message.extend_from_slice(&uid.to_le_bytes());
    message.extend_from_slice(&pid.to_le_bytes());
    let key: [u8; 32] = unhex(&key.0);
    let pad = |byte: u8| {
        let mut block = [byte; 64];
        for (slot, k) in block.iter_mut().zip(key) {
            *slot ^= k;
        }
        block
    };
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(&message)
        .finalize();
    hex(&Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize())
}

/// Constant-time equality of two byte strings of the same length.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len()
        && std::hint::black_box(a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y))) == 0
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The 32 bytes of a key made by [`proof_key_of`] (hex it wrote itself; anything else is zeros).
fn unhex(text: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (slot, pair) in out.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
        let digit = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
        *slot = (digit(pair[0]) << 4) | digit(pair[1]);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn the_key_hides_the_secret_and_the_proof_binds_the_uid() {
        let key = proof_key_of("s3cret");
        assert_eq!(unhex(&key.0).len(), 32);
        assert_ne!(key, proof_key_of("s3cret2"));
        assert!(!key.0.contains("s3cret"));
        let challenge = [7u8; 32];
        let one = proof(&key, &challenge, 1000, 7);
        assert_ne!(one, proof(&key, &challenge, 1001, 7));
        assert_ne!(one, proof(&key, &challenge, 1000, 8));
        assert_ne!(one, proof(&key, &[8u8; 32], 1000, 7));
        assert!(same(b"ab", b"ab") && !same(b"ab", b"ac") && !same(b"ab", b"abc"));
    }
}
