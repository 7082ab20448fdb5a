//! What each file tool does with legitimate requests, and the visibility table of DESIGN.md §4 for
//! file tools: shared/ and tmp/ read-write, vault/ read-only, .oxydra/, logs/ and ipc/ denied.

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::Fixture;
use serde_json::json;

async fn check(fx: &Fixture, tool: &str, args: serde_json::Value, expected: Result<&str, &str>) {
    let outcome = fx.call(tool, args.clone()).await;
    let got = if outcome.ok {
        Ok(outcome.output.as_str())
    } else {
        Err(outcome.output.as_str())
    };
    assert_eq!(got, expected, "{tool} {args}");
}

#[tokio::test]
async fn visibility_table() {
    // (area, readable, writable)
    let cells = [
        ("shared", true, true),
        ("tmp", true, true),
        ("vault", true, false),
        (".oxydra", false, false),
        ("logs", false, false),
        ("ipc", false, false),
    ];
    let fx = Fixture::new();
    for (area, readable, writable) in cells {
        let file = format!("{area}/cell.txt");
        std::fs::write(fx.root.join(&file), "cell one\n").unwrap();
        let reads = [
            ("file_read", json!({"path": file})),
            ("file_list", json!({"path": area})),
            ("file_search", json!({"path": area, "text": "cell"})),
        ];
        for (tool, args) in reads {
            let outcome = fx.call(tool, args.clone()).await;
            assert_eq!(outcome.ok, readable, "{tool} {args} -> {outcome:?}");
        }
        let writes = [
            (
                "file_write",
                json!({"path": format!("{area}/new.txt"), "content": "x"}),
            ),
            (
                "file_edit",
                json!({"path": file, "old_text": "one", "new_text": "two"}),
            ),
            ("file_delete", json!({"path": file})),
        ];
        for (tool, args) in writes {
            let outcome = fx.call(tool, args.clone()).await;
            assert_eq!(outcome.ok, writable, "{tool} {args} -> {outcome:?}");
            if !writable {
                assert_eq!(outcome.error_kind, Some("denied"), "{tool} {args}");
            }
        }
        let exists = fx.root.join(&file).exists();
        assert_eq!(exists, !writable, "{file} deleted only where writable");
        assert_eq!(
            fx.root.join(area).join("new.txt").exists(),
            writable,
            "{area}"
        );
    }
    check(
        &fx,
        "file_list",
        json!({}),
        Ok("shared/\ntmp/\nvault/  (read-only)"),
    )
    .await;
    check(
        &fx,
        "file_read",
        json!({"path": ".oxydra/memory.db"}),
        Err("`.oxydra/` is internal and not accessible to tools"),
    )
    .await;
    check(
        &fx,
        "file_write",
        json!({"path": "vault/k", "content": "x"}),
        Err("`vault/` is read-only"),
    )
    .await;
    check(
        &fx,
        "file_read",
        json!({"path": "logs/run.log"}),
        Err("`logs/` is not accessible to file tools"),
    )
    .await;
}

#[tokio::test]
async fn file_read() {
    let fx = Fixture::new();
    std::fs::write(fx.root.join("shared/lines.txt"), "one\ntwo\nthree\nfour\n").unwrap();
    std::fs::write(fx.root.join("shared/bin.dat"), b"\x7fELF\0\0\x01").unwrap();
    std::fs::write(fx.root.join("shared/latin1.txt"), b"caf\xe9").unwrap();
    std::fs::write(fx.root.join("shared/empty.txt"), "").unwrap();
    std::fs::write(fx.root.join("shared/huge.txt"), "a".repeat(1024 * 1024 + 1)).unwrap();
    check(
        &fx,
        "file_read",
        json!({"path": "shared/notes.md"}),
        Ok("hello\nworld\n"),
    )
    .await;
    check(
        &fx,
        "file_read",
        json!({"path": "shared/lines.txt", "start_line": 2, "end_line": 3}),
        Ok("[lines 2-3 of 4]\ntwo\nthree"),
    )
    .await;
    check(
        &fx,
        "file_read",
        json!({"path": "shared/lines.txt", "start_line": 3}),
        Ok("[lines 3-4 of 4]\nthree\nfour"),
    )
    .await;
    check(
        &fx,
        "file_read",
        json!({"path": "shared/lines.txt", "start_line": 3, "end_line": 2}),
        Err("`end_line` must be at least start_line (3), got 2"),
    )
    .await;
    check(
        &fx,
        "file_read",
        json!({"path": "shared/lines.txt", "start_line": 9}),
        Err("`start_line` must be at most 4 (`shared/lines.txt` has 4 lines), got 9"),
    )
    .await;
    let binary =
        Err("`shared/bin.dat` looks like a binary file; file tools handle UTF-8 text only");
    check(&fx, "file_read", json!({"path": "shared/bin.dat"}), binary).await;
    check(
        &fx,
        "file_read",
        json!({"path": "shared/latin1.txt"}),
        Err("`shared/latin1.txt` looks like a binary file; file tools handle UTF-8 text only"),
    )
    .await;
    check(
        &fx,
        "file_read",
        json!({"path": "shared/empty.txt"}),
        Ok("(`shared/empty.txt` is empty)"),
    )
    .await;
    check(
        &fx,
        "file_read",
        json!({"path": "shared/huge.txt"}),
        Err("`shared/huge.txt` is larger than 1024 KiB; file tools handle text files up to that size"),
    )
    .await;
    check(
        &fx,
        "file_read",
        json!({"path": "shared/missing.md"}),
        Err("`shared/missing.md` was not found; use file_list to see what exists"),
    )
    .await;
    check(
        &fx,
        "file_read",
        json!({"path": "shared/docs"}),
        Err("`path` must be a file, but `shared/docs` is a directory; use file_list for directories"),
    )
    .await;
    check(
        &fx,
        "file_read",
        json!({"path": "shared/notes.md/x"}),
        Err("`path` must be a path whose parents are directories; a part of `shared/notes.md/x` is a file"),
    )
    .await;
}

#[tokio::test]
async fn file_write() {
    let fx = Fixture::new();
    check(
        &fx,
        "file_write",
        json!({"path": "shared/a/b/c.md", "content": "hi"}),
        Ok("Created shared/a/b/c.md (2 bytes)"),
    )
    .await;
    check(
        &fx,
        "file_write",
        json!({"path": "shared/a/b/c.md", "content": "bye!"}),
        Ok("Replaced shared/a/b/c.md (4 bytes)"),
    )
    .await;
    assert_eq!(fx.read("shared/a/b/c.md").as_deref(), Some("bye!"));
    // An existing file keeps its permissions; no temporary files are left behind.
    let script = fx.root.join("tmp/run.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    check(
        &fx,
        "file_write",
        json!({"path": "tmp/run.sh", "content": "echo hi\n"}),
        Ok("Replaced tmp/run.sh (8 bytes)"),
    )
    .await;
    assert_eq!(
        std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o750
    );
    assert_eq!(
        fx.tree(&fx.root.join("tmp")),
        ["logs_link", "parent_link", "run.sh"]
    );
    check(
        &fx,
        "file_write",
        json!({"path": "shared/docs", "content": "x"}),
        Err("`path` must be a file, but `shared/docs` is a directory"),
    )
    .await;
    check(
        &fx,
        "file_write",
        json!({"path": "shared", "content": "x"}),
        Err("`path` must be a file path like shared/notes.md, got the directory form `shared/`"),
    )
    .await;
    check(
        &fx,
        "file_write",
        json!({"path": "notes.md", "content": "x"}),
        Err("the workspace root is read-only; write under shared/ or tmp/, like shared/notes.md"),
    )
    .await;
    let too_big = "a".repeat(1024 * 1024 + 1);
    let outcome = fx
        .call("file_write", json!({"path": "tmp/big", "content": too_big}))
        .await;
    assert_eq!(outcome.error_kind, Some("invalid_arguments"));
    assert!(!fx.root.join("tmp/big").exists());
}

#[tokio::test]
async fn file_edit() {
    let fx = Fixture::new();
    std::fs::write(fx.root.join("shared/todo.md"), "- milk\n- eggs\n- milk\n").unwrap();
    check(
        &fx,
        "file_edit",
        json!({"path": "shared/todo.md", "old_text": "eggs", "new_text": "bread\n- jam"}),
        Ok("Edited shared/todo.md: replaced 1 line(s) with 2 line(s)"),
    )
    .await;
    assert_eq!(
        fx.read("shared/todo.md").as_deref(),
        Some("- milk\n- bread\n- jam\n- milk\n")
    );
    check(
        &fx,
        "file_edit",
        json!({"path": "shared/todo.md", "old_text": "milk", "new_text": "oat milk"}),
        Err("`old_text` must be text that occurs once in `shared/todo.md`, but it occurs 2 times; include more surrounding text"),
    )
    .await;
    check(
        &fx,
        "file_edit",
        json!({"path": "shared/todo.md", "old_text": "tea", "new_text": "coffee"}),
        Err("`old_text` in `shared/todo.md` was not found; read the file and copy the exact text, including whitespace"),
    )
    .await;
    check(
        &fx,
        "file_edit",
        json!({"path": "shared/todo.md", "old_text": "", "new_text": "x"}),
        Err("`old_text` must be a string of at least 1 character, got \"\""),
    )
    .await;
    assert_eq!(
        fx.read("shared/todo.md").as_deref(),
        Some("- milk\n- bread\n- jam\n- milk\n")
    );
}

#[tokio::test]
async fn file_delete() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.root.join("tmp/empty")).unwrap();
    check(
        &fx,
        "file_delete",
        json!({"path": "shared/notes.md"}),
        Ok("Deleted shared/notes.md"),
    )
    .await;
    check(
        &fx,
        "file_delete",
        json!({"path": "tmp/empty/"}),
        Ok("Deleted tmp/empty"),
    )
    .await;
    check(
        &fx,
        "file_delete",
        json!({"path": "shared/docs"}),
        Err("`path` must be a file or an empty directory; `shared/docs` is not empty"),
    )
    .await;
    check(
        &fx,
        "file_delete",
        json!({"path": "shared"}),
        Err("`shared/` itself cannot be deleted; name something inside it"),
    )
    .await;
    check(
        &fx,
        "file_delete",
        json!({"path": "shared/notes.md"}),
        Err("`shared/notes.md` was not found; use file_list to see what exists"),
    )
    .await;
    assert!(fx.root.join("shared/docs/a.md").exists());
}

#[tokio::test]
async fn file_list() {
    let fx = Fixture::new();
    check(
        &fx,
        "file_list",
        json!({"path": "shared"}),
        Ok("shared/db_link  (symbolic link, not followed)\nshared/docs/\nshared/etc  (symbolic link, not followed)\n\
            shared/internal  (symbolic link, not followed)\nshared/loop  (symbolic link, not followed)\n\
            shared/notes.md  (12 bytes)\nshared/out  (symbolic link, not followed)\n\
            shared/out_rel  (symbolic link, not followed)\nshared/secret_link  (symbolic link, not followed)\n\
            shared/vault_link  (symbolic link, not followed)"),
    )
    .await;
    check(
        &fx,
        "file_list",
        json!({"path": ".", "recursive": true}),
        Ok("shared/\nshared/db_link  (symbolic link, not followed)\nshared/docs/\nshared/docs/a.md  (15 bytes)\n\
            shared/docs/b.txt  (5 bytes)\nshared/etc  (symbolic link, not followed)\n\
            shared/internal  (symbolic link, not followed)\nshared/loop  (symbolic link, not followed)\n\
            shared/notes.md  (12 bytes)\nshared/out  (symbolic link, not followed)\n\
            shared/out_rel  (symbolic link, not followed)\nshared/secret_link  (symbolic link, not followed)\n\
            shared/vault_link  (symbolic link, not followed)\ntmp/\ntmp/logs_link  (symbolic link, not followed)\n\
            tmp/parent_link  (symbolic link, not followed)\nvault/  (read-only)\nvault/api.key  (16 bytes)"),
    )
    .await;
    std::fs::create_dir(fx.root.join("tmp/void")).unwrap();
    check(
        &fx,
        "file_list",
        json!({"path": "tmp/void"}),
        Ok("`tmp/void` is empty"),
    )
    .await;
    for i in 0..600 {
        std::fs::write(fx.root.join(format!("tmp/void/{i:04}")), "").unwrap();
    }
    let outcome = fx.call("file_list", json!({"path": "tmp/void"})).await;
    let lines: Vec<&str> = outcome.output.lines().collect();
    assert_eq!(lines.len(), 501);
    assert_eq!(
        lines[500],
        "[stopped after 500 entries; list a subdirectory to see more]"
    );
}

#[tokio::test]
async fn file_search() {
    let fx = Fixture::new();
    std::fs::write(fx.root.join("shared/docs/img.png"), b"\x89PNG\0\0alpha").unwrap();
    check(
        &fx,
        "file_search",
        json!({"glob": "*.md"}),
        Ok("shared/docs/a.md\nshared/notes.md"),
    )
    .await;
    check(
        &fx,
        "file_search",
        json!({"path": "shared", "glob": "docs/*.txt"}),
        Ok("shared/docs/b.txt"),
    )
    .await;
    check(
        &fx,
        "file_search",
        json!({"glob": "shared/**/*.txt"}),
        Ok("shared/docs/b.txt"),
    )
    .await;
    check(
        &fx,
        "file_search",
        json!({"path": "shared/docs", "text": "alpha"}),
        Ok("shared/docs/a.md:2: alpha line\n[1 binary or oversized file(s) not searched]"),
    )
    .await;
    check(
        &fx,
        "file_search",
        json!({"glob": "*.md", "text": "world"}),
        Ok("shared/notes.md:2: world"),
    )
    .await;
    // Content behind links (outside, .oxydra, vault via link) is never reached.
    check(
        &fx,
        "file_search",
        json!({"path": "shared", "text": "CONTENT"}),
        Ok("no matches under `shared`\n[1 binary or oversized file(s) not searched]"),
    )
    .await;
    check(
        &fx,
        "file_search",
        json!({"text": "VAULT"}),
        Ok("vault/api.key:1: VAULT-CREDENTIAL\n[1 binary or oversized file(s) not searched]"),
    )
    .await;
    check(
        &fx,
        "file_search",
        json!({"glob": "*", "max_results": 2}),
        Ok("shared/docs/a.md\nshared/docs/b.txt\n[stopped at 2 results; narrow the path, glob or text]"),
    )
    .await;
    check(
        &fx,
        "file_search",
        json!({"path": "shared"}),
        Err("`glob` must be given, or `text` given: at least one of them is required"),
    )
    .await;
    check(
        &fx,
        "file_search",
        json!({"glob": "a[b"}),
        Err(
            "`glob` must be a valid glob pattern like *.md (unclosed character class; missing ']')",
        ),
    )
    .await;
}
