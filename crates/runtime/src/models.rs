//! The models a session can use (`[models.<name>]` in `agent.toml`, plus `[provider]`'s own as
//! `default`): which one each session runs on, remembered with the session (in the store, so a
//! reconnect or a restart keeps it), and what a session's tokens cost at their prices.

use std::sync::Arc;

use provider::Provider;
use types::{ModelPrice, SessionId, Usage, UserId};

use crate::RuntimeError;
use crate::runtime::AgentRuntime;

/// One model a session can switch to.
#[derive(Clone)]
pub struct ModelOption {
    /// The name the user picks it by (`/model <name>`).
    pub name: String,
    pub provider: Arc<dyn Provider>,
    /// Its prices, when known.
    pub price: Option<ModelPrice>,
}

impl std::fmt::Debug for ModelOption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelOption")
            .field("name", &self.name)
            .field("model", &self.provider.model())
            .finish_non_exhaustive()
    }
}

/// A model as the user sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    pub name: String,
    /// The model's id at its provider.
    pub model: String,
    pub price: Option<ModelPrice>,
}

/// Tokens and what they cost (`None` when a model used has no price).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    pub usage: Usage,
    pub cost_usd: Option<f64>,
}

impl ModelOption {
    fn info(&self) -> ModelInfo {
        ModelInfo {
            name: self.name.clone(),
            model: self.provider.model().to_owned(),
            price: self.price,
        }
    }
}

impl AgentRuntime {
    /// The models sessions may use, `default` the one a session starts on (a per-user default
    /// from `runner.toml`, or `[provider]`'s own). Fails when `default` is not among them.
    pub fn with_models(
        mut self,
        options: Vec<ModelOption>,
        default: &str,
    ) -> Result<Self, RuntimeError> {
        let Some(index) = options.iter().position(|o| o.name == default) else {
            return Err(RuntimeError::UnknownModel(default.to_owned()));
        };
        self.provider = Arc::clone(&options[index].provider);
        self.default_model = index;
        self.models = options;
        Ok(self)
    }

    /// Every model a session may use, in name order.
    pub fn model_options(&self) -> Vec<ModelInfo> {
        self.models.iter().map(ModelOption::info).collect()
    }

    /// The model `session` runs on: its choice while still offered, else the default.
    pub async fn session_model(
        &self,
        user: &UserId,
        session: &SessionId,
    ) -> Result<ModelInfo, RuntimeError> {
        Ok(self.option_for(user, session).await?.info())
    }

    /// Switches `session` (one of `user`'s, stored now if it was not yet) to the model `name`.
    pub async fn set_session_model(
        &self,
        user: &UserId,
        session: &SessionId,
        name: &str,
    ) -> Result<ModelInfo, RuntimeError> {
        let Some(option) = self.models.iter().find(|o| o.name == name) else {
            return Err(RuntimeError::UnknownModel(name.to_owned()));
        };
        // Stored now (an empty session was only pending); another user's is refused.
        self.journal.create(session, user, None).await?;
        self.journal.set_model(session, Some(name)).await?;
        Ok(option.info())
    }

    /// What `session` has spent so far, at the models' prices.
    pub async fn session_spend(
        &self,
        user: &UserId,
        session: &SessionId,
    ) -> Result<Spend, RuntimeError> {
        let used = self.journal.usage_by_model(user, session).await?;
        let mut spend = Spend {
            cost_usd: Some(0.0),
            ..Spend::default()
        };
        for (model, usage) in used {
            spend.usage.add(usage);
            let price = self.price_of_model(&model);
            spend.cost_usd = spend.cost_usd.zip(price).map(|(c, p)| c + p.cost(usage));
        }
        Ok(spend)
    }

    /// The price of a model id as recorded in usage rows.
    fn price_of_model(&self, model: &str) -> Option<ModelPrice> {
        self.models
            .iter()
            .find(|o| o.provider.model() == model)
            .and_then(|o| o.price)
    }

    pub(crate) async fn option_for(
        &self,
        user: &UserId,
        session: &SessionId,
    ) -> Result<&ModelOption, RuntimeError> {
        let chosen = self
            .conversation(user, session)
            .await?
            .and_then(|c| c.model)
            .and_then(|name| self.models.iter().find(|o| o.name == name));
        self.models
            .get(self.default_model)
            .map_or_else(|| Err(RuntimeError::UnknownModel(String::new())), Ok)
            .map(|default| chosen.unwrap_or(default))
    }
}
