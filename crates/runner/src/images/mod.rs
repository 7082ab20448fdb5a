//! The container tier's guest images, built locally with no base image (`FROM scratch`): the
//! `oxydra-vm` image holds the agent binary and the shared libraries `ldd` names; the `shell-vm`
//! image holds the shell daemon, its libraries and a static busybox. Nothing is pulled.
//!
//! Each build context is a deterministic tar whose SHA-256 is stored in the image's
//! [`LABEL_CONTEXT`] label, so a build whose context did not change is skipped.
//!
//! - `ldd` — which shared libraries a binary needs
//! - `context` — the rootfs and its deterministic tar
//! - `recipe` — what goes into each image
//! - `build` — the engine calls (inspect, build, remove the replaced image)

mod build;
mod context;
mod ldd;
mod recipe;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bollard::Docker;

use crate::{ContainerSettings, RunnerError};

/// Label on a guest image: the SHA-256 (hex) of the build context it was built from.
pub const LABEL_CONTEXT: &str = "org.oxydra.context";

/// The busybox `runner images build` uses unless told otherwise (Debian's `busybox-static`).
pub const DEFAULT_BUSYBOX: &str = "/bin/busybox";

/// One of the two guest images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestImage {
    OxydraVm,
    ShellVm,
}

impl GuestImage {
    pub const ALL: [GuestImage; 2] = [GuestImage::OxydraVm, GuestImage::ShellVm];

    /// The value of its `org.oxydra.role` label.
    pub fn role(self) -> &'static str {
        match self {
            GuestImage::OxydraVm => "oxydra-vm",
            GuestImage::ShellVm => "shell-vm",
        }
    }

    /// Its image reference in `settings`.
    pub fn reference(self, settings: &ContainerSettings) -> &str {
        match self {
            GuestImage::OxydraVm => &settings.oxydra_vm_image,
            GuestImage::ShellVm => &settings.shell_vm_image,
        }
    }

    /// The binary it runs (also its file name in the bin dir).
    fn binary(self) -> &'static str {
        self.role()
    }

    /// The cargo package building that binary.
    fn package(self) -> &'static str {
        match self {
            GuestImage::OxydraVm => "runner",
            GuestImage::ShellVm => "shell-daemon",
        }
    }
}

/// Where the images' files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSources {
    /// Holds the `oxydra-vm` and `shell-vm` binaries.
    pub bin_dir: PathBuf,
    /// A statically linked busybox.
    pub busybox: PathBuf,
}

impl ImageSources {
    /// `$OXYDRA_BIN_DIR` (else the running executable's directory) and [`DEFAULT_BUSYBOX`].
    pub fn local() -> Result<Self, RunnerError> {
        Ok(Self {
            bin_dir: recipe::default_bin_dir()?,
            busybox: PathBuf::from(DEFAULT_BUSYBOX),
        })
    }
}

/// What [`build_images`] did for one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageReport {
    pub reference: String,
    /// False when the image was up to date and left alone.
    pub built: bool,
    pub size_bytes: u64,
    pub elapsed: Duration,
}

/// An image compared with the local binaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageState {
    Missing,
    /// Built from exactly the local binaries.
    Current,
    /// Built from other binaries: `runner images build` would rebuild it.
    Stale,
    /// Present, but the local binaries could not be read (the reason).
    Unchecked(String),
}

/// What [`image_status`] found for one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageStatus {
    pub image: GuestImage,
    pub reference: String,
    /// None when missing.
    pub size_bytes: Option<u64>,
    pub state: ImageState,
}

/// Builds both images from `sources` unless an image's context hash matches the new one (then it
/// is reported up to date; `force` rebuilds anyway, without the engine's cache). `progress` gets
/// one line per step, the engine's `Step n/m` lines included.
pub async fn build_images(
    docker: &Docker,
    settings: &ContainerSettings,
    sources: &ImageSources,
    force: bool,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<Vec<ImageReport>, RunnerError> {
    let mut reports = Vec::new();
    for image in GuestImage::ALL {
        let started = Instant::now();
        let reference = image.reference(settings);
        let role = image.role();
        progress(&format!(
            "{role}: assembling {reference} from {}",
            sources.bin_dir.join(image.binary()).display()
        ));
        let context = local_context(image, sources).await?;
        progress(&format!(
            "{role}: context {} ({} entries), sha256 {}",
            format_size(context.tar.len() as u64),
            context.entries,
            context.hash.get(..12).unwrap_or_default()
        ));
        let old = build::inspect(docker, reference).await?;
        if let Some(old) = old.as_ref().filter(|o| !force && o.context == context.hash) {
            let elapsed = started.elapsed();
            progress(&format!(
                "{role}: {reference} is up to date ({}, checked in {:.1}s)",
                format_size(old.size_bytes),
                elapsed.as_secs_f64()
            ));
            reports.push(ImageReport {
                reference: reference.to_owned(),
                built: false,
                size_bytes: old.size_bytes,
                elapsed,
            });
            continue;
        }
        let new = build::build(docker, image, reference, context, force, progress).await?;
        // Only an image the runner built (it has a context label) is tidied away.
        if let Some(old) = old.filter(|o| o.id != new.id && !o.context.is_empty()) {
            build::remove_replaced(docker, image, &old.id, progress).await;
        }
        let elapsed = started.elapsed();
        progress(&format!(
            "{role}: built {reference} ({}) in {:.1}s",
            format_size(new.size_bytes),
            elapsed.as_secs_f64()
        ));
        reports.push(ImageReport {
            reference: reference.to_owned(),
            built: true,
            size_bytes: new.size_bytes,
            elapsed,
        });
    }
    Ok(reports)
}

/// Fails, saying how to build them, when either guest image is missing.
pub async fn require_images(
    docker: &Docker,
    settings: &ContainerSettings,
) -> Result<(), RunnerError> {
    for image in GuestImage::ALL {
        let reference = image.reference(settings);
        if build::inspect(docker, reference).await?.is_none() {
            return Err(RunnerError::Docker(format!(
                "image {reference} is not built; build the guest images with \
                 scripts/build-guest-images.sh (or runner images build)"
            )));
        }
    }
    Ok(())
}

/// Fails unless every MCP server's own image (container tier, `image` set) is on this machine:
/// images are built locally, never pulled.
pub async fn require_mcp_images(docker: &Docker, plan: &crate::McpPlan) -> Result<(), RunnerError> {
    for server in &plan.containers {
        if build::inspect(docker, &server.image).await?.is_none() {
            return Err(RunnerError::Docker(format!(
                "[mcp.servers.{}] image {} is not on this machine; build it locally (images are                  never pulled), or remove `image` to run the server through the user's shell",
                server.name, server.image
            )));
        }
    }
    Ok(())
}

/// Each image: present or missing, its size, and whether it matches the binaries in `sources`.
pub async fn image_status(
    docker: &Docker,
    settings: &ContainerSettings,
    sources: &ImageSources,
) -> Result<Vec<ImageStatus>, RunnerError> {
    let mut statuses = Vec::new();
    for image in GuestImage::ALL {
        let reference = image.reference(settings).to_owned();
        let Some(found) = build::inspect(docker, &reference).await? else {
            statuses.push(ImageStatus {
                image,
                reference,
                size_bytes: None,
                state: ImageState::Missing,
            });
            continue;
        };
        let state = match local_context(image, sources).await {
            Ok(context) if context.hash == found.context => ImageState::Current,
            Ok(_) => ImageState::Stale,
            Err(e) => ImageState::Unchecked(e.to_string()),
        };
        statuses.push(ImageStatus {
            image,
            reference,
            size_bytes: Some(found.size_bytes),
            state,
        });
    }
    Ok(statuses)
}

/// `12.3 MB` (decimal units, as `docker images` shows them).
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["kB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The build context of `image` from the local files, assembled off the async threads.
async fn local_context(
    image: GuestImage,
    sources: &ImageSources,
) -> Result<context::Context, RunnerError> {
    let (bin_dir, busybox) = (sources.bin_dir.clone(), sources.busybox.clone());
    tokio::task::spawn_blocking(move || recipe::context(image, &bin_dir, &busybox))
        .await
        .map_err(|e| RunnerError::Docker(format!("assembling the {} image: {e}", image.role())))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_docker_images() {
        let table = [
            (0, "0 B"),
            (999, "999 B"),
            (1_000, "1.0 kB"),
            (45_612_345, "45.6 MB"),
            (2_500_000_000, "2.5 GB"),
        ];
        for (bytes, text) in table {
            assert_eq!(format_size(bytes), text, "{bytes}");
        }
    }
}
