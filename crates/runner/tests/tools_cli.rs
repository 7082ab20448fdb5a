//! `runner tools --json` prints the catalogue the model is offered (the web tools only when the
//! agent's `[tools.web]` turns them on), and never starts the MCP servers of the copy of agent.toml
//! the user's agent can write.

use std::process::Command;

#[test]
fn catalogue_lists_every_builtin_tool_with_schema_tier_and_timeout() {
    let out = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["tools", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "file_delete",
            "file_edit",
            "file_list",
            "file_read",
            "file_search",
            "file_write",
            "memory_delete",
            "memory_save",
            "memory_search",
            "memory_update",
            "shell_exec"
        ]
    );
    let search = rows.iter().find(|r| r["name"] == "memory_search").unwrap();
    assert_eq!(search["safety_tier"], "read_only");
    assert_eq!(search["timeout_secs"], 15);
    assert_eq!(
        search["parameters"]["required"],
        serde_json::json!(["query"])
    );
    let save = rows.iter().find(|r| r["name"] == "memory_save").unwrap();
    assert_eq!(
        (save["safety_tier"].as_str(), save["timeout_secs"].as_u64()),
        (Some("side_effecting"), Some(10))
    );
    assert!(
        rows.iter()
            .all(|r| r["description"].as_str().unwrap().len() > 20)
    );

    let text = Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg("tools")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&text.stdout).lines().count(),
        rows.len()
    );

    // The columns line up for every dialect (`search_memories` is the longest name).
    let text = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["tools", "--memory", "categorized"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("search_memories "), "{text}");
    let tier_columns: Vec<usize> = text
        .lines()
        .map(|l| {
            l.find(" read-only")
                .or_else(|| l.find(" side-effecting"))
                .or_else(|| l.find(" privileged"))
                .unwrap()
        })
        .collect();
    assert!(
        tier_columns.windows(2).all(|w| w[0] == w[1]),
        "{tier_columns:?}\n{text}"
    );
}

/// `runner tools --json | head -1`: a reader that stops early is not an error.
#[test]
fn a_reader_that_stops_early_is_not_an_error() {
    for args in [&["tools", "--json"][..], &["tools"][..]] {
        let (reader, writer) = std::io::pipe().unwrap();
        // The reader has gone before the first write: every write fails with EPIPE.
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_runner"))
            .args(args)
            .stdout(writer)
            .output()
            .unwrap();
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).as_ref()
            ),
            (Some(0), ""),
            "{args:?}"
        );
    }
}

#[test]
fn the_web_tools_are_listed_when_the_agent_config_enables_them() {
    let dir = tempfile::tempdir().unwrap();
    let names = |toml: &str| {
        let path = dir.path().join("agent.toml");
        std::fs::write(&path, toml).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_runner"))
            .args(["tools", "--json", "--agent-config"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        rows.iter()
            .filter(|r| r["name"].as_str().unwrap().starts_with("web_"))
            .map(|r| {
                (
                    r["name"].as_str().unwrap().to_owned(),
                    r["safety_tier"].as_str().unwrap().to_owned(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert!(names("[tools.web]\nenabled = false\n").is_empty());
    assert_eq!(
        names("[tools.web]\nenabled = true\n[tools.web.search]\nurl = \"http://127.0.0.1:8888\"\n"),
        [
            ("web_fetch".to_owned(), "read_only".to_owned()),
            ("web_search".to_owned(), "read_only".to_owned())
        ]
    );
    // A SearXNG backend without its address is refused with the setting's name.
    std::fs::write(
        dir.path().join("agent.toml"),
        "[tools.web.search]\nbackend = \"searxng\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["tools", "--agent-config"])
        .arg(dir.path().join("agent.toml"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("tools.web.search.url"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `runner tools --agent-config` on a user's own copy (`<root>/<user>/.oxydra/agent.toml`, which
/// their agent can write) started the stdio servers it names: the operator ran a command the
/// agent wrote. It refuses, however the copy is spelled; the same file kept by the operator
/// elsewhere still has its server started (so the command below does run when started).
#[test]
fn the_agents_own_copy_starts_no_server() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("workspaces");
    let internal = root.join("alice/.oxydra");
    std::fs::create_dir_all(&internal).unwrap();
    std::fs::create_dir_all(root.join("alice/shared")).unwrap();
    let marker = dir.path().join("copy-command-ran");
    let toml = format!(
        "[mcp.servers.planted]\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"touch '{}'\"]\ntimeout_secs = 3\n",
        marker.display()
    );
    std::fs::write(internal.join("agent.toml"), &toml).unwrap();
    let tools = |path: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_runner"))
            .arg("--config")
            .arg(dir.path().join("no-runner.toml"))
            .args(["tools", "--agent-config"])
            .arg(path)
            .env_remove("OXYDRA_LOG")
            .output()
            .unwrap()
    };
    for spelled in [
        internal.join("agent.toml"),
        root.join("alice/shared/../.oxydra/agent.toml"),
    ] {
        let out = tools(&spelled);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !marker.exists(),
            "{}: the copy's command ran",
            spelled.display()
        );
        assert!(
            !out.status.success() && stderr.contains("--agent-config"),
            "{}: {stderr}",
            spelled.display()
        );
    }
    let kept = dir.path().join("agent.toml");
    std::fs::write(&kept, &toml).unwrap();
    let _ = tools(&kept);
    assert!(
        marker.exists(),
        "the operator's own agent.toml starts its server"
    );
}
