//! The real `shell-vm` binary over its real socket: output, exit codes, timeouts that kill whole
//! process groups, caps, concurrency, environment, socket hygiene, and the Landlock sandbox.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed setup should fail the test"
)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use common::{DAEMON_SECRET, Daemon, MEMORY_DB, Run, VAULT_KEY, assert_group_gone};
use types::ShellResponse;

fn exit(code: Option<i32>, signal: Option<i32>, timed_out: bool, truncated: bool) -> ShellResponse {
    ShellResponse::Exit {
        id: 1,
        code,
        signal,
        timed_out,
        truncated,
    }
}

fn check(d: &Daemon, command: &str, stdout: &str, stderr: &str, code: i32) {
    let run = d.run(command);
    assert_eq!(
        run,
        Run {
            stdout: stdout.into(),
            stderr: stderr.into(),
            last: Some(exit(Some(code), None, false, false)),
        },
        "{command}"
    );
}

#[test]
#[ignore = "needs landlock"]
fn output_exit_codes_and_stderr() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start();
    check(&d, "echo hi", "hi\n", "", 0);
    check(&d, "exit 3", "", "", 3);
    check(&d, "echo oops >&2; false", "", "oops\n", 1);
    check(&d, "printf 'é\\n'", "é\n", "", 0);
    check(&d, "pwd", &format!("{}\n", d.ws.shared().display()), "", 0);
    let killed = d.run("kill -9 $$");
    assert_eq!(killed.last, Some(exit(None, Some(9), false, false)));
}

#[test]
#[ignore = "needs landlock"]
fn a_timeout_kills_the_whole_process_group() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start();
    let mut client = d.connect();
    client.send(1, "echo $$; sleep 100 & sleep 100", Some(500));
    let run = client.collect(1);
    assert_eq!(run.last, Some(exit(None, Some(9), true, false)), "{run:?}");
    let pgid: i32 = run.stdout.trim().parse().unwrap();
    assert_group_gone(pgid);
}

#[test]
#[ignore = "needs landlock"]
fn background_processes_die_with_their_shell() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start();
    let run = d.run("echo $$; sleep 100 > /dev/null 2>&1 &");
    assert_eq!(run.last, Some(exit(Some(0), None, false, false)));
    assert_group_gone(run.stdout.trim().parse().unwrap());
}

#[test]
#[ignore = "needs landlock"]
fn hanging_up_kills_the_command() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start();
    let mut client = d.connect();
    client.send(1, "echo $$; sleep 100 & sleep 100", None);
    let Some(ShellResponse::Stdout { data, .. }) = client.next() else {
        panic!("no pid");
    };
    let pgid: i32 = data.trim().parse().unwrap();
    assert!(!common::live_group_members(pgid).is_empty());
    drop(client);
    assert_group_gone(pgid);
}

#[test]
#[ignore = "needs landlock"]
fn output_beyond_the_cap_is_dropped_and_flagged() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start_with(|b| b.max_output_bytes = 4096);
    let run = d.run("head -c 100000 /dev/zero | tr '\\0' a; echo done >&2");
    assert_eq!(run.last, Some(exit(Some(0), None, false, true)));
    assert_eq!(run.stdout.len() + run.stderr.len(), 4096);
    assert!(run.stdout.bytes().all(|b| b == b'a'));
}

#[test]
#[ignore = "needs landlock"]
fn commands_run_concurrently() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start();
    let mut client = d.connect();
    // The first waits for a file only the second creates: run one at a time, it would time out.
    client.send(
        1,
        "while [ ! -e go ]; do sleep 0.05; done; echo first",
        Some(20_000),
    );
    client.send(2, "sleep 0.2; touch go; echo second", None);
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match client.next().unwrap() {
            ShellResponse::Exit {
                id,
                code,
                timed_out,
                ..
            } => {
                assert_eq!((code, timed_out), (Some(0), false), "request {id}");
                seen.push(id);
            }
            ShellResponse::Error { message, .. } => panic!("{message}"),
            _ => {}
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, [1, 2]);
}

#[test]
#[ignore = "needs landlock"]
fn commands_see_no_secret_from_the_daemons_environment() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start();
    let run = d.run("env");
    assert_eq!(run.code(), Some(0), "{run:?}");
    assert!(!run.stdout.contains(DAEMON_SECRET), "{}", run.stdout);
    assert!(!run.stdout.contains("OPENAI_API_KEY"), "{}", run.stdout);
    let env = d.run("env | sort | cut -d= -f1 | tr '\\n' ' '");
    assert_eq!(env.stdout, "HOME LANG PATH PWD TERM TMPDIR ");
    check(
        &d,
        "echo $HOME",
        &format!("{}\n", d.ws.shared().display()),
        "",
        0,
    );
}

#[test]
#[ignore = "needs landlock"]
fn the_shell_never_sees_internal_files_or_the_vault() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start();
    for command in [
        "cat ../.oxydra/memory.db",
        "head -c 16 ../.oxydra/memory.db",
        "cp ../.oxydra/memory.db x",
        "ls ../.oxydra",
        "ls ..",
        "ls ../vault",
        "cat ../vault/key",
        "cat ../../bob/shared/x; ls ../../bob/shared",
        "echo planted > ../.oxydra/x",
        "echo x > /tmp/escape-from-shell-vm",
        "cat /proc/$PPID/environ",
        "cat /proc/1/environ",
        "ls /proc",
    ] {
        let run = d.run(command);
        assert!(
            run.code() != Some(0) && run.stderr.contains("Permission denied"),
            "`{command}` should be denied: {run:?}"
        );
        assert!(!run.stdout.contains(MEMORY_DB) && !run.stdout.contains(VAULT_KEY));
    }
    assert!(!d.ws.shared().join("x").exists());
    check(
        &d,
        "echo hi > out.txt && cat ../shared/out.txt",
        "hi\n",
        "",
        0,
    );
    check(
        &d,
        "echo scratch > ../tmp/s && cat $TMPDIR/s",
        "scratch\n",
        "",
        0,
    );
    assert_eq!(
        std::fs::read_to_string(d.ws.shared().join("out.txt")).unwrap(),
        "hi\n"
    );
}

#[test]
#[ignore = "needs landlock"]
fn the_socket_is_private_and_bad_requests_get_errors() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start();
    let mode = std::fs::metadata(&d.socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let mut client = d.connect();
    client.send_raw("not json\n");
    assert!(matches!(
        client.next(),
        Some(ShellResponse::Error { id: None, .. })
    ));
    client.send(7, "echo still here", Some(0));
    assert!(matches!(
        client.next(),
        Some(ShellResponse::Error { id: Some(7), .. })
    ));
    client.send(8, "echo still here", None);
    assert_eq!(client.collect(8).stdout, "still here\n");
}

#[test]
#[ignore = "needs landlock"]
fn a_stale_socket_is_replaced_but_nothing_else_is() {
    test_support::need(test_support::Need::Landlock);
    let dir = tempfile::tempdir().unwrap();
    let ws = common::provision(dir.path(), "alice");
    let socket = types::shell_socket_path(&ws);
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let boot = common::bootstrap(dir.path(), "alice");
    let bootstrap = dir.path().join("boot.json");
    std::fs::write(&bootstrap, serde_json::to_string(&boot).unwrap()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_shell-vm"))
        .arg("--bootstrap")
        .arg(&bootstrap)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(start.elapsed().as_secs() < 20, "stale socket not replaced");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    std::fs::remove_file(&socket).ok();
    std::fs::write(&socket, "not a socket").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_shell-vm"))
        .arg("--bootstrap")
        .arg(&bootstrap)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a socket"));
    assert_eq!(std::fs::read_to_string(&socket).unwrap(), "not a socket");
}

#[test]
fn a_bad_bootstrap_is_refused() {
    for (boot, expected) in [
        ("{", "not valid JSON"),
        (
            r#"{"user_id":"../x","workspace_root":"/tmp"}"#,
            "not valid JSON",
        ),
        (r#"{"user_id":"alice","workspace_root":"rel"}"#, "absolute"),
        (
            r#"{"user_id":"nobody","workspace_root":"/nonexistent-oxydra"}"#,
            "secret_sha256 is missing",
        ),
        (
            &format!(
                r#"{{"user_id":"nobody","workspace_root":"/nonexistent-oxydra","secret_sha256":"{}"}}"#,
                common::verifier("nobody")
            ),
            "proof_key is missing",
        ),
        (
            &format!(
                r#"{{"user_id":"nobody","workspace_root":"/nonexistent-oxydra","secret_sha256":"{}","proof_key":"{}"}}"#,
                common::verifier("nobody"),
                tools::proof_key_of(&common::shell_secret("nobody")).0
            ),
            "provision",
        ),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_shell-vm"))
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(boot.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{boot}");
        assert!(stderr.contains(expected), "{boot}: {stderr}");
    }
}

/// Sends `first` as a connection's first line, then a command that would leave a mark; the
/// daemon must answer with one `error` (no id), close, and run nothing.
fn check_refused(d: &Daemon, first: &str) {
    let marker = d.ws.shared().join("ran");
    let mut client = d.connect_unauthenticated();
    // One write: the daemon closes the connection once it refuses the first line, and a second
    // write could then meet a closed socket.
    let request = types::ShellRequest {
        id: 1,
        command: format!("touch {}", marker.display()),
        timeout_ms: None,
        stdin: None,
    };
    client.send_raw(&format!("{first}{}", types::encode_line(&request).unwrap()));
    let frame = client.next();
    assert!(
        matches!(&frame, Some(ShellResponse::Error { id: None, message }) if message.contains("not authenticated")),
        "{first}: {frame:?}"
    );
    assert_eq!(client.next(), None, "{first}: the connection stays open");
    assert!(!marker.exists(), "{first}: the command ran");
}

#[test]
#[ignore = "needs landlock"]
fn a_connection_without_this_users_secret_runs_nothing() {
    test_support::need(test_support::Need::Landlock);
    let d = Daemon::start();
    let auth = |secret: &str| {
        types::encode_line(&types::ShellAuth {
            auth: secret.into(),
        })
        .unwrap()
    };
    check_refused(&d, &auth(&common::shell_secret("bob")));
    check_refused(&d, &auth(""));
    check_refused(&d, &auth(&common::verifier("alice")));
    check_refused(&d, "{\"id\":9,\"command\":\"true\"}\n");
    check_refused(&d, "\n");
    // The right secret still works after the refusals.
    assert_eq!(d.run("echo in").stdout, "in\n");
}
