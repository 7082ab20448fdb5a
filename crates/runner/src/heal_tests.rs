//! What [`heal`] puts back after a shell did its worst to a workspace, and what it leaves alone
//! (a link is never followed, a file outside is never touched, nothing is deleted).

use super::*;
use std::os::unix::fs::PermissionsExt;

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_wrecked_workspace_is_put_back_and_a_healthy_one_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let user = types::UserId::parse("alice").unwrap();
    let ws = crate::provision(dir.path(), &user).unwrap();
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "host").unwrap();
    chmod(&outside, 0o400);
    // A healthy workspace: nothing to repair.
    assert_eq!(
        heal(&ws, Occasion::Launch(Separation::SharedUid)).unwrap(),
        Vec::<String>::new()
    );

    std::fs::create_dir(ws.ipc().join("shell.sock")).unwrap();
    std::fs::write(ws.ipc().join("shell.sock/evidence"), "kept").unwrap();
    std::os::unix::fs::symlink(&outside, ws.ipc().join("gateway.json")).unwrap();
    std::fs::write(ws.default_memory_db(), "db").unwrap();
    chmod(&ws.default_memory_db(), 0);
    std::os::unix::fs::symlink(&outside, ws.internal().join("link")).unwrap();
    std::fs::remove_dir(ws.vault()).unwrap();
    std::fs::write(ws.vault(), "not a directory").unwrap();
    chmod(&ws.ipc(), 0);
    chmod(&ws.shared(), 0);
    chmod(&ws.internal(), 0);
    chmod(&ws.root, 0);

    let repairs = heal(&ws, Occasion::Launch(Separation::SharedUid)).unwrap();
    let aside = dir.path().join(".runner/alice/moved-aside");
    let moved: Vec<String> = std::fs::read_dir(&aside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let named = |suffix: &str| {
        let name = moved.iter().find(|n| n.ends_with(suffix)).unwrap();
        aside.join(name)
    };
    // Moved, not deleted: what was planted is kept for the operator to look at.
    assert_eq!(
        std::fs::read_to_string(named("ipc-shell.sock").join("evidence")).unwrap(),
        "kept"
    );
    assert_eq!(
        std::fs::read_to_string(named("vault")).unwrap(),
        "not a directory"
    );
    assert_eq!(
        std::fs::read_link(named("ipc-gateway.json")).unwrap(),
        outside
    );
    let shown = |p: PathBuf| p.display().to_string();
    // A root runner gives the public directories the separated layout's mode (see `ownership`).
    let public = if crate::runs_as_root() { "2770" } else { "755" };
    assert_eq!(
        repairs,
        vec![
            "the workspace root had mode 000; restored 700".to_owned(),
            ".oxydra/ had mode 000; restored 700".to_owned(),
            format!("shared/ had mode 000; restored {public}"),
            format!(
                "vault was a regular file where a directory belongs; moved aside to {}",
                shown(named("vault"))
            ),
            "created vault/ again".to_owned(),
            format!("ipc/ had mode 000; restored {public}"),
            ".oxydra/memory.db had mode 000; restored 600".to_owned(),
            format!(
                "ipc/shell.sock was a directory where a socket belongs; moved aside to {}",
                shown(named("ipc-shell.sock"))
            ),
            format!(
                "ipc/gateway.json was a symbolic link where a regular file belongs; moved \
                 aside to {}",
                shown(named("ipc-gateway.json"))
            ),
        ]
    );
    assert_eq!(
        [
            mode(&ws.root),
            mode(&ws.vault()),
            mode(&ws.default_memory_db()),
            mode(&outside)
        ],
        [0o700, 0o700, 0o600, 0o400]
    );
    assert_eq!(
        heal(&ws, Occasion::WhileRunning).unwrap(),
        Vec::<String>::new()
    );
}

#[test]
fn a_workspace_not_yet_provisioned_has_nothing_to_heal() {
    let dir = tempfile::tempdir().unwrap();
    let ws = WorkspacePaths::new(dir.path().join("bob"));
    assert_eq!(
        heal(&ws, Occasion::Launch(Separation::SharedUid)).unwrap(),
        Vec::<String>::new()
    );
    assert!(!ws.root.exists());
}
