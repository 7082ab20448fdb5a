//! The `shell_exec` tool, through the tool registry, against a real `shell-vm` daemon.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed setup should fail the test"
)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{Daemon, MEMORY_DB, assert_group_gone};
use serde_json::json;
use tools::{ShellExec, ToolOutcome, ToolRegistry};
use types::{SessionId, ToolExecutionContext, TurnId, UserId};

fn registry() -> ToolRegistry {
    let mut registry = ToolRegistry::default();
    registry.register(Arc::new(ShellExec)).unwrap();
    registry
}

fn ctx(d: &Daemon) -> ToolExecutionContext {
    ToolExecutionContext::new(
        UserId::parse("alice").unwrap(),
        SessionId::parse("s1").unwrap(),
        TurnId::parse("t1").unwrap(),
        d.ws.clone(),
    )
}

async fn call(d: &Daemon, args: serde_json::Value) -> ToolOutcome {
    registry()
        .execute("shell_exec", &args.to_string(), &ctx(d))
        .await
}

async fn check(d: &Daemon, command: &str, expected: &str) {
    let outcome = call(d, json!({ "command": command })).await;
    assert_eq!(
        outcome,
        ToolOutcome {
            ok: true,
            output: expected.into(),
            error_kind: None
        },
        "{command}"
    );
}

#[tokio::test]
#[ignore = "needs landlock"]
async fn runs_commands_in_the_users_shell() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start();
    check(&d, "echo hi", "exit code 0\n--- stdout ---\nhi\n").await;
    check(
        &d,
        "echo out; echo err >&2; exit 4",
        "exit code 4\n--- stdout ---\nout\n--- stderr ---\nerr\n",
    )
    .await;
    check(&d, "true", "exit code 0\n(no output)\n").await;
    // Host paths in output are scrubbed by the registry like any tool's.
    let pwd = call(&d, json!({"command": "pwd"})).await;
    assert!(
        !pwd.output.contains(&d.dir.path().display().to_string()),
        "{pwd:?}"
    );
}

#[tokio::test]
#[ignore = "needs landlock"]
async fn internal_files_and_the_vault_are_out_of_reach() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start();
    for command in [
        "cat ../.oxydra/memory.db",
        "ls ../vault",
        "cat ../vault/key",
    ] {
        let outcome = call(&d, json!({ "command": command })).await;
        assert!(outcome.ok, "{outcome:?}");
        assert!(
            outcome.output.starts_with("exit code ")
                && !outcome.output.starts_with("exit code 0")
                && outcome.output.contains("Permission denied")
                && !outcome.output.contains(MEMORY_DB),
            "{command}: {outcome:?}"
        );
    }
}

#[tokio::test]
#[ignore = "needs landlock"]
async fn timeout_secs_kills_the_command() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start();
    let outcome = call(&d, json!({"command": "sleep 100", "timeout_secs": 1})).await;
    assert_eq!(
        outcome.output,
        "timed out after 1 s; the command and everything it started were killed\n(no output)\n"
    );
}

#[tokio::test]
#[ignore = "needs landlock"]
async fn cancelling_the_turn_kills_the_command() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start();
    let ctx = ctx(&d);
    let pid_file = d.ws.tmp().join("pid");
    let cancel = ctx.cancellation.clone();
    let watcher = {
        let pid_file = pid_file.clone();
        tokio::spawn(async move {
            while !pid_file.exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            cancel.cancel();
        })
    };
    let args = json!({"command": "echo $$ > ../tmp/pid.new && mv ../tmp/pid.new ../tmp/pid; sleep 100 & sleep 100"});
    let outcome = registry()
        .execute("shell_exec", &args.to_string(), &ctx)
        .await;
    watcher.await.unwrap();
    assert_eq!(outcome.error_kind, Some("cancelled"), "{outcome:?}");
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_group_gone(pgid);
}
