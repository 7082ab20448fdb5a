//! Rate limits per tool and per namespace: token buckets (a burst, refilled at a sustained rate),
//! one per user, surface and scope (an MCP client never drains the agent's own bucket), read against an injectable [`Clock`] so that tests move time by hand.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use types::{RateLimit, RateLimitsConfig, Surface, memory_ops};

use super::permissions::matches;

/// Time as the rate limiter sees it: a monotonic offset from an arbitrary start.
pub trait Clock: Send + Sync + fmt::Debug {
    fn now(&self) -> Duration;
}

/// The real monotonic clock.
#[derive(Debug)]
pub struct SystemClock(Instant);

impl Default for SystemClock {
    fn default() -> Self {
        Self(Instant::now())
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// A clock that moves only when told to (tests, benches).
#[derive(Debug, Default)]
pub struct ManualClock(Mutex<Duration>);

impl ManualClock {
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Duration,
}

/// Which limit refused a call, and when a retry can succeed.
#[derive(Debug, Clone, PartialEq)]
pub struct Limited {
    /// `tool` or `namespace`.
    pub scope: &'static str,
    /// The tool name or namespace pattern whose limit was reached.
    pub name: String,
    pub retry_after: Duration,
}

/// One bucket's key: user, surface, scope (`tool` or `namespace`) and its name.
type BucketKey = (String, Surface, &'static str, String);

/// The buckets of every (user, surface, scope) seen.
#[derive(Debug, Default)]
pub(crate) struct RateLimiter {
    buckets: Mutex<HashMap<BucketKey, Bucket>>,
}

impl RateLimiter {
    /// Takes one token from the tool's bucket and the namespace's bucket (each when configured),
    /// or none if either is empty.
    pub(crate) fn check(
        &self,
        config: &RateLimitsConfig,
        now: Duration,
        user: &str,
        surface: Surface,
        tool: &str,
        namespace: &str,
    ) -> Result<(), Limited> {
        // A limit may be written under an old name of the operation (see `OP_ALIASES`).
        let tool_limit = config
            .tools
            .get_key_value(tool)
            .or_else(|| {
                let name = memory_ops::op_name(tool)?;
                config
                    .tools
                    .iter()
                    .find(|(n, _)| memory_ops::op_name(n) == Some(name))
            })
            .or_else(|| config.tools.get_key_value("*"));
        let ns_limit = config
            .namespaces
            .iter()
            .filter(|(pattern, _)| matches(pattern, namespace))
            .max_by_key(|(pattern, _)| pattern.len());
        let wanted: Vec<(&'static str, &String, &RateLimit)> = tool_limit
            .map(|(n, l)| ("tool", n, l))
            .into_iter()
            .chain(ns_limit.map(|(n, l)| ("namespace", n, l)))
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() > 10_000 {
            buckets.clear();
        }
        let mut refilled = Vec::with_capacity(wanted.len());
        for (scope, name, limit) in &wanted {
            let key = (user.to_owned(), surface, *scope, (*name).clone());
            let burst = f64::from(limit.burst);
            let rate = limit.per_minute / 60.0;
            let bucket = buckets.get(&key).copied().unwrap_or(Bucket {
                tokens: burst,
                at: now,
            });
            let elapsed = now.saturating_sub(bucket.at).as_secs_f64();
            let tokens = (bucket.tokens + elapsed * rate).min(burst);
            if tokens < 1.0 {
                let wait = (1.0 - tokens) / rate;
                return Err(Limited {
                    scope,
                    name: (*name).clone(),
                    retry_after: Duration::from_secs_f64(wait.max(0.001)),
                });
            }
            refilled.push((key, tokens));
        }
        for (key, tokens) in refilled {
            buckets.insert(
                key,
                Bucket {
                    tokens: tokens - 1.0,
                    at: now,
                },
            );
        }
        Ok(())
    }
}
