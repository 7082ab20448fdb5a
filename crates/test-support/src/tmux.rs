//! Drive a terminal program inside tmux: a tmux server of its own (its own socket), keys sent with
//! `send-keys`, screens read with `capture-pane`, killed when dropped.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One tmux server running one window, `tui`, sized `width`×`height`, running `command` (a shell
/// command line).
#[derive(Debug)]
pub struct Tmux {
    socket: String,
}

#[allow(
    clippy::expect_used,
    clippy::panic,
    reason = "a test fixture: failing loudly is what the test wants"
)]
impl Tmux {
    pub fn start(name: &str, width: u16, height: u16, command: &str) -> Self {
        // Unique per server: tests of one binary run in parallel and may use the same name.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmux = Self {
            socket: format!("{name}-{}-{n}", std::process::id()),
        };
        let (w, h) = (width.to_string(), height.to_string());
        tmux.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "tui",
            "-x",
            &w,
            "-y",
            &h,
            command,
        ]);
        tmux
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "tui"])
    }

    /// Types `text` literally, then Enter.
    pub fn type_line(&self, text: &str) {
        self.run(&["send-keys", "-t", "tui", "-l", text]);
        self.run(&["send-keys", "-t", "tui", "Enter"]);
    }

    /// Sends a key by tmux name (`C-t`, `Escape`, ...).
    pub fn key(&self, key: &str) {
        self.run(&["send-keys", "-t", "tui", key]);
    }

    /// Waits (up to 30 s) until the screen satisfies `ok`; fails with the last screen.
    pub async fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; the screen:\n{screen}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}
