//! One guest of the container tier: create and start its container (replacing a stale one of the
//! same name), hand it its bootstrap on stdin when it reads it there, copy its output into the
//! runner's `<role>.log` (see `log_file`), wait for it to exit, stop and remove it.

use std::collections::HashMap;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bollard::Docker;
use bollard::container::AttachContainerResults;
use bollard::models::ContainerSummary;
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, CreateContainerOptionsBuilder, InspectContainerOptions,
    ListContainersOptionsBuilder, LogsOptionsBuilder, RemoveContainerOptionsBuilder,
    StopContainerOptionsBuilder, WaitContainerOptionsBuilder,
};
use futures::StreamExt;
use runner::container_spec::GuestContainer;
use runner::{LABEL_MANAGED, LABEL_WORKSPACE, SafeDir, SecretText, docker_message, is_not_found};
use tokio::io::AsyncWriteExt;
use tokio::task::JoinHandle;

/// A started container.
#[derive(Debug)]
pub struct ContainerGuest {
    docker: Docker,
    pub name: String,
    /// The host pid of the container's first process (its init), for `status`.
    pub pid: u32,
    follower: Option<JoinHandle<()>>,
}

impl ContainerGuest {
    /// Removes any container called `name` (it must be one of ours for the same workspace), then
    /// creates and starts `container` under that name, writes its stdin bootstrap (if any) and
    /// closes its stdin, appending its output to `log` in `dir`.
    pub async fn launch(
        docker: &Docker,
        name: &str,
        container: GuestContainer,
        dir: SafeDir,
        log: String,
    ) -> Result<Self> {
        let GuestContainer {
            body,
            stdin_bootstrap,
        } = container;
        let workspace = body
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_WORKSPACE))
            .cloned()
            .unwrap_or_default();
        replace_stale(docker, name, &workspace).await?;
        let options = CreateContainerOptionsBuilder::default().name(name).build();
        let image = body.image.clone().unwrap_or_default();
        docker
            .create_container(Some(options), body)
            .await
            .map_err(|e| {
                if is_not_found(&e) {
                    anyhow::anyhow!(
                        "image {image} is not built; build the guest images with \
                         scripts/build-guest-images.sh (or runner images build)"
                    )
                } else {
                    anyhow::anyhow!("cannot create container {name}: {}", docker_message(&e))
                }
            })?;
        if let Err(e) = start(docker, name, stdin_bootstrap.as_ref()).await {
            let _ = remove(docker, name).await;
            return Err(e);
        }
        // Following a started container yields its output from the beginning, so nothing it
        // printed before the stream opened is missed (a created one would end the stream at once).
        let follower = tokio::spawn(follow_logs(docker.clone(), name.to_owned(), dir, log));
        let pid = docker
            .inspect_container(name, None::<InspectContainerOptions>)
            .await
            .ok()
            .and_then(|i| i.state?.pid)
            .and_then(|p| u32::try_from(p).ok())
            .unwrap_or_default();
        tracing::info!(container = name, pid, "started");
        Ok(Self {
            docker: docker.clone(),
            name: name.to_owned(),
            pid,
            follower: Some(follower),
        })
    }

    /// How the container ended, if it has.
    pub async fn try_exited(&self) -> Option<ExitStatus> {
        let inspect = self
            .docker
            .inspect_container(&self.name, None::<InspectContainerOptions>)
            .await;
        match inspect {
            Ok(i) => {
                let state = i.state?;
                if state.running == Some(true) {
                    return None;
                }
                Some(exit_status(state.exit_code.unwrap_or(1)))
            }
            Err(e) if is_not_found(&e) => Some(exit_status(137)),
            Err(_) => None,
        }
    }

    /// Waits until the container stops running; how it ended.
    pub async fn wait(&self) -> ExitStatus {
        let options = WaitContainerOptionsBuilder::default()
            .condition("not-running")
            .build();
        let mut stream = self.docker.wait_container(&self.name, Some(options));
        match stream.next().await {
            Some(Ok(r)) => exit_status(r.status_code),
            Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => {
                exit_status(code)
            }
            Some(Err(e)) => {
                tracing::warn!(container = %self.name, "waiting failed: {}", docker_message(&e));
                // The engine went away or the container vanished: treat it as a crash, but do
                // not spin if the engine keeps failing.
                tokio::time::sleep(Duration::from_millis(500)).await;
                exit_status(1)
            }
            None => exit_status(1),
        }
    }

    /// Stops the container (SIGTERM, SIGKILL after `grace`) and removes it; how it ended.
    pub async fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        let t = i32::try_from(grace.as_secs().max(1)).unwrap_or(10);
        let options = StopContainerOptionsBuilder::default().t(t).build();
        if let Err(e) = self.docker.stop_container(&self.name, Some(options)).await
            && !is_not_found(&e)
        {
            tracing::warn!(container = %self.name, "stop failed: {}", docker_message(&e));
        }
        let status = self.try_exited().await;
        if let Some(follower) = self.follower.take() {
            // The log stream ends with the container; give it a moment to flush.
            let _ = tokio::time::timeout(Duration::from_secs(2), follower).await;
        }
        if let Err(e) = remove(&self.docker, &self.name).await {
            tracing::warn!(container = %self.name, "{e:#}");
        }
        status
    }
}

impl Drop for ContainerGuest {
    fn drop(&mut self) {
        if let Some(follower) = self.follower.take() {
            follower.abort();
        }
    }
}

/// Starts the created container `name`. With a `bootstrap`, attaches to its stdin first (as
/// `docker start -a -i` does, so nothing is lost), then writes the bootstrap and closes the
/// stream: the container was created with `stdin_once`, so the engine closes the guest's stdin
/// and it reads to end of file. The text passes through the engine's socket only, never a
/// command line, a file or the container's configuration.
async fn start(docker: &Docker, name: &str, bootstrap: Option<&SecretText>) -> Result<()> {
    let attached = match bootstrap {
        Some(_) => {
            let options = AttachContainerOptionsBuilder::default()
                .stdin(true)
                .stream(true)
                .build();
            let attached = docker
                .attach_container(name, Some(options))
                .await
                .map_err(|e| {
                    anyhow::anyhow!("cannot attach to container {name}: {}", docker_message(&e))
                })?;
            Some(attached)
        }
        None => None,
    };
    docker
        .start_container(name, None)
        .await
        .map_err(|e| anyhow::anyhow!("cannot start container {name}: {}", docker_message(&e)))?;
    if let (Some(attached), Some(bootstrap)) = (attached, bootstrap) {
        let AttachContainerResults { mut input, .. } = attached;
        input
            .write_all(bootstrap.0.as_bytes())
            .await
            .with_context(|| format!("cannot hand container {name} its bootstrap"))?;
        input
            .shutdown()
            .await
            .with_context(|| format!("cannot close container {name}'s stdin"))?;
    }
    Ok(())
}

/// Appends the container's stdout and stderr to `log` until the container stops, rotating it
/// when it grows large (see [`crate::log_file`]).
async fn follow_logs(docker: Docker, name: String, dir: SafeDir, log: String) {
    let options = LogsOptionsBuilder::default()
        .follow(true)
        .stdout(true)
        .stderr(true)
        .build();
    let output = docker
        .logs(&name, Some(options))
        .map(|item| item.map(|o| o.into_bytes()).map_err(|e| docker_message(&e)));
    crate::log_file::copy_rotating(
        std::pin::pin!(output),
        &dir,
        &log,
        crate::log_file::ROTATE_BYTES,
    )
    .await;
}

/// A container's exit code as a process status (128 + n means killed by signal n).
fn exit_status(code: i64) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    let code = i32::try_from(code).unwrap_or(1);
    if (129..=128 + 64).contains(&code) {
        ExitStatus::from_raw(code - 128)
    } else {
        ExitStatus::from_raw((code & 0xff) << 8)
    }
}

/// Removes the container `name` if it exists, refusing when it is not one of ours for `workspace`.
async fn replace_stale(docker: &Docker, name: &str, workspace: &str) -> Result<()> {
    let found = docker
        .inspect_container(name, None::<InspectContainerOptions>)
        .await;
    let info = match found {
        Ok(info) => info,
        Err(e) if is_not_found(&e) => return Ok(()),
        Err(e) => bail!("cannot inspect container {name}: {}", docker_message(&e)),
    };
    let labels = info.config.and_then(|c| c.labels).unwrap_or_default();
    if labels.get(LABEL_WORKSPACE).map(String::as_str) != Some(workspace) {
        bail!(
            "a container named {name} exists and does not belong to this workspace ({workspace}); \
             remove or rename it first"
        );
    }
    tracing::warn!(container = name, "replacing a stale container");
    remove(docker, name).await
}

/// Force-removes the container `name` (gone already is fine).
pub async fn remove(docker: &Docker, name: &str) -> Result<()> {
    let options = RemoveContainerOptionsBuilder::default().force(true).build();
    match docker.remove_container(name, Some(options)).await {
        Ok(()) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => bail!("cannot remove container {name}: {}", docker_message(&e)),
    }
}

/// Every container of ours serving the workspace `ws_root` (running or not).
pub async fn workspace_containers(
    docker: &Docker,
    ws_root: &Path,
) -> Result<Vec<ContainerSummary>> {
    let filters = HashMap::from([(
        "label",
        vec![
            format!("{LABEL_MANAGED}=true"),
            format!("{LABEL_WORKSPACE}={}", ws_root.display()),
        ],
    )]);
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    docker
        .list_containers(Some(options))
        .await
        .map_err(|e| anyhow::anyhow!("cannot list containers: {}", docker_message(&e)))
        .context("Docker")
}

/// Removes every container serving `ws_root`; their names.
pub async fn remove_workspace_containers(docker: &Docker, ws_root: &Path) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for c in workspace_containers(docker, ws_root).await? {
        let Some(name) = c.names.and_then(|n| n.into_iter().next()) else {
            continue;
        };
        let name = name.trim_start_matches('/').to_owned();
        remove(docker, &name).await?;
        removed.push(name);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn exit_codes_map_to_statuses() {
        assert_eq!(exit_status(0).code(), Some(0));
        assert_eq!(exit_status(3).code(), Some(3));
        assert_eq!(exit_status(137).signal(), Some(9));
        assert_eq!(exit_status(143).signal(), Some(15));
    }
}
