//! The engine's side of a guest image: inspect it, build it from a context tar (classic builder,
//! progress from the build stream), remove the image a rebuild replaced.

use std::collections::HashMap;

use bollard::Docker;
use bollard::query_parameters::{BuildImageOptionsBuilder, BuilderVersion, RemoveImageOptions};
use futures::StreamExt;
use tracing::debug;

use super::context::Context;
use super::{GuestImage, LABEL_CONTEXT};
use crate::{LABEL_MANAGED, LABEL_ROLE, RunnerError, docker_message, is_not_found};

/// What the engine says about an image that exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) id: String,
    pub(crate) size_bytes: u64,
    /// Its [`LABEL_CONTEXT`] label (empty when it has none: not built by the runner).
    pub(crate) context: String,
}

/// The image `reference`, or None when the engine has no such image.
pub(crate) async fn inspect(
    docker: &Docker,
    reference: &str,
) -> Result<Option<Found>, RunnerError> {
    match docker.inspect_image(reference).await {
        Ok(image) => {
            let context = image
                .config
                .and_then(|c| c.labels)
                .and_then(|mut labels| labels.remove(LABEL_CONTEXT))
                .unwrap_or_default();
            Ok(Some(Found {
                id: image.id.unwrap_or_default(),
                size_bytes: image.size.and_then(|s| u64::try_from(s).ok()).unwrap_or(0),
                context,
            }))
        }
        Err(e) if is_not_found(&e) => Ok(None),
        Err(e) => Err(RunnerError::Docker(format!(
            "cannot inspect image {reference}: {}",
            docker_message(&e)
        ))),
    }
}

/// Builds `context` as `reference` with the runner's labels; `no_cache` disables the engine's
/// layer cache. Returns the new image as the engine now reports it.
pub(crate) async fn build(
    docker: &Docker,
    image: GuestImage,
    reference: &str,
    context: Context,
    no_cache: bool,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<Found, RunnerError> {
    let labels = HashMap::from([
        (LABEL_MANAGED, "true"),
        (LABEL_ROLE, image.role()),
        (LABEL_CONTEXT, context.hash.as_str()),
    ]);
    let options = BuildImageOptionsBuilder::new()
        .dockerfile("Dockerfile")
        .t(reference)
        .labels(&labels)
        .nocache(no_cache)
        .rm(true)
        .forcerm(true)
        .version(BuilderVersion::BuilderV1)
        .build();
    let failed = |message: &str| {
        RunnerError::Docker(format!(
            "building image {reference} failed: {}",
            message.trim()
        ))
    };
    let body = bollard::body_full(bytes::Bytes::from(context.tar));
    let mut stream = docker.build_image(options, None, Some(body));
    while let Some(item) = stream.next().await {
        let info = match item {
            Ok(info) => info,
            Err(bollard::errors::Error::DockerStreamError { error }) => return Err(failed(&error)),
            Err(e) => return Err(failed(&docker_message(&e))),
        };
        if let Some(detail) = info.error_detail {
            return Err(failed(&detail.message.unwrap_or_default()));
        }
        for line in info.stream.as_deref().unwrap_or_default().lines() {
            let line = line.trim();
            if line.starts_with("Step ") {
                progress(&format!("{}: {line}", image.role()));
            } else if !line.is_empty() {
                debug!(image = reference, "{line}");
            }
        }
    }
    inspect(docker, reference)
        .await?
        .ok_or_else(|| failed("the engine reported no image after the build"))
}

/// Removes the image a rebuild replaced (`old_id`) when no tag names it any more. An image still
/// tagged elsewhere (identical binaries give an identical image, so another reference may share
/// it) is kept, and the engine refuses to remove one a container uses: this is only tidying.
pub(crate) async fn remove_replaced(
    docker: &Docker,
    image: GuestImage,
    old_id: &str,
    progress: &mut (dyn FnMut(&str) + Send),
) {
    let short = old_id.trim_start_matches("sha256:");
    let short = short.get(..12).unwrap_or(short);
    let tags = match docker.inspect_image(old_id).await {
        Ok(old) => old.repo_tags.unwrap_or_default(),
        Err(e) => {
            debug!(
                "cannot inspect the replaced image {short}: {}",
                docker_message(&e)
            );
            return;
        }
    };
    if tags.iter().any(|t| t != "<none>:<none>") {
        debug!("kept the replaced image {short}: still tagged {tags:?}");
        return;
    }
    match docker
        .remove_image(old_id, None::<RemoveImageOptions>, None)
        .await
    {
        Ok(_) => progress(&format!(
            "{}: removed the replaced image {short}",
            image.role()
        )),
        Err(e) => debug!("kept the replaced image {short}: {}", docker_message(&e)),
    }
}
