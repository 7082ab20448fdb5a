//! `runner images build|status`: the container tier's guest images, built from local binaries
//! (see the library's `images` module).

use anyhow::Result;
use runner::images::{self, ImageSources, ImageState};
use runner::{ContainerSettings, RunnerConfig};

use crate::Global;
use crate::args::ImagesCommand;
use crate::out::say;

pub async fn run(global: &Global, command: ImagesCommand) -> Result<()> {
    let settings = container_settings(global)?;
    let docker = runner::connect_docker().await?;
    match command {
        ImagesCommand::Build {
            bin_dir,
            busybox,
            force,
        } => {
            let sources = ImageSources {
                bin_dir: match bin_dir {
                    Some(dir) => dir,
                    None => ImageSources::local()?.bin_dir,
                },
                busybox,
            };
            let reports =
                images::build_images(&docker, &settings, &sources, force, &mut |line| say(line))
                    .await?;
            let built = reports.iter().filter(|r| r.built).count();
            say(format!(
                "images: {built} built, {} up to date",
                reports.len() - built
            ));
        }
        ImagesCommand::Status => {
            let sources = ImageSources::local()?;
            for status in images::image_status(&docker, &settings, &sources).await? {
                let size = status
                    .size_bytes
                    .map(images::format_size)
                    .unwrap_or_default();
                let state = match &status.state {
                    ImageState::Missing => "missing (run scripts/build-guest-images.sh)".to_owned(),
                    ImageState::Current => format!("present, {size}, matches the local binaries"),
                    ImageState::Stale => format!(
                        "present, {size}, STALE: built from other binaries than those in {} \
                         (rebuild with `runner images build`)",
                        sources.bin_dir.display()
                    ),
                    ImageState::Unchecked(why) => {
                        format!("present, {size}, not compared with the local binaries: {why}")
                    }
                };
                say(format!(
                    "{:<10} {}: {state}",
                    status.image.role(),
                    status.reference
                ));
            }
        }
    }
    Ok(())
}

/// runner.toml's `[container]` table; the defaults when no runner.toml is found.
fn container_settings(global: &Global) -> Result<ContainerSettings> {
    match RunnerConfig::locate(global.config.as_deref()) {
        Ok(path) => Ok(RunnerConfig::load(&path)?.container),
        Err(_) => Ok(ContainerSettings::default()),
    }
}
