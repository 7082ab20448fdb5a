//! Switching models in the chat: `list_models` shows the session's model, `set_model` switches
//! it and the next turn's request names the new model (the scripted model records what it was
//! sent); the choice is remembered with the session across a reconnect and an agent restart;
//! a name that is not offered is refused and changes nothing. `get_usage` totals the session's
//! tokens and prices them per model.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::path::Path;
use std::sync::Arc;

use crate::common;

use common::{Client, test_config};
use gateway::{Gateway, GatewayToken, RunningGateway, UserAgent};
use runtime::ModelOption;
use test_support::{ScriptedLlm, ScriptedReply};
use types::{ClientFrame, ErrorCode, ModelPrice, ServerFrame, SessionId, UserId, WorkspacePaths};

const CHEAP: ModelPrice = ModelPrice {
    input_per_mtok: 1.0,
    output_per_mtok: 2.0,
};
const DEAR: ModelPrice = ModelPrice {
    input_per_mtok: 10.0,
    output_per_mtok: 20.0,
};

/// The scripted server's provider, asking for `model`.
fn provider_for(server: &ScriptedLlm, model: &str) -> Arc<dyn provider::Provider> {
    let mut config = server.openai_config();
    config.model = model.to_owned();
    provider::from_config(&config).unwrap()
}

/// alice's agent offering `default` (model-a) and `smart` (model-b), on her store under `root`.
async fn start(root: &Path, server: &ScriptedLlm) -> RunningGateway {
    let ws = WorkspacePaths::new(root.join("alice"));
    for dir in types::WorkspaceDir::ALL {
        std::fs::create_dir_all(ws.dir(dir)).unwrap();
    }
    let token = GatewayToken::load_or_create(&ws.internal()).unwrap();
    let store = common::open_store(root, "alice").await;
    let options = vec![
        ModelOption {
            name: "default".into(),
            provider: provider_for(server, "model-a"),
            price: Some(CHEAP),
        },
        ModelOption {
            name: "smart".into(),
            provider: provider_for(server, "model-b"),
            price: Some(DEAR),
        },
    ];
    let runtime = common::runtime(&store, provider_for(server, "model-a"))
        .with_models(options, "default")
        .unwrap();
    let agent = UserAgent::new(UserId::parse("alice").unwrap(), token, ws, runtime);
    let mut gw = Gateway::new(test_config());
    gw.add_user(agent).unwrap();
    gw.start().await.unwrap()
}

async fn ask(client: &mut Client, frame: ClientFrame) -> ServerFrame {
    client.send(&frame).await;
    client
        .recv_until(|f| {
            matches!(
                f,
                ServerFrame::Models { .. }
                    | ServerFrame::ModelSet { .. }
                    | ServerFrame::Usage { .. }
                    | ServerFrame::Error { .. }
            )
        })
        .await
        .pop()
        .unwrap()
}

async fn current(client: &mut Client, session: &SessionId) -> String {
    let list = ClientFrame::ListModels {
        session_id: session.clone(),
    };
    match ask(client, list).await {
        ServerFrame::Models {
            models, current, ..
        } => {
            let names: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
            assert_eq!(names, ["default", "smart"]);
            current
        }
        other => panic!("{other:?}"),
    }
}

fn last_model(server: &ScriptedLlm) -> String {
    let requests = server.requests();
    requests.last().unwrap().model().unwrap().to_owned()
}

#[tokio::test]
async fn a_session_switches_models_and_keeps_its_choice() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedLlm::start().await;
    for _ in 0..4 {
        server.push(ScriptedReply::text("ok").with_usage(1_000, 100));
    }
    let gw = start(dir.path(), &server).await;
    let (mut a, summary) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    let s = summary.session_id;
    assert_eq!(current(&mut a, &s).await, "default");
    a.send_turn(&s, "hello", "c-1").await;
    a.recv_turn().await;
    assert_eq!(last_model(&server), "model-a");

    // A name not offered: refused, nothing changes.
    let bad = ClientFrame::SetModel {
        session_id: s.clone(),
        name: "gpt-9".into(),
    };
    match ask(&mut a, bad).await {
        ServerFrame::Error { code, message, .. } => {
            assert_eq!(code, ErrorCode::InvalidRequest);
            assert!(message.contains("/model lists"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(current(&mut a, &s).await, "default");

    let set = ClientFrame::SetModel {
        session_id: s.clone(),
        name: "smart".into(),
    };
    match ask(&mut a, set).await {
        ServerFrame::ModelSet { model, .. } => {
            assert_eq!(
                (model.name.as_str(), model.model.as_str()),
                ("smart", "model-b")
            );
        }
        other => panic!("{other:?}"),
    }
    a.send_turn(&s, "think harder", "c-2").await;
    a.recv_turn().await;
    assert_eq!(
        last_model(&server),
        "model-b",
        "the second model is what the provider receives"
    );

    // Tokens per model, priced per model: 1000 in + 100 out at each price.
    match ask(
        &mut a,
        ClientFrame::GetUsage {
            session_id: s.clone(),
        },
    )
    .await
    {
        ServerFrame::Usage { model, session, .. } => {
            assert_eq!(model.name, "smart");
            assert_eq!(
                (session.prompt_tokens, session.completion_tokens),
                (2_000, 200)
            );
            let expected = CHEAP.cost(types::Usage {
                prompt_tokens: 1_000,
                completion_tokens: 100,
            }) + DEAR.cost(types::Usage {
                prompt_tokens: 1_000,
                completion_tokens: 100,
            });
            assert!((session.cost_usd.unwrap() - expected).abs() < 1e-12);
        }
        other => panic!("{other:?}"),
    }

    // A reconnect keeps it.
    drop(a);
    let (mut b, _) = Client::hello(&gw, dir.path(), "alice", Some(&s), None).await;
    assert_eq!(current(&mut b, &s).await, "smart");
    drop(b);

    // So does a restart of the agent (a new runtime on the same store).
    gw.shutdown().await;
    let gw = start(dir.path(), &server).await;
    let (mut c, _) = Client::hello(&gw, dir.path(), "alice", Some(&s), None).await;
    assert_eq!(current(&mut c, &s).await, "smart");
    c.send_turn(&s, "again", "c-3").await;
    c.recv_turn().await;
    assert_eq!(last_model(&server), "model-b");

    // A fresh session starts on the default.
    let (mut d, fresh) = Client::hello(&gw, dir.path(), "alice", None, None).await;
    assert_eq!(current(&mut d, &fresh.session_id).await, "default");
    gw.shutdown().await;
}
