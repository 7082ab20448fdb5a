//! A guest's log as the runner keeps it, `<workspace_root>/.runner/<user>/logs/<role>.log`
//! (outside the workspace: the shell writes `logs/`, so the runner never writes there), bounded on
//! disk: past [`ROTATE_BYTES`] it moves to `<role>.log.1` (replacing the previous one), so at most
//! two files of about that size are kept. Every open goes through [`runner::SafeDir`].
//!
//! A host process writes its log itself, through the file it inherited, so its log can only be
//! rotated when it (re)starts. A container's output is copied here by the runner, which rotates
//! while the container runs too: an agent that logs for months fills no disk.

use futures::{Stream, StreamExt};
use runner::SafeDir;
use tokio::io::AsyncWriteExt;

/// A log past this size is moved to `<role>.log.1`.
pub const ROTATE_BYTES: u64 = 10 * 1024 * 1024;

/// `<name>.1`, where a full log goes.
pub fn rotated(name: &str) -> String {
    format!("{name}.1")
}

/// Moves `name` to its rotated name when it is larger than `limit` bytes; true if it did.
pub fn rotate_if_large(dir: &SafeDir, name: &str, limit: u64) -> bool {
    dir.size_of(name).is_some_and(|len| len > limit) && dir.rename(name, &rotated(name)).is_ok()
}

/// Appends every chunk of `output` to `name` in `dir` until the stream ends (or fails), rotating
/// the file whenever it grows past `limit` bytes. Returns how many bytes were written.
pub async fn copy_rotating<S, E>(mut output: S, dir: &SafeDir, name: &str, limit: u64) -> u64
where
    S: Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    rotate_if_large(dir, name, limit);
    let Some((mut file, mut size)) = open_append(dir, name) else {
        return 0;
    };
    let mut written = 0;
    while let Some(chunk) = output.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => {
                tracing::debug!(log = name, "output stream ended: {e}");
                break;
            }
        };
        if size > 0 && size + chunk.len() as u64 > limit {
            let _ = file.flush().await;
            if rotate_if_large(dir, name, 0) {
                match open_append(dir, name) {
                    Some((f, s)) => (file, size) = (f, s),
                    None => return written,
                }
            }
        }
        if file.write_all(&chunk).await.is_err() {
            break;
        }
        size += chunk.len() as u64;
        written += chunk.len() as u64;
    }
    let _ = file.flush().await;
    written
}

/// `name` opened for appending (a regular file, never through a link), and its current size.
fn open_append(dir: &SafeDir, name: &str) -> Option<(tokio::fs::File, u64)> {
    match dir.open_append(name) {
        Ok(file) => {
            let size = file.metadata().map_or(0, |m| m.len());
            Some((tokio::fs::File::from_std(file), size))
        }
        Err(e) => {
            tracing::warn!("cannot open the log: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(parts: &[&'static str]) -> impl Stream<Item = Result<bytes::Bytes, String>> + Unpin {
        futures::stream::iter(
            parts
                .iter()
                .map(|p| Ok(bytes::Bytes::from_static(p.as_bytes())))
                .collect::<Vec<_>>(),
        )
    }

    fn open(dir: &tempfile::TempDir) -> SafeDir {
        SafeDir::open(dir.path(), std::path::Path::new("")).unwrap()
    }

    #[tokio::test]
    async fn output_is_appended_and_rotated_while_it_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = open(&tmp);
        let log = tmp.path().join("shell-vm.log");
        let name = "shell-vm.log";
        std::fs::write(&log, "earlier\n").unwrap();

        // Small: appended to what is there.
        let n = copy_rotating(chunks(&["one\n", "two\n"]), &dir, name, 100).await;
        assert_eq!(n, 8);
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "earlier\none\ntwo\n"
        );
        assert!(!tmp.path().join(rotated(name)).exists());

        // Past the limit while copying: the full file moves to .log.1, the copy goes on in a new
        // one, and nothing is lost between the two.
        let line = "0123456789abcdefghi\n"; // 20 bytes
        let n = copy_rotating(
            chunks(&[line, line, line, line, line, line]),
            &dir,
            name,
            50,
        )
        .await;
        assert_eq!(n, 120);
        let old = std::fs::read_to_string(tmp.path().join(rotated(name))).unwrap();
        let new = std::fs::read_to_string(&log).unwrap();
        // Three rotations in that copy (at 16 + 40, 40 + 20 and 40 + 20 bytes): the two files
        // hold the last three lines, in order; older ones went with the earlier .log.1 files.
        assert_eq!((old, new), (line.repeat(2), line.to_owned()));

        // Larger than the limit at the start: rotated before anything is added.
        std::fs::write(&log, "x".repeat(80)).unwrap();
        copy_rotating(chunks(&["fresh\n"]), &dir, name, 50).await;
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "fresh\n");
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(rotated(name))).unwrap(),
            "x".repeat(80)
        );
    }

    #[tokio::test]
    async fn a_failing_stream_keeps_what_came_before() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = open(&tmp);
        let log = tmp.path().join("oxydra-vm.log");
        let parts: Vec<Result<bytes::Bytes, String>> = vec![
            Ok(bytes::Bytes::from_static(b"ready\n")),
            Err("the engine went away".to_owned()),
            Ok(bytes::Bytes::from_static(b"never\n")),
        ];
        let n = copy_rotating(futures::stream::iter(parts), &dir, "oxydra-vm.log", 1000).await;
        assert_eq!(n, 6);
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "ready\n");
    }
}
