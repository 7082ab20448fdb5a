//! When to try again: jittered exponential backoff, or the server's `Retry-After`.

use std::time::Duration;

/// A model request failed and is tried again after `wait`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// The attempt about to be made (2 for the first retry).
    pub attempt: u32,
    /// Attempts allowed in all (`provider.max_retries` + 1).
    pub max_attempts: u32,
    pub wait: Duration,
    /// Why the last attempt failed, in a few words ("timed out", "rate limited", "HTTP 503").
    pub reason: String,
}

#[derive(Debug, Clone)]
pub(crate) struct RetryPolicy {
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// A `Retry-After` longer than this is not waited for: the error is returned instead.
    pub max_retry_after: Duration,
}

impl RetryPolicy {
    /// The wait before retry number `attempt + 1`, or `None` to give up waiting. `jitter` is in
    /// `[0, 1)`: the backoff is spread over `[delay/2, delay)`.
    pub fn delay(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
        jitter: f64,
    ) -> Option<Duration> {
        if let Some(wait) = retry_after {
            return (wait <= self.max_retry_after).then_some(wait);
        }
        let factor = 2u32.saturating_pow(attempt.min(20));
        let full = self.base_delay.saturating_mul(factor).min(self.max_delay);
        Some(full / 2 + full.mul_f64(jitter.clamp(0.0, 1.0) / 2.0))
    }
}

/// Whether to try again after `err`, with `retries` made so far and `timeouts` of the attempts
/// timed out. A timeout is retried once: a model that did not answer in
/// `provider.request_timeout_secs` twice is hung or overloaded, and waiting the full timeout again
/// and again would leave the user watching "thinking…" for many minutes.
pub(crate) fn worth_retrying(
    err: &crate::ProviderError,
    retries: u32,
    timeouts: u32,
    max_retries: u32,
) -> bool {
    err.is_retryable() && retries < max_retries && timeouts <= 1
}

/// `Retry-After` in seconds (integer or decimal). HTTP dates are not honoured: backoff applies.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

/// A number in `[0, 1)` that differs between calls and processes (std's randomly seeded hasher).
pub(crate) fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 5,
            base_delay: 100 * MS,
            max_delay: 1000 * MS,
            max_retry_after: Duration::from_secs(60),
        }
    }

    #[test]
    fn delays() {
        let p = policy();
        let check = |attempt, retry_after, jitter, expected: Option<Duration>| {
            assert_eq!(
                p.delay(attempt, retry_after, jitter),
                expected,
                "attempt {attempt}"
            );
        };
        check(0, None, 0.0, Some(50 * MS));
        check(0, None, 0.5, Some(75 * MS));
        check(2, None, 0.0, Some(200 * MS));
        check(9, None, 0.0, Some(500 * MS)); // capped at max_delay
        check(
            0,
            Some(Duration::from_secs(3)),
            0.9,
            Some(Duration::from_secs(3)),
        );
        check(0, Some(Duration::from_secs(61)), 0.0, None);
    }

    #[test]
    fn timeouts_are_retried_once() {
        use crate::{ProviderError, TimeoutPhase};
        let timeout = ProviderError::Timeout {
            phase: TimeoutPhase::Response,
            base_url: "http://x".into(),
            after: Duration::from_secs(60),
        };
        let server = ProviderError::Server {
            status: 503,
            detail: String::new(),
        };
        let auth = ProviderError::Auth {
            status: 401,
            env_var: None,
            detail: String::new(),
        };
        let check = |err: &ProviderError, retries, timeouts, expected: bool| {
            assert_eq!(
                worth_retrying(err, retries, timeouts, 3),
                expected,
                "{err} after {retries} retries, {timeouts} timeouts"
            );
        };
        check(&server, 0, 0, true);
        check(&server, 2, 0, true);
        check(&server, 3, 0, false);
        check(&auth, 0, 0, false);
        check(&timeout, 0, 1, true);
        check(&timeout, 1, 2, false);
        // A server error after one timeout still gets its retries.
        check(&server, 1, 1, true);
    }

    #[test]
    fn retry_after_header() {
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(500 * MS));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn jitter_is_in_range() {
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j));
        }
    }
}
