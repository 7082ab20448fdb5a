//! Retries, timeouts and errors, against real HTTP failures.

use crate::common;

use common::{KINDS, ask, closed_port, fast, provider};
use provider::{ApiKey, ProviderError, ProviderOptions};
use test_support::{ScriptedLlm, ScriptedReply};
use types::{Message, ProviderConfig};

#[tokio::test]
async fn retries_429_honouring_retry_after_then_succeeds() {
    let server = ScriptedLlm::start().await;
    server.push(ScriptedReply::rate_limited(1));
    server.push(ScriptedReply::text("after the wait"));
    let p = provider(&server.openai_config());
    let reply = provider::collect_response(p.stream(&ask("hi")).await.unwrap())
        .await
        .unwrap();
    assert_eq!(reply.message, Message::assistant("after the wait"));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn retries_503_then_succeeds() {
    for kind in KINDS {
        let server = ScriptedLlm::start().await;
        server.push_all([
            ScriptedReply::http_error(503, "overloaded"),
            ScriptedReply::http_error(502, "bad gateway"),
            ScriptedReply::text("finally"),
        ]);
        let p = provider(&server.config(kind));
        let reply = p.complete(&ask("hi")).await.unwrap();
        assert_eq!(reply.message, Message::assistant("finally"), "{kind:?}");
        assert_eq!(server.requests().len(), 3, "{kind:?}");
    }
}

#[tokio::test]
async fn gives_up_after_max_retries() {
    let server = ScriptedLlm::start().await;
    server.push_all((0..5).map(|_| ScriptedReply::http_error(500, "still broken")));
    let config = ProviderConfig {
        max_retries: 2,
        ..server.openai_config()
    };
    let p = provider(&config);
    let err = p.stream(&ask("hi")).await.err().unwrap();
    assert!(
        matches!(err, ProviderError::Server { status: 500, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("still broken"), "{err}");
    assert_eq!(server.requests().len(), 3, "one try and two retries");
}

#[tokio::test]
async fn exhausted_script_says_so() {
    let server = ScriptedLlm::start().await;
    let config = ProviderConfig {
        max_retries: 0,
        ..server.anthropic_config()
    };
    let err = provider(&config).complete(&ask("hi")).await.unwrap_err();
    assert!(err.to_string().contains("script exhausted"), "{err}");
}

#[tokio::test]
async fn unauthorized_names_the_env_var_and_hides_the_key() {
    for kind in KINDS {
        let server = ScriptedLlm::start().await;
        server.push(ScriptedReply::http_error(
            401,
            "Incorrect API key provided: sk-very-secret-42",
        ));
        let config = ProviderConfig {
            api_key_env: Some("OXYDRA_TEST_API_KEY".into()),
            ..server.config(kind)
        };
        let options = ProviderOptions {
            api_key: Some(ApiKey::new("sk-very-secret-42")),
            ..fast()
        };
        let p = provider::from_config_with(&config, options).unwrap();
        let err = p.complete(&ask("hi")).await.unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, ProviderError::Auth { status: 401, .. }),
            "{kind:?}: {err:?}"
        );
        assert!(
            text.contains("check the API key in environment variable `OXYDRA_TEST_API_KEY`"),
            "{text}"
        );
        assert!(
            !text.contains("sk-very-secret-42"),
            "{kind:?}: the key leaked: {text}"
        );
        assert!(
            !format!("{err:?}").contains("sk-very-secret-42"),
            "{kind:?}: the key leaked in Debug"
        );
        assert!(!err.is_retryable());
        assert_eq!(
            server.requests().len(),
            1,
            "{kind:?}: auth failures are not retried"
        );
    }
}

#[tokio::test]
async fn not_found_points_at_model_and_base_url() {
    for kind in KINDS {
        let server = ScriptedLlm::start().await;
        server.push(ScriptedReply::http_error(
            404,
            "model `scripted-model` does not exist",
        ));
        let err = provider(&server.config(kind))
            .stream(&ask("hi"))
            .await
            .err()
            .unwrap();
        let text = err.to_string();
        assert!(
            matches!(err, ProviderError::NotFound { .. }),
            "{kind:?}: {err:?}"
        );
        assert!(
            text.contains("check provider.model (`scripted-model`) and provider.base_url"),
            "{text}"
        );
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn wrong_base_url_path_is_a_clear_404() {
    let server = ScriptedLlm::start().await;
    // An OpenAI base URL without the `/v1` suffix.
    let config = ProviderConfig {
        base_url: server.anthropic_base_url(),
        ..server.openai_config()
    };
    let err = provider(&config).complete(&ask("hi")).await.unwrap_err();
    assert!(matches!(err, ProviderError::NotFound { .. }), "{err:?}");
    assert!(err.to_string().contains("provider.base_url"), "{err}");
}

#[tokio::test]
async fn bad_request_is_not_retried() {
    let server = ScriptedLlm::start().await;
    server.push(ScriptedReply::http_error(400, "max_tokens is too large"));
    let err = provider(&server.anthropic_config())
        .complete(&ask("hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ProviderError::BadRequest { status: 400, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("max_tokens is too large"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn unreachable_endpoint_is_a_clear_error() {
    for kind in KINDS {
        let base_url = format!("http://127.0.0.1:{}", closed_port());
        let config = ProviderConfig {
            kind,
            base_url: base_url.clone(),
            api_key_env: None,
            max_retries: 1,
            ..ProviderConfig::default()
        };
        let err = provider(&config).stream(&ask("hi")).await.err().unwrap();
        assert!(
            matches!(err, ProviderError::Unreachable { .. }),
            "{kind:?}: {err:?}"
        );
        assert!(
            err.to_string()
                .starts_with(&format!("cannot reach {base_url}")),
            "{err}"
        );
        assert!(err.is_retryable());
    }
}

#[test]
fn missing_api_key_names_the_variable() {
    let config = ProviderConfig {
        api_key_env: Some("OXYDRA_SURELY_UNSET_KEY_7F3A".into()),
        ..ProviderConfig::default()
    };
    let err = provider::from_config(&config).unwrap_err();
    assert!(
        matches!(err, ProviderError::MissingApiKey { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("`OXYDRA_SURELY_UNSET_KEY_7F3A`"),
        "{err}"
    );
}

#[test]
fn invalid_config_is_rejected() {
    let config = ProviderConfig {
        base_url: "api.openai.com".into(),
        api_key_env: None,
        ..Default::default()
    };
    let err = provider::from_config(&config).unwrap_err();
    assert!(err.to_string().contains("provider.base_url"), "{err}");
}
