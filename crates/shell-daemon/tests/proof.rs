//! The daemon proves itself to the agent before the agent sends its secret, and the proof is for
//! the uid and pid the daemon sees: a listener put at the socket's path that relays the challenge
//! to the real daemon — of another uid, or of the agent's own — gets a proof the agent refuses,
//! so it never hears the secret.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed setup should fail the test"
)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{Daemon, shell_secret};
use test_support::Need;
use types::CancellationToken;

/// Nobody's uid: the relay's, which the daemon lets connect (as the shell's own commands can).
const NOBODY: u32 = 65534;

/// Passes each connection on to the daemon (argv 1), byte for byte both ways, listening on
/// argv 2 and appending what clients send to argv 3.
const RELAY: &str = r#"
import socket, sys, threading
daemon, listen, heard = sys.argv[1], sys.argv[2], sys.argv[3]
server = socket.socket(socket.AF_UNIX)
server.bind(listen)
server.listen(4)
def pump(src, dst, log):
    while True:
        data = src.recv(65536)
        if not data:
            break
        if log:
            with open(heard, "ab") as f:
                f.write(data)
        dst.sendall(data)
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass
while True:
    client, _ = server.accept()
    upstream = socket.socket(socket.AF_UNIX)
    upstream.connect(daemon)
    threading.Thread(target=pump, args=(client, upstream, True), daemon=True).start()
    threading.Thread(target=pump, args=(upstream, client, False), daemon=True).start()
"#;

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs landlock and root"]
async fn a_relay_of_another_uid_cannot_pass_the_daemons_proof_on() {
    test_support::need(Need::Landlock);
    test_support::need(Need::Root);
    let d = Daemon::start_with(|boot| boot.agent_uid = Some(NOBODY));
    for dir in [d.dir.path(), &d.ws.root, &d.ws.ipc()] {
        chmod(dir, 0o755);
    }
    chmod(&d.socket, 0o666);
    let relay_dir = tempfile::tempdir().unwrap();
    chmod(relay_dir.path(), 0o777);
    let relayed = relay_dir.path().join("shell.sock");
    let heard = relay_dir.path().join("heard");
    let mut relay = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(["/usr/bin/python3", "-c", RELAY])
        .arg(&d.socket)
        .arg(&relayed)
        .arg(&heard)
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !relayed.exists() {
        assert!(start.elapsed() < Duration::from_secs(10), "no relay");
        std::thread::sleep(Duration::from_millis(20));
    }
    let secret = shell_secret("alice");
    let cancel = CancellationToken::default();
    let timeout = Duration::from_secs(10);
    let through_relay =
        tools::run_command(&relayed, &secret, "touch relayed", timeout, &cancel).await;
    let direct = tools::run_command(&d.socket, &secret, "echo direct", timeout, &cancel).await;
    relay.kill().unwrap();
    relay.wait().unwrap();

    let refused = through_relay.unwrap_err().to_string();
    assert!(refused.contains(tools::NOT_THE_DAEMON), "{refused}");
    let heard = std::fs::read_to_string(&heard).unwrap();
    assert!(
        heard.contains("\"challenge\""),
        "the relay passed nothing on: {heard}"
    );
    assert!(
        !heard.contains(&secret),
        "the relay heard the secret: {heard}"
    );
    assert!(!d.ws.shared().join("relayed").exists());
    // The check can fail: straight to the daemon (this process's uid), its proof holds.
    assert_eq!(direct.unwrap().stdout, "direct\n");
}

/// With a runner not started as root the shell's commands share the agent's uid: a relay of
/// theirs gets a proof for that uid, but for its own pid, which the agent (in the daemon's pid
/// namespace, the process tier) refuses.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs landlock"]
async fn a_relay_of_the_same_uid_cannot_pass_the_daemons_proof_on() {
    test_support::need(Need::Landlock);
    let d = Daemon::start();
    let relay_dir = tempfile::tempdir().unwrap();
    let relayed = relay_dir.path().join("shell.sock");
    let heard = relay_dir.path().join("heard");
    let mut relay = std::process::Command::new("/usr/bin/python3")
        .args(["-c", RELAY])
        .arg(&d.socket)
        .arg(&relayed)
        .arg(&heard)
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !relayed.exists() {
        assert!(start.elapsed() < Duration::from_secs(10), "no relay");
        std::thread::sleep(Duration::from_millis(20));
    }
    let secret = shell_secret("alice");
    let cancel = CancellationToken::default();
    let timeout = Duration::from_secs(10);
    let through_relay =
        tools::run_command(&relayed, &secret, "touch relayed", timeout, &cancel).await;
    relay.kill().unwrap();
    relay.wait().unwrap();

    let refused = through_relay.unwrap_err().to_string();
    assert!(refused.contains(tools::NOT_THE_DAEMON), "{refused}");
    let heard = std::fs::read_to_string(&heard).unwrap();
    assert!(
        heard.contains("\"challenge\""),
        "the relay passed nothing on: {heard}"
    );
    assert!(
        !heard.contains(&secret),
        "the relay heard the secret: {heard}"
    );
    assert!(!d.ws.shared().join("relayed").exists());
}
