//! Which model the session runs on and what it has spent: `/model` lists the models and
//! `/model <name>` switches this session to one (the gateway remembers it with the session);
//! `/usage` shows the session's tokens and cost and the last turn's. The client also asks quietly
//! (`get_usage`) once attached and after each turn, so that the status bar shows the model and
//! what the last turn and the whole session cost.

use types::{ClientFrame, ModelView, ServerFrame, Usage, UsageView};

use super::{App, Entry};

/// What the gateway last said the session runs on and has spent.
#[derive(Debug, Clone, PartialEq)]
pub struct Spend {
    pub model: ModelView,
    pub session: UsageView,
}

impl App {
    /// `/model` (list) or `/model <name>` (switch this session).
    pub(super) fn model_command(&mut self, name: Option<String>) -> Vec<ClientFrame> {
        let Some(session_id) = self.current_session_id().cloned() else {
            self.push(Entry::error("Not connected to a session yet."));
            return Vec::new();
        };
        vec![match name {
            None => ClientFrame::ListModels { session_id },
            Some(name) => ClientFrame::SetModel { session_id, name },
        }]
    }

    /// `/usage`: the session's tokens and cost, shown when the answer comes.
    pub(super) fn usage_command(&mut self) -> Vec<ClientFrame> {
        self.usage_asked = true;
        self.ask_usage().into_iter().collect()
    }

    /// A quiet `get_usage` for the current session.
    pub(super) fn ask_usage(&self) -> Option<ClientFrame> {
        let session_id = self.current_session_id()?.clone();
        Some(ClientFrame::GetUsage { session_id })
    }

    /// `models`, `model_set`, `usage`.
    pub(super) fn on_model_frame(&mut self, frame: ServerFrame) -> Vec<ClientFrame> {
        match frame {
            ServerFrame::Models {
                models, current, ..
            } => {
                let mut text = String::from("Models (/model <name> switches this session):");
                for m in &models {
                    let mark = if m.name == current { "›" } else { " " };
                    text.push_str(&format!("\n{mark} {} · {}{}", m.name, m.model, price(m)));
                }
                self.push(Entry::info(text));
            }
            ServerFrame::ModelSet { model, .. } => {
                self.push(Entry::info(format!(
                    "This session now uses {} ({}); it keeps it after a reconnect or a restart.",
                    model.name, model.model
                )));
                self.model = Some(label(&model));
                // The totals are unchanged; the price of the next turn is the new model's.
                if let Some(spend) = &mut self.spend {
                    spend.model = model;
                }
            }
            ServerFrame::Usage { model, session, .. } => {
                self.model = Some(label(&model));
                self.spend = Some(Spend { model, session });
                if std::mem::take(&mut self.usage_asked) {
                    let text = self.usage_text();
                    self.push(Entry::info(text));
                }
            }
            _ => {}
        }
        Vec::new()
    }

    /// What the last turn cost at the session model's price, when known.
    pub fn last_turn_cost(&self) -> Option<f64> {
        let price = self.spend.as_ref()?.model.price?;
        Some(price.cost(self.last_usage?))
    }

    fn usage_text(&self) -> String {
        let Some(spend) = &self.spend else {
            return "No usage known yet.".into();
        };
        let s = &spend.session;
        let mut text = format!(
            "This session ({}): {}",
            spend.model.name,
            tokens(s.prompt_tokens, s.completion_tokens, s.cost_usd)
        );
        if let Some(u) = self.last_usage.filter(|u| u.total() > 0) {
            text.push_str(&format!(
                "\nLast turn: {}",
                tokens(u.prompt_tokens, u.completion_tokens, self.last_turn_cost())
            ));
        }
        if s.cost_usd.is_none() {
            text.push_str(
                "\nNo price is known for a model used: [pricing] in agent.toml sets one.",
            );
        }
        text
    }
}

/// The status bar's spend: the last turn's tokens and cost, then the session's.
pub(crate) fn status(app: &App) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(u) = app.last_usage.filter(|u| u.total() > 0) {
        parts.push(with_cost(
            format!("{} tokens", u.total()),
            app.last_turn_cost(),
        ));
    }
    if let Some(spend) = &app.spend {
        let s = spend.session;
        let total = s.prompt_tokens + s.completion_tokens;
        if total > 0 {
            parts.push(with_cost(format!("session {total} tokens"), s.cost_usd));
        }
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

fn with_cost(text: String, cost: Option<f64>) -> String {
    match cost {
        Some(c) => format!("{text} {}", money(c)),
        None => text,
    }
}

fn tokens(prompt: u64, completion: u64, cost: Option<f64>) -> String {
    let usage = Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
    };
    with_cost(
        format!("{} tokens ({prompt} in, {completion} out)", usage.total()),
        cost,
    )
}

/// US dollars, with enough digits for a cheap turn.
pub fn money(usd: f64) -> String {
    if usd >= 1.0 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.4}")
    }
}

/// The model in the status bar: its name and id, or the id alone for the default.
fn label(model: &ModelView) -> String {
    if model.name == types::DEFAULT_MODEL_NAME {
        model.model.clone()
    } else {
        format!("{} ({})", model.name, model.model)
    }
}

fn price(model: &ModelView) -> String {
    match model.price {
        Some(p) => format!(
            " · ${} in, ${} out per million tokens",
            p.input_per_mtok, p.output_per_mtok
        ),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage_frame(cost: Option<f64>) -> ServerFrame {
        ServerFrame::Usage {
            session_id: types::SessionId::parse("s-1").unwrap_or_else(|_| unreachable!()),
            model: ModelView {
                name: "fast".into(),
                model: "gpt-4o-mini".into(),
                price: cost.map(|_| types::ModelPrice {
                    input_per_mtok: 1.0,
                    output_per_mtok: 2.0,
                }),
            },
            session: UsageView {
                prompt_tokens: 10_000,
                completion_tokens: 500,
                cost_usd: cost,
            },
        }
    }

    #[test]
    fn usage_fills_the_status_bar_and_answers_usage() {
        let user = types::UserId::parse("alice").unwrap_or_else(|_| unreachable!());
        let mut app = App::new(user, None, None);
        app.last_usage = Some(Usage {
            prompt_tokens: 1_000,
            completion_tokens: 100,
        });
        // Quiet: no line, but the status bar and the model label change.
        let before = app.entries.len();
        app.on_frame(usage_frame(Some(0.011)));
        assert_eq!(app.entries.len(), before);
        assert_eq!(app.model.as_deref(), Some("fast (gpt-4o-mini)"));
        assert_eq!(
            status(&app).as_deref(),
            Some("1100 tokens $0.0012 · session 10500 tokens $0.0110")
        );
        // Asked for: one line with the session's and the last turn's.
        app.usage_asked = true;
        app.on_frame(usage_frame(Some(0.011)));
        assert_eq!(
            app.entries[before..],
            [Entry::info(
                "This session (fast): 10500 tokens (10000 in, 500 out) $0.0110\n\
                 Last turn: 1100 tokens (1000 in, 100 out) $0.0012"
            )]
        );
        // No price: tokens only, and where a price is set.
        app.usage_asked = true;
        app.on_frame(usage_frame(None));
        assert_eq!(
            status(&app).as_deref(),
            Some("1100 tokens · session 10500 tokens")
        );
        assert!(
            matches!(app.entries.last(), Some(Entry::Notice { text, .. }) if text.contains("[pricing]"))
        );
    }

    #[test]
    fn money_has_enough_digits() {
        assert_eq!(money(0.000_42), "$0.0004");
        assert_eq!(money(0.0123), "$0.0123");
        assert_eq!(money(12.345), "$12.35");
    }
}
