//! Governance by operation class, as an attacker tries to get around it: a rule on one tool is
//! sidestepped by its sibling in another dialect, an update blanks a note a delete rule
//! protects, a write asks for no expiry under a TTL cap, a search returns what a namespace rule
//! hides, an MCP client drains the agent's rate-limit bucket, a write-only client reads through
//! a save's duplicate answer, and a call its schema refuses leaves no trace.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on broken fixtures"
)]

use serde_json::{Value, json};
use types::Surface;

use crate::governance::{env, error_object};

pub(crate) fn denied(out: &tools::ToolOutcome) -> String {
    let error = error_object(out);
    assert_eq!(error["code"], "PERMISSION_DENIED", "{error}");
    error["message"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_rule_on_one_write_tool_binds_every_dialects_write() {
    let env = env(json!({"tool_permissions": {"memory_save": {"operations": ["read"]}}})).await;
    let attempts = [
        (
            "store_memory",
            json!({"content": "likes tea", "category": "preference"}),
        ),
        (
            "memory",
            json!({"command": "create", "path": "/memories/t.md", "file_text": "likes tea"}),
        ),
        (
            "putMemory",
            json!({"namespace": "agent.x", "key": "k", "value": "likes tea"}),
        ),
        ("memory_save", json!({"content": "likes tea"})),
    ];
    for (tool, args) in attempts {
        let out = env.call(Surface::Agent, tool, args).await;
        denied(&out);
    }
    assert!(env.notes().await.is_empty());
}

#[tokio::test]
async fn an_update_that_empties_a_note_is_a_delete() {
    let env = env(json!({"tool_permissions": {"memory_delete": {"operations": ["read"]}}})).await;
    let saved = env
        .call(
            Surface::Agent,
            "memory_save",
            json!({"content": "door code is 4711"}),
        )
        .await;
    let saved: Value = serde_json::from_str(&saved.output).unwrap();
    let (id, version) = (saved["note_id"].clone(), saved["version"].clone());
    let file = env
        .call(
            Surface::Agent,
            "memory",
            json!({"command": "create", "path": "/memories/plan.md", "file_text": "the plan"}),
        )
        .await;
    assert!(file.ok, "{}", file.output);
    for blank in [".", "-", " \u{200b} "] {
        let out = env
            .call(
                Surface::Agent,
                "memory_update",
                json!({"note_id": id, "version": version, "content": blank}),
            )
            .await;
        assert!(denied(&out).contains("delete"), "{}", out.output);
    }
    let out = env
        .call(
            Surface::Agent,
            "memory",
            json!({"command": "update", "path": "/memories/plan.md", "file_text": "…"}),
        )
        .await;
    denied(&out);
    let out = env
        .call(
            Surface::Agent,
            "memory",
            json!({"command": "delete", "path": "/memories/plan.md"}),
        )
        .await;
    denied(&out);
    let out = env
        .call(
            Surface::Agent,
            "memory",
            json!({"command": "str_replace", "path": "/memories/plan.md", "old_str": "the plan", "new_str": "."}),
        )
        .await;
    assert!(
        !out.ok && out.output.contains("delete command"),
        "{}",
        out.output
    );
    assert_eq!(env.notes().await, ["door code is 4711", "the plan"]);
    // An update that still says something is a write, which the rule leaves alone.
    let out = env
        .call(
            Surface::Agent,
            "memory_update",
            json!({"note_id": id, "version": version, "content": "door code is 4712"}),
        )
        .await;
    assert!(out.ok, "{}", out.output);
}

#[tokio::test]
async fn no_expiry_or_zero_is_over_the_ttl_cap_in_every_dialect() {
    let env = env(json!({"tool_permissions": {"putMemory": {"max_ttl_seconds": 3600}}})).await;
    let put = |ttl: Value| {
        let mut args = json!({"namespace": "agent.x", "key": "k", "value": "v"});
        if !ttl.is_null() {
            args["ttl_seconds"] = ttl;
        }
        env.call(Surface::Mcp, "putMemory", args)
    };
    for ttl in [json!(0), Value::Null, json!(7200)] {
        let out = put(ttl.clone()).await;
        assert_eq!(
            error_object(&out)["details"]["max_ttl_seconds"],
            3600,
            "{ttl}"
        );
    }
    let forever = [
        ("memory_save", json!({"content": "kept forever"})),
        (
            "memory_save",
            json!({"content": "kept a day", "expires_in": "1d"}),
        ),
        (
            "store_memory",
            json!({"content": "kept forever", "category": "fact"}),
        ),
        (
            "memory",
            json!({"command": "create", "path": "/memories/f.md", "file_text": "forever"}),
        ),
    ];
    for (tool, args) in forever {
        let out = env.call(Surface::Agent, tool, args).await;
        assert_eq!(
            error_object(&out)["details"]["max_ttl_seconds"],
            3600,
            "{tool}"
        );
    }
    assert!(env.notes().await.is_empty());
    assert!(put(json!(600)).await.ok);
    let out = env
        .call(
            Surface::Agent,
            "memory_save",
            json!({"content": "kept half an hour", "expires_in": "30m"}),
        )
        .await;
    assert!(out.ok, "{}", out.output);
    assert_eq!(env.notes().await.len(), 2);
}

#[tokio::test]
async fn namespace_read_rules_hold_for_search_results() {
    let env =
        env(json!({"operations": {"read": {"allowed_namespaces": ["notes", "public.*"]}}})).await;
    for (ns, value) in [
        ("private.vault", "the vault combination is blue"),
        ("public.menu", "the vault menu is red"),
    ] {
        let out = env
            .call(
                Surface::Agent,
                "putMemory",
                json!({"namespace": ns, "key": "k", "value": value}),
            )
            .await;
        assert!(out.ok, "{}", out.output);
    }
    for tool in ["memory_search", "search_memories"] {
        let out = env
            .call(Surface::Agent, tool, json!({"query": "vault combination"}))
            .await;
        assert!(out.ok, "{}", out.output);
        assert!(out.output.contains("menu is red"), "{tool}: {}", out.output);
        assert!(!out.output.contains("blue"), "{tool}: {}", out.output);
    }
    let out = env
        .call(
            Surface::Agent,
            "listMemory",
            json!({"namespace": "private.vault"}),
        )
        .await;
    denied(&out);
}

#[tokio::test]
async fn an_mcp_client_cannot_drain_the_agents_bucket() {
    let env = env(
        json!({"rate_limits": {"tools": {"memory_search": {"per_minute": 0.001, "burst": 2}}}}),
    )
    .await;
    let search = |surface| env.call(surface, "memory_search", json!({"query": "x"}));
    assert!(search(Surface::Mcp).await.ok);
    assert!(search(Surface::Mcp).await.ok);
    assert_eq!(
        error_object(&search(Surface::Mcp).await)["code"],
        "RATE_LIMITED"
    );
    assert!(
        search(Surface::Agent).await.ok,
        "the agent's own bucket is its own"
    );
    assert!(search(Surface::Agent).await.ok);
}

#[tokio::test]
async fn a_write_only_client_reads_nothing_through_a_save() {
    let env = env(json!({"surfaces": {"mcp": {"operations": ["write"]}}})).await;
    let first = env
        .call(
            Surface::Agent,
            "memory_save",
            json!({"content": "Alice's door code is 4711"}),
        )
        .await;
    let first: Value = serde_json::from_str(&first.output).unwrap();
    let id = first["note_id"].as_str().unwrap().to_owned();
    // The client may not search…
    denied(
        &env.call(Surface::Mcp, "memory_search", json!({"query": "door code"}))
            .await,
    );
    // …nor learn from a save what is stored: an exact guess and a near one both answer "saved",
    // with a new note's id and no stored text.
    for guess in ["Alice's door code is 4711", "Alice's door code is 4712"] {
        let out = env
            .call(Surface::Mcp, "memory_save", json!({"content": guess}))
            .await;
        assert!(out.ok, "{}", out.output);
        let answer: Value = serde_json::from_str(&out.output).unwrap();
        assert_ne!(answer["note_id"], id.as_str(), "{answer}");
        assert!(
            answer.get("similar").is_none() && answer.get("saved").is_none(),
            "{answer}"
        );
        assert!(
            !out.output.contains("4711") || guess.contains("4711"),
            "{answer}"
        );
    }
    let out = env
        .call(
            Surface::Mcp,
            "store_memory",
            json!({"content": "Alice's door code is 4711", "category": "fact"}),
        )
        .await;
    assert!(
        out.ok && !out.output.contains(&id) && !out.output.contains("Already"),
        "{}",
        out.output
    );
    // The agent may read: its duplicate answer names the note, and the read is audited.
    let out = env
        .call(
            Surface::Agent,
            "memory_save",
            json!({"content": "Alice's door code is 4711"}),
        )
        .await;
    assert!(out.output.contains(&id), "{}", out.output);
    let rows = env.audit().await;
    let last = rows.last().unwrap();
    assert_eq!(
        (
            last.tool.as_str(),
            last.operation.as_str(),
            last.reason.as_deref(),
            last.note_id.as_deref()
        ),
        ("memory_save", "read", Some("duplicate"), Some(id.as_str())),
        "{rows:?}"
    );
}

#[tokio::test]
async fn a_call_its_schema_refuses_is_audited() {
    let env = env(json!({})).await;
    for (tool, args) in [
        ("memory_save", json!({"content": 5})),
        ("memory_search", json!({"query": "x", "sneaky": true})),
        ("putMemory", json!({"namespace": "agent.x"})),
    ] {
        let out = env.call(Surface::Mcp, tool, args).await;
        assert!(!out.ok, "{}", out.output);
    }
    let rows = env.audit().await;
    let seen: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| (r.tool.as_str(), r.surface.as_str(), r.outcome.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("memory_save", "mcp", "invalid"),
            ("memory_search", "mcp", "invalid"),
            ("putMemory", "mcp", "invalid"),
        ]
    );
}

#[tokio::test]
async fn a_write_only_client_learns_nothing_from_the_files_tool() {
    let env = env(json!({"surfaces": {"mcp": {"operations": ["write"]}}})).await;
    let made = env
        .call(
            Surface::Agent,
            "memory",
            json!({"command": "create", "path": "/memories/door.md", "file_text": "code 4711"}),
        )
        .await;
    assert!(made.ok, "{}", made.output);
    // The same refusal for a path that exists and one that does not, for every command that
    // names a path: nothing tells the client what is stored, and nothing is changed.
    let mut by_path = Vec::new();
    for path in ["/memories/door.md", "/memories/none.md"] {
        let mut answers = Vec::new();
        for args in [
            json!({"command": "create", "path": path, "file_text": "code 1234"}),
            json!({"command": "str_replace", "path": path, "old_str": "4711", "new_str": "1"}),
            json!({"command": "insert", "path": path, "insert_line": 0, "insert_text": "x"}),
            json!({"command": "delete", "path": path}),
            json!({"command": "rename", "old_path": path, "new_path": "/memories/moved.md"}),
        ] {
            answers.push(denied(&env.call(Surface::Mcp, "memory", args).await));
        }
        by_path.push(answers);
    }
    assert_eq!(by_path[0], by_path[1]);
    let seen = env
        .call(
            Surface::Agent,
            "memory",
            json!({"command": "view", "path": "/memories/door.md"}),
        )
        .await;
    assert!(seen.output.contains("code 4711"), "{}", seen.output);
}

#[tokio::test]
async fn hits_left_out_by_read_rules_do_not_leave_a_search_short() {
    let env =
        env(json!({"operations": {"read": {"allowed_namespaces": ["notes", "public.*"]}}})).await;
    // Three private notes rank above the one public note for this query.
    for (ns, key, value) in [
        (
            "private.vault",
            "a",
            "vault combination vault combination one",
        ),
        (
            "private.vault",
            "b",
            "vault combination vault combination two",
        ),
        (
            "private.vault",
            "c",
            "vault combination vault combination three",
        ),
        ("public.menu", "d", "the vault menu lists a combination"),
    ] {
        let out = env
            .call(
                Surface::Agent,
                "putMemory",
                json!({"namespace": ns, "key": key, "value": value}),
            )
            .await;
        assert!(out.ok, "{}", out.output);
    }
    for (tool, args) in [
        (
            "memory_search",
            json!({"query": "vault combination", "top_k": 1}),
        ),
        (
            "search_memories",
            json!({"query": "vault combination", "limit": 1}),
        ),
    ] {
        let out = env.call(Surface::Agent, tool, args).await;
        assert!(out.ok, "{}", out.output);
        assert!(out.output.contains("menu lists"), "{tool}: {}", out.output);
        assert!(
            !out.output.contains("one") && !out.output.contains("two"),
            "{tool}: {}",
            out.output
        );
    }
}
