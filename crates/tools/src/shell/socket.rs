//! Connecting to the shell daemon's socket without following what the shell planted.
//!
//! `ipc/shell.sock` lives in a directory the shell writes: it can put a symlink there (to another
//! service's socket: Docker's, another user's shell) or a file. A more privileged process (the
//! agent, the runner's readiness probe) must never follow it. So the path is opened as itself
//! (`O_PATH | O_NOFOLLOW`: a symlink is opened as the link, never its target), checked to be a
//! socket, and connected through that very file (`/proc/self/fd/N`), so it cannot be swapped
//! between the check and the connection. A socket the shell bound itself is its own, and reaches
//! no more than the shell already has (it holds the secret; its output is untrusted text).

use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use rustix::fs::{self as rfs, FileType, Mode, OFlags};
use tokio::net::UnixStream;

/// Connects to the Unix socket at `path`, refusing a symlink or anything else in its place
/// (`ConnectionRefused`, so callers treat it as a shell that is not running).
pub async fn connect_unfollowed(path: &Path) -> io::Result<UnixStream> {
    let file = rfs::open(
        path,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let kind = FileType::from_raw_mode(rfs::fstat(&file)?.st_mode);
    if kind != FileType::Socket {
        return Err(io::Error::new(
            io::ErrorKind::ConnectionRefused,
            format!(
                "{} is not a socket (a {kind:?} is in its place)",
                path.display()
            ),
        ));
    }
    match UnixStream::connect(format!("/proc/self/fd/{}", file.as_raw_fd())).await {
        // Without /proc the socket is connected by its path, just checked.
        Err(e) if e.kind() == io::ErrorKind::NotFound && !Path::new("/proc/self/fd").exists() => {
            UnixStream::connect(path).await
        }
        other => other,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::UnixListener;

    use super::*;

    #[tokio::test]
    async fn a_socket_is_connected_and_a_planted_link_or_file_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.sock");
        let listener = UnixListener::bind(&real).unwrap();
        let mut client = connect_unfollowed(&real).await.unwrap();
        let (mut served, _) = listener.accept().await.unwrap();
        client.write_all(b"hi").await.unwrap();
        let mut got = [0u8; 2];
        served.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"hi");

        // A symlink to a live socket (another service's, as the shell would plant it).
        let link = dir.path().join("shell.sock");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let refused = connect_unfollowed(&link).await.unwrap_err();
        assert_eq!(
            refused.kind(),
            io::ErrorKind::ConnectionRefused,
            "{refused}"
        );
        assert!(
            UnixStream::connect(&link).await.is_ok(),
            "the link itself leads to a socket"
        );

        let file = dir.path().join("file.sock");
        std::fs::write(&file, "not a socket").unwrap();
        let refused = connect_unfollowed(&file).await.unwrap_err();
        assert_eq!(
            refused.kind(),
            io::ErrorKind::ConnectionRefused,
            "{refused}"
        );
        let missing = connect_unfollowed(&dir.path().join("none.sock")).await;
        assert_eq!(missing.unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
