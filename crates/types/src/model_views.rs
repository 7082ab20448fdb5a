//! What the gateway shows of the models a session can use and of what it has spent:
//! [`ModelView`] (`models`, `model_set`) and [`UsageView`] (`usage`).

use serde::{Deserialize, Serialize};

use crate::ModelPrice;

/// One model a session can use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelView {
    /// The name to pick it by (`set_model`): a `[models.<name>]` entry, or `default`.
    pub name: String,
    /// The model's id at its provider.
    pub model: String,
    /// Its prices, when `agent.toml` gives them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<ModelPrice>,
}

/// Tokens used and what they cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageView {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// US dollars; absent when a model used has no price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}
