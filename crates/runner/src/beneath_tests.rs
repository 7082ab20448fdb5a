//! What a planted link, hard link, FIFO or swapped directory does to [`SafeDir`]: nothing outside
//! the directory changes and nothing blocks.

use super::*;
use std::os::unix::fs::symlink;

/// A workspace-like root with `ipc/`, and a sentinel file outside it.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("root/ipc")).unwrap();
        std::fs::write(dir.path().join("sentinel"), "untouched").unwrap();
        Self { dir }
    }
    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }
    fn ipc(&self) -> PathBuf {
        self.root().join("ipc")
    }
    fn sentinel(&self) -> PathBuf {
        self.dir.path().join("sentinel")
    }
    fn sentinel_text(&self) -> String {
        std::fs::read_to_string(self.sentinel()).unwrap()
    }
}

#[test]
fn atomic_writes_replace_planted_links_and_never_write_through_them() {
    let f = Fixture::new();
    // A symlink and a hard link at the final name; a FIFO at the old fixed temporary name.
    symlink(f.sentinel(), f.ipc().join("a.json")).unwrap();
    std::fs::hard_link(f.sentinel(), f.ipc().join("b.json")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        f.ipc().join("c.json.tmp").as_path(),
        FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let dir = SafeDir::open(&f.root(), Path::new("ipc")).unwrap();
    for name in ["a.json", "b.json", "c.json"] {
        dir.write_atomic(name, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(f.ipc().join(name)).unwrap(), "{}");
    }
    assert_eq!(f.sentinel_text(), "untouched");
    // The rename replaced the links themselves; no temporary file is left behind.
    let meta = std::fs::symlink_metadata(f.ipc().join("a.json")).unwrap();
    assert!(meta.file_type().is_file());
    let mut names: Vec<String> = std::fs::read_dir(f.ipc())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.json", "b.json", "c.json", "c.json.tmp"]);
}

#[test]
fn a_directory_swapped_for_a_link_is_refused() {
    let f = Fixture::new();
    let outside = f.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::remove_dir(f.ipc()).unwrap();
    symlink(&outside, f.ipc()).unwrap();
    assert!(SafeDir::open(&f.root(), Path::new("ipc")).is_err());
    assert!(SafeDir::create(&f.root(), Path::new("ipc/deeper"), 0o700).is_err());
    assert!(write_beneath(&f.root(), &f.ipc().join("x.json"), b"{}").is_err());
    assert!(remove_beneath(&f.root(), &f.ipc().join("x.json")).is_err());
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    // `..` and absolute parts never resolve.
    assert!(SafeDir::open(&f.root(), Path::new("../")).is_err());
}

#[test]
fn appending_refuses_links_fifos_and_hard_links_without_blocking() {
    let f = Fixture::new();
    let dir = SafeDir::open(&f.root(), Path::new("ipc")).unwrap();
    symlink(f.sentinel(), f.ipc().join("link.log")).unwrap();
    std::fs::hard_link(f.sentinel(), f.ipc().join("hard.log")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        f.ipc().join("fifo.log").as_path(),
        FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    std::fs::create_dir(f.ipc().join("dir.log")).unwrap();
    for name in ["link.log", "hard.log", "fifo.log", "dir.log"] {
        assert!(dir.open_append(name).is_err(), "{name}");
    }
    assert_eq!(f.sentinel_text(), "untouched");

    let mut log = dir.open_append("ok.log").unwrap();
    log.write_all(b"one\n").unwrap();
    let mut again = dir.open_append("ok.log").unwrap();
    again.write_all(b"two\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(f.ipc().join("ok.log")).unwrap(),
        "one\ntwo\n"
    );
    assert_eq!(dir.size_of("ok.log"), Some(8));
    assert_eq!(dir.size_of("link.log"), None);
    dir.rename("ok.log", "ok.log.1").unwrap();
    dir.remove("link.log").unwrap();
    dir.remove("missing").unwrap();
    assert!(dir.remove("dir.log").is_err());
    assert_eq!(f.sentinel_text(), "untouched");
}

#[test]
fn create_makes_missing_directories_with_the_mode() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new();
    let dir = SafeDir::create(&f.root(), Path::new(".runner/alice"), 0o700).unwrap();
    dir.write_atomic("x", b"1").unwrap();
    let mode = std::fs::metadata(f.root().join(".runner/alice"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    assert_eq!(
        std::fs::read_to_string(f.root().join(".runner/alice/x")).unwrap(),
        "1"
    );
}

#[test]
fn the_component_walk_refuses_links_too() {
    // The fallback for kernels without openat2, exercised directly.
    let f = Fixture::new();
    let outside = f.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    symlink(&outside, f.root().join("link")).unwrap();
    let root = rfs::open(
        f.root().as_path(),
        OFlags::PATH | OFlags::DIRECTORY,
        Mode::empty(),
    )
    .unwrap();
    let names = |p: &str| plain_names(Path::new(p)).unwrap();
    assert!(walk(root.as_fd(), &names("ipc"), Missing::Fail).is_ok());
    assert!(walk(root.as_fd(), &names("link"), Missing::Fail).is_err());
    assert!(walk(root.as_fd(), &names("link/new"), Missing::Create(0o700)).is_err());
    assert!(
        walk(
            root.as_fd(),
            &names("ipc/new/deeper"),
            Missing::Create(0o700)
        )
        .is_ok()
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}
