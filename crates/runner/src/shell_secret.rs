//! The per-user shell secret: 32 random bytes (hex) in `.oxydra/shell.secret`, mode 0600, owned by
//! the user's agent uid. `oxydra-vm` reads it and proves it on every connection to the shell
//! daemon; the daemon is given only its SHA-256 (the bootstrap's `secret_sha256`), so nothing the
//! shell can read lets anyone connect. A new secret is issued each time a user's guests start.
//! The daemon also gets the secret's proof key ([`tools::proof_key_of`]), with which it proves
//! itself to the agent before the agent sends the secret; it reaches the daemon only in a
//! bootstrap on stdin.

use std::path::Path;

use sha2::{Digest, Sha256};
use types::{WorkspacePaths, shell_secret_path};

use crate::{RunnerError, UserIdentities};

/// Bytes of randomness in a secret.
const SECRET_BYTES: usize = 32;

/// What a `shell-vm` is given of the user's shell secret: its verifier and its proof key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellKeys {
    /// Lowercase hex SHA-256 of the secret ([`types::ShellBootstrap::secret_sha256`]).
    pub verifier: String,
    /// The daemon's proof key ([`types::ShellBootstrap::proof_key`]).
    pub proof_key: Option<types::ProofKey>,
}

impl ShellKeys {
    /// The keys of `secret`.
    pub fn of(secret: &str) -> Self {
        Self {
            verifier: verifier_of(secret),
            proof_key: Some(tools::proof_key_of(secret)),
        }
    }

    /// Puts both into `boot`.
    pub fn fill(&self, boot: &mut types::ShellBootstrap) {
        boot.secret_sha256 = Some(self.verifier.clone());
        boot.proof_key.clone_from(&self.proof_key);
    }
}

/// Writes a fresh secret for `ws` (atomically, following nothing: see
/// [`crate::privilege::write_owned`]), owned by the agent of `owner` when given; returns its
/// verifier and proof key.
pub fn issue_shell_secret(
    ws: &WorkspacePaths,
    owner: Option<UserIdentities>,
) -> Result<ShellKeys, RunnerError> {
    let path = shell_secret_path(ws);
    let mut bytes = [0u8; SECRET_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| {
        RunnerError::io("create a secret for", &path)(std::io::Error::other(e.to_string()))
    })?;
    let secret = hex(&bytes);
    crate::privilege::write_owned(
        &path,
        format!("{secret}\n").as_bytes(),
        0o600,
        owner.map(|ids| ids.agent),
    )?;
    Ok(ShellKeys::of(&secret))
}

/// The verifier the shell daemon is given for `secret`: lowercase hex SHA-256.
pub fn verifier_of(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// The verifier of the secret stored at `path`, if one is (a link, FIFO or anything but a
/// regular file at `path` is not read).
pub fn stored_verifier(path: &Path) -> Option<String> {
    let bytes = crate::beneath::read_regular(path, 4096).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let secret = text.trim();
    (!secret.is_empty()).then(|| verifier_of(secret))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_fresh_private_secret_each_time_and_its_verifier() {
        let dir = tempfile::tempdir().unwrap();
        let ws = WorkspacePaths::new(dir.path().join("alice"));
        std::fs::create_dir_all(ws.internal()).unwrap();
        let first = issue_shell_secret(&ws, None).unwrap();
        let path = shell_secret_path(&ws);
        let secret = std::fs::read_to_string(&path).unwrap();
        assert_eq!(secret.trim().len(), 2 * SECRET_BYTES);
        assert_eq!(stored_verifier(&path).as_ref(), Some(&first.verifier));
        assert_eq!(first.proof_key, Some(tools::proof_key_of(secret.trim())));
        assert_ne!(
            first.proof_key.as_ref().map(|k| &k.0),
            Some(&first.verifier)
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let second = issue_shell_secret(&ws, None).unwrap();
        assert_ne!(first, second);
        assert_eq!(
            verifier_of("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
