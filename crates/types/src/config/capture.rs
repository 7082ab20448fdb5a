//! `[memory.capture]`: the background call that reads each new exchange and proposes what to
//! remember about the user (the runtime's capture).

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// What capture does with what it proposes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaptureMode {
    /// No capture call is made.
    Off,
    /// Proposals are kept pending until the user accepts or rejects them.
    Suggest,
    /// Proposals are applied at once (each through the governed pipeline, undoable).
    #[default]
    Auto,
}

impl CaptureMode {
    pub fn as_str(self) -> &'static str {
        match self {
            CaptureMode::Off => "off",
            CaptureMode::Suggest => "suggest",
            CaptureMode::Auto => "auto",
        }
    }
}

/// Most capture calls per hour a configuration may allow.
pub const MAX_CAPTURE_CALLS_PER_HOUR: u32 = 600;
/// Longest idle time before a capture, in seconds (one day).
pub const MAX_CAPTURE_IDLE_SECS: u64 = 86_400;

/// `[memory.capture]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CaptureConfig {
    pub mode: CaptureMode,
    /// Seconds a session must be idle after a turn before its new exchange is captured.
    pub idle_secs: u64,
    /// The model the capture call asks (default: the agent's own).
    pub model: Option<String>,
    /// Most capture calls per hour for the user (1..=600); calls past it are skipped.
    pub max_calls_per_hour: u32,
}

impl Default for CaptureConfig {
    fn default() -> Self {
        Self {
            mode: CaptureMode::Auto,
            idle_secs: 60,
            model: None,
            max_calls_per_hour: 30,
        }
    }
}

impl CaptureConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.idle_secs > MAX_CAPTURE_IDLE_SECS {
            return Err(ConfigError::new(
                "memory.capture.idle_secs",
                format!("must be at most {MAX_CAPTURE_IDLE_SECS} (one day)"),
            ));
        }
        // With capture off no call is made: a zero there says the same, and the message below
        // ("use mode = \"off\"") would tell the user to do what they did.
        let least = u32::from(self.mode != CaptureMode::Off);
        if !(least..=MAX_CAPTURE_CALLS_PER_HOUR).contains(&self.max_calls_per_hour) {
            return Err(ConfigError::new(
                "memory.capture.max_calls_per_hour",
                format!(
                    "must be between 1 and {MAX_CAPTURE_CALLS_PER_HOUR}; use mode = \"off\" to \
                     turn capture off"
                ),
            ));
        }
        if let Some(model) = &self.model
            && (model.trim().is_empty() || model.len() > 200)
        {
            return Err(ConfigError::new(
                "memory.capture.model",
                "must be a model name (1 to 200 characters); leave it out to use the agent's",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(json: &str, expected: Result<(), &str>) {
        let config: CaptureConfig = serde_json::from_str(json).expect("parses");
        let got = config
            .validate()
            .map_err(|e| format!("{}: {}", e.setting, e.problem));
        match expected {
            Ok(()) => assert!(got.is_ok(), "{json}: {got:?}"),
            Err(part) => {
                let message = got.expect_err(json);
                assert!(message.contains(part), "{json}: {message}");
            }
        }
    }

    #[test]
    fn bounds_are_checked() {
        check("{}", Ok(()));
        check(r#"{"mode": "suggest", "idle_secs": 0}"#, Ok(()));
        check(r#"{"idle_secs": 86401}"#, Err("idle_secs"));
        check(r#"{"max_calls_per_hour": 0}"#, Err("mode = \"off\""));
        // Off and no calls agree: not refused with advice to turn capture off.
        check(r#"{"mode": "off", "max_calls_per_hour": 0}"#, Ok(()));
        check(
            r#"{"mode": "off", "max_calls_per_hour": 601}"#,
            Err("max_calls_per_hour"),
        );
        check(r#"{"max_calls_per_hour": 601}"#, Err("max_calls_per_hour"));
        check(r#"{"model": " "}"#, Err("memory.capture.model"));
        assert!(serde_json::from_str::<CaptureConfig>(r#"{"mode": "sometimes"}"#).is_err());
        assert!(serde_json::from_str::<CaptureConfig>(r#"{"idle": 3}"#).is_err());
    }
}
