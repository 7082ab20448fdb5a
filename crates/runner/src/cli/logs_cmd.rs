//! `runner logs [--role R] [--follow]`: the users' `logs/<role>.log` files.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, bail};
use types::WorkspacePaths;

use crate::Global;
use crate::args::LogRole;
use crate::out::{say, tail};

pub async fn run(global: &Global, role: Option<LogRole>, follow: bool, lines: usize) -> Result<()> {
    let config = global.runner_config()?;
    let users = config.select(global.user.as_deref())?;
    let roles: Vec<LogRole> = role.map_or_else(|| LogRole::ALL.to_vec(), |r| vec![r]);
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for user in &users {
        let ws = WorkspacePaths::for_user(&config.workspace_root, &user.id);
        for r in &roles {
            let path = crate::guest::log_path(&ws, r.name());
            let label = if users.len() > 1 {
                format!("{}/{}", user.id, r.name())
            } else {
                r.name().to_owned()
            };
            files.push((label, path));
        }
    }
    if files.iter().all(|(_, p)| !p.exists()) && !follow {
        bail!(
            "no logs yet for {}; start the user first",
            users
                .iter()
                .map(|u| u.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut offsets = Vec::new();
    for (label, path) in &files {
        if path.exists() {
            if files.len() > 1 {
                say(format!("==> {label} ({}) <==", path.display()));
            }
            let text = tail(path, lines);
            if !text.is_empty() {
                say(text);
            }
        }
        offsets.push(std::fs::metadata(path).map_or(0, |m| m.len()));
    }
    if !follow {
        return Ok(());
    }
    loop {
        for ((label, path), offset) in files.iter().zip(offsets.iter_mut()) {
            let Some(mut file) = crate::out::open_log(path) else {
                continue;
            };
            let len = file.metadata().map_or(0, |m| m.len());
            if len < *offset {
                *offset = 0; // rotated or truncated
            }
            if len == *offset {
                continue;
            }
            file.seek(SeekFrom::Start(*offset))?;
            let mut buf = Vec::new();
            file.read_to_end(&mut buf)?;
            *offset += buf.len() as u64;
            for line in String::from_utf8_lossy(&buf).lines() {
                if files.len() > 1 {
                    say(format!("[{label}] {line}"));
                } else {
                    say(line);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
