//! MCP end to end with the official Python SDK (PyPI `mcp`) as the client, over both transports:
//! streamable HTTP at `/mcp` of real `oxydra-vm` gateways (process tier, real Landlock) and stdio
//! through `runner mcp --user U`. Tools are listed with the ADR's schemas and each is called on
//! the user's real database; a second user's token never reaches the first user's memory, and a
//! missing or wrong token is 401.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::{Setup, StopOnDrop};
use serde_json::{Value, json};
use test_support::{Need, ScriptedLlm};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/client.py");

/// Runs the Python client with `args`, the calls as JSON on stdin; its JSON output.
pub(crate) async fn python(args: &[&str], calls: &Value) -> Value {
    use tokio::io::AsyncWriteExt;
    let python = test_support::mcp_python().expect("python with mcp");
    let mut child = tokio::process::Command::new(python)
        .arg(SCRIPT)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .env_remove("OXYDRA_LOG")
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(calls.to_string().as_bytes()).await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "client {args:?} failed: {stderr}");
    // The SDK ends an HTTP session with DELETE and complains unless it gets 200 or 204.
    assert!(
        !stderr.contains("Session termination failed"),
        "client {args:?}: {stderr}"
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn token(setup: &Setup, user: &str) -> String {
    std::fs::read_to_string(setup.ws(user).internal().join("gateway.token"))
        .unwrap()
        .trim()
        .to_owned()
}

fn mcp_url(setup: &Setup, user: &str) -> String {
    let marker = setup.gateway(user).expect("gateway marker");
    format!("http://{}/mcp", marker.socket_addr().unwrap())
}

pub(crate) fn call(tool: &str, args: Value) -> Value {
    json!({ "tool": tool, "args": args })
}

fn names(out: &Value) -> Vec<&str> {
    out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

fn tool<'a>(out: &'a Value, name: &str) -> &'a Value {
    out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed: {out}"))
}

/// The calls' results, each asserted to have succeeded or failed as `expect_ok` says.
pub(crate) fn results(out: &Value, expect_ok: &[bool]) -> Vec<Value> {
    let calls = out["calls"].as_array().unwrap();
    assert_eq!(calls.len(), expect_ok.len(), "{out}");
    for (i, (c, ok)) in calls.iter().zip(expect_ok).enumerate() {
        assert_eq!(c["isError"] == false, *ok, "call {i}: {c}");
    }
    calls.clone()
}

fn json_text(result: &Value) -> Value {
    serde_json::from_str(result["text"].as_str().unwrap()).unwrap()
}

/// The tools MCP serves for the default (notes) dialect, in the registry's order.
const TOOLS: [&str; 7] = [
    "getContext",
    "listMemory",
    "memory_delete",
    "memory_save",
    "memory_search",
    "memory_update",
    "putMemory",
];

/// `[pricing]` for the scripted model, in the setup's agent.toml ($3 / $15 per million tokens).
fn add_pricing(setup: &Setup) {
    let agent_toml = setup.dir.path().join("agent.toml");
    let mut text = std::fs::read_to_string(&agent_toml).unwrap();
    text.push_str("[pricing.\"scripted-model\"]\ninput_per_mtok = 3.0\noutput_per_mtok = 15.0\n");
    std::fs::write(&agent_toml, text).unwrap();
}

/// What an earlier conversation of alice's used, as the runtime records it: 1,000 prompt and 200
/// completion tokens of the scripted model.
async fn record_chat_usage(setup: &Setup) {
    let agent_toml = setup.dir.path().join("agent.toml");
    let agent = runner::load_agent_config(Some(&agent_toml)).unwrap();
    let options = memory::OpenOptions {
        legacy_dir: memory::LegacyDir::Skip,
        ..memory::OpenOptions::default()
    };
    let store = memory::MemoryStore::open(
        memory::Target::Config {
            config: &agent.memory,
            user_root: &setup.ws("alice").root,
        },
        options,
    )
    .await
    .unwrap();
    let (user, session, turn) = (
        types::UserId::parse("alice").unwrap(),
        types::SessionId::parse("chat-1").unwrap(),
        types::TurnId::parse("turn-1").unwrap(),
    );
    let place = memory::CallPlace {
        user: &user,
        session: &session,
        turn: &turn,
    };
    let usage = types::Usage {
        prompt_tokens: 1000,
        completion_tokens: 200,
    };
    store
        .usage()
        .record_usage(place, "scripted-model", usage)
        .await
        .unwrap();
    store.close().await;
}

/// Every tool listed with the ADR's schemas, and each called once.
async fn check_tools_and_calls(args: &[&str]) {
    let out = python(
        args,
        &json!([
            call("putMemory", json!({"namespace": "agent.prefs", "key": "drink", "value": {"tea": "rooibos"}})),
            call("putMemory", json!({"namespace": "agent.prefs", "key": "editor", "value": "helix", "ttl_seconds": 3600})),
            call("putMemory", json!({"namespace": "agent.prefs", "key": "drink", "value": {"tea": "sencha"}})),
            call("listMemory", json!({"namespace": "agent.prefs"})),
            call("listMemory", json!({"namespace": "agent.prefs", "limit": 1})),
            call("listMemory", json!({"namespace": "agent.prefs", "prefix": "ed"})),
            call("memory_search", json!({"query": "sencha"})),
            call("getContext", json!({"include_history": true})),
            call("memory_save", json!({"content": "Alice's locker code is pineapple"})),
            call("putMemory", json!({"namespace": "../bob", "key": "k", "value": 1})),
            call("putMemory", json!({"namespace": "agent.prefs", "key": "k"})),
            call("listMemory", json!({"namespace": "agent.prefs", "cursor": "made-up"})),
        ]),
    )
    .await;
    assert_eq!(out["server"], "oxydra");
    assert_eq!(names(&out), TOOLS);
    assert_eq!(
        tool(&out, "listMemory")["inputSchema"]["properties"]["limit"],
        json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 50, "description": "Maximum number of keys to return"})
    );
    assert_eq!(
        tool(&out, "putMemory")["inputSchema"]["required"],
        json!(["namespace", "key", "value"])
    );
    assert_eq!(
        tool(&out, "getContext")["inputSchema"]["properties"]["context_type"]["enum"],
        json!(["session", "agent", "task", "all"])
    );
    assert_eq!(
        tool(&out, "listMemory")["outputSchema"]["properties"]["total"],
        json!({"type": "integer", "description": "Total number of keys in namespace"})
    );
    let r = results(
        &out,
        &[
            true, true, true, true, true, true, true, true, true, false, false, false,
        ],
    );
    assert_eq!(
        (&r[0]["structured"], json_text(&r[0])["created"].clone()),
        (&Value::Null, json!(true)),
        "putMemory has no output schema: {}",
        r[0]
    );
    let first_id = json_text(&r[0])["note_id"].clone();
    let replaced = json_text(&r[2]);
    assert_eq!(
        (replaced["note_id"].clone(), replaced["created"].clone()),
        (first_id, json!(false)),
        "a put on a live key keeps its note"
    );
    assert_eq!(
        r[3]["structured"],
        json!({"keys": ["drink", "editor"], "total": 2})
    );
    let page = &r[4]["structured"];
    assert_eq!(
        (&page["keys"], &page["total"]),
        (&json!(["drink"]), &json!(2))
    );
    assert!(page["cursor"].is_string(), "{page}");
    assert_eq!(r[5]["structured"]["keys"], json!(["editor"]));
    let hits = json_text(&r[6]);
    let texts: Vec<&str> = hits["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts.first(),
        Some(&"drink: {\"tea\":\"sencha\"}"),
        "{hits}"
    );
    assert!(
        texts.iter().all(|t| !t.contains("rooibos")),
        "the replaced value is gone: {hits}"
    );
    let context = &r[7]["structured"];
    assert!(
        context["session_id"].as_str().unwrap().starts_with("mcp-"),
        "{context}"
    );
    assert_eq!(context["agent_id"], "alice");
    assert!(context["start_time"].is_string(), "{context}");
    // The MCP session used no model; the agent's conversation did, priced from agent.toml.
    assert_eq!(
        context["memory_usage"],
        json!({"tokens_used": 0, "usd_spent": 0.0}),
        "{context}"
    );
    let spent = &context["agent_memory_usage"];
    assert_eq!(spent["tokens_used"], 1200, "{context}");
    let usd = spent["usd_spent"].as_f64().unwrap();
    assert!((usd - 0.006).abs() < 1e-12, "{context}");
    assert_eq!(context["tool_history"], json!([]));
    assert!(
        r[9]["text"].as_str().unwrap().contains("namespace"),
        "{}",
        r[9]
    );
    assert!(
        r[10]["text"].as_str().unwrap().contains("value"),
        "{}",
        r[10]
    );
    assert!(
        r[11]["text"].as_str().unwrap().contains("cursor"),
        "{}",
        r[11]
    );

    // The next page from the cursor.
    let cursor = page["cursor"].as_str().unwrap();
    let out = python(
        args,
        &json!([call(
            "listMemory",
            json!({"namespace": "agent.prefs", "limit": 1, "cursor": cursor})
        )]),
    )
    .await;
    let r = results(&out, &[true]);
    assert_eq!(r[0]["structured"], json!({"keys": ["editor"], "total": 2}));
}

/// What `user` sees of alice's keys and notes (nothing, for anyone else).
async fn sees_nothing_of_alice(args: &[&str]) {
    let out = python(
        args,
        &json!([
            call("listMemory", json!({"namespace": "agent.prefs"})),
            call("memory_search", json!({"query": "pineapple locker code"})),
        ]),
    )
    .await;
    let r = results(&out, &[true, true]);
    assert_eq!(r[0]["structured"], json!({"keys": [], "total": 0}));
    assert_eq!(json_text(&r[1])["results"], json!([]), "{}", r[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn mcp_over_streamable_http_serves_each_user_their_own_memory() {
    test_support::need(Need::Landlock);
    test_support::need(Need::McpPython);
    let server = ScriptedLlm::start().await;
    let setup = Setup::new(&server, &["alice", "bob"]);
    add_pricing(&setup);
    let _guard = StopOnDrop(setup.config.clone());
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    record_chat_usage(&setup).await;
    let (alice_url, alice) = (mcp_url(&setup, "alice"), token(&setup, "alice"));
    let (bob_url, bob) = (mcp_url(&setup, "bob"), token(&setup, "bob"));

    check_tools_and_calls(&["http", &alice_url, &alice]).await;
    sees_nothing_of_alice(&["http", &bob_url, &bob]).await;

    // Bob's token, no token and a made-up one never reach alice's MCP service.
    for presented in [bob.as_str(), "", "not-the-token"] {
        let out = python(&["status", &alice_url, presented], &json!([])).await;
        assert_eq!(out["status"], 401, "token {presented:?}: {out}");
    }
    let out = python(&["status", &alice_url, &alice], &json!([])).await;
    assert_eq!(out["status"], 200, "{out}");
    setup.runner_ok(&["stop"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs python mcp"]
async fn mcp_over_stdio_serves_the_named_users_memory() {
    test_support::need(Need::McpPython);
    let server = ScriptedLlm::start().await;
    let setup = Setup::new(&server, &["alice", "bob"]);
    add_pricing(&setup);
    record_chat_usage(&setup).await;
    let runner = env!("CARGO_BIN_EXE_runner");
    let config = setup.config.to_str().unwrap();
    check_tools_and_calls(&[
        "stdio", runner, "--config", config, "--user", "alice", "mcp",
    ])
    .await;
    sees_nothing_of_alice(&["stdio", runner, "--config", config, "--user", "bob", "mcp"]).await;
}

/// `[governance]` for the MCP surface: writes (the rule on putMemory is the write class's) only in
/// `agent.*` with a TTL of at most an hour,
/// and listMemory at most twice (the bucket refills once in 1,000 minutes).
const GOVERNANCE: &str = "
[governance.tool_permissions.putMemory]
allowed_namespaces = [\"agent.*\"]
max_ttl_seconds = 3600
[governance.rate_limits.tools.listMemory]
per_minute = 0.001
burst = 2
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs python mcp"]
async fn mcp_calls_are_governed_permissions_pii_rate_limits_and_audit() {
    test_support::need(Need::McpPython);
    let server = ScriptedLlm::start().await;
    let setup = Setup::new(&server, &["alice"]);
    let agent_toml = setup.dir.path().join("agent.toml");
    let mut text = std::fs::read_to_string(&agent_toml).unwrap();
    text.push_str(GOVERNANCE);
    std::fs::write(&agent_toml, text).unwrap();
    let runner = env!("CARGO_BIN_EXE_runner");
    let config = setup.config.to_str().unwrap();
    let list = || call("listMemory", json!({"namespace": "agent.contact"}));
    let out = python(
        &["stdio", runner, "--config", config, "--user", "alice", "mcp"],
        &json!([
            call("putMemory", json!({"namespace": "private.x", "key": "k", "value": "v"})),
            call("putMemory", json!({"namespace": "agent.x", "key": "k", "value": "v", "ttl_seconds": 7200})),
            call("putMemory", json!({"namespace": "agent.contact", "key": "bob", "value": "write to bob.jones@example.com", "ttl_seconds": 600})),
            call("memory_search", json!({"query": "write to bob"})),
            list(),
            list(),
            list(),
            call("putMemory", json!({"namespace": "agent.keys", "key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "value": "stripe", "ttl_seconds": 600})),
        ]),
    )
    .await;
    let r = results(&out, &[false, false, true, true, true, true, false, false]);
    for denied in &r[..2] {
        let error: Value = serde_json::from_str(denied["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            (&error["type"], &error["error"]["code"]),
            (&json!("error"), &json!("PERMISSION_DENIED")),
            "{denied}"
        );
    }
    // The redacted write says what was redacted; the key holding a secret is refused.
    let saved = json_text(&r[2]);
    assert_eq!(saved["redacted"], json!(["value: email"]), "{saved}");
    let refused = r[7]["text"].as_str().unwrap();
    assert!(refused.contains("PII_DETECTED"), "{refused}");
    let found = r[3]["text"].as_str().unwrap();
    assert!(
        found.contains("[REDACTED:email]") && !found.contains("bob.jones@example.com"),
        "{found}"
    );
    let limited = r[6]["text"].as_str().unwrap();
    assert!(limited.contains("RATE_LIMITED"), "{limited}");

    // The audit log in alice's database: each call, from the MCP surface and this client.
    let agent = runner::load_agent_config(Some(&agent_toml)).unwrap();
    let options = memory::OpenOptions {
        legacy_dir: memory::LegacyDir::Skip,
        ..memory::OpenOptions::default()
    };
    let store = memory::MemoryStore::open(
        memory::Target::Config {
            config: &agent.memory,
            user_root: &setup.ws("alice").root,
        },
        options,
    )
    .await
    .unwrap();
    let rows = store.audit().audit_log(None, 100).await.unwrap();
    let seen: Vec<(&str, &str, Option<&str>, &str)> = rows
        .iter()
        .map(|r| {
            (
                r.surface.as_str(),
                r.tool.as_str(),
                r.client.as_deref(),
                r.outcome.as_str(),
            )
        })
        .collect();
    let client = Some("oxydra-python-test");
    assert_eq!(
        seen,
        [
            ("mcp", "putMemory", client, "denied"),
            ("mcp", "putMemory", client, "denied"),
            ("mcp", "putMemory", client, "ok"),
            ("mcp", "memory_search", client, "ok"),
            ("mcp", "listMemory", client, "ok"),
            ("mcp", "listMemory", client, "ok"),
            ("mcp", "listMemory", client, "rate_limited"),
            ("mcp", "putMemory", client, "rejected"),
        ]
    );
    let text = format!("{rows:?}");
    assert!(
        !text.contains("bob.jones") && !text.contains("4eC39HqLyjWDarjt"),
        "{text}"
    );
}

/// Every file under `dir` whose name has `.log` in it (rotated ones too), with its text.
fn log_files(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            log_files(&path, out);
        } else if entry.file_name().to_string_lossy().contains(".log") {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            out.push((path, text));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs landlock"]
async fn note_data_never_reaches_a_log_and_forget_removes_the_logs() {
    test_support::need(Need::Landlock);
    test_support::need(Need::McpPython);
    let server = ScriptedLlm::start().await;
    let setup = Setup::new(&server, &["alice"]);
    let agent_toml = setup.dir.path().join("agent.toml");
    let mut text = std::fs::read_to_string(&agent_toml).unwrap();
    text.push_str("[tools]\nmemory = [\"notes\", \"files\"]\n");
    std::fs::write(&agent_toml, text).unwrap();
    let _guard = StopOnDrop(setup.config.clone());
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let (url, alice) = (mcp_url(&setup, "alice"), token(&setup, "alice"));
    // Distinctive note data in every field a client chooses: paths, namespaces, keys, text; and
    // calls that fail on them (errors quote what they were given).
    let marks = [
        "zebrapath41",
        "quokkaspace52",
        "wombatkey63",
        "narwhaltext74",
        "ibexmissing85",
    ];
    let calls = json!([
        call(
            "memory",
            json!({"command": "create", "path": "/memories/zebrapath41/plan.md",
            "file_text": "narwhaltext74 lives here"})
        ),
        call(
            "memory",
            json!({"command": "view", "path": "/memories/ibexmissing85.md"})
        ),
        call(
            "memory",
            json!({"command": "str_replace", "path": "/memories/zebrapath41/plan.md",
            "old_str": "ibexmissing85", "new_str": "x"})
        ),
        call(
            "putMemory",
            json!({"namespace": "quokkaspace52", "key": "wombatkey63",
            "value": "narwhaltext74"})
        ),
        call(
            "putMemory",
            json!({"namespace": "quokkaspace52!", "key": "wombatkey63",
            "value": 1})
        ),
        call(
            "memory_save",
            json!({"content": "narwhaltext74 is the user's favourite"})
        ),
        call("zebrapath41", json!({})),
    ]);
    let out = python(&["http", &url, &alice], &calls).await;
    results(&out, &[true, false, false, true, false, true, false]);
    setup.runner_ok(&["stop"]).await;

    let mut logs = Vec::new();
    log_files(setup.dir.path(), &mut logs);
    assert!(
        logs.iter().any(|(_, t)| t.contains("oxydra-vm ready")),
        "no oxydra-vm log found: {:?}",
        logs.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for (path, text) in &logs {
        for mark in marks {
            assert!(
                !text.contains(mark),
                "{} holds {mark}:\n{}",
                path.display(),
                text.lines()
                    .filter(|l| l.contains(mark))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }

    let said = setup
        .runner_ok(&["--user", "alice", "forget", "--yes"])
        .await;
    let mut left = Vec::new();
    log_files(setup.dir.path(), &mut left);
    assert_eq!(
        left.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>(),
        Vec::<std::path::PathBuf>::new(),
        "forget left logs; it said:\n{said}"
    );
}
