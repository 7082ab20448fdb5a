//! What the CLI tells its user on stdout.

use std::io::Write;

/// Prints `line` and a newline on stdout (a closed stdout is ignored: nothing else can be done).
pub fn say(line: impl AsRef<str>) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", line.as_ref());
    let _ = out.flush();
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
