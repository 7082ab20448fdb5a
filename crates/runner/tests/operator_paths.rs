//! `runner memory export-tree`, `import-tree` and `import FILE` as a real child process, on a
//! target inside the user's `shared/` (which the shell writes): refused unless the operator
//! insists, and then no link planted there is followed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::os::unix::fs::symlink;

use crate::common::{err_line, memory_alice as runner, ok_json};

#[test]
fn tree_commands_refuse_the_shells_directories_and_never_follow_its_links() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let shared = root.join("alice/shared");
    std::fs::create_dir_all(&shared).unwrap();
    let secret = dir.path().join("shadow");
    std::fs::write(&secret, "root:$6$outside").unwrap();
    ok_json(runner(&root, &["save", "a note"]));
    let out = shared.join("out");
    let path = out.to_str().unwrap();

    let err = err_line(runner(&root, &["export-tree", path]));
    assert!(err.contains("--allow-shell-writable"), "{err}");
    assert!(!out.exists(), "a refusal creates nothing");
    for args in [
        vec!["import-tree", shared.to_str().unwrap()],
        vec!["import", "x.jsonl"],
    ] {
        let mut args = args;
        let file = shared.join("x.jsonl");
        std::fs::write(&file, "").unwrap();
        if args[0] == "import" {
            args[1] = file.to_str().unwrap();
        }
        let err = err_line(runner(&root, &args));
        assert!(err.contains("--allow-shell-writable"), "{args:?}: {err}");
    }

    // The operator insists: a link the shell planted in the tree is skipped, never read.
    let tree = shared.join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("sub/plan.md"), "the plan").unwrap();
    symlink(&secret, tree.join("passwd.md")).unwrap();
    symlink(dir.path(), tree.join("up")).unwrap();
    let imported = ok_json(runner(
        &root,
        &[
            "import-tree",
            tree.to_str().unwrap(),
            "--allow-shell-writable",
        ],
    ));
    assert_eq!(imported["imported_files"], 1, "{imported}");
    let again = dir.path().join("again");
    let n = ok_json(runner(&root, &["export-tree", again.to_str().unwrap()]));
    assert_eq!(n["exported_files"], 1);
    assert_eq!(
        std::fs::read_to_string(again.join("sub/plan.md")).unwrap(),
        "the plan"
    );
    assert!(!again.join("passwd.md").exists());
    // A JSON Lines file reached through a link is refused too.
    symlink(&secret, shared.join("notes.jsonl")).unwrap();
    let file = shared.join("notes.jsonl");
    let err = err_line(runner(
        &root,
        &["import", file.to_str().unwrap(), "--allow-shell-writable"],
    ));
    assert!(err.contains("a link"), "{err}");
}
