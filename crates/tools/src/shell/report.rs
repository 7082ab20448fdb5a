//! The compact text the model gets back from `shell_exec`.

/// What came back from one command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellRun {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// Output was cut (by the daemon's cap or the client's).
    pub cut: bool,
    pub stdout: String,
    pub stderr: String,
}

/// `exit code N` (or how it was stopped), then stdout and stderr under headers, then a marker
/// when output was cut. `timeout_secs` is the timeout the command ran with.
pub fn render(run: &ShellRun, timeout_secs: u64) -> String {
    let mut text = match (run.timed_out, run.code, run.signal) {
        (true, _, _) => format!(
            "timed out after {timeout_secs} s; the command and everything it started were killed"
        ),
        (false, Some(code), _) => format!("exit code {code}"),
        (false, None, Some(signal)) => format!("killed by signal {signal}"),
        (false, None, None) => "finished (no exit status)".to_owned(),
    };
    text.push('\n');
    for (name, body) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        if !body.is_empty() {
            text.push_str(&format!("--- {name} ---\n{body}"));
            if !body.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    if run.stdout.is_empty() && run.stderr.is_empty() {
        text.push_str("(no output)\n");
    }
    if run.cut {
        text.push_str("[output truncated: redirect to a file in tmp/ and read parts of it]\n");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(run: ShellRun, expected: &str) {
        assert_eq!(render(&run, 5), expected);
    }

    #[test]
    fn reports() {
        check(
            ShellRun {
                code: Some(0),
                stdout: "hi\n".into(),
                ..ShellRun::default()
            },
            "exit code 0\n--- stdout ---\nhi\n",
        );
        check(
            ShellRun {
                code: Some(2),
                stderr: "no".into(),
                cut: true,
                ..ShellRun::default()
            },
            "exit code 2\n--- stderr ---\nno\n[output truncated: redirect to a file in tmp/ and read parts of it]\n",
        );
        check(
            ShellRun {
                signal: Some(9),
                timed_out: true,
                ..ShellRun::default()
            },
            "timed out after 5 s; the command and everything it started were killed\n(no output)\n",
        );
        check(
            ShellRun {
                signal: Some(15),
                ..ShellRun::default()
            },
            "killed by signal 15\n(no output)\n",
        );
    }
}
