//! A user's memory key and their whole memory: `runner memory rekey` (a new key, encrypting an
//! unencrypted file, or decrypting when encryption was turned off) and `runner forget` (the key
//! and the database destroyed; rows dropped on a remote server; the guests' logs removed, as they
//! may quote what was said and saved). Both refuse while the user's agent runs.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use memory::{EncryptionKey, MemoryStore, OpenOptions};
use runner::{MemoryEncryption, MemoryPlace};
use types::{UserId, WorkspacePaths};

use crate::Global;
use crate::out::say;

/// Refuses when a runner serves `user` (their guests hold the database open).
fn refuse_while_running(user: &UserId, ws: &WorkspacePaths, what: &str) -> Result<()> {
    if let Some(running) = crate::running::running(ws) {
        bail!(
            "{user}'s agent is running (runner pid {}): stop it first (`runner --user {user} \
             stop`), then {what}",
            running.pid
        );
    }
    Ok(())
}

/// `runner memory rekey`.
pub async fn rekey(
    enc: &MemoryEncryption,
    root: &Path,
    user: &UserId,
    ws: &WorkspacePaths,
    place: &MemoryPlace,
) -> Result<()> {
    refuse_while_running(user, ws, "re-key its memory")?;
    let file = match place {
        MemoryPlace::Disabled => bail!("memory is disabled in the agent config: nothing to re-key"),
        MemoryPlace::Server => bail!(
            "{user}'s memory is on a remote server, which keeps its own storage: the runner has \
             no key for it"
        ),
        MemoryPlace::Replica(file) => return rekey_replica(enc, root, user, file),
        MemoryPlace::Local(file) => file,
    };
    let current = match runner::is_plaintext_db(file) {
        true => None,
        false if !file.exists() => None,
        false => Some(current_key(enc, root, user)?),
    };
    let next = match (enc.enabled, &enc.key_command, &current) {
        (false, _, None) => {
            say(format!(
                "{user}: memory encryption is off and the file is not encrypted: nothing to do"
            ));
            return Ok(());
        }
        (false, _, Some(_)) => None,
        (true, Some(_), Some(_)) => bail!(
            "{user}'s key comes from [memory_encryption] key_command: to change it, make the \
             command print the new key and re-key from a plaintext file (turn encryption off, \
             `runner memory rekey`, turn it on again, start)"
        ),
        (true, Some(_), None) => runner::user_key(enc, root, user)?.map(|k| k.key),
        (true, None, _) => Some(runner::new_key()?),
    };
    if !file.exists() {
        if let Some(key) = &next
            && enc.key_command.is_none()
        {
            runner::store_key(root, user, key)?;
        }
        say(format!(
            "{user}: no memory database yet; it will be created encrypted with the new key"
        ));
        return Ok(());
    }
    // The new key is kept beside the old one until the file uses it: an interruption leaves
    // the file readable with one of the two.
    if let (Some(key), None) = (&next, &enc.key_command) {
        store_next_key(root, user, key)?;
    }
    memory::change_key(file, current.as_ref(), next.as_ref())
        .await
        .context("cannot re-key the memory database (it is unchanged)")?;
    match (&next, &enc.key_command) {
        (Some(_), None) => promote_next_key(root, user)?,
        (None, _) => {
            runner::destroy_key(root, user)?;
        }
        (Some(_), Some(_)) => {}
    }
    let what = match (&current, &next) {
        (None, Some(_)) => "encrypted at rest",
        (Some(_), Some(_)) => "re-keyed with a new key",
        _ => "decrypted (stored unencrypted; the key file was removed)",
    };
    say(format!("{user}: memory database {what}"));
    Ok(())
}

/// A replica file is a copy of the server's database: the next start syncs a new one, encrypted
/// with the current key (or not, when encryption is off).
fn rekey_replica(enc: &MemoryEncryption, root: &Path, user: &UserId, file: &Path) -> Result<()> {
    runner::remove_database_files(root, file)?;
    if enc.enabled && enc.key_command.is_none() {
        runner::store_key(root, user, &runner::new_key()?)?;
    }
    say(format!(
        "{user}: the replica file was removed; the next start syncs it again from the \
         server{}",
        if enc.enabled {
            ", encrypted with the new key"
        } else {
            ", unencrypted"
        }
    ));
    Ok(())
}

fn current_key(enc: &MemoryEncryption, root: &Path, user: &UserId) -> Result<EncryptionKey> {
    let key = match &enc.key_command {
        Some(_) => runner::user_key(enc, root, user)?.map(|k| k.key),
        None => runner::stored_key(root, user)?,
    };
    key.with_context(|| {
        format!(
            "{user}'s memory database is encrypted but its key file {} is missing",
            runner::memory_key_path(root, user).display()
        )
    })
}

const NEXT_KEY_FILE: &str = "memory.key.next";

fn store_next_key(root: &Path, user: &UserId, key: &EncryptionKey) -> Result<()> {
    let dir = runner::SafeDir::create(
        root,
        &Path::new(runner::RUNNER_DIR).join(user.as_str()),
        0o700,
    )?;
    dir.write_private(NEXT_KEY_FILE, format!("{}\n", key.expose()).as_bytes())?;
    Ok(())
}

fn promote_next_key(root: &Path, user: &UserId) -> Result<()> {
    let dir = runner::SafeDir::open(root, &Path::new(runner::RUNNER_DIR).join(user.as_str()))?;
    dir.rename(NEXT_KEY_FILE, runner::MEMORY_KEY_FILE)?;
    Ok(())
}

/// `runner forget --user U [--yes]`.
pub async fn forget(global: &Global, yes: bool) -> Result<()> {
    let Some(name) = global.user.as_deref() else {
        bail!("whom to forget? pass --user NAME");
    };
    let config = global.runner_config()?;
    let entry = config.select(Some(name))?.remove(0);
    let user = entry.id.clone();
    let root = &config.workspace_root;
    let ws = WorkspacePaths::for_user(root, &user);
    refuse_while_running(&user, &ws, "forget them")?;
    let mut agent = runner::load_agent_config(entry.agent_config.as_deref())?;
    let place = MemoryPlace::of(&agent, &ws);
    let key_file = runner::memory_key_path(root, &user);
    let mut doomed = Vec::new();
    if key_file.exists() {
        doomed.push(format!("the memory key {}", key_file.display()));
    }
    match &place {
        MemoryPlace::Local(file) | MemoryPlace::Replica(file) if file.exists() => {
            doomed.push(format!("the memory database {}", file.display()));
        }
        _ => {}
    }
    if agent.memory.remote_url.is_some() {
        doomed.push("every table of the user's database on the memory server".to_owned());
    }
    let logs = log_files(&ws);
    if !logs.is_empty() {
        doomed.push(format!(
            "the guests' logs ({} files in {} and {})",
            logs.len(),
            runner::runner_logs(&ws).display(),
            ws.logs().display()
        ));
    }
    if doomed.is_empty() {
        say(format!("{user}: no memory key or database to destroy"));
    } else {
        say(format!("This destroys, for good, {user}'s:"));
        for line in &doomed {
            say(format!("  - {line}"));
        }
        if !yes && !confirmed(&user)? {
            bail!("not confirmed: nothing was destroyed");
        }
        // Crypto-erase first: once the key is gone, an encrypted file is noise even if removing
        // it fails below.
        runner::destroy_key(root, &user)?;
        if let MemoryPlace::Local(file) | MemoryPlace::Replica(file) = &place {
            runner::remove_database_files(root, file)?;
        }
        if agent.memory.remote_url.is_some() {
            agent.memory.replica = false;
            let store = MemoryStore::open(
                memory::Target::Config {
                    config: &agent.memory,
                    user_root: &ws.root,
                },
                OpenOptions::default(),
            )
            .await
            .context("cannot open the memory server to erase it")?;
            let erased = store.upkeep().erase_database(&user).await?;
            say(format!(
                "{user}: dropped {} tables ({} rows) on the memory server",
                erased.tables, erased.rows
            ));
        }
        for file in &logs {
            if let Err(e) = runner::remove_beneath(root, file) {
                say(format!("  could not remove {}: {e}", file.display()));
            }
        }
        // A later memory command says so instead of making a new, empty store.
        runner::mark_forgotten(root, &user)?;
        say(format!("{user}: memory forgotten"));
    }
    if runner::runs_as_root() && runner::release_identity(root, &user)? {
        say(format!(
            "{user}: guest uids released (what is left of the workspace now belongs to root)"
        ));
    }
    tell_what_remains(&ws, &user, &config.path);
    Ok(())
}

/// What `forget` leaves, for the operator to remove if it should go too.
fn tell_what_remains(ws: &WorkspacePaths, user: &UserId, runner_toml: &Path) {
    say("What remains (remove it yourself if it should go too):");
    for (what, path) in [
        ("the user's files", ws.shared()),
        ("the user's credentials", ws.vault()),
        ("the agent's settings and gateway token", ws.internal()),
    ] {
        if path.exists() {
            say(format!("  - {what}: {}", path.display()));
        }
    }
    for file in log_files(ws) {
        say(format!("  - a log file not removed: {}", file.display()));
    }
    say(format!(
        "  - [users.{user}] in {} (the next start creates a new, empty memory)",
        runner_toml.display()
    ));
}

/// The files of the user's logs: the runner's copies of the guests' output
/// (`.runner/<user>/logs/`) and the workspace's `logs/`. Removal goes through
/// [`runner::remove_beneath`], so a link planted for `logs/` is never followed.
fn log_files(ws: &WorkspacePaths) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in [runner::runner_logs(ws), ws.logs()] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| !t.is_dir()) {
                files.push(dir.join(entry.file_name()));
            }
        }
    }
    files.sort();
    files
}

/// Asks for the user id on stdin; anything else is a no.
fn confirmed(user: &UserId) -> Result<bool> {
    let mut out = std::io::stderr().lock();
    write!(out, "Type the user id ({user}) to confirm: ")?;
    out.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim() == user.as_str())
}
