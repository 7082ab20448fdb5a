//! The files dialect's `memory` tool through the registry, over a real libSQL file: every
//! reference string and refusal as a table of (command, arguments, exact output), hostile paths,
//! concurrent edits of one file, isolation between users, and a file found by `memory_search`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::sync::Arc;

use memory::{MemoryRetrieval, MemoryStore};
use serde_json::{Value, json};
use tools::{MEMORY_FILES_TOOL_NAME, ToolOutcome, ToolRegistry, ToolSet};
use types::{
    MemoryDialect, MemoryDialects, SessionId, ToolExecutionContext, TurnId, UserId, WorkspacePaths,
};

use crate::common::memory_env::alice_store;

pub(crate) struct Env {
    pub(crate) dir: tempfile::TempDir,
    store: MemoryStore,
    pub(crate) registry: Arc<ToolRegistry>,
}

pub(crate) async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = alice_store(dir.path()).await;
    let memory: Arc<dyn MemoryRetrieval> = Arc::new(store.clone());
    let dialects = MemoryDialects::of(&[MemoryDialect::Notes, MemoryDialect::Files]).unwrap();
    let mut registry = ToolRegistry::default();
    for tool in ToolSet::new(Some(memory))
        .memory_tools(dialects)
        .tools()
        .unwrap()
    {
        registry.register(tool).unwrap();
    }
    Env {
        dir,
        store,
        registry: Arc::new(registry),
    }
}

pub(crate) fn ctx(root: &std::path::Path, user: &str) -> ToolExecutionContext {
    let user = UserId::parse(user).unwrap();
    ToolExecutionContext::new(
        user.clone(),
        SessionId::parse("chat-1").unwrap(),
        TurnId::parse("turn-1").unwrap(),
        WorkspacePaths::for_user(&root.join("ws"), &user),
    )
}

impl Env {
    async fn call_as(&self, user: &str, args: Value) -> ToolOutcome {
        self.registry
            .execute(
                MEMORY_FILES_TOOL_NAME,
                &args.to_string(),
                &ctx(self.dir.path(), user),
            )
            .await
    }

    async fn call(&self, args: Value) -> ToolOutcome {
        self.call_as("alice", args).await
    }

    /// Runs `args` and compares the whole output and whether it succeeded.
    async fn check(&self, args: Value, ok: bool, expected: &str) {
        let out = self.call(args.clone()).await;
        assert_eq!((out.ok, out.output.as_str()), (ok, expected), "for {args}");
    }
}

const OK: bool = true;
const REFUSED: bool = false;

#[tokio::test]
async fn every_command_answers_with_the_reference_strings() {
    let env = env().await;
    let long_line = format!(
        "Here's the content of /memories/archive/2026/oxydra/plan.md with line numbers:\n     1\t{}",
        "p".repeat(1536)
    );
    let table: Vec<(Value, bool, &str)> = vec![
        // An empty tree: /memories always exists.
        (
            json!({"command": "view", "path": "/memories"}),
            OK,
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n0B\t/memories",
        ),
        (
            json!({"command": "create", "path": "/memories/notes.md", "file_text": "line one\nline two\nline three\n"}),
            OK,
            "File created successfully at: /memories/notes.md",
        ),
        (
            json!({"command": "create", "path": "/memories/notes.md", "file_text": "again"}),
            REFUSED,
            "File /memories/notes.md already exists",
        ),
        (
            json!({"command": "view", "path": "/memories/notes.md"}),
            OK,
            "Here's the content of /memories/notes.md with line numbers:\n     1\tline one\n     2\tline two\n     3\tline three",
        ),
        (
            json!({"command": "view", "path": "/memories/notes.md", "view_range": [2, -1]}),
            OK,
            "Here's the content of /memories/notes.md with line numbers:\n     2\tline two\n     3\tline three",
        ),
        (
            json!({"command": "view", "path": "/memories/notes.md", "view_range": [2, 2]}),
            OK,
            "Here's the content of /memories/notes.md with line numbers:\n     2\tline two",
        ),
        (
            json!({"command": "view", "path": "/memories/notes.md", "view_range": [0, 2]}),
            REFUSED,
            "Invalid `view_range`: [0, 2]. Its first element should be within the range of lines of the file: [1, 3].",
        ),
        (
            json!({"command": "view", "path": "/memories/notes.md", "view_range": [2, 9]}),
            REFUSED,
            "Invalid `view_range`: [2, 9]. Its second element should be -1 or within [2, 3].",
        ),
        (
            json!({"command": "view", "path": "/memories/missing.md"}),
            REFUSED,
            "The path /memories/missing.md does not exist. Please provide a valid path.",
        ),
        (
            json!({"command": "str_replace", "path": "/memories/notes.md", "old_str": "line four", "new_str": "x"}),
            REFUSED,
            "No replacement was performed, old_str `line four` did not appear verbatim in /memories/notes.md.",
        ),
        (
            json!({"command": "str_replace", "path": "/memories/notes.md", "old_str": "line", "new_str": "x"}),
            REFUSED,
            "No replacement was performed. Multiple occurrences of old_str `line` in lines: [1, 2, 3]. Please ensure it is unique",
        ),
        (
            json!({"command": "str_replace", "path": "/memories/notes.md", "old_str": "two", "new_str": "2"}),
            OK,
            "The memory file has been edited.\n     1\tline one\n     2\tline 2\n     3\tline three",
        ),
        (
            json!({"command": "str_replace", "path": "/memories/gone.md", "old_str": "a", "new_str": "b"}),
            REFUSED,
            "The path /memories/gone.md does not exist. Please provide a valid path.",
        ),
        (
            json!({"command": "insert", "path": "/memories/notes.md", "insert_line": 9, "insert_text": "x"}),
            REFUSED,
            "Invalid `insert_line` parameter: 9. It should be within the range [0, 3].",
        ),
        (
            json!({"command": "insert", "path": "/memories/notes.md", "insert_line": -1, "insert_text": "x"}),
            REFUSED,
            "Invalid `insert_line` parameter: -1. It should be within the range [0, 3].",
        ),
        (
            json!({"command": "insert", "path": "/memories/notes.md", "insert_line": 0, "insert_text": "top"}),
            OK,
            "The file /memories/notes.md has been edited.",
        ),
        (
            json!({"command": "view", "path": "/memories/notes.md"}),
            OK,
            "Here's the content of /memories/notes.md with line numbers:\n     1\ttop\n     2\tline one\n     3\tline 2\n     4\tline three",
        ),
        (
            json!({"command": "update", "path": "/memories/notes.md", "file_text": "replaced\n"}),
            OK,
            "The file /memories/notes.md has been updated.",
        ),
        (
            json!({"command": "update", "path": "/memories/notes.md", "file_text": " \n"}),
            REFUSED,
            "No change was made: the new text of /memories/notes.md is empty; to remove the file, use the delete command",
        ),
        (
            json!({"command": "view", "path": "/memories/notes.md"}),
            OK,
            "Here's the content of /memories/notes.md with line numbers:\n     1\treplaced",
        ),
        (
            json!({"command": "update", "path": "/memories/none.md", "file_text": "x"}),
            REFUSED,
            "The path /memories/none.md does not exist. Please provide a valid path.",
        ),
        (
            json!({"command": "create", "path": "/memories/projects/oxydra/plan.md", "file_text": &"p".repeat(1536)}),
            OK,
            "File created successfully at: /memories/projects/oxydra/plan.md",
        ),
        (
            json!({"command": "create", "path": "/memories/projects/oxydra/deep/more.md", "file_text": &"q".repeat(2560)}),
            OK,
            "File created successfully at: /memories/projects/oxydra/deep/more.md",
        ),
        (
            json!({"command": "create", "path": "/memories/.hidden", "file_text": "h"}),
            REFUSED,
            "The name \".hidden\" in path /memories/.hidden starts with a dot: hidden names are left out of view, so they are not created: choose a plain name like notes.md",
        ),
        (
            json!({"command": "create", "path": "/memories/n\u{43e}tes.md", "file_text": "h"}),
            REFUSED,
            "The name \"n\u{43e}tes.md\" in path /memories/n\u{43e}tes.md mixes letters of two scripts (Latin, Greek, Cyrillic) that look alike, so it could pass for another name: choose a plain name like notes.md",
        ),
        (
            json!({"command": "create", "path": "/memories/notes.md ", "file_text": "h"}),
            REFUSED,
            "The name \"notes.md \" in path /memories/notes.md  starts or ends with a space: choose a plain name like notes.md",
        ),
        (
            json!({"command": "create", "path": "/memories/\u{ff4e}otes.md", "file_text": "h"}),
            REFUSED,
            "File /memories/\u{ff4e}otes.md already exists",
        ),
        (
            json!({"command": "create", "path": "/memories/cafe\u{301}.md", "file_text": "h"}),
            OK,
            "File created successfully at: /memories/cafe\u{301}.md",
        ),
        (
            json!({"command": "create", "path": "/memories/caf\u{e9}.md", "file_text": "h"}),
            REFUSED,
            "File /memories/caf\u{e9}.md already exists",
        ),
        (
            json!({"command": "delete", "path": "/memories/caf\u{e9}.md"}),
            OK,
            "Successfully deleted /memories/caf\u{e9}.md",
        ),
        (
            json!({"command": "create", "path": "/memories/notes.md/inner.md", "file_text": "x"}),
            REFUSED,
            "Cannot create /memories/notes.md/inner.md: /memories/notes.md is a file, not a directory. Choose another path.",
        ),
        (
            json!({"command": "create", "path": "/memories/projects", "file_text": "x"}),
            REFUSED,
            "File /memories/projects already exists",
        ),
        (
            json!({"command": "view", "path": "/memories"}),
            OK,
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n4.0K\t/memories\n9B\t/memories/notes.md\n4.0K\t/memories/projects\n4.0K\t/memories/projects/oxydra",
        ),
        (
            json!({"command": "view", "path": "/memories/projects/"}),
            OK,
            "Here're the files and directories up to 2 levels deep in /memories/projects/, excluding hidden items:\n4.0K\t/memories/projects\n4.0K\t/memories/projects/oxydra\n2.5K\t/memories/projects/oxydra/deep\n1.5K\t/memories/projects/oxydra/plan.md",
        ),
        (
            json!({"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/projects"}),
            REFUSED,
            "The destination /memories/projects already exists",
        ),
        (
            json!({"command": "rename", "old_path": "/memories/nothing", "new_path": "/memories/x"}),
            REFUSED,
            "The path /memories/nothing does not exist. Please provide a valid path.",
        ),
        (
            json!({"command": "rename", "old_path": "/memories", "new_path": "/memories/x"}),
            REFUSED,
            "Cannot rename the /memories directory itself",
        ),
        (
            json!({"command": "rename", "old_path": "/memories/projects", "new_path": "/memories"}),
            REFUSED,
            "The destination /memories already exists",
        ),
        (
            json!({"command": "rename", "old_path": "/memories/projects", "new_path": "/memories/projects/sub"}),
            REFUSED,
            "Cannot move /memories/projects into itself (/memories/projects/sub)",
        ),
        (
            json!({"command": "rename", "old_path": "/memories/projects", "new_path": "/memories/archive/2026"}),
            OK,
            "Successfully renamed /memories/projects to /memories/archive/2026",
        ),
        (
            json!({"command": "view", "path": "/memories/archive/2026/oxydra/plan.md", "view_range": [1, 1]}),
            OK,
            &long_line,
        ),
        (
            json!({"command": "view", "path": "/memories/projects"}),
            REFUSED,
            "The path /memories/projects does not exist. Please provide a valid path.",
        ),
        (
            json!({"command": "delete", "path": "/memories"}),
            REFUSED,
            "Cannot delete the /memories directory itself",
        ),
        (
            json!({"command": "delete", "path": "/memories/"}),
            REFUSED,
            "Cannot delete the /memories directory itself",
        ),
        (
            json!({"command": "delete", "path": "/memories/nothing"}),
            REFUSED,
            "The path /memories/nothing does not exist. Please provide a valid path.",
        ),
        (
            json!({"command": "delete", "path": "/memories/archive"}),
            OK,
            "Successfully deleted /memories/archive",
        ),
        (
            json!({"command": "delete", "path": "/memories/notes.md"}),
            OK,
            "Successfully deleted /memories/notes.md",
        ),
        (
            json!({"command": "view", "path": "/memories"}),
            OK,
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n0B\t/memories",
        ),
        (
            json!({"command": "view", "path": "/etc/passwd"}),
            REFUSED,
            "Path must start with /memories, got: /etc/passwd",
        ),
        (
            json!({"command": "view", "path": "/memories/../etc/passwd"}),
            REFUSED,
            "Path /memories/../etc/passwd would escape /memories directory",
        ),
        (
            json!({"command": "create", "path": "/memories/kept.md", "file_text": "k"}),
            OK,
            "File created successfully at: /memories/kept.md",
        ),
        (
            json!({"command": "str_replace", "path": "/memories/kept.md", "old_str": "", "new_str": "x"}),
            REFUSED,
            "`old_str` must be a non-empty text to replace",
        ),
        (
            json!({"command": "create", "path": "/memories/a.md"}),
            REFUSED,
            "`file_text` must be given (a string) for the `create` command",
        ),
        (
            json!({"command": "chmod", "path": "/memories/a.md"}),
            REFUSED,
            "`command` must be one of \"view\", \"create\", \"str_replace\", \"insert\", \"delete\", \"rename\", \"update\", got \"chmod\"",
        ),
    ];
    for (args, ok, expected) in table {
        env.check(args, ok, expected).await;
    }
}

/// Paths that try to leave the tree, hide, or overwhelm: each is refused with a message that
/// does not echo what it should not, and nothing is written anywhere.
#[tokio::test]
async fn hostile_paths_are_refused_and_change_nothing() {
    let env = env().await;
    let long_name = format!("/memories/{}", "n".repeat(300));
    let long_path = format!("/memories/{}", "a/".repeat(600));
    let deep = format!("/memories/{}x", "d/".repeat(20));
    let hostile: Vec<String> = [
        "",
        "/",
        "memories",
        "memories/a",
        "/memorie",
        "/memoriesx",
        "/memories2/a",
        "/memories-evil/a",
        "/memories../a",
        "/Memories/a",
        "/MEMORIES/a",
        " /memories/a",
        "./memories/a",
        "../memories/a",
        "//memories/a",
        "/tmp/memories/a",
        "~/memories/a",
        "/memories/..",
        "/memories/../",
        "/memories/../x",
        "/memories/a/../../x",
        "/memories/a/..",
        "/memories/./../x",
        "/memories/..\\x",
        "/memories/a\\b",
        "/memories\\..\\x",
        "/memories/\0",
        "/memories/a\0b",
        "/memories/a\nb",
        "/memories/a\rb",
        "/memories/a\tb",
        "/memories/\u{7f}",
        "/memories/\u{85}x",
        "/memories/\u{202e}txt.exe",
        "/memories/a\u{200b}b",
        "/memories/\u{feff}a",
        "/memories/\u{2066}a",
        "file:///memories/a",
        "/memories/a/../../../../etc/passwd",
        "/etc/passwd",
        "/proc/self/environ",
        "C:\\memories\\a",
        "\\memories\\a",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([long_name, long_path, deep])
    .collect();
    assert!(hostile.len() >= 40, "{}", hostile.len());
    for path in &hostile {
        for args in [
            json!({"command": "create", "path": path, "file_text": "pwned"}),
            json!({"command": "view", "path": path}),
            json!({"command": "delete", "path": path}),
            json!({"command": "rename", "old_path": "/memories/keep.md", "new_path": path}),
        ] {
            let out = env.call(args.clone()).await;
            assert!(!out.ok, "accepted {args}: {}", out.output);
            assert!(
                !out.output.contains('\0') && out.output.len() < 1500,
                "{:?}",
                out.output
            );
            assert!(
                !out.output.contains(env.dir.path().to_str().unwrap()),
                "leaked a host path: {}",
                out.output
            );
        }
    }
    let user = UserId::parse("alice").unwrap();
    assert_eq!(
        env.store
            .files()
            .file_tree(&user, "/memories")
            .await
            .unwrap(),
        vec![]
    );
    assert_eq!(env.store.list_notes(&user).await.unwrap(), vec![]);
}

#[tokio::test]
async fn concurrent_edits_of_one_file_never_lose_an_update() {
    let env = env().await;
    let lines: String = (0..40).map(|i| format!("item {i}: todo\n")).collect();
    env.check(
        json!({"command": "create", "path": "/memories/list.md", "file_text": lines}),
        OK,
        "File created successfully at: /memories/list.md",
    )
    .await;
    let env = Arc::new(env);
    let tasks: Vec<_> = (0..40)
        .map(|i| {
            let env = Arc::clone(&env);
            tokio::spawn(async move {
                let args = json!({"command": "str_replace", "path": "/memories/list.md",
                    "old_str": format!("item {i}: todo"), "new_str": format!("item {i}: done")});
                // A clean failure says the file changed; the edit is then retried on the new text.
                loop {
                    let out = env.call(args.clone()).await;
                    if out.ok {
                        return;
                    }
                    assert!(
                        out.output.contains("was changed by another edit"),
                        "{}",
                        out.output
                    );
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let file = env
        .store
        .files()
        .read_file(&UserId::parse("alice").unwrap(), "/memories/list.md")
        .await
        .unwrap()
        .unwrap();
    let expected: String = (0..40).map(|i| format!("item {i}: done\n")).collect();
    assert_eq!(file.content, expected);
}

/// `insert` edits the stored text in place: a CRLF file stays CRLF (the inserted lines too), and
/// a file without a final newline does not gain one.
#[tokio::test]
async fn insert_keeps_line_endings_and_the_missing_final_newline() {
    let env = env().await;
    let alice = UserId::parse("alice").unwrap();
    let cases = [
        (
            "/memories/crlf.md",
            "one\r\ntwo\r\n",
            1,
            "new\n",
            "one\r\nnew\r\ntwo\r\n",
        ),
        ("/memories/open.md", "one\ntwo", 2, "new", "one\ntwo\nnew"),
    ];
    for (path, before, line, text, after) in cases {
        env.check(
            json!({"command": "create", "path": path, "file_text": before}),
            OK,
            &format!("File created successfully at: {path}"),
        )
        .await;
        env.check(
            json!({"command": "insert", "path": path, "insert_line": line, "insert_text": text}),
            OK,
            &format!("The file {path} has been edited."),
        )
        .await;
        let file = env
            .store
            .files()
            .read_file(&alice, path)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(file.content, after, "{path}");
    }
}

#[tokio::test]
async fn a_file_is_a_note_of_its_user_only() {
    let env = env().await;
    env.check(
        json!({"command": "create", "path": "/memories/prefs.md", "file_text": "Alice drinks rooibos tea every morning"}),
        OK,
        "File created successfully at: /memories/prefs.md",
    )
    .await;
    // Another user of the same store sees an empty tree and cannot reach the file.
    let bob = env
        .call_as(
            "bob",
            json!({"command": "view", "path": "/memories/prefs.md"}),
        )
        .await;
    assert_eq!(
        (bob.ok, bob.output.as_str()),
        (
            false,
            "The path /memories/prefs.md does not exist. Please provide a valid path."
        )
    );
    let bob_delete = env
        .call_as(
            "bob",
            json!({"command": "delete", "path": "/memories/prefs.md"}),
        )
        .await;
    assert!(!bob_delete.ok);
    // memory_search finds the file's text and says which file it is.
    let ctx = ctx(env.dir.path(), "alice");
    let found = env
        .registry
        .execute(
            "memory_search",
            &json!({"query": "rooibos tea"}).to_string(),
            &ctx,
        )
        .await;
    assert!(found.ok, "{}", found.output);
    let found: Value = serde_json::from_str(&found.output).unwrap();
    let hit = &found["results"][0];
    assert_eq!(hit["text"], "Alice drinks rooibos tea every morning");
    assert_eq!(hit["path"], "/memories/prefs.md");
}
