//! [`WebAuth`]: the web client's sign-in state, held in memory by a running gateway — one-time
//! sign-in codes (issued to a caller holding the gateway token, dead after first use or
//! `GatewayConfig::signin_code_lifetime`, 60 s by default), browser sessions (a random id in an HttpOnly, SameSite=Strict cookie,
//! ended server-side by sign-out or after [`SESSION_LIFETIME`]) and the limit on failed sign-in
//! attempts. Sessions outlive a restart of the agent: each user's live sessions are kept in
//! `.oxydra/web-sessions` (mode 0600, out of the shell's reach) as SHA-256 digests of their ids —
//! the file never holds a cookie that would work — with when each started. Codes are never
//! written anywhere; nothing here is logged.

use std::collections::{HashMap, VecDeque};
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use types::{CancellationToken, UserId};

/// The file, in a user's `.oxydra/`, that keeps their browser sessions' digests.
pub(crate) const SESSIONS_FILE: &str = "web-sessions";

/// How long a browser session lasts after it was signed in.
pub(crate) const SESSION_LIFETIME: Duration = Duration::from_secs(7 * 24 * 3600);
/// Failed sign-in attempts (a wrong token, an unknown or used code) allowed per window, over the
/// whole gateway; beyond them every attempt is refused until the oldest failure leaves the window.
pub(crate) const MAX_FAILURES: usize = 10;
pub(crate) const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Codes waiting to be used at once; issuing another drops the oldest.
const MAX_CODES: usize = 64;
/// Browser sessions held at once; signing in another ends the oldest.
const MAX_SESSIONS: usize = 256;
/// Random bytes in a code or a session id (hex-encoded: twice as many characters).
const SECRET_BYTES: usize = 32;

/// A signed-in browser.
#[derive(Debug, Clone)]
pub(crate) struct WebSession {
    pub(crate) user: UserId,
    started: SystemTime,
    /// Cancelled at sign-out: the session's open WebSocket connections close.
    pub(crate) ended: CancellationToken,
}

#[derive(Debug)]
struct Code {
    user: UserId,
    issued: Instant,
}

#[derive(Debug, Default)]
struct State {
    codes: HashMap<String, Code>,
    /// By the digest of the session id.
    sessions: HashMap<String, WebSession>,
    failures: VecDeque<Instant>,
}

/// Why a sign-in attempt was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Too many failures in the window: try again after this long.
    RateLimited(Duration),
    /// A wrong token, or a code that is unknown, used or expired.
    Bad,
}

/// The sign-in state of one running gateway.
#[derive(Debug)]
pub(crate) struct WebAuth {
    state: Mutex<State>,
    code_lifetime: Duration,
    /// Where each user's sessions are kept.
    files: HashMap<UserId, PathBuf>,
}

impl WebAuth {
    /// Sign-in state that keeps each user's sessions in the file given for them (read now).
    pub(crate) fn new(code_lifetime: Duration, files: HashMap<UserId, PathBuf>) -> Self {
        let mut state = State::default();
        for (user, path) in &files {
            for line in fs::read_to_string(path).unwrap_or_default().lines() {
                let mut parts = line.split(' ');
                let (Some(digest), Some(started)) = (parts.next(), parts.next()) else {
                    continue;
                };
                let Ok(secs) = started.parse::<u64>() else {
                    continue;
                };
                let session = WebSession {
                    user: user.clone(),
                    started: UNIX_EPOCH + Duration::from_secs(secs),
                    ended: CancellationToken::default(),
                };
                if live(&session) {
                    state.sessions.insert(digest.to_owned(), session);
                }
            }
        }
        Self {
            state: Mutex::new(state),
            code_lifetime,
            files,
        }
    }

    /// Rewrites `user`'s sessions file from `state` (a failure is logged: the sessions still
    /// work until the agent restarts).
    fn save(&self, state: &State, user: &UserId) {
        let Some(path) = self.files.get(user) else {
            return;
        };
        let mut text = String::new();
        for (digest, s) in state.sessions.iter().filter(|(_, s)| &s.user == user) {
            let secs = s
                .started
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            text.push_str(&format!("{digest} {secs}\n"));
        }
        let tmp = path.with_extension("tmp");
        let written = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .and_then(|()| fs::rename(&tmp, path));
        if let Err(e) = written {
            tracing::warn!(error = %e, "could not keep the web sessions for a restart");
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Plain maps with no invariant a panic could break half-way.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A fresh one-time code for `user` (the caller proved it holds the user's token).
    pub(crate) fn issue_code(&self, user: &UserId) -> Option<String> {
        let code = random_hex()?;
        let now = Instant::now();
        let mut state = self.state();
        state
            .codes
            .retain(|_, c| now.duration_since(c.issued) < self.code_lifetime);
        if state.codes.len() >= MAX_CODES
            && let Some(oldest) = oldest_key(&state.codes, |c| c.issued)
        {
            state.codes.remove(&oldest);
        }
        state.codes.insert(
            code.clone(),
            Code {
                user: user.clone(),
                issued: now,
            },
        );
        Some(code)
    }

    /// Checks the failure limit before an attempt; `Err` when attempts are refused for now.
    pub(crate) fn admit_attempt(&self) -> Result<(), Refused> {
        let mut state = self.state();
        let now = Instant::now();
        while state
            .failures
            .front()
            .is_some_and(|t| now.duration_since(*t) >= FAILURE_WINDOW)
        {
            state.failures.pop_front();
        }
        match state.failures.front() {
            Some(oldest) if state.failures.len() >= MAX_FAILURES => Err(Refused::RateLimited(
                FAILURE_WINDOW.saturating_sub(now.duration_since(*oldest)),
            )),
            _ => Ok(()),
        }
    }

    /// Records a failed attempt.
    pub(crate) fn failed(&self) -> Refused {
        self.state().failures.push_back(Instant::now());
        Refused::Bad
    }

    /// Exchanges a code for a new session id; the code is dead afterwards whatever the outcome.
    pub(crate) fn redeem_code(&self, code: &str) -> Result<(String, UserId), Refused> {
        self.admit_attempt()?;
        let found = self.state().codes.remove(code);
        match found {
            Some(c) if c.issued.elapsed() < self.code_lifetime => {
                let id = self.start_session(&c.user).ok_or(Refused::Bad)?;
                Ok((id, c.user))
            }
            _ => Err(self.failed()),
        }
    }

    /// Starts a session for `user`; its id goes in the cookie.
    pub(crate) fn start_session(&self, user: &UserId) -> Option<String> {
        let id = random_hex()?;
        let now = SystemTime::now();
        let mut state = self.state();
        state.sessions.retain(|_, s| {
            let live = live(s);
            if !live {
                s.ended.cancel();
            }
            live
        });
        if state.sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = oldest_key(&state.sessions, |s| s.started)
            && let Some(s) = state.sessions.remove(&oldest)
        {
            s.ended.cancel();
        }
        state.sessions.insert(
            digest(&id),
            WebSession {
                user: user.clone(),
                started: now,
                ended: CancellationToken::default(),
            },
        );
        self.save(&state, user);
        Some(id)
    }

    /// The live session with this id.
    pub(crate) fn session(&self, id: &str) -> Option<WebSession> {
        let state = self.state();
        state.sessions.get(&digest(id)).filter(|s| live(s)).cloned()
    }

    /// Ends the session with this id (its connections close); true when there was one.
    pub(crate) fn end_session(&self, id: &str) -> bool {
        let mut state = self.state();
        match state.sessions.remove(&digest(id)) {
            Some(s) => {
                s.ended.cancel();
                self.save(&state, &s.user);
                true
            }
            None => false,
        }
    }
}

/// Resolves when the browser session behind a connection signs out; never without one.
pub(crate) async fn ended(token: Option<&CancellationToken>) {
    match token {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

fn live(session: &WebSession) -> bool {
    session
        .started
        .elapsed()
        .is_ok_and(|age| age < SESSION_LIFETIME)
}

/// The hex SHA-256 of a session id: what is kept, in memory and on disk.
fn digest(id: &str) -> String {
    Sha256::digest(id.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn oldest_key<T, A: Ord>(map: &HashMap<String, T>, at: impl Fn(&T) -> A) -> Option<String> {
    map.iter()
        .min_by_key(|(_, v)| at(v))
        .map(|(k, _)| k.clone())
}

fn random_hex() -> Option<String> {
    let mut bytes = [0u8; SECRET_BYTES];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> UserId {
        UserId::parse("alice").unwrap()
    }

    #[test]
    fn a_code_works_once() {
        let auth = WebAuth::new(Duration::from_secs(60), HashMap::new());
        let code = auth.issue_code(&alice()).unwrap();
        assert_eq!(code.len(), 64);
        let (id, user) = auth.redeem_code(&code).unwrap();
        assert_eq!(user, alice());
        assert_eq!(auth.session(&id).unwrap().user, alice());
        assert_eq!(auth.redeem_code(&code), Err(Refused::Bad));
    }

    #[test]
    fn an_expired_code_is_dead() {
        let auth = WebAuth::new(Duration::ZERO, HashMap::new());
        let code = auth.issue_code(&alice()).unwrap();
        assert_eq!(auth.redeem_code(&code), Err(Refused::Bad));
    }

    #[test]
    fn sign_out_ends_the_session_and_its_connections() {
        let auth = WebAuth::new(Duration::from_secs(60), HashMap::new());
        let id = auth.start_session(&alice()).unwrap();
        let ended = auth.session(&id).unwrap().ended;
        assert!(auth.end_session(&id));
        assert!(ended.is_cancelled());
        assert!(auth.session(&id).is_none());
        assert!(!auth.end_session(&id));
    }

    #[test]
    fn sessions_outlive_a_restart_as_digests_and_sign_out_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SESSIONS_FILE);
        let files = HashMap::from([(alice(), path.clone())]);
        let auth = WebAuth::new(Duration::from_secs(60), files.clone());
        let kept = auth.start_session(&alice()).unwrap();
        let ended = auth.start_session(&alice()).unwrap();
        assert!(auth.end_session(&ended));
        let text = fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains(&kept),
            "the file holds digests, not session ids"
        );
        let mode = fs::metadata(&path).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
        let restarted = WebAuth::new(Duration::from_secs(60), files);
        assert_eq!(restarted.session(&kept).unwrap().user, alice());
        assert!(restarted.session(&ended).is_none());
    }

    #[test]
    fn failures_are_limited_per_window() {
        let auth = WebAuth::new(Duration::from_secs(60), HashMap::new());
        for _ in 0..MAX_FAILURES {
            assert_eq!(auth.redeem_code("nope"), Err(Refused::Bad));
        }
        // Even a good code is refused while the limit holds.
        let code = auth.issue_code(&alice()).unwrap();
        assert!(matches!(
            auth.redeem_code(&code),
            Err(Refused::RateLimited(wait)) if wait <= FAILURE_WINDOW
        ));
    }
}
