//! Every hostile path is refused by every file tool that takes a path, nothing outside the
//! accessible areas is read or changed, and errors never show host paths.

use crate::common;

use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{Fixture, INTERNAL_SECRET, LOG_CONTENT, OUTSIDE_SECRET, VAULT_CONTENT};
use serde_json::{Value, json};
use tools::policy::{Access, Resolver, Workspace, check_path};

const PATH_TOOLS: [&str; 6] = [
    "file_read",
    "file_write",
    "file_edit",
    "file_delete",
    "file_list",
    "file_search",
];

fn args_for(tool: &str, path: &str) -> Value {
    match tool {
        "file_write" => json!({"path": path, "content": "PWNED"}),
        "file_edit" => json!({"path": path, "old_text": "CONTENT", "new_text": "PWNED"}),
        "file_search" => json!({"path": path, "glob": "*", "text": "-"}),
        _ => json!({"path": path}),
    }
}

fn hostile_paths(fx: &Fixture) -> Vec<String> {
    let root = fx.root.display().to_string();
    let outside = fx.outside.display().to_string();
    let mut paths: Vec<String> = [
        // traversal
        "..",
        "../",
        "../alice/.oxydra/memory.db",
        "../../outside/secret.txt",
        "shared/../.oxydra/memory.db",
        "shared/../../../outside/secret.txt",
        "shared/docs/../../.oxydra/memory.db",
        "shared/./../vault/api.key",
        "shared/..",
        "SHARED/../..",
        "tmp/../logs/run.log",
        "ipc/../shared/notes.md",
        // internal and unlisted areas, with and without dots and slashes
        ".oxydra",
        ".oxydra/",
        "./.oxydra",
        "./.oxydra/memory.db",
        ".oxydra/memory.db",
        ".//.oxydra/memory.db",
        "logs",
        "logs/",
        "logs/run.log",
        "ipc/marker",
        "Shared/notes.md",
        "etc/passwd",
        // absolute and home
        "/",
        "/etc/passwd",
        "//etc/passwd",
        "~",
        "~/.ssh/id_rsa",
        "~root/.bashrc",
        // backslashes
        "shared\\..\\.oxydra\\memory.db",
        "..\\..\\outside\\secret.txt",
        // NUL and control characters
        "shared/notes.md\0.txt",
        "shared/\n../x",
        "shared/a\rb",
        "shared/\u{1b}[31mred",
        // percent-encoded and double-encoded
        "%2e%2e/.oxydra/memory.db",
        "shared/%2e%2e/%2e%2e/outside/secret.txt",
        "shared%2f..%2f.oxydra%2fmemory.db",
        "%252e%252e/.oxydra/memory.db",
        "shared/%2E%2E/vault/api.key",
        "..%2f.oxydra",
        "%2fetc%2fpasswd",
        "shared/%c0%ae%c0%ae/.oxydra",
        // Unicode look-alikes and invisible characters
        "shared/\u{FF0E}\u{FF0E}\u{FF0F}.oxydra/memory.db",
        "shared/\u{2215}..\u{2215}.oxydra/memory.db",
        "shared/\u{2024}\u{2024}/.oxydra/memory.db",
        "\u{FF53}\u{FF48}\u{FF41}\u{FF52}\u{FF45}\u{FF44}/notes.md",
        "shared/\u{200B}../.oxydra",
        "\u{FEFF}shared/notes.md",
        "shared/..\u{2044}.oxydra",
        "shared/\u{2025}/.oxydra",
        // empty names, dot-only names, trailing slashes
        "shared//notes.md",
        "shared/.../.oxydra",
        "shared/. /x",
        "vault/api.key/",
        // symlinks: to outside, to internal, to vault, loops, symlinked parents
        "shared/out",
        "shared/out/secret.txt",
        "shared/out_rel/secret.txt",
        "shared/internal",
        "shared/internal/memory.db",
        "shared/db_link",
        "shared/secret_link",
        "shared/vault_link/api.key",
        "shared/loop",
        "shared/loop/x",
        "shared/etc/passwd",
        "tmp/parent_link/memory.db",
        "tmp/parent_link/new.txt",
        "tmp/logs_link/run.log",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    // host paths, and lengths
    paths.push(format!("{root}/.oxydra/memory.db"));
    paths.push(format!("{root}/shared/notes.md"));
    paths.push(format!("{outside}/secret.txt"));
    paths.push(format!("shared/{}", "a".repeat(300)));
    paths.push(format!("shared/{}x", "a/".repeat(40)));
    paths.push("a".repeat(2000));
    paths
}

/// Paths that name something read-only: vault for the writing tools.
fn vault_write_paths() -> Vec<&'static str> {
    vec!["vault/api.key", "vault/new.txt", "vault", "vault/"]
}

#[tokio::test]
async fn every_tool_denies_every_hostile_path() {
    let fx = Fixture::new();
    let before_internal = fx.tree(&fx.root.join(".oxydra"));
    let before_outside = fx.tree(&fx.outside);
    let before_vault = fx.tree(&fx.root.join("vault"));
    let host = fx.dir.path().display().to_string();
    let corpus = hostile_paths(&fx);
    assert!(corpus.len() >= 50, "corpus has {} paths", corpus.len());
    let mut failures = Vec::new();
    for path in &corpus {
        for tool in PATH_TOOLS {
            let outcome = fx.call(tool, args_for(tool, path)).await;
            let leaked = [
                INTERNAL_SECRET,
                OUTSIDE_SECRET,
                VAULT_CONTENT,
                LOG_CONTENT,
                host.as_str(),
            ]
            .iter()
            .any(|s| outcome.output.contains(s));
            let refused =
                !outcome.ok && matches!(outcome.error_kind, Some("denied" | "invalid_arguments"));
            if !refused || leaked {
                failures.push(format!("{tool} {path:?} -> {outcome:?}"));
            }
        }
    }
    for tool in ["file_write", "file_edit", "file_delete"] {
        for path in vault_write_paths() {
            let outcome = fx.call(tool, args_for(tool, path)).await;
            if outcome.ok || outcome.error_kind != Some("denied") {
                failures.push(format!("{tool} {path:?} -> {outcome:?}"));
            }
        }
    }
    assert_eq!(failures, Vec::<String>::new());
    assert_eq!(
        fx.read(".oxydra/memory.db").as_deref(),
        Some(INTERNAL_SECRET)
    );
    assert_eq!(fx.read("vault/api.key").as_deref(), Some(VAULT_CONTENT));
    assert_eq!(fx.read("logs/run.log").as_deref(), Some(LOG_CONTENT));
    assert_eq!(
        std::fs::read_to_string(fx.outside.join("secret.txt")).unwrap(),
        OUTSIDE_SECRET
    );
    assert_eq!(fx.tree(&fx.root.join(".oxydra")), before_internal);
    assert_eq!(fx.tree(&fx.outside), before_outside);
    assert_eq!(fx.tree(&fx.root.join("vault")), before_vault);
    // The links themselves survive too.
    assert!(
        fx.root
            .join("shared/db_link")
            .symlink_metadata()
            .unwrap()
            .is_symlink()
    );
}

#[tokio::test]
async fn legitimate_paths_work_next_to_the_hostile_ones() {
    let fx = Fixture::new();
    let ok = [
        ("file_read", json!({"path": "shared/notes.md"})),
        ("file_read", json!({"path": "./shared/docs/a.md"})),
        ("file_read", json!({"path": "vault/api.key"})),
        (
            "file_write",
            json!({"path": "shared/new/deep/file.txt", "content": "x"}),
        ),
        (
            "file_write",
            json!({"path": "tmp/scratch.txt", "content": "y"}),
        ),
        (
            "file_edit",
            json!({"path": "shared/notes.md", "old_text": "world", "new_text": "there"}),
        ),
        ("file_list", json!({"path": "shared/"})),
        ("file_list", json!({"path": "vault"})),
        ("file_search", json!({"path": "shared", "glob": "*.md"})),
        ("file_delete", json!({"path": "tmp/scratch.txt"})),
    ];
    for (tool, args) in ok {
        let outcome = fx.call(tool, args.clone()).await;
        assert!(outcome.ok, "{tool} {args} -> {outcome:?}");
    }
    assert_eq!(
        fx.read("shared/notes.md").as_deref(),
        Some("hello\nthere\n")
    );
    assert_eq!(fx.read("shared/new/deep/file.txt").as_deref(), Some("x"));
}

#[tokio::test]
async fn a_directory_swapped_for_a_link_between_calls_is_refused() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.root.join("shared/swap")).unwrap();
    std::fs::write(fx.root.join("shared/swap/memory.db"), "harmless").unwrap();
    let read = json!({"path": "shared/swap/memory.db"});
    assert_eq!(fx.call("file_read", read.clone()).await.output, "harmless");

    std::fs::rename(fx.root.join("shared/swap"), fx.root.join("tmp/old_swap")).unwrap();
    std::os::unix::fs::symlink("../.oxydra", fx.root.join("shared/swap")).unwrap();
    for (tool, args) in [
        ("file_read", read),
        (
            "file_write",
            json!({"path": "shared/swap/memory.db", "content": "PWNED"}),
        ),
        (
            "file_edit",
            json!({"path": "shared/swap/memory.db", "old_text": "DB", "new_text": "X"}),
        ),
        ("file_delete", json!({"path": "shared/swap/memory.db"})),
        ("file_list", json!({"path": "shared/swap"})),
    ] {
        let outcome = fx.call(tool, args).await;
        assert_eq!(
            (outcome.ok, outcome.output.as_str()),
            (false, "symbolic links are not followed; use the real path"),
            "{tool}"
        );
    }
    assert_eq!(
        fx.read(".oxydra/memory.db").as_deref(),
        Some(INTERNAL_SECRET)
    );
}

/// A thread keeps exchanging a real directory and a link to `.oxydra/` while the tools and both
/// resolvers work on a path through it: every answer is the harmless file or a refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_raced_in_during_the_call_is_never_followed() {
    let fx = Fixture::new();
    let shared = fx.root.join("shared");
    std::fs::create_dir(shared.join("race")).unwrap();
    std::fs::write(shared.join("race/memory.db"), "harmless").unwrap();
    std::os::unix::fs::symlink("../.oxydra", shared.join("race_link")).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let shared = shared.clone();
        std::thread::spawn(move || {
            let dir = std::fs::File::open(&shared).unwrap();
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    dir.as_fd(),
                    "race",
                    dir.as_fd(),
                    "race_link",
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                swaps += 1;
            }
            swaps
        })
    };

    let path = check_path("shared/race/memory.db", Access::Read).unwrap();
    let mut harmless = 0;
    for i in 0..300 {
        let outcome = fx
            .call("file_read", json!({"path": "shared/race/memory.db"}))
            .await;
        assert!(!outcome.output.contains(INTERNAL_SECRET), "{outcome:?}");
        if outcome.ok {
            harmless += 1;
            assert_eq!(outcome.output, "harmless");
        }
        let write = json!({"path": format!("shared/race/w{i}.txt"), "content": "PWNED"});
        let _ = fx.call("file_write", write).await;
        for resolver in [Resolver::Auto, Resolver::PerComponent] {
            let ws = Workspace::open_with(&fx.root, resolver).unwrap();
            if let Ok((mut file, _)) = ws.open_file(&path) {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut file, &mut text).unwrap();
                assert_eq!(text, "harmless", "{resolver:?}");
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0);
    let _ = harmless;
    assert_eq!(
        fx.read(".oxydra/memory.db").as_deref(),
        Some(INTERNAL_SECRET)
    );
    assert_eq!(
        fx.tree(&fx.root.join(".oxydra")),
        vec!["memory.db".to_owned()]
    );
}

/// The per-component fallback refuses the same links and escapes as `openat2`.
#[test]
fn both_resolvers_refuse_links() {
    let fx = Fixture::new();
    for resolver in [Resolver::Auto, Resolver::PerComponent] {
        let ws = Workspace::open_with(&fx.root, resolver).unwrap();
        for raw in [
            "shared/out/secret.txt",
            "shared/internal/memory.db",
            "shared/db_link",
            "shared/secret_link",
            "shared/loop/x",
            "tmp/parent_link/memory.db",
        ] {
            let path = check_path(raw, Access::Read).unwrap();
            let err = ws.open_file(&path).map(|_| ()).unwrap_err();
            assert_eq!(
                err.to_string(),
                "symbolic links are not followed; use the real path",
                "{resolver:?} {raw}"
            );
        }
        let good = check_path("shared/docs/a.md", Access::Read).unwrap();
        assert!(ws.open_file(&good).is_ok(), "{resolver:?}");
    }
}

/// The shell writes `shared/` and `tmp/` too. Temporary names made of the process id and a
/// counter (`.oxydra-tmp-<pid>-<n>`) let it plant every name the agent's next writes would take,
/// so that each `file_write` and `file_edit` failed: writes never trip over planted names, and
/// leave them as they were.
#[tokio::test]
async fn planted_temporary_names_do_not_stop_writes() {
    let fx = Fixture::new();
    let pid = std::process::id();
    for area in ["shared", "tmp"] {
        let dir = fx.root.join(area);
        for n in 0..20_000 {
            std::fs::write(dir.join(format!(".oxydra-tmp-{pid}-{n}")), "planted").unwrap();
        }
        // A link and a directory at the first names (an exclusive create refuses both).
        let first = dir.join(format!(".oxydra-tmp-{pid}-0"));
        std::fs::remove_file(&first).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &first).unwrap();
        let second = dir.join(format!(".oxydra-tmp-{pid}-1"));
        std::fs::remove_file(&second).unwrap();
        std::fs::create_dir(&second).unwrap();
    }
    let planted = |area: &str| fx.tree(&fx.root.join(area)).len();
    let before = (planted("shared"), planted("tmp"));
    for area in ["shared", "tmp"] {
        for i in 0..5 {
            let file = format!("{area}/w{i}.txt");
            let wrote = fx
                .call("file_write", json!({"path": file, "content": "one\n"}))
                .await;
            assert_eq!(
                (wrote.ok, wrote.output.as_str()),
                (true, format!("Created {file} (4 bytes)").as_str())
            );
            let edited = fx
                .call(
                    "file_edit",
                    json!({"path": file, "old_text": "one", "new_text": "two"}),
                )
                .await;
            assert!(edited.ok, "{edited:?}");
            assert_eq!(fx.read(&file).as_deref(), Some("two\n"));
        }
    }
    // Five new files in each area, no temporary file left behind, every planted name untouched.
    assert_eq!(
        (planted("shared"), planted("tmp")),
        (before.0 + 5, before.1 + 5)
    );
    assert_eq!(
        std::fs::read_to_string(fx.root.join(format!("shared/.oxydra-tmp-{pid}-7"))).unwrap(),
        "planted"
    );
}
