//! `init_provider`'s pure parts: agent.toml's `[provider]` rewritten from a choice, and the
//! questions' answers read into a choice.

use super::*;

fn choice(kind: ProviderKind, url: &str, model: &str, key: &str) -> Choice {
    Choice {
        kind,
        base_url: url.into(),
        model: model.into(),
        key_env: key.into(),
    }
}

#[test]
fn the_written_provider_is_what_was_chosen_and_the_rest_is_the_example() {
    let example = include_str!("../../../../agent.toml.example");
    let chosen = choice(
        ProviderKind::Anthropic,
        "https://api.anthropic.com",
        "claude-sonnet-4-5",
        "ANTHROPIC_API_KEY",
    );
    let text = agent_toml(example, &chosen).unwrap();
    let config: types::AgentConfig = toml::from_str(&text).unwrap();
    config.validate().unwrap();
    assert_eq!(config.provider.kind, ProviderKind::Anthropic);
    assert_eq!(config.provider.model, "claude-sonnet-4-5");
    assert_eq!(
        config.provider.api_key_env.as_deref(),
        Some("ANTHROPIC_API_KEY")
    );
    // Only four lines differ; the commented embedding `api_key_env` is left alone.
    let changed = example
        .lines()
        .zip(text.lines())
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(changed, 4);
    let none = agent_toml(
        example,
        &choice(
            ProviderKind::Openai,
            "http://127.0.0.1:11434/v1",
            "llama3.1",
            "",
        ),
    )
    .unwrap();
    let config: types::AgentConfig = toml::from_str(&none).unwrap();
    assert_eq!(config.provider.api_key_env, None);
}

#[test]
fn answers_pick_presets_and_defaults() {
    let mut input = "2\n\n\n\n".as_bytes();
    let got = ask(&mut input).unwrap();
    assert_eq!(
        got,
        choice(
            ProviderKind::Anthropic,
            "https://api.anthropic.com",
            "claude-sonnet-4-5",
            "ANTHROPIC_API_KEY"
        )
    );
    let mut input = "9\nollama\n\nqwen2.5\n".as_bytes();
    let got = ask(&mut input).unwrap();
    assert_eq!(
        got,
        choice(
            ProviderKind::Openai,
            "http://127.0.0.1:11434/v1",
            "qwen2.5",
            ""
        )
    );
    let mut input = "5\nhttp://h:8000/v1/\nm\nnone\n".as_bytes();
    let got = ask(&mut input).unwrap();
    assert_eq!(
        got,
        choice(ProviderKind::Openai, "http://h:8000/v1", "m", "")
    );
    let mut input = "1\n".as_bytes();
    assert!(ask(&mut input).is_err(), "end of input is no answer");
    let mut input = "5\nftp://x\nm\nnone\n".as_bytes();
    assert!(ask(&mut input).unwrap_err().to_string().contains("http://"));
}
