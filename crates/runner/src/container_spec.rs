//! What Docker is asked to create for one guest of the container tier: [`container_body`] turns a
//! user, a role and the settings into a `ContainerCreateBody` — mounts per DESIGN §4, networking,
//! hardening, limits, labels — and the bootstrap. `shell-vm`'s bootstrap (no secret in it) is its
//! command; `oxydra-vm`'s, which may hold the memory key, is handed over on the container's stdin,
//! so it is in nothing the engine keeps (`docker inspect`) and on no host process's command line.
//! Pure: no engine is contacted here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use bollard::models::{ContainerCreateBody, HostConfig, HostConfigLogConfig, Mount, MountType};
use sandbox::Role;
use types::{AgentConfig, ShellBootstrap, WorkspaceDir, WorkspacePaths};

use crate::{
    CONTAINER_AGENT_CONFIG, CONTAINER_WORKSPACE_ROOT, ContainerSettings, LABEL_MANAGED, LABEL_ROLE,
    LABEL_USER, LABEL_WORKSPACE, Limits, RunnerError, SandboxMode, SecretText, Tier, UserEntry,
    VmBootstrap,
};

/// `/tmp` inside both containers: a small private tmpfs (the root filesystem is read-only).
pub const TMPFS_OPTIONS: &str = "rw,nosuid,nodev,noexec,size=64m";

/// The workspace directories each role gets, and whether read-only. The whole table lives here so
/// a test can hold it against DESIGN §4.
pub fn role_mounts(role: Role) -> &'static [(WorkspaceDir, bool)] {
    match role {
        Role::OxydraVm => &[
            (WorkspaceDir::Internal, false),
            (WorkspaceDir::Shared, false),
            (WorkspaceDir::Tmp, false),
            (WorkspaceDir::Vault, true),
            (WorkspaceDir::Logs, false),
            (WorkspaceDir::Ipc, false),
        ],
        Role::ShellVm => &[
            (WorkspaceDir::Shared, false),
            (WorkspaceDir::Tmp, false),
            (WorkspaceDir::Logs, false),
            (WorkspaceDir::Ipc, false),
        ],
    }
}

/// Everything [`container_body`] needs for one guest.
#[derive(Debug, Clone)]
pub struct GuestSpec<'a> {
    pub role: Role,
    pub user: &'a UserEntry,
    /// The user's workspace on the host.
    pub ws: &'a WorkspacePaths,
    pub settings: &'a ContainerSettings,
    /// The user's agent settings (which environment variables hold its keys).
    pub agent: &'a AgentConfig,
    /// `uid:gid` the guest runs as: the user's own guest identity when the runner is root, else
    /// the invoking user's.
    pub uid: u32,
    pub gid: u32,
    /// The verifier and proof key of the user's shell secret, for `shell-vm`'s bootstrap (over
    /// stdin). The secret itself reaches `oxydra-vm` only through its `.oxydra/` mount.
    pub shell_keys: &'a crate::ShellKeys,
    /// The agent's uid when it differs from the shell's: `shell-vm` lets it connect.
    pub agent_uid: Option<u32>,
    /// The user's memory encryption key, for `oxydra-vm`'s bootstrap only (never a mount, never
    /// the shell's container, never the create request).
    pub memory_key: Option<&'a memory::EncryptionKey>,
    /// The checked `read_paths` of the MCP servers that run through the shell
    /// ([`crate::McpPlan::shell_read_paths`]): mounted read-only at the same place in `shell-vm`'s
    /// container and granted by its Landlock rules.
    pub shell_read_paths: &'a [PathBuf],
}

/// One guest's container: the create request, and what the runner writes to the container's
/// stdin once (then closes it) when the guest reads its bootstrap there.
#[derive(Debug, Clone)]
pub struct GuestContainer {
    pub body: ContainerCreateBody,
    /// `oxydra-vm`'s bootstrap JSON (it may hold the memory key); `None` for `shell-vm`.
    pub stdin_bootstrap: Option<SecretText>,
}

/// The user's workspace as both containers see it: `/workspace/<user>`.
pub fn container_workspace(user: &UserEntry) -> WorkspacePaths {
    WorkspacePaths::for_user(Path::new(CONTAINER_WORKSPACE_ROOT), &user.id)
}

/// The environment variables that hold `agent`'s secrets (provider key, embedding key, remote
/// database token, web search key): passed to `oxydra-vm` only, and only those that are set.
pub fn secret_env_names(agent: &AgentConfig) -> Vec<String> {
    [
        agent.provider.api_key_env.clone(),
        agent.memory.embedding.api_key_env.clone(),
        agent.memory.auth_token_env.clone(),
        agent.tools.web.search.as_ref().and_then(|s| s.key_env()),
    ]
    .into_iter()
    .flatten()
    .filter(|n| !n.is_empty())
    .collect()
}

/// The create request for `spec`'s guest, and its bootstrap when it goes over stdin.
pub fn container_body(spec: &GuestSpec<'_>) -> Result<GuestContainer, RunnerError> {
    let inner = container_workspace(spec.user);
    let mut mounts: Vec<Mount> = role_mounts(spec.role)
        .iter()
        .map(|(dir, read_only)| bind(&spec.ws.dir(*dir), &inner.dir(*dir), *read_only))
        .collect();
    let mut env = vec!["LANG=C.UTF-8".to_owned()];
    if let Ok(level) = std::env::var("OXYDRA_LOG") {
        env.push(format!("OXYDRA_LOG={level}"));
    }
    let limits = match spec.role {
        Role::OxydraVm => spec.settings.oxydra_vm,
        Role::ShellVm => spec.settings.shell_vm,
    };
    let launch = match spec.role {
        Role::OxydraVm => oxydra_vm_launch(spec, &inner, &mut mounts, &mut env)?,
        Role::ShellVm => {
            mounts.extend(crate::read_path_mounts(spec.shell_read_paths));
            shell_vm_launch(spec, &inner)?
        }
    };
    let labels = HashMap::from([
        (LABEL_MANAGED.to_owned(), "true".to_owned()),
        (LABEL_USER.to_owned(), spec.user.id.to_string()),
        (LABEL_ROLE.to_owned(), spec.role.name().to_owned()),
        (
            LABEL_WORKSPACE.to_owned(),
            spec.ws.root.display().to_string(),
        ),
    ]);
    let stdin = launch.stdin_bootstrap.is_some().then_some(true);
    let body = ContainerCreateBody {
        image: Some(launch.image),
        cmd: Some(launch.cmd),
        // Open for the one attached writer; the engine closes it when that writer is done.
        open_stdin: stdin,
        stdin_once: stdin,
        env: Some(env),
        user: Some(format!("{}:{}", spec.uid, spec.gid)),
        working_dir: Some(launch.workdir.display().to_string()),
        labels: Some(labels),
        network_disabled: None,
        host_config: Some(host_config(mounts, launch.network, limits)),
        ..ContainerCreateBody::default()
    };
    Ok(GuestContainer {
        body,
        stdin_bootstrap: launch.stdin_bootstrap,
    })
}

/// What differs between the two guests' containers.
struct Launch {
    image: String,
    cmd: Vec<String>,
    network: String,
    workdir: PathBuf,
    stdin_bootstrap: Option<SecretText>,
}

/// `oxydra-vm`: its bootstrap over stdin (it holds the memory key), the host network (the
/// gateway's port), the agent config mounted, the provider's secrets in its environment.
fn oxydra_vm_launch(
    spec: &GuestSpec<'_>,
    inner: &WorkspacePaths,
    mounts: &mut Vec<Mount>,
    env: &mut Vec<String>,
) -> Result<Launch, RunnerError> {
    let mut boot = VmBootstrap::new(spec.user.id.clone(), CONTAINER_WORKSPACE_ROOT);
    boot.tier = Tier::Container;
    // The mounts confine it; Landlock is added inside when the engine lets it.
    boot.sandbox = SandboxMode::BestEffort;
    boot.gateway_port = spec.user.gateway_port;
    boot.default_model.clone_from(&spec.user.model);
    boot.memory_key = spec
        .memory_key
        .map(|k| crate::SecretText(k.expose().to_owned()));
    // The files are the host's: their text goes in the bootstrap, over stdin like the memory key.
    boot.tls = crate::TlsPem::read(&spec.agent.gateway)?;
    if let Some(agent_toml) = &spec.user.agent_config {
        mounts.push(bind(agent_toml, Path::new(CONTAINER_AGENT_CONFIG), true));
        boot.agent_config = Some(PathBuf::from(CONTAINER_AGENT_CONFIG));
    }
    for name in secret_env_names(spec.agent) {
        if let Ok(value) = std::env::var(&name) {
            env.push(format!("{name}={value}"));
        }
    }
    // No arguments: oxydra-vm reads its bootstrap from stdin, as in the process tier.
    Ok(Launch {
        image: spec.settings.oxydra_vm_image.clone(),
        cmd: Vec::new(),
        network: "host".to_owned(),
        workdir: inner.root.clone(),
        stdin_bootstrap: Some(SecretText(json(&boot)?)),
    })
}

/// `shell-vm`: its bootstrap over stdin (it holds the daemon's proof key, which no command line
/// may show), the user's shell network.
fn shell_vm_launch(spec: &GuestSpec<'_>, inner: &WorkspacePaths) -> Result<Launch, RunnerError> {
    let mut boot = ShellBootstrap::new(spec.user.id.clone(), CONTAINER_WORKSPACE_ROOT);
    spec.shell_keys.fill(&mut boot);
    boot.agent_uid = spec.agent_uid;
    boot.extra_read_paths = spec.shell_read_paths.to_vec();
    Ok(Launch {
        image: spec.settings.shell_vm_image.clone(),
        cmd: vec!["--container".to_owned()],
        network: spec.user.shell_network.docker_mode().to_owned(),
        workdir: inner.shared(),
        stdin_bootstrap: Some(SecretText(json(&boot)?)),
    })
}

/// The confinement of either guest: no capabilities, no new privileges, a read-only root with a
/// small `/tmp`, its resource limits, bounded engine logs.
pub(crate) fn host_config(mounts: Vec<Mount>, network: String, limits: Limits) -> HostConfig {
    HostConfig {
        mounts: Some(mounts),
        network_mode: Some(network),
        cap_drop: Some(vec!["ALL".to_owned()]),
        security_opt: Some(vec!["no-new-privileges:true".to_owned()]),
        readonly_rootfs: Some(true),
        tmpfs: Some(HashMap::from([(
            "/tmp".to_owned(),
            TMPFS_OPTIONS.to_owned(),
        )])),
        init: Some(true),
        pids_limit: Some(limits.pids),
        memory: Some(limits.memory_bytes()),
        memory_swap: Some(limits.memory_bytes()),
        nano_cpus: Some(limits.nano_cpus),
        auto_remove: Some(false),
        // The runner copies the output into logs/<role>.log; the engine's own copy (which
        // that follower and `docker logs` read) is bounded whatever the daemon's default.
        log_config: Some(HostConfigLogConfig {
            typ: Some("json-file".to_owned()),
            config: Some(HashMap::from([
                ("max-size".to_owned(), "10m".to_owned()),
                ("max-file".to_owned(), "2".to_owned()),
            ])),
        }),
        ..HostConfig::default()
    }
}

pub(crate) fn bind(source: &Path, target: &Path, read_only: bool) -> Mount {
    Mount {
        source: Some(source.display().to_string()),
        target: Some(target.display().to_string()),
        typ: Some(MountType::BIND),
        read_only: Some(read_only),
        ..Mount::default()
    }
}

pub(crate) fn json<T: serde::Serialize>(value: &T) -> Result<String, RunnerError> {
    serde_json::to_string(value)
        .map_err(|e| RunnerError::Bootstrap(format!("cannot encode the bootstrap: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ShellNetwork;
    use types::UserId;

    fn spec_body(role: Role, network: ShellNetwork) -> GuestContainer {
        spec_body_with(role, network, &AgentConfig::default()).unwrap()
    }

    fn spec_body_with(
        role: Role,
        network: ShellNetwork,
        agent: &AgentConfig,
    ) -> Result<GuestContainer, RunnerError> {
        let user = UserEntry {
            id: UserId::parse("alice").unwrap(),
            tier: Tier::Container,
            gateway_port: 0,
            agent_config: Some(PathBuf::from("/etc/agents/alice.toml")),
            shell_network: network,
            model: None,
        };
        let ws = WorkspacePaths::new("/srv/ws/alice");
        let settings = ContainerSettings::default();
        container_body(&GuestSpec {
            role,
            user: &user,
            ws: &ws,
            settings: &settings,
            agent,
            uid: 1000,
            gid: 100,
            shell_keys: &crate::ShellKeys::of(SHELL_SECRET),
            agent_uid: None,
            memory_key: Some(&test_key()),
            shell_read_paths: &[],
        })
    }

    const SHELL_SECRET: &str = "the-users-shell-secret";

    fn test_key() -> memory::EncryptionKey {
        memory::EncryptionKey::parse(&"6b65".repeat(16)).unwrap()
    }

    /// The memory key reaches `oxydra-vm` in the bootstrap it reads on stdin, and is in neither
    /// container's create request (what the engine keeps and `docker inspect` shows): not a
    /// command, environment, mount or label.
    #[test]
    fn the_memory_key_goes_to_oxydra_vm_stdin_only() {
        let key = test_key();
        let vm = spec_body(Role::OxydraVm, ShellNetwork::None);
        let stdin = vm.stdin_bootstrap.clone().unwrap();
        let boot = VmBootstrap::from_json(&stdin.0).unwrap();
        assert_eq!(boot.memory_key().unwrap(), Some(key.clone()));
        assert_eq!(vm.body.cmd, Some(Vec::new()));
        assert_eq!(
            (vm.body.open_stdin, vm.body.stdin_once),
            (Some(true), Some(true))
        );
        let shell = spec_body(Role::ShellVm, ShellNetwork::None);
        // The shell's bootstrap holds the daemon's proof key: stdin too, never the request.
        let proof_key = tools::proof_key_of(SHELL_SECRET).0;
        let shell_boot: ShellBootstrap =
            serde_json::from_str(&shell.stdin_bootstrap.clone().unwrap().0).unwrap();
        assert_eq!(shell_boot.validate(), Ok(()));
        assert_eq!(shell_boot.proof_key.map(|k| k.0), Some(proof_key.clone()));
        assert_eq!(shell.body.cmd, Some(vec!["--container".to_owned()]));
        assert_eq!(
            (shell.body.open_stdin, shell.body.stdin_once),
            (Some(true), Some(true))
        );
        for body in [&vm.body, &shell.body] {
            let sent = serde_json::to_string(body).unwrap();
            assert!(!sent.contains(key.expose()), "{sent}");
            assert!(!sent.contains(&proof_key), "{sent}");
            assert!(!sent.contains(SHELL_SECRET), "{sent}");
            assert!(sent.contains("/workspace/alice"), "the check can fail");
        }
        assert!(stdin.0.contains(key.expose()), "the check can fail");
    }

    /// The gateway's certificate and key (host files the container does not see) reach
    /// `oxydra-vm` as text in its stdin bootstrap, and the key is in no create request.
    #[test]
    fn the_tls_certificate_and_key_go_to_oxydra_vm_stdin_only() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = test_support::self_signed_cert(dir.path(), "gw");
        let mut agent = AgentConfig::default();
        agent.gateway.tls_cert = Some(cert.clone());
        agent.gateway.tls_key = Some(key.clone());
        let vm = spec_body_with(Role::OxydraVm, ShellNetwork::None, &agent).unwrap();
        let boot = VmBootstrap::from_json(&vm.stdin_bootstrap.unwrap().0).unwrap();
        let pem = boot.tls.unwrap();
        assert_eq!(pem.cert, std::fs::read_to_string(&cert).unwrap());
        let key_text = std::fs::read_to_string(&key).unwrap();
        assert_eq!(pem.key.0, key_text);
        assert!(pem.identity().is_ok());
        let sent = serde_json::to_string(&vm.body).unwrap();
        let key_line = key_text.lines().nth(1).unwrap();
        assert!(!sent.contains(key_line), "{sent}");
        assert!(!sent.contains(key.to_str().unwrap()), "{sent}");

        agent.gateway.tls_key = Some(dir.path().join("gone.pem"));
        let Err(e) = spec_body_with(Role::OxydraVm, ShellNetwork::None, &agent) else {
            panic!("a missing key was accepted");
        };
        assert!(
            e.to_string().starts_with("cannot read gateway.tls_key"),
            "{e}"
        );
    }

    fn mounts(body: &ContainerCreateBody) -> Vec<(String, String, bool)> {
        let host = body.host_config.as_ref().unwrap();
        host.mounts
            .as_ref()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m.source.clone().unwrap(),
                    m.target.clone().unwrap(),
                    m.read_only.unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn oxydra_vm_mounts_follow_the_visibility_table() {
        let vm = spec_body(Role::OxydraVm, ShellNetwork::None);
        let body = &vm.body;
        let m = |dir: &str, ro| {
            (
                format!("/srv/ws/alice/{dir}"),
                format!("/workspace/alice/{dir}"),
                ro,
            )
        };
        assert_eq!(
            mounts(body),
            vec![
                m(".oxydra", false),
                m("shared", false),
                m("tmp", false),
                m("vault", true),
                m("logs", false),
                m("ipc", false),
                (
                    "/etc/agents/alice.toml".into(),
                    "/etc/oxydra/agent.toml".into(),
                    true
                ),
            ]
        );
        let host = body.host_config.as_ref().unwrap();
        assert_eq!(host.network_mode.as_deref(), Some("host"));
        let boot = VmBootstrap::from_json(&vm.stdin_bootstrap.unwrap().0).unwrap();
        assert_eq!(boot.workspace_root, PathBuf::from("/workspace"));
        assert_eq!(boot.tier, Tier::Container);
        assert_eq!(
            boot.agent_config,
            Some(PathBuf::from("/etc/oxydra/agent.toml"))
        );
    }

    #[test]
    fn shell_vm_gets_four_dirs_and_no_network_by_default() {
        let body = spec_body(Role::ShellVm, ShellNetwork::None).body;
        let targets: Vec<String> = mounts(&body).into_iter().map(|(_, t, _)| t).collect();
        assert_eq!(
            targets,
            ["shared", "tmp", "logs", "ipc"]
                .map(|d| format!("/workspace/alice/{d}"))
                .to_vec()
        );
        assert!(mounts(&body).iter().all(|(_, _, ro)| !ro));
        let host = body.host_config.as_ref().unwrap();
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        let with_net = spec_body(Role::ShellVm, ShellNetwork::Host);
        assert_eq!(
            with_net.body.host_config.unwrap().network_mode.as_deref(),
            Some("host")
        );
    }

    #[test]
    fn both_roles_are_hardened_and_limited() {
        for role in [Role::OxydraVm, Role::ShellVm] {
            let body = spec_body(role, ShellNetwork::None).body;
            assert_eq!(body.user.as_deref(), Some("1000:100"));
            // No engine socket, in any form, reaches a guest.
            assert!(
                mounts(&body)
                    .iter()
                    .all(|(source, target, _)| !source.contains("docker")
                        && !target.contains("docker")),
                "{role}"
            );
            let host = body.host_config.unwrap();
            assert_eq!(host.cap_drop, Some(vec!["ALL".to_owned()]));
            assert_eq!(
                host.security_opt,
                Some(vec!["no-new-privileges:true".to_owned()])
            );
            assert_eq!(host.readonly_rootfs, Some(true));
            assert_eq!(host.init, Some(true));
            assert!(host.pids_limit.unwrap() >= 16);
            assert!(host.memory.unwrap() >= 64 << 20);
            assert!(host.nano_cpus.unwrap() > 0);
            let log = host.log_config.unwrap();
            assert_eq!(log.typ.as_deref(), Some("json-file"));
            assert_eq!(log.config.unwrap()["max-size"], "10m");
            let labels = body.labels.unwrap();
            assert_eq!(labels[LABEL_USER], "alice");
            assert_eq!(labels[LABEL_ROLE], role.name());
            assert_eq!(labels[LABEL_WORKSPACE], "/srv/ws/alice");
        }
    }
}
