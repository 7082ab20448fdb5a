//! `[pricing."<model>"]`: what a model's tokens cost, so that token usage can be reported in money
//! (`getContext`'s `usd_spent`). A model without an entry has no known price.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use crate::Usage;

/// One model's prices, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Prompt (input) tokens.
    pub input_per_mtok: f64,
    /// Completion (output) tokens.
    pub output_per_mtok: f64,
}

impl ModelPrice {
    /// What `usage` cost at these prices.
    pub fn cost(&self, usage: Usage) -> f64 {
        // Token counts stay far below 2^53, where u64 → f64 is exact.
        #[allow(
            clippy::cast_precision_loss,
            reason = "token counts are far below 2^53"
        )]
        let (input, output) = (usage.prompt_tokens as f64, usage.completion_tokens as f64);
        (input * self.input_per_mtok + output * self.output_per_mtok) / 1_000_000.0
    }
}

/// `[pricing]`: model name (as sent to the provider) → its prices.
pub type PricingConfig = BTreeMap<String, ModelPrice>;

pub(crate) fn validate(pricing: &PricingConfig) -> Result<(), ConfigError> {
    let bad = |p: f64| !(p.is_finite() && p >= 0.0);
    if pricing
        .values()
        .any(|p| bad(p.input_per_mtok) || bad(p.output_per_mtok))
    {
        return Err(ConfigError::new(
            "pricing",
            "input_per_mtok and output_per_mtok are US dollars per million tokens: numbers of 0 \
             or more",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_of_usage() {
        let price = ModelPrice {
            input_per_mtok: 3.0,
            output_per_mtok: 15.0,
        };
        let usage = Usage {
            prompt_tokens: 2_000,
            completion_tokens: 100,
        };
        assert!((price.cost(usage) - 0.0075).abs() < 1e-12);
        let negative = PricingConfig::from([(
            "m".to_owned(),
            ModelPrice {
                input_per_mtok: -1.0,
                output_per_mtok: 1.0,
            },
        )]);
        assert!(validate(&negative).is_err());
        assert!(validate(&PricingConfig::new()).is_ok());
    }
}
