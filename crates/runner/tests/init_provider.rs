//! `runner init` and the model: an agent.toml the user edited first is kept; `--provider …`
//! writes one without questions; on a terminal (tmux) it asks; the key is checked with one
//! request to a local stand-in speaking the provider's wire format before anything is written.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use test_support::{Need, ScriptedLlm, Tmux};

fn init(config: &Path, args: &[&str], env: &[(&str, &str)]) -> (Output, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_runner"));
    cmd.arg("--config")
        .arg(config)
        .args(["--user", "alice", "init"])
        .args(args)
        .env_remove("TEST_INIT_KEY")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

fn agent(dir: &Path) -> types::AgentConfig {
    runner::load_agent_config(Some(&dir.join("agent.toml"))).unwrap()
}

fn models_requests(server: &ScriptedLlm) -> Vec<test_support::RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path == "/v1/models")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_keeps_an_edited_agent_toml_and_refuses_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("runner.toml");
    let example = include_str!("../../../agent.toml.example");
    // Broken first: the mistake is named, and nothing is written.
    std::fs::write(
        dir.path().join("agent.toml"),
        example.replace("model = \"gpt-4o-mini\"", "modle = \"gpt-4o\""),
    )
    .unwrap();
    let (out, text) = init(&config, &[], &[]);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("unknown field `modle`"), "{text}");
    assert!(!config.exists());
    // Edited as the README says: kept byte for byte, runner.toml written next to it.
    let edited = example
        .replace("model = \"gpt-4o-mini\"", "model = \"gpt-4o\"")
        .replace("max_retries = 3", "max_retries = 2");
    std::fs::write(dir.path().join("agent.toml"), &edited).unwrap();
    let (out, text) = init(&config, &[], &[]);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("kept your"), "{text}");
    assert!(!text.contains("set [provider]"), "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("agent.toml")).unwrap(),
        edited
    );
    let loaded = runner::RunnerConfig::load(&config).unwrap();
    assert_eq!(
        loaded.users[0].agent_config,
        Some(dir.path().join("agent.toml"))
    );
    assert!(dir.path().join("workspaces/alice/.oxydra").is_dir());

    // Provider options only shape a new agent.toml.
    let fresh = tempfile::tempdir().unwrap();
    std::fs::write(fresh.path().join("agent.toml"), example).unwrap();
    let (out, text) = init(
        &fresh.path().join("runner.toml"),
        &["--provider", "ollama"],
        &[],
    );
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("edit its [provider]"), "{text}");
    assert!(!fresh.path().join("runner.toml").exists());
    let (out, text) = init(&config, &["--provider", "ollama"], &[]);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("only shape a new agent.toml"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_with_a_provider_checks_the_key_before_writing_anything() {
    let server = ScriptedLlm::start().await;
    server.require_api_key("sk-right");
    let url = server.base_url();
    let flags = [
        "--provider",
        "compatible",
        "--base-url",
        url.as_str(),
        "--model",
        test_support::SCRIPTED_MODEL,
        "--api-key-env",
        "TEST_INIT_KEY",
    ];
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("runner.toml");
    let nothing_written = |dir: &Path| {
        assert!(!dir.join("runner.toml").exists());
        assert!(!dir.join("agent.toml").exists());
        assert!(!dir.join("workspaces").exists());
    };

    let (out, text) = init(&config, &flags, &[]);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("$TEST_INIT_KEY is not set"), "{text}");
    assert!(models_requests(&server).is_empty());
    nothing_written(dir.path());

    let (out, text) = init(&config, &flags, &[("TEST_INIT_KEY", "sk-wrong")]);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("refused the key in $TEST_INIT_KEY (HTTP 401)"),
        "{text}"
    );
    assert!(
        !text.contains("sk-wrong"),
        "the key is never printed: {text}"
    );
    nothing_written(dir.path());

    let (out, text) = init(&config, &flags, &[("TEST_INIT_KEY", "sk-right")]);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("accepts the key in $TEST_INIT_KEY"), "{text}");
    let requests = models_requests(&server);
    // One request per try that had a key to check: the wrong key, then the right one.
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[1].header("authorization"), Some("Bearer sk-right"));
    let provider = agent(dir.path()).provider;
    assert_eq!(provider.kind, types::ProviderKind::Openai);
    assert_eq!(provider.base_url, url);
    assert_eq!(provider.model, test_support::SCRIPTED_MODEL);
    assert_eq!(provider.api_key_env.as_deref(), Some("TEST_INIT_KEY"));
    assert!(dir.path().join("workspaces/alice/.oxydra").is_dir());

    // Anthropic's wire format: x-api-key on GET {base_url}/v1/models.
    let dir = tempfile::tempdir().unwrap();
    let anthropic_url = server.anthropic_base_url();
    let (out, text) = init(
        &dir.path().join("runner.toml"),
        &[
            "--provider",
            "anthropic",
            "--base-url",
            &anthropic_url,
            "--api-key-env",
            "TEST_INIT_KEY",
        ],
        &[("TEST_INIT_KEY", "sk-right")],
    );
    assert!(out.status.success(), "{text}");
    let last = models_requests(&server).pop().unwrap();
    assert_eq!(last.header("x-api-key"), Some("sk-right"));
    assert!(last.header("anthropic-version").is_some());
    let provider = agent(dir.path()).provider;
    assert_eq!(provider.kind, types::ProviderKind::Anthropic);
    assert_eq!(provider.model, "claude-sonnet-4-5");

    // A server that cannot be reached: said, and nothing written.
    let dir = tempfile::tempdir().unwrap();
    let (out, text) = init(
        &dir.path().join("runner.toml"),
        &[
            "--provider",
            "ollama",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
        &[],
    );
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("cannot reach http://127.0.0.1:9/v1/models"),
        "{text}"
    );
    nothing_written(dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_for_ollama_needs_no_key_and_says_when_the_model_is_not_pulled() {
    let server = ScriptedLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let url = server.base_url();
    let (out, text) = init(
        &dir.path().join("runner.toml"),
        &[
            "--provider",
            "ollama",
            "--model",
            "llama3.1",
            "--base-url",
            &url,
        ],
        &[],
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("checked:"), "{text}");
    assert!(text.contains("ollama pull llama3.1"), "{text}");
    let request = models_requests(&server).pop().unwrap();
    assert_eq!(request.header("authorization"), None);
    let provider = agent(dir.path()).provider;
    assert_eq!(provider.model, "llama3.1");
    assert_eq!(provider.api_key_env, None);
}

fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tmux"]
async fn init_on_a_terminal_asks_for_the_provider_model_and_key() {
    test_support::need(Need::Tmux);
    let server = ScriptedLlm::start().await;
    server.require_api_key("sk-asked");
    let dir = tempfile::tempdir().unwrap();
    let config: PathBuf = dir.path().join("runner.toml");
    let command = format!(
        "TEST_ASKED_KEY=sk-asked {} --config {} --user alice init; echo \"init exited $?\"; sleep 30",
        shell_quote(Path::new(env!("CARGO_BIN_EXE_runner"))),
        shell_quote(&config)
    );
    let tmux = Tmux::start("runner-init-asks", 120, 30, &command);
    tmux.wait_for("the provider menu", |s| {
        s.contains("5) another OpenAI-compatible URL") && s.contains("Provider [1]:")
    })
    .await;
    tmux.type_line("7");
    tmux.wait_for("the menu's range", |s| s.contains("a number from 1 to 5"))
        .await;
    tmux.type_line("5");
    tmux.wait_for("the base URL question", |s| s.contains("Base URL"))
        .await;
    tmux.type_line(&server.base_url());
    tmux.wait_for("the model question", |s| s.contains("Model:"))
        .await;
    tmux.type_line(test_support::SCRIPTED_MODEL);
    tmux.wait_for("the key question", |s| {
        s.contains("Environment variable holding the API key")
    })
    .await;
    tmux.type_line("TEST_ASKED_KEY");
    let screen = tmux
        .wait_for("init to finish", |s| s.contains("init exited"))
        .await;
    assert!(screen.contains("init exited 0"), "{screen}");
    assert!(
        screen.contains("accepts the key in $TEST_ASKED_KEY"),
        "{screen}"
    );
    let provider = agent(dir.path()).provider;
    assert_eq!(provider.base_url, server.base_url());
    assert_eq!(provider.model, test_support::SCRIPTED_MODEL);
    assert_eq!(provider.api_key_env.as_deref(), Some("TEST_ASKED_KEY"));
    assert_eq!(
        models_requests(&server)
            .pop()
            .unwrap()
            .header("authorization"),
        Some("Bearer sk-asked")
    );
}
