//! Unit tests of `memory_key`: key files, key commands, a lost key, a loose mode.
use super::*;
use std::os::unix::fs::PermissionsExt;

fn alice() -> UserId {
    UserId::parse("alice").unwrap()
}

#[test]
fn a_key_file_is_created_once_private_and_destroyed() {
    let root = tempfile::tempdir().unwrap();
    let enc = MemoryEncryption {
        enabled: true,
        key_command: None,
    };
    let first = user_key(&enc, root.path(), &alice()).unwrap().unwrap();
    assert!(first.created);
    let path = memory_key_path(root.path(), &alice());
    assert_eq!(path, root.path().join(".runner/alice/memory.key"));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    let again = user_key(&enc, root.path(), &alice()).unwrap().unwrap();
    assert!(!again.created);
    assert_eq!(again.key, first.key);
    assert!(destroy_key(root.path(), &alice()).unwrap());
    assert!(!path.exists());
    assert!(!destroy_key(root.path(), &alice()).unwrap());
    let off = MemoryEncryption::default();
    assert!(user_key(&off, root.path(), &alice()).unwrap().is_none());
}

#[test]
fn a_key_command_supplies_the_key_and_its_failures_are_clear() {
    let root = tempfile::tempdir().unwrap();
    let hex = "ab".repeat(32);
    let enc = |cmd: &str| MemoryEncryption {
        enabled: true,
        key_command: Some(cmd.to_owned()),
    };
    let got = user_key(&enc(&format!("echo {hex}")), root.path(), &alice())
        .unwrap()
        .unwrap();
    assert_eq!(got.key.expose(), hex);
    assert!(
        !memory_key_path(root.path(), &alice()).exists(),
        "nothing stored"
    );
    // The command learns whose key is asked for.
    let user = user_key(
        &enc("printf '%s' \"$OXYDRA_USER\"; printf 'x%.0s' $(seq 40)"),
        root.path(),
        &alice(),
    )
    .unwrap()
    .unwrap();
    assert!(user.key.expose().starts_with("alicex"));
    for (cmd, says) in [("exit 3", "failed"), ("echo short", "not a key")] {
        let err = user_key(&enc(cmd), root.path(), &alice()).unwrap_err();
        assert!(err.to_string().contains(says), "{err}");
    }
}

#[test]
fn memory_encryption_is_read_and_checked() {
    let c = parse_config(
        "[memory_encryption]\nenabled = true\nkey_command = \"pass show k\"\n[users.a]\n",
    )
    .unwrap();
    assert!(c.memory_encryption.enabled);
    assert_eq!(
        c.memory_encryption.key_command.as_deref(),
        Some("pass show k")
    );
    for (text, says) in [
        (
            "[memory_encryption]\nkey_command = \"x\"\n",
            "enabled is not true",
        ),
        ("[memory_encryption]\nenable = true\n", "enable"),
    ] {
        let err = parse_config(text).unwrap_err();
        assert!(err.contains(says), "{text}: {err}");
    }
}

fn parse_config(text: &str) -> Result<crate::RunnerConfig, String> {
    crate::RunnerConfig::parse(text, Path::new("/etc/oxydra/runner.toml"))
        .map_err(|e| e.to_string())
}

/// An encrypted database of alice's at `.oxydra/memory.db` under `root`, and its key's path.
async fn encrypted_db(root: &Path, enc: &MemoryEncryption) -> (PathBuf, PathBuf) {
    let file = root.join("alice/.oxydra/memory.db");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let key = user_key(enc, root, &alice()).unwrap().unwrap().key;
    let options = memory::OpenOptions {
        legacy_dir: memory::LegacyDir::Skip,
        encryption_key: Some(key),
        ..memory::OpenOptions::default()
    };
    let config = types::MemoryConfig::default();
    // Closed, not dropped: a dropped store's threads close their connections (and checkpoint
    // the file) a moment later, which would race the test's reading of the file.
    memory::MemoryStore::open(
        memory::Target::Config {
            config: &config,
            user_root: &root.join("alice"),
        },
        options,
    )
    .await
    .unwrap()
    .close()
    .await;
    assert!(!is_plaintext_db(&file));
    (file, memory_key_path(root, &alice()))
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn a_lost_key_over_an_encrypted_database_is_refused_before_anything_is_written() {
    let root = tempfile::tempdir().unwrap();
    let enc = MemoryEncryption {
        enabled: true,
        key_command: None,
    };
    let (file, key_path) = encrypted_db(root.path(), &enc).await;
    std::fs::remove_file(&key_path).unwrap();
    let key_dir = key_path.parent().unwrap();
    let before = listing(key_dir);
    let db_before = std::fs::read(&file).unwrap();
    let place = MemoryPlace::Local(file.clone());
    let agent = key_for_agent(&enc, root.path(), &alice(), &place)
        .await
        .unwrap_err()
        .to_string();
    let cli = key_for_cli(&enc, root.path(), &alice(), &place)
        .unwrap_err()
        .to_string();
    for err in [agent, cli] {
        assert!(err.contains("is encrypted but its key"), "{err}");
        assert!(err.contains("forget"), "{err}");
    }
    assert_eq!(listing(key_dir), before, "a key was written");
    assert!(!key_path.exists());
    assert_eq!(std::fs::read(&file).unwrap(), db_before);
}

#[test]
fn a_key_file_others_can_read_is_tightened_and_still_used() {
    let root = tempfile::tempdir().unwrap();
    let enc = MemoryEncryption {
        enabled: true,
        key_command: None,
    };
    let key = user_key(&enc, root.path(), &alice()).unwrap().unwrap().key;
    let path = memory_key_path(root.path(), &alice());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let again = stored_key(root.path(), &alice()).unwrap().unwrap();
    assert_eq!(again, key);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "a 0644 key file was left readable");
}

#[test]
fn a_planted_link_is_not_read_as_the_key() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join(".runner/alice");
    std::fs::create_dir_all(&dir).unwrap();
    let elsewhere = root.path().join("elsewhere");
    std::fs::write(&elsewhere, "cd".repeat(32)).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join(MEMORY_KEY_FILE)).unwrap();
    assert!(stored_key(root.path(), &alice()).is_err());
}

/// `runner start` encrypts an unencrypted database in place, as root: a link alice's agent
/// planted at her `.oxydra/memory.db` would have had bob's database encrypted with alice's key
/// (and bob locked out of it). It is refused, and bob's file is left as it was.
#[tokio::test]
async fn a_linked_database_is_never_encrypted_in_place() {
    let root = tempfile::tempdir().unwrap();
    let enc = MemoryEncryption {
        enabled: true,
        key_command: None,
    };
    let options = memory::OpenOptions {
        legacy_dir: memory::LegacyDir::Skip,
        ..memory::OpenOptions::default()
    };
    memory::MemoryStore::open(
        memory::Target::Config {
            config: &types::MemoryConfig::default(),
            user_root: &root.path().join("bob"),
        },
        options,
    )
    .await
    .unwrap()
    .close()
    .await;
    let bobs = root.path().join("bob/.oxydra/memory.db");
    assert!(is_plaintext_db(&bobs));
    let file = root.path().join("alice/.oxydra/memory.db");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&bobs, &file).unwrap();
    let before = std::fs::read(&bobs).unwrap();
    let place = MemoryPlace::Local(file);
    let err = key_for_agent(&enc, root.path(), &alice(), &place)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("is a link"), "{err}");
    assert_eq!(std::fs::read(&bobs).unwrap(), before);
}
