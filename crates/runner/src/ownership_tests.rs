//! The ownership table applied to a real workspace, as root: a single-uid workspace of an earlier
//! version is migrated without following the links, FIFOs and hard links planted in it, and the
//! layout is applied again unchanged.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use types::UserId;

use super::*;

fn owner(p: &Path) -> (u32, u32, u32) {
    let m = std::fs::symlink_metadata(p).unwrap();
    (m.uid(), m.gid(), m.mode() & 0o7777)
}

#[test]
#[ignore = "needs root"]
fn a_single_uid_workspace_is_migrated_following_no_link() {
    test_support::need(test_support::Need::Root);
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside.txt");
    let outside_dir = dir.path().join("outside");
    std::fs::write(&outside, "host file").unwrap();
    std::fs::create_dir(&outside_dir).unwrap();
    let ws = crate::provision(dir.path(), &UserId::parse("alice").unwrap()).unwrap();
    std::fs::write(ws.default_memory_db(), "db").unwrap();
    std::fs::write(ws.vault().join("api.key"), "k").unwrap();
    std::fs::write(ws.shared().join("notes.md"), "n").unwrap();
    std::fs::create_dir(ws.shared().join("sub")).unwrap();
    std::fs::write(ws.shared().join("sub/deep.txt"), "d").unwrap();
    std::os::unix::fs::symlink(&outside, ws.shared().join("to-host")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.logs().join("shell-vm.log")).unwrap();
    std::os::unix::fs::symlink(&outside_dir, ws.ipc().join("swapped")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.internal().join("planted")).unwrap();
    std::fs::hard_link(&outside, ws.tmp().join("hard")).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        ws.tmp().join("fifo"),
        Mode::from_raw_mode(0o644),
    )
    .unwrap();
    // The single-uid layout: everything the old guest uid's, the root 0700.
    let old = 3_000_000_007;
    std::process::Command::new("chown")
        .args(["-hR", &format!("{old}:{old}")])
        .arg(&ws.root)
        .status()
        .unwrap();
    std::fs::set_permissions(&ws.root, std::fs::Permissions::from_mode(0o700)).unwrap();
    let ids = UserIdentities {
        agent: GuestIdentity { uid: old, gid: old },
        shell: GuestIdentity {
            uid: 3_000_000_008,
            gid: old,
        },
    };
    own_workspace(&ws, ids).unwrap();
    let (a, s, g) = (old, 3_000_000_008, old);
    let expected = [
        (ws.root.clone(), (0, g, 0o750)),
        (ws.internal(), (a, g, 0o700)),
        (ws.default_memory_db(), (a, g, 0o644)),
        (ws.vault(), (a, g, 0o700)),
        (ws.vault().join("api.key"), (a, g, 0o644)),
        (ws.shared(), (a, g, 0o2770)),
        (ws.tmp(), (a, g, 0o2770)),
        (ws.logs(), (a, g, 0o2770)),
        (ws.ipc(), (a, g, 0o2770)),
        (ws.shared().join("notes.md"), (s, g, 0o664)),
        (ws.shared().join("sub"), (s, g, 0o775)),
        (ws.shared().join("sub/deep.txt"), (s, g, 0o664)),
        (ws.tmp().join("fifo"), (s, g, 0o644)),
        // Nothing outside changed; the hard-linked file kept its owner and mode.
        (outside.clone(), (old, old, 0o644)),
        (outside_dir.clone(), (0, 0, 0o755)),
    ];
    let check = || {
        for (path, want) in &expected {
            assert_eq!(owner(path), *want, "{}", path.display());
        }
    };
    check();
    // The links themselves changed owner, never their targets.
    assert_eq!(owner(&ws.shared().join("to-host")).0, s);
    assert_eq!(owner(&ws.internal().join("planted")).0, a);
    // Applied again: nothing changes (a shell file made private stays private).
    std::fs::set_permissions(
        ws.shared().join("notes.md"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    own_workspace(&ws, ids).unwrap();
    assert_eq!(owner(&ws.shared().join("notes.md")), (s, g, 0o600));
    std::fs::set_permissions(
        ws.shared().join("notes.md"),
        std::fs::Permissions::from_mode(0o664),
    )
    .unwrap();
    check();

    // `forget` gives everything to root before the ids are released.
    disown_workspace(&ws).unwrap();
    for path in [
        ws.root.clone(),
        ws.internal(),
        ws.shared().join("sub/deep.txt"),
    ] {
        let (uid, gid, _) = owner(&path);
        assert_eq!((uid, gid), (0, 0), "{}", path.display());
    }
    assert_eq!(owner(&outside), (old, old, 0o644));
}
