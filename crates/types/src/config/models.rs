//! `[models.<name>]`: the models a user can switch to in the chat (`/model <name>`). Each entry
//! names a model and, where it differs from `[provider]`, its wire format, endpoint and key; what
//! it leaves out (timeouts, retries, context window) is `[provider]`'s. Its optional prices work
//! as a `[pricing."<model>"]` entry would. The model `[provider]` names is always there too, as
//! `default`, unless an entry takes that name.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::memory::validate_env_name;
use super::{ConfigError, ModelPrice, PricingConfig, ProviderConfig, ProviderKind};

/// The name `[provider]`'s own model goes by.
pub const DEFAULT_MODEL_NAME: &str = "default";

/// Longest model name, in bytes.
pub const MAX_MODEL_NAME: usize = 40;

/// One `[models.<name>]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// The model's id at its provider, e.g. `gpt-4o` or `claude-sonnet-4-5`.
    pub model: String,
    /// The wire format; `[provider]`'s when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderKind>,
    /// The endpoint; `[provider]`'s when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The environment variable holding the key; `[provider]`'s when left out, `""` for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// What its tokens cost (US dollars per million), as `[pricing."<model>"]` says otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<ModelPrice>,
}

/// `[models]`: name → entry.
pub type ModelsConfig = BTreeMap<String, ModelEntry>;

impl ModelEntry {
    /// The full provider settings of this model: `base` with this entry's differences.
    pub fn provider_config(&self, base: &ProviderConfig) -> ProviderConfig {
        ProviderConfig {
            kind: self.provider.unwrap_or(base.kind),
            model: self.model.clone(),
            base_url: self
                .base_url
                .clone()
                .unwrap_or_else(|| base.base_url.clone()),
            api_key_env: match &self.api_key_env {
                Some(var) if var.is_empty() => None,
                Some(var) => Some(var.clone()),
                None => base.api_key_env.clone(),
            },
            ..base.clone()
        }
    }
}

/// Every model a session can use, by name (in name order): `[provider]`'s own as `default`
/// (unless an entry is named so) and each `[models.<name>]` entry, with its provider settings and
/// price.
pub fn model_choices(
    base: &ProviderConfig,
    models: &ModelsConfig,
    pricing: &PricingConfig,
) -> Vec<(String, ProviderConfig, Option<ModelPrice>)> {
    let mut out = Vec::new();
    if !models.contains_key(DEFAULT_MODEL_NAME) {
        let price = pricing.get(&base.model).copied();
        out.push((DEFAULT_MODEL_NAME.to_owned(), base.clone(), price));
    }
    for (name, entry) in models {
        let price = entry.pricing.or_else(|| pricing.get(&entry.model).copied());
        out.push((name.clone(), entry.provider_config(base), price));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Whether `name` can name a model: 1 to [`MAX_MODEL_NAME`] bytes of `[A-Za-z0-9_.-]`.
pub fn valid_model_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_MODEL_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

pub(crate) fn validate(base: &ProviderConfig, models: &ModelsConfig) -> Result<(), ConfigError> {
    for (name, entry) in models {
        if !valid_model_name(name) {
            return Err(ConfigError::new(
                "models",
                format!(
                    "{name:?} is not a model name: use 1 to {MAX_MODEL_NAME} letters, digits, \
                     '-', '_' or '.', e.g. [models.fast]"
                ),
            ));
        }
        if entry.model.trim().is_empty() {
            return Err(ConfigError::new(
                "models.model",
                format!("[models.{name}] must name a model, e.g. model = \"gpt-4o\""),
            ));
        }
        if let Some(var) = entry.api_key_env.as_deref().filter(|v| !v.is_empty()) {
            validate_env_name("models.api_key_env", var)?;
        }
        if let Some(price) = entry.pricing {
            super::pricing::validate(&PricingConfig::from([(entry.model.clone(), price)]))?;
        }
        // The endpoint and everything else are checked as `[provider]`'s would be.
        entry
            .provider_config(base)
            .validate()
            .map_err(|e| ConfigError::new("models", format!("[models.{name}]: {}", e.problem)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(toml_like: &[(&str, &str)]) -> ModelEntry {
        let map: serde_json::Map<String, serde_json::Value> = toml_like
            .iter()
            .map(|(k, v)| ((*k).to_owned(), serde_json::Value::String((*v).to_owned())))
            .collect();
        serde_json::from_value(serde_json::Value::Object(map)).unwrap_or(ModelEntry {
            model: String::new(),
            provider: None,
            base_url: None,
            api_key_env: None,
            pricing: None,
        })
    }

    #[test]
    fn entries_take_what_they_leave_out_from_the_provider() {
        let base = ProviderConfig::default();
        let fast = entry(&[
            ("model", "llama3.1"),
            ("base_url", "http://127.0.0.1:11434/v1"),
            ("api_key_env", ""),
        ]);
        let resolved = fast.provider_config(&base);
        assert_eq!(resolved.model, "llama3.1");
        assert_eq!(resolved.base_url, "http://127.0.0.1:11434/v1");
        assert_eq!(resolved.api_key_env, None);
        assert_eq!(resolved.kind, base.kind);
        assert_eq!(resolved.context_window, base.context_window);
        let smart = entry(&[("model", "claude-x"), ("provider", "anthropic")]);
        let resolved = smart.provider_config(&base);
        assert_eq!(resolved.kind, ProviderKind::Anthropic);
        assert_eq!(resolved.api_key_env, base.api_key_env);
    }

    #[test]
    fn choices_include_the_default_and_their_prices() {
        let base = ProviderConfig::default();
        let mut models = ModelsConfig::new();
        models.insert("fast".into(), entry(&[("model", "gpt-4o-mini")]));
        let pricing = PricingConfig::from([(
            "gpt-4o-mini".to_owned(),
            ModelPrice {
                input_per_mtok: 0.15,
                output_per_mtok: 0.6,
            },
        )]);
        let choices = model_choices(&base, &models, &pricing);
        let names: Vec<&str> = choices.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(names, ["default", "fast"]);
        assert!(choices.iter().all(|c| c.2.is_some()));
    }

    #[test]
    fn bad_entries_are_refused_with_what_to_fix() {
        let base = ProviderConfig::default();
        let check = |name: &str, e: ModelEntry, expect: &str| {
            let models = ModelsConfig::from([(name.to_owned(), e)]);
            let err = validate(&base, &models)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(expect), "{name}: {err}");
        };
        check("a b", entry(&[("model", "m")]), "is not a model name");
        check("empty", entry(&[("model", " ")]), "must name a model");
        check(
            "url",
            entry(&[("model", "m"), ("base_url", "ftp://x")]),
            "[models.url]",
        );
        check(
            "key",
            entry(&[("model", "m"), ("api_key_env", "1BAD")]),
            "environment variable",
        );
        assert!(
            validate(
                &base,
                &ModelsConfig::from([("ok".to_owned(), entry(&[("model", "m")]))])
            )
            .is_ok()
        );
    }
}
