//! Remote mode's checks: the URL is validated before anything connects, and a failure of the
//! first statements against the server (the probe and the migrations) becomes one clear
//! [`RemoteProblem`] instead of a raw protocol error. Nothing ever falls back to a local file.

use crate::error::{MemoryError, RemoteProblem};

/// Accepts `http://`, `https://` and `libsql://` URLs with a host (libsql turns `libsql://` into
/// `https://`). Anything else is [`RemoteProblem::BadUrl`].
pub(crate) fn check_url(url: &str) -> Result<(), MemoryError> {
    let bad = || MemoryError::Remote {
        problem: RemoteProblem::BadUrl,
        source: None,
    };
    let parsed = reqwest::Url::parse(url).map_err(|_| bad())?;
    let scheme_ok = matches!(parsed.scheme(), "http" | "https" | "libsql");
    let host_ok = parsed.host_str().is_some_and(|h| !h.is_empty());
    if scheme_ok && host_ok {
        Ok(())
    } else {
        Err(bad())
    }
}

/// Names the problem when a remote statement failed because of the server, the network or the
/// token; other errors pass through unchanged.
pub(crate) fn explain(error: MemoryError) -> MemoryError {
    let MemoryError::Database { source, context } = error else {
        return error;
    };
    match classify(&source.to_string()) {
        Some(problem) => MemoryError::Remote {
            problem,
            source: Some(source),
        },
        None => MemoryError::Database { context, source },
    }
}

/// The problem a libsql remote error text describes (HTTP status or connection failure).
fn classify(text: &str) -> Option<RemoteProblem> {
    let lower = text.to_ascii_lowercase();
    // sqld answers `status=401 Unauthorized` (no, bad, expired or foreign token) and
    // `status=403 Forbidden` (a read-only token writing); a refused connection or a failed name
    // lookup reaches us as hyper's "error trying to connect".
    if lower.contains("transaction timed out") {
        // The server ended a transaction held open too long: not a connection problem.
        None
    } else if lower.contains("status=401") || lower.contains("unauthorized") {
        Some(RemoteProblem::Unauthorized)
    } else if lower.contains("status=403") || lower.contains("forbidden") {
        Some(RemoteProblem::ReadOnly)
    } else if lower.contains("connect")
        || lower.contains("dns")
        || lower.contains("resolve")
        || lower.contains("timed out")
        // An embedded replica's sync reports a primary that does not answer this way.
        || lower.contains("handshake")
    {
        Some(RemoteProblem::Unreachable)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_before_connecting() {
        for good in [
            "http://127.0.0.1:8080",
            "https://db.example.org",
            "libsql://team-db.turso.io",
        ] {
            assert!(check_url(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "db.example.org",
            "ftp://host",
            "file:///tmp/x.db",
            "http://",
        ] {
            let err = check_url(bad).unwrap_err();
            assert!(
                matches!(
                    err,
                    MemoryError::Remote {
                        problem: RemoteProblem::BadUrl,
                        ..
                    }
                ),
                "{bad}: {err}"
            );
        }
    }
}
