//! A guest's log, `logs/<role>.log`, bounded on disk: past [`ROTATE_BYTES`] it moves to
//! `<role>.log.1` (replacing the previous one), so at most two files of about that size are kept.
//!
//! A host process writes its log itself, through the file it inherited, so its log can only be
//! rotated when it (re)starts. A container's output is copied here by the runner, which rotates
//! while the container runs too: an agent that logs for months fills no disk.

use std::path::{Path, PathBuf};

use futures::{Stream, StreamExt};
use tokio::io::AsyncWriteExt;

/// A log past this size is moved to `<role>.log.1`.
pub const ROTATE_BYTES: u64 = 10 * 1024 * 1024;

/// `<role>.log.1`, where a full `<role>.log` goes.
pub fn rotated(path: &Path) -> PathBuf {
    path.with_extension("log.1")
}

/// Moves `path` to its rotated name when it is larger than `limit` bytes; true if it did.
pub fn rotate_if_large(path: &Path, limit: u64) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() > limit)
        && std::fs::rename(path, rotated(path)).is_ok()
}

/// Appends every chunk of `output` to `path` until the stream ends (or fails), rotating the file
/// whenever it grows past `limit` bytes. Returns how many bytes were written.
pub async fn copy_rotating<S, E>(mut output: S, path: &Path, limit: u64) -> u64
where
    S: Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    rotate_if_large(path, limit);
    let Some((mut file, mut size)) = open_append(path).await else {
        return 0;
    };
    let mut written = 0;
    while let Some(chunk) = output.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => {
                tracing::debug!(log = %path.display(), "output stream ended: {e}");
                break;
            }
        };
        if size > 0 && size + chunk.len() as u64 > limit {
            let _ = file.flush().await;
            if rotate_if_large(path, 0) {
                match open_append(path).await {
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

/// `path` opened for appending, and its current size.
async fn open_append(path: &Path) -> Option<(tokio::fs::File, u64)> {
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await;
    match file {
        Ok(file) => {
            let size = file.metadata().await.map_or(0, |m| m.len());
            Some((file, size))
        }
        Err(e) => {
            tracing::warn!(log = %path.display(), "cannot open the log: {e}");
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

    #[tokio::test]
    async fn output_is_appended_and_rotated_while_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("shell-vm.log");
        std::fs::write(&log, "earlier\n").unwrap();

        // Small: appended to what is there.
        let n = copy_rotating(chunks(&["one\n", "two\n"]), &log, 100).await;
        assert_eq!(n, 8);
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "earlier\none\ntwo\n"
        );
        assert!(!rotated(&log).exists());

        // Past the limit while copying: the full file moves to .log.1, the copy goes on in a new
        // one, and nothing is lost between the two.
        let line = "0123456789abcdefghi\n"; // 20 bytes
        let n = copy_rotating(chunks(&[line, line, line, line, line, line]), &log, 50).await;
        assert_eq!(n, 120);
        let old = std::fs::read_to_string(rotated(&log)).unwrap();
        let new = std::fs::read_to_string(&log).unwrap();
        // Three rotations in that copy (at 16 + 40, 40 + 20 and 40 + 20 bytes): the two files
        // hold the last three lines, in order; older ones went with the earlier .log.1 files.
        assert_eq!((old, new), (line.repeat(2), line.to_owned()));

        // Larger than the limit at the start: rotated before anything is added.
        std::fs::write(&log, "x".repeat(80)).unwrap();
        copy_rotating(chunks(&["fresh\n"]), &log, 50).await;
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "fresh\n");
        assert_eq!(
            std::fs::read_to_string(rotated(&log)).unwrap(),
            "x".repeat(80)
        );
    }

    #[tokio::test]
    async fn a_failing_stream_keeps_what_came_before() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("oxydra-vm.log");
        let parts: Vec<Result<bytes::Bytes, String>> = vec![
            Ok(bytes::Bytes::from_static(b"ready\n")),
            Err("the engine went away".to_owned()),
            Ok(bytes::Bytes::from_static(b"never\n")),
        ];
        let n = copy_rotating(futures::stream::iter(parts), &log, 1000).await;
        assert_eq!(n, 6);
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "ready\n");
    }
}
