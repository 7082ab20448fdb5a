//! `list_models`, `set_model`, `get_usage`: which model the session runs on, switching it, and
//! what the session has spent (tokens, and money at the models' prices).

use types::{ClientFrame, ErrorCode, ModelView, ServerFrame, SessionId, UsageView};

use super::{Conn, Refusal, internal};

fn view(info: runtime::ModelInfo) -> ModelView {
    ModelView {
        name: info.name,
        model: info.model,
        price: info.price,
    }
}

/// A runtime failure, in words for the client.
fn refusal(e: runtime::RuntimeError) -> Refusal {
    match e {
        runtime::RuntimeError::UnknownModel(_) => (ErrorCode::InvalidRequest, e.to_string()),
        e => {
            tracing::warn!(error = %e, "a model or usage request failed");
            (
                ErrorCode::Internal,
                "could not read the session's model or usage; try again".to_owned(),
            )
        }
    }
}

impl Conn {
    /// A model or usage frame, with its frame type as the error's `ref`.
    pub(super) async fn models(
        &self,
        frame: ClientFrame,
    ) -> (Option<String>, Result<Option<ServerFrame>, Refusal>) {
        match frame {
            ClientFrame::ListModels { session_id } => (
                Some("list_models".into()),
                self.list_models(&session_id).await,
            ),
            ClientFrame::SetModel { session_id, name } => (
                Some("set_model".into()),
                self.set_model(&session_id, &name).await,
            ),
            ClientFrame::GetUsage { session_id } => {
                (Some("get_usage".into()), self.usage(&session_id).await)
            }
            _ => (None, Err(internal("not a model frame"))),
        }
    }

    async fn list_models(&self, session: &SessionId) -> Result<Option<ServerFrame>, Refusal> {
        self.lookup(session).await?;
        let runtime = self.user.runtime();
        let current = runtime
            .session_model(&self.user.user_id, session)
            .await
            .map_err(refusal)?;
        Ok(Some(ServerFrame::Models {
            session_id: session.clone(),
            models: runtime.model_options().into_iter().map(view).collect(),
            current: current.name,
        }))
    }

    async fn set_model(
        &self,
        session: &SessionId,
        name: &str,
    ) -> Result<Option<ServerFrame>, Refusal> {
        self.lookup(session).await?;
        let model = self
            .user
            .runtime()
            .set_session_model(&self.user.user_id, session, name.trim())
            .await
            .map_err(refusal)?;
        // A new session is stored now, with its choice: it is no longer only pending.
        self.user.settle_session(session).await;
        Ok(Some(ServerFrame::ModelSet {
            session_id: session.clone(),
            model: view(model),
        }))
    }

    async fn usage(&self, session: &SessionId) -> Result<Option<ServerFrame>, Refusal> {
        self.lookup(session).await?;
        let runtime = self.user.runtime();
        let user = &self.user.user_id;
        let model = runtime
            .session_model(user, session)
            .await
            .map_err(refusal)?;
        let spend = runtime
            .session_spend(user, session)
            .await
            .map_err(refusal)?;
        Ok(Some(ServerFrame::Usage {
            session_id: session.clone(),
            model: view(model),
            session: UsageView {
                prompt_tokens: spend.usage.prompt_tokens,
                completion_tokens: spend.usage.completion_tokens,
                cost_usd: spend.cost_usd,
            },
        }))
    }
}
