//! [`GatewayToken`]: the per-user secret a client must present in `hello`.
//!
//! It lives in the user's `.oxydra/gateway.token` (mode 0600), is created with 32 random bytes
//! (64 hex characters) when absent, and is compared in constant time.

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use subtle::ConstantTimeEq;

use crate::GatewayError;

/// A gateway token. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct GatewayToken {
    secret: String,
}

impl fmt::Debug for GatewayToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GatewayToken(<redacted>)")
    }
}

impl GatewayToken {
    /// The token's file name inside the user's `.oxydra/` directory.
    pub const FILE_NAME: &'static str = "gateway.token";
    const SECRET_BYTES: usize = 32;

    /// A token with a known secret (for tests and embedding).
    pub fn from_secret(secret: impl Into<String>) -> Self {
        Self {
            secret: secret.into(),
        }
    }

    /// A fresh random token (not stored anywhere).
    pub fn generate() -> Result<Self, GatewayError> {
        let mut bytes = [0u8; Self::SECRET_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| GatewayError::Random(e.to_string()))?;
        let secret = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Self { secret })
    }

    /// Reads `<internal_dir>/gateway.token`, creating the directory (0700) and the file (0600)
    /// with a fresh secret when absent. A file readable by others is tightened to 0600.
    pub fn load_or_create(internal_dir: &Path) -> Result<Self, GatewayError> {
        let path = internal_dir.join(Self::FILE_NAME);
        let io = |source| GatewayError::Token {
            path: path.clone(),
            source,
        };
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(internal_dir)
            .map_err(io)?;
        let fresh = Self::generate()?;
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(mut file) => {
                file.write_all(fresh.secret.as_bytes()).map_err(io)?;
                file.write_all(b"\n").map_err(io)?;
                file.sync_all().map_err(io)?;
                tracing::info!("created a new gateway token");
                Ok(fresh)
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                let meta = fs::metadata(&path).map_err(io)?;
                if meta.permissions().mode() & 0o077 != 0 {
                    tracing::warn!("gateway token was readable by others; restricting it to 0600");
                    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).map_err(io)?;
                }
                let secret = fs::read_to_string(&path).map_err(io)?.trim().to_owned();
                if secret.len() < 16 || secret.chars().any(|c| c.is_whitespace()) {
                    return Err(GatewayError::BadToken(path));
                }
                Ok(Self { secret })
            }
            Err(e) => Err(io(e)),
        }
    }

    /// The secret, for a client to send (e.g. a TUI started by the runner).
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// Whether `presented` is this token, in time independent of where they differ.
    pub fn verify(&self, presented: &str) -> bool {
        bool::from(self.secret.as_bytes().ct_eq(presented.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_with_mode_0600_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let internal = dir.path().join("alice/.oxydra");
        let first = GatewayToken::load_or_create(&internal).unwrap();
        assert_eq!(first.secret().len(), 64);
        let mode = fs::metadata(internal.join(GatewayToken::FILE_NAME))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = GatewayToken::load_or_create(&internal).unwrap();
        assert_eq!(first, again);
        assert!(first.verify(again.secret()));
        assert!(!first.verify(""));
        assert!(!first.verify(&first.secret()[1..]));
        assert_ne!(first, GatewayToken::generate().unwrap());
        assert_eq!(format!("{first:?}"), "GatewayToken(<redacted>)");
    }

    #[test]
    fn loose_permissions_are_tightened_and_garbage_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(GatewayToken::FILE_NAME);
        fs::write(&path, "0123456789abcdef0123\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let token = GatewayToken::load_or_create(dir.path()).unwrap();
        assert!(token.verify("0123456789abcdef0123"));
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        fs::write(&path, "short").unwrap();
        assert!(matches!(
            GatewayToken::load_or_create(dir.path()),
            Err(GatewayError::BadToken(_))
        ));
    }
}
