//! Example model and usage frames for the protocol schema (see `schema`).

use types::{ClientFrame, ModelPrice, ModelView, ServerFrame, SessionId, UsageView};

use crate::schema::both;

fn session() -> Option<SessionId> {
    SessionId::parse("s-0b1c").ok()
}

fn model(full: bool) -> ModelView {
    ModelView {
        name: "fast".into(),
        model: "gpt-4o-mini".into(),
        price: full.then_some(ModelPrice {
            input_per_mtok: 0.15,
            output_per_mtok: 0.6,
        }),
    }
}

pub(crate) fn client_examples() -> Vec<(ClientFrame, ClientFrame)> {
    let Some(s) = session() else {
        return Vec::new();
    };
    vec![
        both(ClientFrame::ListModels {
            session_id: s.clone(),
        }),
        both(ClientFrame::SetModel {
            session_id: s.clone(),
            name: "fast".into(),
        }),
        both(ClientFrame::GetUsage { session_id: s }),
    ]
}

pub(crate) fn server_examples() -> Vec<(ServerFrame, ServerFrame)> {
    let Some(s) = session() else {
        return Vec::new();
    };
    let models = |full| ServerFrame::Models {
        session_id: s.clone(),
        models: vec![model(full)],
        current: "fast".into(),
    };
    let set = |full| ServerFrame::ModelSet {
        session_id: s.clone(),
        model: model(full),
    };
    let usage = |full: bool| ServerFrame::Usage {
        session_id: s.clone(),
        model: model(full),
        session: UsageView {
            prompt_tokens: 12_480,
            completion_tokens: 611,
            cost_usd: full.then_some(0.002_238_6),
        },
    };
    vec![
        (models(true), models(false)),
        (set(true), set(false)),
        (usage(true), usage(false)),
    ]
}
