//! `runner images build|status` against the real Docker engine: both guest images are built
//! `FROM scratch` from the debug binaries, carry the runner's labels, run, are left alone when
//! nothing changed, and only the image whose binary changed is rebuilt.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::path::Path;
use std::process::{Command, Output};

use crate::common;

use bollard::Docker;
use common::guest_binaries;
use runner::images::{self, LABEL_CONTEXT};
use runner::{ContainerSettings, LABEL_MANAGED, LABEL_ROLE};

/// Removes the test's images however the test ends.
struct RemoveImages(Vec<String>);

impl Drop for RemoveImages {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["rmi", "-f"])
            .args(&self.0)
            .output();
    }
}

fn runner(config: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg("--config")
        .arg(config)
        .args(args)
        .env_remove("OXYDRA_LOG")
        .env_remove("OXYDRA_BIN_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "runner {args:?} failed: {}",
        text(&out)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn docker_run(args: &[&str]) -> Output {
    Command::new("docker")
        .args(["run", "--rm", "--network", "none"])
        .args(args)
        .output()
        .unwrap()
}

/// (id, role label, managed label, context label) of `reference`.
async fn labels(docker: &Docker, reference: &str) -> (String, String, String, String) {
    let image = docker.inspect_image(reference).await.unwrap();
    let mut labels = image.config.unwrap().labels.unwrap();
    let mut take = |key: &str| labels.remove(key).unwrap_or_default();
    let (role, managed, context) = (take(LABEL_ROLE), take(LABEL_MANAGED), take(LABEL_CONTEXT));
    (image.id.unwrap(), role, managed, context)
}

#[tokio::test]
#[ignore = "needs docker"]
async fn guest_images_build_from_scratch_run_and_rebuild_only_what_changed() {
    test_support::need(test_support::Need::Docker);
    let docker = runner::connect_docker().await.unwrap();
    let bins = guest_binaries();
    let pid = std::process::id();
    let settings = ContainerSettings {
        oxydra_vm_image: format!("oxydra-vm:test-images-{pid}"),
        shell_vm_image: format!("oxydra-shell-vm:test-images-{pid}"),
        ..ContainerSettings::default()
    };
    let (agent, shell) = (&settings.oxydra_vm_image, &settings.shell_vm_image);
    let _cleanup = RemoveImages(vec![agent.clone(), shell.clone()]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("runner.toml");
    std::fs::write(
        &config,
        format!("[container]\noxydra_vm_image = \"{agent}\"\nshell_vm_image = \"{shell}\"\n"),
    )
    .unwrap();
    let bin_dir = bins.to_str().unwrap();

    let missing = images::require_images(&docker, &settings)
        .await
        .unwrap_err();
    assert_eq!(
        missing.to_string(),
        format!(
            "Docker: image {agent} is not built; build the guest images with \
             scripts/build-guest-images.sh (or runner images build)"
        )
    );

    // First build: both images, with the engine's steps shown.
    let first = runner(&config, &["images", "build", "--bin-dir", bin_dir]);
    assert!(first.contains("oxydra-vm: Step 1/"), "{first}");
    assert!(first.contains(&format!("built {agent} (")), "{first}");
    assert!(first.contains(&format!("built {shell} (")), "{first}");
    assert!(first.contains("images: 2 built, 0 up to date"), "{first}");
    images::require_images(&docker, &settings).await.unwrap();
    let (agent_id, role, managed, agent_context) = labels(&docker, agent).await;
    assert_eq!((role.as_str(), managed.as_str()), ("oxydra-vm", "true"));
    assert_eq!(agent_context.len(), 64, "{agent_context}");
    let (shell_id, role, managed, shell_context) = labels(&docker, shell).await;
    assert_eq!((role.as_str(), managed.as_str()), ("shell-vm", "true"));
    assert_ne!(agent_context, shell_context);

    // Nothing changed: nothing is rebuilt.
    let second = runner(&config, &["images", "build", "--bin-dir", bin_dir]);
    assert!(
        second.contains(&format!("{agent} is up to date")),
        "{second}"
    );
    assert!(
        second.contains(&format!("{shell} is up to date")),
        "{second}"
    );
    assert!(!second.contains("Step "), "{second}");
    assert_eq!(labels(&docker, agent).await.0, agent_id);
    assert_eq!(labels(&docker, shell).await.0, shell_id);

    // The shell image has busybox's sh and its daemon; the agent image runs from scratch with its
    // libraries and has no shell at all.
    let out = docker_run(&[
        "--entrypoint",
        "/bin/sh",
        shell,
        "-c",
        "echo hi; ls /usr/local/bin",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\nshell-vm\n");
    let out = docker_run(&[agent, "--help"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("Usage: oxydra-vm"), "{}", text(&out));
    let out = docker_run(&["--entrypoint", "/bin/sh", agent, "-c", "true"]);
    assert!(
        !out.status.success(),
        "the agent image must have no /bin/sh"
    );

    // A changed shell-vm binary: status calls the shell image stale, and a build replaces only it.
    let changed = tempfile::Builder::new()
        .prefix("images-test-")
        .tempdir_in(&bins)
        .unwrap();
    std::fs::hard_link(bins.join("oxydra-vm"), changed.path().join("oxydra-vm"))
        .or_else(|_| {
            std::fs::copy(bins.join("oxydra-vm"), changed.path().join("oxydra-vm")).map(drop)
        })
        .unwrap();
    // An extra section changes the binary in a way the builder's `objcopy --strip-debug` keeps
    // (trailing bytes, for instance, would be stripped away and leave the image current).
    let note = changed.path().join("note");
    std::fs::write(&note, "changed").unwrap();
    let added = Command::new("objcopy")
        .arg(format!("--add-section=.oxydra_test={}", note.display()))
        .arg(bins.join("shell-vm"))
        .arg(changed.path().join("shell-vm"))
        .status()
        .is_ok_and(|s| s.success());
    if !added {
        // Without objcopy the builder does not strip either: any changed byte counts.
        let mut shell_vm = std::fs::read(bins.join("shell-vm")).unwrap();
        shell_vm.push(0);
        std::fs::write(changed.path().join("shell-vm"), shell_vm).unwrap();
    }
    std::fs::remove_file(&note).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg("--config")
        .arg(&config)
        .args(["images", "status"])
        .env("OXYDRA_BIN_DIR", changed.path())
        .output()
        .unwrap();
    let status = text(&status);
    let lines: Vec<&str> = status.lines().collect();
    assert_eq!(lines.len(), 2, "{status}");
    assert!(lines[0].contains(&format!("{agent}: present")), "{status}");
    assert!(lines[0].contains("matches the local binaries"), "{status}");
    assert!(lines[1].contains("STALE"), "{status}");
    let third = runner(
        &config,
        &[
            "images",
            "build",
            "--bin-dir",
            changed.path().to_str().unwrap(),
        ],
    );
    assert!(third.contains(&format!("{agent} is up to date")), "{third}");
    assert!(third.contains(&format!("built {shell} (")), "{third}");
    assert!(third.contains("images: 1 built, 1 up to date"), "{third}");
    assert_eq!(labels(&docker, agent).await.0, agent_id);
    assert_ne!(labels(&docker, shell).await.0, shell_id);
    // The image the rebuild replaced is removed unless another tag still names it (identical
    // binaries give an identical image, so another checkout's images may share it).
    if let Ok(old) = docker.inspect_image(&shell_id).await {
        let tags = old.repo_tags.unwrap_or_default();
        assert!(
            !tags.is_empty() && !tags.contains(shell),
            "{shell_id} left dangling: {tags:?}"
        );
    }
}
