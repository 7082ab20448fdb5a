//! `[user]` (who the agent works for: their time zone) and `[schedules]` (what the agent does on
//! its own at a time: on or off, how many, how often at most, how failed runs are retried).

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// `[user]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UserConfig {
    /// The user's IANA time zone (`Europe/Paris`), in which schedules' local times and the times
    /// in a memory search ("yesterday", "in May") are read; unset: the host's.
    pub timezone: Option<String>,
}

/// `[schedules]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SchedulesConfig {
    /// Offer the schedule tools and run due schedules.
    pub enabled: bool,
    /// Most active or paused schedules a user may have.
    pub max_active: u32,
    /// Shortest time between two runs of a recurrence, in seconds.
    pub min_interval_secs: u64,
    /// Tries of a run whose turn fails (model error) before it is given up and reported.
    pub max_attempts: u32,
    /// Wait before the first retry, in seconds; doubled for each further one.
    pub retry_base_secs: u64,
}

impl Default for SchedulesConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_active: 100,
            min_interval_secs: 60,
            max_attempts: 3,
            retry_base_secs: 30,
        }
    }
}

impl SchedulesConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_active == 0 || self.max_active > 100_000 {
            return Err(ConfigError::new(
                "schedules.max_active",
                "must be between 1 and 100000",
            ));
        }
        if self.max_attempts == 0 || self.max_attempts > 20 {
            return Err(ConfigError::new(
                "schedules.max_attempts",
                "must be between 1 and 20",
            ));
        }
        if self.retry_base_secs == 0 || self.retry_base_secs > 86_400 {
            return Err(ConfigError::new(
                "schedules.retry_base_secs",
                "must be between 1 and 86400 seconds",
            ));
        }
        Ok(())
    }
}
