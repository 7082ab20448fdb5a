//! What each guest image holds: its binary and the shared libraries `ldd` names, `/etc/passwd`,
//! empty `/tmp` and `/workspace`; for `oxydra-vm` the host's CA bundle (libsql's TLS reads the
//! system's roots, even to build a client for an `http://` memory server); for `shell-vm` a static
//! busybox with one link per applet.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::GuestImage;
use super::context::{Context, MODE_EXEC, MODE_FILE, MODE_TMP, Rootfs};
use super::ldd::{Linkage, linkage};
use crate::{CONTAINER_WORKSPACE_ROOT, RunnerError};

const PASSWD: &str = "root:x:0:0:root:/root:/bin/sh\n\
                      nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n";
const GROUP: &str = "root:x:0:\nnogroup:x:65534:\n";

/// Where the guest's binary sits in its image (the entrypoint).
pub(crate) fn entrypoint(image: GuestImage) -> String {
    format!("/usr/local/bin/{}", image.binary())
}

/// The Dockerfile of `image`: no base image, the rootfs copied in, environment and entrypoint.
pub(crate) fn dockerfile(image: GuestImage) -> String {
    let env = match image {
        GuestImage::OxydraVm => "LANG=C.UTF-8",
        GuestImage::ShellVm => "PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8",
    };
    format!(
        "FROM scratch\nCOPY rootfs/ /\nENV {env}\nENTRYPOINT [\"{}\"]\n",
        entrypoint(image)
    )
}

/// The build context of `image` from the binaries in `bin_dir` (and, for `shell-vm`, `busybox`).
/// Blocking: it runs `ldd` and reads every file.
pub(crate) fn context(
    image: GuestImage,
    bin_dir: &Path,
    busybox: &Path,
) -> Result<Context, RunnerError> {
    let binary = bin_dir.join(image.binary());
    if !binary.is_file() {
        return Err(RunnerError::MissingBinary {
            name: image.binary(),
            package: image.package(),
            dir: bin_dir.to_owned(),
        });
    }
    let mut rootfs = Rootfs::default();
    match stripped(&binary) {
        Some(bytes) => rootfs.bytes(&entrypoint(image), &bytes, MODE_EXEC)?,
        None => rootfs.host_file(&entrypoint(image), &binary)?,
    }
    if let Linkage::Dynamic(libraries) = linkage(&binary)? {
        for library in libraries {
            rootfs.host_file(&library.to_string_lossy(), &library)?;
        }
    }
    rootfs.dir("/tmp", MODE_TMP)?;
    rootfs.dir(CONTAINER_WORKSPACE_ROOT, MODE_EXEC)?;
    rootfs.bytes("/etc/passwd", PASSWD.as_bytes(), MODE_FILE)?;
    rootfs.bytes("/etc/group", GROUP.as_bytes(), MODE_FILE)?;
    match image {
        GuestImage::ShellVm => add_busybox(&mut rootfs, busybox)?,
        GuestImage::OxydraVm => add_ca_bundle(&mut rootfs)?,
    }
    Context::new(&dockerfile(image), &rootfs)
}

/// Where Debian (and rustls-native-certs) keep the system's CA certificates, one PEM file.
const CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The host's CA bundle at the same path in the image; without one on the host the image has
/// none (a remote memory server is then unreachable from the container) and a warning says so.
fn add_ca_bundle(rootfs: &mut Rootfs) -> Result<(), RunnerError> {
    let bundle = Path::new(CA_BUNDLE);
    if bundle.is_file() {
        rootfs.host_file(CA_BUNDLE, bundle)
    } else {
        tracing::warn!(
            "no CA bundle at {CA_BUNDLE} (Debian: ca-certificates): the oxydra-vm image gets none, \
             so remote memory does not work in the container tier"
        );
        Ok(())
    }
}

/// `binary` without its debug sections (two thirds of a release binary, which keeps line tables
/// for backtraces on the host), via binutils' `objcopy --strip-debug`. `None` (the binary goes in
/// as it is, with a warning) when `objcopy` is missing or fails.
///
/// The copy is written in a private directory of its own (mode 0700, a random name): the
/// system's temporary directory is every host account's, and a name there that another account
/// can guess is one it can plant a link at, for this (often root) process to write through.
fn stripped(binary: &Path) -> Option<Vec<u8>> {
    let scratch = tempfile::Builder::new()
        .prefix("oxydra-image-")
        .tempdir()
        .ok();
    let bytes = scratch.as_ref().and_then(|dir| {
        let out = dir.path().join(binary.file_name()?);
        let status = Command::new("objcopy")
            .arg("--strip-debug")
            .arg(binary)
            .arg(&out)
            .status();
        match status {
            Ok(s) if s.success() => std::fs::read(&out).ok(),
            _ => None,
        }
    });
    drop(scratch);
    if bytes.is_none() {
        tracing::warn!(
            binary = %binary.display(),
            "objcopy is missing or failed: the image gets the binary with its debug information"
        );
    }
    bytes
}

/// `/bin/busybox` and `/bin/<applet> -> busybox` for each applet it lists; `/usr/bin/env` too,
/// for `#!/usr/bin/env` scripts.
fn add_busybox(rootfs: &mut Rootfs, busybox: &Path) -> Result<(), RunnerError> {
    let problem = |problem: &str| RunnerError::Config {
        path: busybox.to_owned(),
        problem: problem.to_owned(),
    };
    if !busybox.is_file() {
        return Err(problem(
            "no such file; install a statically linked busybox (Debian: `apt-get install \
             busybox-static`) or pass --busybox PATH",
        ));
    }
    if linkage(busybox)? != Linkage::Static {
        return Err(problem(
            "it is dynamically linked, and the shell image has no libraries for it; give a \
             statically linked busybox (Debian's busybox-static) with --busybox PATH",
        ));
    }
    let listed = Command::new(busybox)
        .arg("--list")
        .output()
        .map_err(RunnerError::io("run", busybox))?;
    let applets = applets(&String::from_utf8_lossy(&listed.stdout));
    if !listed.status.success() || !applets.iter().any(|a| a == "sh") {
        return Err(problem("`busybox --list` does not list `sh`"));
    }
    rootfs.host_file("/bin/busybox", busybox)?;
    for applet in applets {
        rootfs.symlink(&format!("/bin/{applet}"), "busybox")?;
    }
    rootfs.symlink("/usr/bin/env", "/bin/busybox")
}

/// The applet names of `busybox --list`: one a line, plain file names only, `busybox` left out.
fn applets(list: &str) -> Vec<String> {
    let mut names: Vec<String> = list
        .lines()
        .map(str::trim)
        .filter(|n| !n.is_empty() && !n.contains('/') && !matches!(*n, "." | ".." | "busybox"))
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The default `--bin-dir`: `$OXYDRA_BIN_DIR`, else the directory of the running executable.
pub(crate) fn default_bin_dir() -> Result<PathBuf, RunnerError> {
    match std::env::var_os(crate::BIN_DIR_ENV) {
        Some(dir) if !dir.is_empty() => Ok(PathBuf::from(dir)),
        _ => Ok(std::env::current_exe()
            .map_err(RunnerError::io("find", "the runner executable"))?
            .parent()
            .map(PathBuf::from)
            .unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applets_are_plain_names() {
        assert_eq!(
            applets("[\n[[\nsh\n\nls\nbusybox\n../x\nls\n"),
            vec!["[", "[[", "ls", "sh"]
        );
    }

    #[test]
    fn dockerfiles_have_no_base_image() {
        assert_eq!(
            dockerfile(GuestImage::ShellVm),
            "FROM scratch\nCOPY rootfs/ /\nENV PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8\n\
             ENTRYPOINT [\"/usr/local/bin/shell-vm\"]\n"
        );
        assert_eq!(
            dockerfile(GuestImage::OxydraVm),
            "FROM scratch\nCOPY rootfs/ /\nENV LANG=C.UTF-8\n\
             ENTRYPOINT [\"/usr/local/bin/oxydra-vm\"]\n"
        );
    }

    /// What another host account plants at the name the copy used to take in the shared
    /// temporary directory (`oxydra-image-<pid>-<binary>`) neither stops the stripping nor is
    /// written through.
    #[test]
    fn stripping_is_not_stopped_by_names_planted_in_the_temporary_directory() {
        if Command::new("objcopy").arg("--version").output().is_err() {
            panic!("objcopy (binutils) is needed: scripts/test.sh installs it");
        }
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"the operator's file").unwrap();
        let planted = |name: &str| {
            std::env::temp_dir().join(format!("oxydra-image-{}-{name}", std::process::id()))
        };
        let (linked, blocked) = (planted("probe-a"), planted("probe-b"));
        let _ = std::fs::remove_file(&linked);
        std::os::unix::fs::symlink(&victim, &linked).unwrap();
        std::fs::create_dir_all(&blocked).unwrap();
        let mut got = Vec::new();
        for name in ["probe-a", "probe-b"] {
            let binary = dir.path().join(name);
            std::fs::copy(std::env::current_exe().unwrap(), &binary).unwrap();
            got.push(stripped(&binary));
        }
        let left = std::fs::read(&victim).unwrap();
        let _ = std::fs::remove_file(&linked);
        let _ = std::fs::remove_dir(&blocked);
        assert_eq!(
            left, b"the operator's file",
            "written through the planted link"
        );
        for bytes in got {
            let bytes = bytes.expect("stripped despite the planted name");
            assert!(bytes.starts_with(b"\x7fELF"), "an ELF binary");
        }
    }

    #[test]
    fn a_dynamic_busybox_is_refused() {
        let mut rootfs = Rootfs::default();
        let exe = std::env::current_exe().unwrap();
        let err = add_busybox(&mut rootfs, &exe).unwrap_err().to_string();
        assert!(err.contains("dynamically linked"), "{err}");
        let err = add_busybox(&mut rootfs, Path::new("/nonexistent/busybox"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("busybox-static"), "{err}");
    }
}
