//! What the operator's path resolution follows and what it refuses.

use std::os::unix::fs::{PermissionsExt, symlink};

use super::*;

fn policy() -> TargetPolicy {
    TargetPolicy::default()
}

#[test]
fn the_operators_own_links_are_followed_and_dot_dot_steps_back() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("real/inner")).unwrap();
    symlink("real", dir.path().join("alias")).unwrap();
    let via = dir.path().join("alias/inner/../inner");
    let opened = open_operator_dir(&via, Want::Existing, &policy()).unwrap();
    std::fs::write(dir.path().join("real/inner/x"), "1").unwrap();
    assert_eq!(opened.names().unwrap(), ["x"]);
}

#[test]
fn a_new_target_is_created_private_and_a_refusal_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("a/b");
    open_operator_dir(&target, Want::NewOrEmpty, &policy()).unwrap();
    let mode = std::fs::metadata(&target).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    // A world-writable parent: refused before `c` is made.
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = open_operator_dir(&open.join("c"), Want::NewOrEmpty, &policy()).unwrap_err();
    assert!(err.to_string().contains("--allow-shell-writable"), "{err}");
    assert!(!open.join("c").exists());
}

#[test]
#[ignore = "needs root"]
fn a_directory_another_account_owns_is_the_shells() {
    test_support::need(test_support::Need::Root);
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    rustix::fs::chown(&shared, Some(rustix::fs::Uid::from_raw(65_534)), None).unwrap();
    let err = open_operator_dir(&shared.join("out"), Want::NewOrEmpty, &policy()).unwrap_err();
    assert!(
        err.to_string()
            .contains("can be written by the user's shell"),
        "{err}"
    );
    // A link it planted is never followed, even with the operator insisting.
    std::fs::create_dir(dir.path().join("elsewhere")).unwrap();
    symlink(dir.path().join("elsewhere"), shared.join("link")).unwrap();
    rustix::fs::chownat(
        rustix::fs::CWD,
        shared.join("link").as_path(),
        Some(rustix::fs::Uid::from_raw(65_534)),
        None,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
    let insist = TargetPolicy {
        allow_shell_writable: true,
        workspace_root: None,
    };
    let err = open_operator_dir(&shared.join("link"), Want::Existing, &insist).unwrap_err();
    assert!(err.to_string().contains("link"), "{err}");
    assert!(open_operator_dir(&shared.join("out"), Want::NewOrEmpty, &insist).is_ok());
}

#[test]
fn a_users_shell_areas_are_refused_whoever_owns_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("alice/shared/x")).unwrap();
    std::fs::create_dir_all(dir.path().join("alice/.oxydra")).unwrap();
    let policy = TargetPolicy {
        allow_shell_writable: false,
        workspace_root: Some(dir.path().to_owned()),
    };
    let err =
        open_operator_dir(&dir.path().join("alice/shared/x"), Want::Existing, &policy).unwrap_err();
    assert!(err.to_string().contains("--allow-shell-writable"), "{err}");
    assert!(open_operator_dir(&dir.path().join("alice/.oxydra"), Want::Existing, &policy).is_ok());
    // A link below a shell area is never followed, even one the operator's uid owns (a runner
    // that is not root runs its guests as itself) and even when the operator insists.
    std::fs::create_dir(dir.path().join("elsewhere")).unwrap();
    symlink(
        dir.path().join("elsewhere"),
        dir.path().join("alice/shared/x/link"),
    )
    .unwrap();
    let insist = TargetPolicy {
        allow_shell_writable: true,
        ..policy
    };
    let through = dir.path().join("alice/shared/x/link");
    let err = open_operator_dir(&through, Want::Existing, &insist).unwrap_err();
    assert!(err.to_string().contains("link"), "{err}");
    let err = open_operator_file(&through.join("f"), &insist).unwrap_err();
    assert!(err.to_string().contains("link"), "{err}");
}

#[test]
fn an_operator_file_is_read_through_no_link() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.jsonl"), "{}").unwrap();
    symlink(
        dir.path().join("notes.jsonl"),
        dir.path().join("link.jsonl"),
    )
    .unwrap();
    assert!(open_operator_file(&dir.path().join("notes.jsonl"), &policy()).is_ok());
    let err = open_operator_file(&dir.path().join("link.jsonl"), &policy()).unwrap_err();
    assert!(err.to_string().contains("a link"), "{err}");
}
