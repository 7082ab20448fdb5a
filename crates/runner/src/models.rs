//! The models one user's sessions may switch to: `[provider]`'s own (as `default`) and each
//! `[models.<name>]` of their `agent.toml`, each with its provider client and price. A model
//! whose client cannot be made (its key's variable is not set, say) is left out with a warning:
//! the others stay usable.

use std::sync::Arc;

use provider::Provider;
use runtime::ModelOption;
use types::{AgentConfig, DEFAULT_MODEL_NAME};

/// Every usable model of `config`; `primary` is the client already made for `[provider]`.
pub fn model_options(config: &AgentConfig, primary: &Arc<dyn Provider>) -> Vec<ModelOption> {
    let choices = types::model_choices(&config.provider, &config.models, &config.pricing);
    let mut out = Vec::new();
    for (name, provider_config, price) in choices {
        let provider = if name == DEFAULT_MODEL_NAME && !config.models.contains_key(&name) {
            Arc::clone(primary)
        } else {
            match provider::from_config(&provider_config) {
                Ok(provider) => provider,
                Err(e) => {
                    tracing::warn!(model = %name, error = %e, "model left out: its client cannot be made");
                    continue;
                }
            }
        };
        out.push(ModelOption {
            name,
            provider,
            price,
        });
    }
    out
}
