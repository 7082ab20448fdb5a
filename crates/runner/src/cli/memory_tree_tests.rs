//! `export-tree` and `import-tree` against a shell that races them: a thread flips names in the
//! target between a file (or directory) and a link to something outside it, in a loop, while the
//! operator's command runs. Nothing outside the target is ever written or read.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use memory::HashEmbedder;

use super::*;

const SECRET: &str = "root:$6$secret-hash-outside-the-workspace";

/// A store with two files, a target directory and, outside it, a secret file and a directory.
struct Race {
    dir: tempfile::TempDir,
    store: MemoryStore,
    user: UserId,
}

impl Race {
    async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = MemoryStore::open(
            memory::Target::File(&dir.path().join("db/memory.db")),
            memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(64))),
        )
        .await
        .unwrap();
        let user = UserId::parse("alice").unwrap();
        for (path, text) in [
            ("/memories/notes.md", "* * * * * root sh -c 'model text'\n"),
            ("/memories/projects/plan.md", "the plan"),
        ] {
            store
                .files()
                .put_file(&user, path, text, PathExpect::Absent, None, None)
                .await
                .unwrap();
        }
        std::fs::create_dir_all(dir.path().join("outside/dir")).unwrap();
        std::fs::write(dir.path().join("outside/shadow"), SECRET).unwrap();
        Self { dir, store, user }
    }
    fn target(&self) -> PathBuf {
        self.dir.path().join("shared/tree")
    }
    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }
    /// Everything below `outside/` still as it was: the secret, an empty directory.
    fn assert_outside_untouched(&self) {
        assert_eq!(
            std::fs::read_to_string(self.outside().join("shadow")).unwrap(),
            SECRET
        );
        let planted: Vec<_> = std::fs::read_dir(self.outside().join("dir"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            planted.is_empty(),
            "written outside the target: {planted:?}"
        );
    }
}

/// Flips `name` in `dir` between what `real` makes and a link to `link_to` until `stop`; each
/// is made aside and renamed over the name, so the name is nearly always there.
fn flipper(
    dir: PathBuf,
    name: &'static str,
    link_to: PathBuf,
    real: fn(&Path),
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let at = dir.join(name);
        // Made next to the target, not in it, so that only `name` flips inside.
        let stage = dir.with_file_name(format!("stage-{name}"));
        let _ = std::fs::create_dir_all(&stage);
        let (link, made) = (stage.join("link"), stage.join("real"));
        while !stop.load(Ordering::Relaxed) {
            let _ = symlink(&link_to, &link);
            if std::fs::rename(&link, &at).is_err() {
                // A directory is there: take it away first.
                let _ = std::fs::remove_dir_all(&at);
                let _ = std::fs::rename(&link, &at);
            }
            let _ = std::fs::remove_dir_all(&made);
            real(&made);
            if std::fs::rename(&made, &at).is_err() {
                let _ = std::fs::remove_file(&at);
                let _ = std::fs::rename(&made, &at);
            }
        }
    })
}

fn make_file(at: &Path) {
    let _ = std::fs::write(at, "an honest file\n");
}

fn make_dir(at: &Path) {
    let _ = std::fs::create_dir(at);
    let _ = std::fs::write(at.join("inner.md"), "inner\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_racing_link_flipper_never_makes_export_write_outside() {
    let race = Race::new().await;
    let mut exported = 0;
    for _ in 0..200 {
        let target = race.target();
        let _ = std::fs::remove_dir_all(&target);
        std::fs::create_dir_all(&target).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let outside_dir = race.outside().join("dir");
        let threads = [
            flipper(
                target.clone(),
                "projects",
                outside_dir.clone(),
                |at| {
                    let _ = std::fs::create_dir(at);
                },
                stop.clone(),
            ),
            flipper(
                target.clone(),
                "notes.md",
                outside_dir.join("notes.md"),
                |_| {},
                stop.clone(),
            ),
        ];
        exported += usize::from(export_to(&race, &target).await.is_ok());
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().unwrap();
        }
        race.assert_outside_untouched();
    }
    eprintln!("{exported} of 200 exports got through the race");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_racing_link_flipper_never_makes_import_read_outside() {
    let race = Race::new().await;
    let target = race.target();
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join("kept.md"), "kept\n").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let threads = [
        flipper(
            target.clone(),
            "a.md",
            race.outside().join("shadow"),
            make_file,
            stop.clone(),
        ),
        flipper(
            target.clone(),
            "sub",
            race.outside(),
            make_dir,
            stop.clone(),
        ),
    ];
    let mut imported = 0;
    for _ in 0..3000 {
        if let Ok(files) = read_from(&target) {
            imported += 1;
            for (path, text) in &files {
                assert!(
                    !text.contains("secret-hash"),
                    "{path} read from outside: {text}"
                );
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    eprintln!("{imported} of 3000 imports got through the race");
    assert!(imported > 0, "no import got through the race at all");
    race.assert_outside_untouched();
}

/// The target lies in the shell's `shared/`-like area: the operator insisted.
fn insisting() -> runner::TargetPolicy {
    runner::TargetPolicy {
        allow_shell_writable: true,
        workspace_root: None,
    }
}

async fn export_to(race: &Race, target: &Path) -> Result<usize> {
    let dir = runner::open_operator_dir(target, runner::Want::NewOrEmpty, &insisting())?;
    export(&race.store, &race.user, &dir).await
}

fn read_from(target: &Path) -> Result<Vec<(String, String)>> {
    let dir = runner::open_operator_dir(target, runner::Want::Existing, &insisting())?;
    read_tree(&dir)
}
