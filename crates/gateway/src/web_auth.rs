//! [`WebAuth`]: the web client's sign-in state, held in memory by a running gateway — one-time
//! sign-in codes (issued to a caller holding the gateway token, dead after first use or
//! `GatewayConfig::signin_code_lifetime`, 60 s by default), browser sessions (a random id in an HttpOnly, SameSite=Strict cookie,
//! ended server-side by sign-out or after [`SESSION_LIFETIME`]) and the limit on failed sign-in
//! attempts. Nothing here is written to disk or logged: a gateway restart signs every browser out.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use types::{CancellationToken, UserId};

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
    started: Instant,
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
}

impl WebAuth {
    pub(crate) fn new(code_lifetime: Duration) -> Self {
        Self {
            state: Mutex::default(),
            code_lifetime,
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
        let now = Instant::now();
        let mut state = self.state();
        state.sessions.retain(|_, s| {
            let live = now.duration_since(s.started) < SESSION_LIFETIME;
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
            id.clone(),
            WebSession {
                user: user.clone(),
                started: now,
                ended: CancellationToken::default(),
            },
        );
        Some(id)
    }

    /// The live session with this id.
    pub(crate) fn session(&self, id: &str) -> Option<WebSession> {
        let state = self.state();
        state
            .sessions
            .get(id)
            .filter(|s| s.started.elapsed() < SESSION_LIFETIME)
            .cloned()
    }

    /// Ends the session with this id (its connections close); true when there was one.
    pub(crate) fn end_session(&self, id: &str) -> bool {
        match self.state().sessions.remove(id) {
            Some(s) => {
                s.ended.cancel();
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

fn oldest_key<T>(map: &HashMap<String, T>, at: impl Fn(&T) -> Instant) -> Option<String> {
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
        let auth = WebAuth::new(Duration::from_secs(60));
        let code = auth.issue_code(&alice()).unwrap();
        assert_eq!(code.len(), 64);
        let (id, user) = auth.redeem_code(&code).unwrap();
        assert_eq!(user, alice());
        assert_eq!(auth.session(&id).unwrap().user, alice());
        assert_eq!(auth.redeem_code(&code), Err(Refused::Bad));
    }

    #[test]
    fn an_expired_code_is_dead() {
        let auth = WebAuth::new(Duration::ZERO);
        let code = auth.issue_code(&alice()).unwrap();
        assert_eq!(auth.redeem_code(&code), Err(Refused::Bad));
    }

    #[test]
    fn sign_out_ends_the_session_and_its_connections() {
        let auth = WebAuth::new(Duration::from_secs(60));
        let id = auth.start_session(&alice()).unwrap();
        let ended = auth.session(&id).unwrap().ended;
        assert!(auth.end_session(&id));
        assert!(ended.is_cancelled());
        assert!(auth.session(&id).is_none());
        assert!(!auth.end_session(&id));
    }

    #[test]
    fn failures_are_limited_per_window() {
        let auth = WebAuth::new(Duration::from_secs(60));
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
