//! `[runtime]`: how the agent's turn loop behaves (prompt, tool rounds, approvals, recall, summary).

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// What happens when the model calls a `Privileged` tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalPolicy {
    /// Run it.
    Allow,
    /// Never run it; the model is told the configuration forbids it.
    Deny,
    /// Ask the user through the event stream and wait for the answer.
    #[default]
    Ask,
}

/// `[runtime]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RuntimeConfig {
    /// Replaces the built-in system prompt (which includes a guide to the memory tools).
    pub system_prompt: Option<String>,
    /// Most rounds of tool calls in one turn; then the agent stops and says so.
    pub max_tool_rounds: u32,
    /// What to do when the model calls a privileged tool.
    pub approval: ApprovalPolicy,
    /// How long an `ask` waits for the user before treating the call as declined.
    pub approval_timeout_secs: u64,
    /// Saved notes recalled into the context for each user message (0 turns recall off).
    pub recall_notes: usize,
    /// Token budget for the recalled notes.
    pub recall_token_budget: u32,
    /// Notes scoring below this (0..=1) are not recalled.
    pub recall_min_score: f64,
    /// Summarise older history when the context would exceed this fraction of the window.
    pub summary_trigger: f64,
    /// After summarising, the newest history kept verbatim, as a fraction of the window.
    pub summary_keep: f64,
    /// Upper bound on the length of the rolling summary, in tokens.
    pub summary_max_tokens: u32,
    /// Most stored events read per turn when assembling the context.
    pub history_events: usize,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            system_prompt: None,
            max_tool_rounds: 10,
            approval: ApprovalPolicy::Ask,
            approval_timeout_secs: 300,
            recall_notes: 3,
            recall_token_budget: 600,
            recall_min_score: 0.3,
            summary_trigger: 0.75,
            summary_keep: 0.3,
            summary_max_tokens: 800,
            history_events: 400,
        }
    }
}

impl RuntimeConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self
            .system_prompt
            .as_deref()
            .is_some_and(|p| p.trim().is_empty())
        {
            return Err(ConfigError::new(
                "runtime.system_prompt",
                "must not be empty: remove the line to use the built-in prompt",
            ));
        }
        if !(1..=100).contains(&self.max_tool_rounds) {
            return Err(ConfigError::new(
                "runtime.max_tool_rounds",
                "must be between 1 and 100",
            ));
        }
        if self.approval_timeout_secs == 0 {
            return Err(ConfigError::new(
                "runtime.approval_timeout_secs",
                "must be at least 1",
            ));
        }
        if self.recall_notes > 20 {
            return Err(ConfigError::new(
                "runtime.recall_notes",
                "must be between 0 and 20",
            ));
        }
        if !(0.0..=1.0).contains(&self.recall_min_score) {
            return Err(ConfigError::new(
                "runtime.recall_min_score",
                "must be between 0 and 1",
            ));
        }
        if !(self.summary_trigger > 0.0 && self.summary_trigger <= 1.0) {
            return Err(ConfigError::new(
                "runtime.summary_trigger",
                "must be above 0 and at most 1 (a fraction of the context window)",
            ));
        }
        if !(self.summary_keep > 0.0 && self.summary_keep < self.summary_trigger) {
            return Err(ConfigError::new(
                "runtime.summary_keep",
                "must be above 0 and below summary_trigger",
            ));
        }
        if self.summary_max_tokens < 64 {
            return Err(ConfigError::new(
                "runtime.summary_max_tokens",
                "must be at least 64",
            ));
        }
        if self.history_events < 2 {
            return Err(ConfigError::new(
                "runtime.history_events",
                "must be at least 2",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        let check = |cfg: RuntimeConfig, setting: Option<&str>| {
            assert_eq!(cfg.validate().err().map(|e| e.setting), setting, "{cfg:?}");
        };
        let base = RuntimeConfig::default;
        check(base(), None);
        check(
            RuntimeConfig {
                max_tool_rounds: 0,
                ..base()
            },
            Some("runtime.max_tool_rounds"),
        );
        check(
            RuntimeConfig {
                system_prompt: Some(" ".into()),
                ..base()
            },
            Some("runtime.system_prompt"),
        );
        check(
            RuntimeConfig {
                summary_keep: 0.8,
                ..base()
            },
            Some("runtime.summary_keep"),
        );
        check(
            RuntimeConfig {
                summary_trigger: f64::NAN,
                ..base()
            },
            Some("runtime.summary_trigger"),
        );
        check(
            RuntimeConfig {
                recall_notes: 0,
                ..base()
            },
            None,
        );
    }

    #[test]
    fn policy_names() {
        let cfg: RuntimeConfig = serde_json::from_str(r#"{"approval": "deny"}"#).unwrap();
        assert_eq!(cfg.approval, ApprovalPolicy::Deny);
    }
}
