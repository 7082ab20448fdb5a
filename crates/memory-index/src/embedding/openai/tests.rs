//! Against a real HTTP server on 127.0.0.1 speaking the OpenAI embeddings wire format.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};

use super::*;

const KEY: &str = "sk-test-good-key";

/// The batches the server received, in arrival order.
type Seen = Arc<Mutex<Vec<Vec<String>>>>;

/// The vector the server returns for `text` (3 dimensions, not unit length).
fn raw_vector(text: &str) -> Vec<f32> {
    vec![text.len() as f32, 1.0, 2.0]
}

async fn embeddings(
    State(seen): State<Seen>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
    if auth != Some(&format!("Bearer {KEY}")) {
        let message = format!("Incorrect API key provided: {}", auth.unwrap_or("none"));
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": {"message": message}})),
        );
    }
    let input: Vec<String> = serde_json::from_value(body["input"].clone()).unwrap();
    seen.lock().unwrap().push(input.clone());
    match body["model"].as_str() {
        Some("boom") => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error": {"message": "overloaded"}})),
        ),
        Some("short") => (StatusCode::OK, Json(json!({"data": []}))),
        _ => {
            // Reverse order: the client must sort by `index`.
            let data: Vec<Value> = input
                .iter()
                .enumerate()
                .rev()
                .map(
                    |(i, t)| json!({"object": "embedding", "index": i, "embedding": raw_vector(t)}),
                )
                .collect();
            (
                StatusCode::OK,
                Json(json!({"object": "list", "data": data, "model": body["model"]})),
            )
        }
    }
}

async fn server() -> (SocketAddr, Seen) {
    let seen = Seen::default();
    let app = axum::Router::new()
        .route("/v1/embeddings", post(embeddings))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, seen)
}

fn settings(addr: SocketAddr, model: &str) -> OpenAiSettings {
    OpenAiSettings {
        base_url: format!("http://{addr}/v1/"),
        model: model.to_owned(),
        api_key: Some(KEY.to_owned()),
        api_key_env: Some("TEST_EMBEDDING_KEY".to_owned()),
        batch_size: 2,
        dimensions: None,
        request_timeout: Duration::from_secs(10),
    }
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| "x".repeat(i + 1)).collect()
}

#[tokio::test]
async fn batches_in_order_and_normalizes() {
    let (addr, seen) = server().await;
    let e = OpenAiEmbedder::new(settings(addr, "test-model")).unwrap();
    assert_eq!(e.model_id(), format!("openai:test-model@{addr}"));
    assert_eq!(e.dimensions(), 0);

    let input = texts(5);
    let got = e.embed(&input).await.unwrap();
    let expected: Vec<Vec<f32>> = input
        .iter()
        .map(|t| {
            let mut v = raw_vector(t);
            normalize(&mut v);
            v
        })
        .collect();
    assert_eq!(got, expected);
    assert_eq!(e.dimensions(), 3);
    let batches = seen.lock().unwrap().clone();
    assert_eq!(
        batches,
        vec![
            input[0..2].to_vec(),
            input[2..4].to_vec(),
            input[4..].to_vec()
        ]
    );
    assert!(e.embed(&[]).await.unwrap().is_empty());
    assert_eq!(e.probe().await.unwrap(), 3);
}

#[tokio::test]
async fn wrong_dimensions_are_rejected() {
    let (addr, _) = server().await;
    let e = OpenAiEmbedder::new(OpenAiSettings {
        dimensions: Some(4),
        ..settings(addr, "m")
    })
    .unwrap();
    assert_eq!(e.dimensions(), 4);
    let err = e.embed(&texts(1)).await.unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::Dimensions {
                expected: 4,
                got: 3
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn http_errors_are_clear_and_never_leak_the_key() {
    let (addr, _) = server().await;
    // (settings, text the message must contain, retryable)
    let wrong_key = OpenAiSettings {
        api_key: Some("sk-wrong-secret".to_owned()),
        ..settings(addr, "m")
    };
    let no_key = OpenAiSettings {
        api_key: None,
        api_key_env: None,
        ..settings(addr, "m")
    };
    let wrong_path = OpenAiSettings {
        base_url: format!("http://{addr}/nope"),
        ..settings(addr, "m")
    };
    let cases = [
        (
            wrong_key,
            "check the key in the environment variable TEST_EMBEDDING_KEY",
            false,
        ),
        (no_key, "set memory.embedding.api_key_env", false),
        (
            wrong_path,
            "HTTP 404: check memory.embedding.base_url",
            false,
        ),
        (
            settings(addr, "boom"),
            "server error (HTTP 500): overloaded",
            true,
        ),
        (
            settings(addr, "short"),
            "returned 0 embeddings for 1 texts",
            false,
        ),
    ];
    for (s, needle, retryable) in cases {
        let err = OpenAiEmbedder::new(s)
            .unwrap()
            .embed(&texts(1))
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains(needle), "{text:?} lacks {needle:?}");
        assert!(
            !text.contains("secret") && !text.contains(KEY),
            "{text:?} leaks the key"
        );
        assert_eq!(err.is_retryable(), retryable, "{text}");
    }
}

#[tokio::test]
async fn unreachable_endpoint_is_retryable() {
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let err = OpenAiEmbedder::new(settings(addr, "m"))
        .unwrap()
        .embed(&texts(1))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("could not reach 127.0.0.1"),
        "{err}"
    );
    assert!(err.is_retryable());
}

#[test]
fn settings_from_config_and_debug_redaction() {
    let config = EmbeddingConfig {
        backend: types::EmbeddingBackend::Openai,
        base_url: Some("https://api.example.com/v1".to_owned()),
        model: Some("text-embedding-3-small".to_owned()),
        api_key_env: Some("OXYDRA_TEST_SURELY_UNSET_KEY".to_owned()),
        ..Default::default()
    };
    let err = OpenAiSettings::from_config(&config).unwrap_err();
    assert!(
        err.to_string().contains("OXYDRA_TEST_SURELY_UNSET_KEY"),
        "{err}"
    );

    let s = OpenAiSettings::from_config(&EmbeddingConfig {
        api_key_env: None,
        ..config
    })
    .unwrap();
    let e = OpenAiEmbedder::new(OpenAiSettings {
        api_key: Some("sk-hidden".to_owned()),
        ..s
    })
    .unwrap();
    assert_eq!(
        e.model_id(),
        "openai:text-embedding-3-small@api.example.com"
    );
    assert!(!format!("{e:?}").contains("sk-hidden"));
}
