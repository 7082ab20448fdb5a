//! What the CLI tells its user on stdout. Text that came from elsewhere (notes, audit fields a
//! caller chose, logs) goes through [`field`] or [`write_json`], which show control characters
//! as escapes ([`types::terminal`]) so it cannot drive the operator's terminal.

use std::borrow::Cow;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// `text` for a one-line listing: every control character as an escape, unless `raw`.
pub fn field(text: &str, raw: bool) -> Cow<'_, str> {
    match raw {
        true => Cow::Borrowed(text),
        false => types::terminal::escape_line(text),
    }
}

/// `value` as one line of JSON and a newline, with the characters a terminal could act on
/// that JSON leaves raw (C1, bidi controls) escaped: still valid JSON, the same value.
pub fn write_json(out: &mut impl Write, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let text = serde_json::to_string(value)?;
    writeln!(out, "{}", types::terminal::escape_json(&text))?;
    Ok(())
}

/// Prints `line` and a newline on stdout (a closed stdout is ignored: nothing else can be done),
/// control characters other than newlines and tabs as escapes: what it prints may quote a log,
/// a health file or a marker another process wrote.
pub fn say(line: impl AsRef<str>) {
    let text = types::terminal::escape_text(line.as_ref());
    let mut out = std::io::stdout().lock();
    if STAMPED.load(Ordering::Relaxed) {
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ");
        for line in text.lines() {
            let _ = writeln!(out, "{now}  {line}");
        }
    } else {
        let _ = writeln!(out, "{text}");
    }
    let _ = out.flush();
}

/// Whether [`say`] starts each line with the time (UTC, like the log's tracing lines).
static STAMPED: AtomicBool = AtomicBool::new(false);

/// From now on [`say`] writes for a log (`runner.log` of a background runner), not a person:
/// each line starts with the time.
pub fn stamp_lines() {
    STAMPED.store(true, Ordering::Relaxed);
}

/// `1h02m`, `3m05s`, `12s`.
pub fn duration(secs: i64) -> String {
    let secs = secs.max(0);
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}h{m:02}m")
    } else if m > 0 {
        format!("{m}m{s:02}s")
    } else {
        format!("{s}s")
    }
}

/// Seconds since an RFC 3339 time (0 when it does not parse).
pub fn age(rfc3339: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| (chrono::Utc::now() - t.with_timezone(&chrono::Utc)).num_seconds())
        .unwrap_or(0)
}

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A log in a user's workspace, opened as root: no link on the way is followed (the shell can
/// write `logs/`) and only a regular file is read.
pub fn open_log(path: &std::path::Path) -> Option<std::fs::File> {
    let policy = runner::TargetPolicy {
        allow_shell_writable: true,
        workspace_root: None,
    };
    runner::open_operator_file(path, &policy).ok()
}

/// The last `n` lines of a log (of its last MiB; empty when unreadable), opened with
/// [`open_log`].
pub fn tail(path: &std::path::Path, n: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let mut text = Vec::new();
    if let Some(mut file) = open_log(path) {
        let len = file.metadata().map_or(0, |m| m.len());
        if file
            .seek(SeekFrom::Start(len.saturating_sub(1 << 20)))
            .is_ok()
        {
            let _ = file.take(1 << 20).read_to_end(&mut text);
        }
    }
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The pause between two checks of something that is about to happen (a guest getting ready):
/// 5 ms at first, doubling up to 50 ms, so a quick start is seen within a few milliseconds and a
/// slow one costs few checks.
#[derive(Debug)]
pub struct Poll {
    next: std::time::Duration,
}

impl Poll {
    const FIRST: std::time::Duration = std::time::Duration::from_millis(5);
    const MAX: std::time::Duration = std::time::Duration::from_millis(50);

    pub fn new() -> Self {
        Self { next: Self::FIRST }
    }

    pub async fn pause(&mut self) {
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(Self::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_read_through_no_link_and_a_fifo_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir(&logs).unwrap();
        std::fs::write(dir.path().join("secret"), "outside\n").unwrap();
        std::fs::write(logs.join("a.log"), "one\ntwo\nthree\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), logs.join("b.log")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            logs.join("c.log").as_path(),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert_eq!(tail(&logs.join("a.log"), 2), "two\nthree");
        assert_eq!(tail(&logs.join("b.log"), 2), "");
        assert_eq!(tail(&logs.join("c.log"), 2), "");
    }
}
