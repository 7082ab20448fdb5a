//! `ProviderConfig`s pointing at a [`ScriptedLlm`].

use types::{ProviderConfig, ProviderKind};

use super::server::ScriptedLlm;

/// The model name the helpers configure.
pub const SCRIPTED_MODEL: &str = "scripted-model";

impl ScriptedLlm {
    /// An OpenAI-compatible `[provider]` for this server: no API key, 2 retries, 30 s timeout.
    pub fn openai_config(&self) -> ProviderConfig {
        ProviderConfig {
            kind: ProviderKind::Openai,
            base_url: self.base_url(),
            ..scripted_defaults()
        }
    }

    /// An Anthropic `[provider]` for this server: no API key, 2 retries, 30 s timeout.
    pub fn anthropic_config(&self) -> ProviderConfig {
        ProviderConfig {
            kind: ProviderKind::Anthropic,
            base_url: self.anthropic_base_url(),
            ..scripted_defaults()
        }
    }

    /// The config for `kind`.
    pub fn config(&self, kind: ProviderKind) -> ProviderConfig {
        match kind {
            ProviderKind::Openai => self.openai_config(),
            ProviderKind::Anthropic => self.anthropic_config(),
        }
    }
}

fn scripted_defaults() -> ProviderConfig {
    ProviderConfig {
        model: SCRIPTED_MODEL.into(),
        api_key_env: None,
        request_timeout_secs: 30,
        max_retries: 2,
        context_window: 128_000,
        max_output_tokens: 1024,
        ..ProviderConfig::default()
    }
}
