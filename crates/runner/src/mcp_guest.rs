//! The user's stdio MCP servers (`[mcp.servers.<name>]` with `command`), as the runner confines
//! them: never as the agent, always with no more than the user's shell may have.
//!
//! [`plan_mcp`] reads them from `agent.toml` and checks each `read_paths` entry
//! ([`check_read_path`]): absolute, existing, resolved through its links, and nowhere near a
//! workspace (not inside the workspace root, not above it), the runner's own state or the
//! kernel's views (`/proc`, `/sys`, `/dev`, `/run`). A bad entry refuses the start with a clear
//! error; nothing is launched.
//!
//! - A server that runs through the user's `shell-vm` (the process tier, and a container-tier
//!   server without `image`) adds its paths to [`McpPlan::shell_read_paths`]: the shell's
//!   Landlock grants (and, in the container tier, read-only mounts at the same place).
//! - A container-tier server with `image` gets a container of its own ([`mcp_container_body`]):
//!   that image, our `shell-vm` mounted read-only as its entrypoint (listening on
//!   [`types::mcp_server_socket`] in `ipc/`), `shared/` and `ipc/` the only workspace mounts, its
//!   `read_paths` read-only, no network unless `network = true`, the shell's uid and the shell
//!   container's hardening.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use bollard::models::{ContainerCreateBody, Mount, MountType};
use types::{AgentConfig, McpServerConfig, ShellBootstrap, UserId, WorkspacePaths};

use crate::container_spec::{GuestContainer, bind, container_workspace, host_config, json};
use crate::{
    CONTAINER_WORKSPACE_ROOT, LABEL_MANAGED, LABEL_ROLE, LABEL_USER, LABEL_WORKSPACE, Limits,
    RunnerError, Tier, UserEntry, container_name,
};

/// Label on an MCP server's container: the server's name.
pub const LABEL_MCP_SERVER: &str = "org.oxydra.mcp-server";
/// Where our `shell-vm` is mounted in an MCP server's container (its entrypoint).
pub const MCP_SHELL_VM: &str = "/oxydra/shell-vm";
/// Kernel and runtime views no server may be granted, whatever is below them.
const SYSTEM_VIEWS: &[&str] = &["/proc", "/sys", "/dev", "/run"];

/// Where read paths may not go.
#[derive(Debug, Clone)]
pub struct ReadPathRules {
    /// Every user's workspace lives below it (and the runner's keys in its `.runner/`).
    pub workspace_root: PathBuf,
    /// The runner's own state: its configuration directory, the guest-id record's directory.
    pub runner_state: Vec<PathBuf>,
}

/// One container-tier server with an image of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpContainer {
    pub name: String,
    pub image: String,
    pub network: bool,
    pub read_paths: Vec<PathBuf>,
}

/// What the runner does for the user's stdio MCP servers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpPlan {
    /// Granted read-only to the user's `shell-vm` (servers that run through it).
    pub shell_read_paths: Vec<PathBuf>,
    /// Servers in containers of their own.
    pub containers: Vec<McpContainer>,
}

/// The enabled stdio servers of `agent` in `tier`, their read paths checked.
pub fn plan_mcp(
    agent: &AgentConfig,
    tier: Tier,
    rules: &ReadPathRules,
) -> Result<McpPlan, RunnerError> {
    let mut plan = McpPlan::default();
    let stdio = agent
        .mcp
        .servers
        .iter()
        .filter(|(_, s)| s.enabled && s.command.is_some());
    for (name, server) in stdio {
        let paths = server
            .read_paths
            .iter()
            .map(|raw| check_read_path(name, raw, rules))
            .collect::<Result<Vec<_>, _>>()?;
        match (&server.image, tier) {
            (Some(image), Tier::Container) => plan.containers.push(McpContainer {
                name: name.clone(),
                image: image.clone(),
                network: server.network,
                read_paths: paths,
            }),
            _ => plan.shell_read_paths.extend(paths),
        }
    }
    plan.shell_read_paths.sort();
    plan.shell_read_paths.dedup();
    Ok(plan)
}

/// `raw` (from `[mcp.servers.<server>].read_paths`) resolved, or why it may not be granted.
pub fn check_read_path(
    server: &str,
    raw: &str,
    rules: &ReadPathRules,
) -> Result<PathBuf, RunnerError> {
    let refuse = |problem: &str| RunnerError::Refused {
        path: PathBuf::from(raw),
        problem: format!("[mcp.servers.{server}] read_paths: {problem}"),
    };
    if !raw.starts_with('/') {
        return Err(refuse("must be an absolute path"));
    }
    let path = std::fs::canonicalize(raw)
        .map_err(|_| refuse("does not exist (or cannot be reached); create it or remove it"))?;
    let resolve = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    let root = resolve(&rules.workspace_root);
    let near = |other: &Path| path.starts_with(other) || other.starts_with(&path);
    if near(&root) {
        return Err(refuse(
            "is inside the workspaces or above them (which would open .oxydra/, vault/ and other \
             users' files); name a directory outside the workspace root",
        ));
    }
    if rules
        .runner_state
        .iter()
        .map(|p| resolve(p))
        .any(|p| near(&p))
    {
        return Err(refuse(
            "is the runner's own state or holds it; name another directory",
        ));
    }
    if path == Path::new("/") || SYSTEM_VIEWS.iter().any(|v| path.starts_with(v)) {
        return Err(refuse(
            "is a system view (/, /proc, /sys, /dev, /run); name a directory of files",
        ));
    }
    Ok(path)
}

/// The name of server `server`'s container: `oxydra-<user>-mcp-<server>-<8 hex>`.
pub fn mcp_container_name(workspace_root: &Path, user: &UserId, server: &str) -> String {
    container_name(workspace_root, user, &format!("mcp-{server}"))
}

/// Everything [`mcp_container_body`] needs.
#[derive(Debug, Clone)]
pub struct McpContainerSpec<'a> {
    pub server: &'a McpContainer,
    pub user: &'a UserEntry,
    /// The user's workspace on the host.
    pub ws: &'a WorkspacePaths,
    /// The host's `shell-vm` binary, mounted read-only as the entrypoint.
    pub shell_vm: &'a Path,
    /// The shell's uid and gid (the server runs as the shell would).
    pub uid: u32,
    pub gid: u32,
    pub shell_keys: &'a crate::ShellKeys,
    pub agent_uid: Option<u32>,
    /// The shell container's limits.
    pub limits: Limits,
}

/// The create request of one MCP server's container (see the module docs). Pure.
pub fn mcp_container_body(spec: &McpContainerSpec<'_>) -> Result<GuestContainer, RunnerError> {
    let inner = container_workspace(spec.user);
    let mut boot = ShellBootstrap::new(spec.user.id.clone(), CONTAINER_WORKSPACE_ROOT);
    spec.shell_keys.fill(&mut boot);
    boot.agent_uid = spec.agent_uid;
    boot.socket_path = Some(types::mcp_server_socket(&inner, &spec.server.name));
    boot.extra_read_paths = spec.server.read_paths.clone();
    boot.max_mcp_servers = 4;
    let mut mounts = vec![
        bind(spec.shell_vm, Path::new(MCP_SHELL_VM), true),
        bind(&spec.ws.shared(), &inner.shared(), false),
        bind(&spec.ws.ipc(), &inner.ipc(), false),
        // The shell's sandbox wants its four directories; here two are private and empty.
        tmpfs(&inner.tmp()),
        tmpfs(&inner.logs()),
    ];
    mounts.extend(spec.server.read_paths.iter().map(|p| bind(p, p, true)));
    let labels = HashMap::from([
        (LABEL_MANAGED.to_owned(), "true".to_owned()),
        (LABEL_USER.to_owned(), spec.user.id.to_string()),
        (LABEL_ROLE.to_owned(), "mcp".to_owned()),
        (LABEL_MCP_SERVER.to_owned(), spec.server.name.clone()),
        (
            LABEL_WORKSPACE.to_owned(),
            spec.ws.root.display().to_string(),
        ),
    ]);
    let network = if spec.server.network {
        "bridge"
    } else {
        "none"
    };
    let body = ContainerCreateBody {
        image: Some(spec.server.image.clone()),
        entrypoint: Some(vec![MCP_SHELL_VM.to_owned()]),
        // The bootstrap (with the daemon's proof key) goes over stdin, never the command line.
        cmd: Some(vec!["--container".to_owned()]),
        open_stdin: Some(true),
        stdin_once: Some(true),
        env: Some(vec!["LANG=C.UTF-8".to_owned()]),
        user: Some(format!("{}:{}", spec.uid, spec.gid)),
        working_dir: Some(inner.shared().display().to_string()),
        labels: Some(labels),
        host_config: Some(host_config(mounts, network.to_owned(), spec.limits)),
        ..ContainerCreateBody::default()
    };
    Ok(GuestContainer {
        body,
        stdin_bootstrap: Some(crate::SecretText(json(&boot)?)),
    })
}

fn tmpfs(target: &Path) -> Mount {
    Mount {
        target: Some(target.display().to_string()),
        typ: Some(MountType::TMPFS),
        ..Mount::default()
    }
}

/// The read-only mounts of `paths` at the same place (the shell container's share of
/// [`McpPlan::shell_read_paths`]).
pub fn read_path_mounts(paths: &[PathBuf]) -> Vec<Mount> {
    paths.iter().map(|p| bind(p, p, true)).collect()
}

/// The socket the MCP client asks to start server `name`: its own container's
/// ([`types::mcp_server_socket`]) for a container-tier server with `image`, else the user's shell
/// (`ipc/shell.sock`). Either way the same request ([`types::McpSpawn`]) and the shell secret.
pub fn mcp_socket(
    ws: &WorkspacePaths,
    name: &str,
    server: &McpServerConfig,
    tier: Tier,
) -> PathBuf {
    if tier == Tier::Container && server.image.is_some() {
        types::mcp_server_socket(ws, name)
    } else {
        types::shell_socket_path(ws)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::ShellNetwork;

    struct Host {
        dir: tempfile::TempDir,
        rules: ReadPathRules,
    }

    /// `<tmp>/ws/{alice,bob}/...`, `<tmp>/etc-oxydra` (the runner's config), `<tmp>/data`,
    /// and `<tmp>/link -> ws/bob`.
    fn host() -> Host {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        for d in [
            "ws/alice/.oxydra",
            "ws/bob/shared",
            "etc-oxydra",
            "data/docs",
        ] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        std::os::unix::fs::symlink(root.join("bob"), dir.path().join("link")).unwrap();
        let rules = ReadPathRules {
            workspace_root: root,
            runner_state: vec![dir.path().join("etc-oxydra")],
        };
        Host { dir, rules }
    }

    fn check(host: &Host, raw: &str, expected: Result<&str, &str>) {
        let raw = raw.replace("<tmp>", host.dir.path().to_str().unwrap());
        let got = check_read_path("files", &raw, &host.rules);
        match (got, expected) {
            (Ok(path), Ok(want)) => {
                let want = want.replace("<tmp>", host.dir.path().to_str().unwrap());
                assert_eq!(path, std::fs::canonicalize(want).unwrap(), "{raw}");
            }
            (Err(e), Err(says)) => {
                let text = e.to_string();
                assert!(text.contains("[mcp.servers.files] read_paths"), "{text}");
                assert!(text.contains(says), "{raw}: {text}");
            }
            (got, _) => panic!("{raw}: {got:?}"),
        }
    }

    #[test]
    fn read_paths_outside_every_workspace_and_the_runners_state() {
        let h = host();
        check(&h, "<tmp>/data", Ok("<tmp>/data"));
        check(&h, "<tmp>/data/docs/", Ok("<tmp>/data/docs"));
        check(&h, "/usr/share", Ok("/usr/share"));
        check(&h, "data", Err("absolute"));
        check(&h, "<tmp>/missing", Err("does not exist"));
        for inside in [
            "<tmp>/ws/bob/shared",
            "<tmp>/ws/alice/.oxydra",
            "<tmp>/ws",
            "<tmp>",
        ] {
            check(&h, inside, Err("workspace root"));
        }
        // A link into another user's workspace is judged by where it leads.
        check(&h, "<tmp>/link", Err("workspace root"));
        check(&h, "<tmp>/data/../ws/bob", Err("workspace root"));
        check(&h, "<tmp>/etc-oxydra", Err("runner's own state"));
        check(&h, "/", Err("workspace root"));
        for view in ["/proc", "/proc/1", "/sys", "/dev", "/run"] {
            check(&h, view, Err("system view"));
        }
    }

    fn server(image: Option<&str>, read_paths: &[&str]) -> McpServerConfig {
        McpServerConfig {
            command: Some("srv".into()),
            image: image.map(str::to_owned),
            read_paths: read_paths.iter().map(|p| (*p).to_owned()).collect(),
            ..McpServerConfig::default()
        }
    }

    #[test]
    fn servers_run_through_the_shell_or_in_their_own_container() {
        let h = host();
        let data = h.dir.path().join("data");
        let docs = data.join("docs");
        let mut agent = AgentConfig::default();
        let http = McpServerConfig {
            url: Some("http://127.0.0.1:1/mcp".into()),
            ..McpServerConfig::default()
        };
        let off = McpServerConfig {
            enabled: false,
            ..server(None, &["/nonexistent"])
        };
        agent.mcp.servers = BTreeMap::from([
            ("a".into(), server(None, &[data.to_str().unwrap()])),
            (
                "b".into(),
                server(Some("srv:local"), &[docs.to_str().unwrap()]),
            ),
            ("web".into(), http),
            ("off".into(), off),
        ]);
        let process = plan_mcp(&agent, Tier::Process, &h.rules).unwrap();
        let (data, docs) = (data.canonicalize().unwrap(), docs.canonicalize().unwrap());
        assert_eq!(
            process,
            McpPlan {
                shell_read_paths: vec![data.clone(), docs.clone()],
                containers: Vec::new(),
            }
        );
        let container = plan_mcp(&agent, Tier::Container, &h.rules).unwrap();
        assert_eq!(
            container,
            McpPlan {
                shell_read_paths: vec![data],
                containers: vec![McpContainer {
                    name: "b".into(),
                    image: "srv:local".into(),
                    network: false,
                    read_paths: vec![docs],
                }],
            }
        );
        let ws = WorkspacePaths::new("/srv/ws/alice");
        assert_eq!(
            mcp_socket(&ws, "b", &agent.mcp.servers["b"], Tier::Container),
            PathBuf::from("/srv/ws/alice/ipc/mcp-b.sock")
        );
        for (name, tier) in [("b", Tier::Process), ("a", Tier::Container)] {
            let socket = mcp_socket(&ws, name, &agent.mcp.servers[name], tier);
            assert_eq!(socket, PathBuf::from("/srv/ws/alice/ipc/shell.sock"));
        }
        agent
            .mcp
            .servers
            .insert("c".into(), server(None, &["/proc"]));
        let err = plan_mcp(&agent, Tier::Process, &h.rules).unwrap_err();
        assert!(err.to_string().contains("[mcp.servers.c]"), "{err}");
    }

    #[test]
    fn a_servers_container_sees_shared_ipc_and_its_read_paths_only() {
        let user = UserEntry {
            id: UserId::parse("alice").unwrap(),
            gateway_port: 0,
            agent_config: Some(PathBuf::from("/etc/agents/alice.toml")),
            shell_network: ShellNetwork::None,
            tier: Tier::Container,
            model: None,
        };
        let ws = WorkspacePaths::new("/srv/ws/alice");
        let mut server = McpContainer {
            name: "files".into(),
            image: "files-mcp:local".into(),
            network: false,
            read_paths: vec![PathBuf::from("/opt/docs")],
        };
        let keys = crate::ShellKeys::of("the-users-shell-secret");
        let guest = |server: &McpContainer| {
            mcp_container_body(&McpContainerSpec {
                server,
                user: &user,
                ws: &ws,
                shell_vm: Path::new("/usr/local/lib/oxydra/shell-vm"),
                uid: 2001,
                gid: 2001,
                shell_keys: &keys,
                agent_uid: Some(2000),
                limits: crate::ContainerSettings::default().shell_vm,
            })
            .unwrap()
        };
        let body = |server: &McpContainer| guest(server).body;
        let b = body(&server);
        let host = b.host_config.clone().unwrap();
        let mounts: Vec<(String, String, bool)> = host
            .mounts
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m.source.clone().unwrap_or_default(),
                    m.target.clone().unwrap_or_default(),
                    m.read_only.unwrap_or(false),
                )
            })
            .collect();
        let m = |s: &str, t: &str, ro| (s.to_owned(), t.to_owned(), ro);
        assert_eq!(
            mounts,
            [
                m("/usr/local/lib/oxydra/shell-vm", MCP_SHELL_VM, true),
                m("/srv/ws/alice/shared", "/workspace/alice/shared", false),
                m("/srv/ws/alice/ipc", "/workspace/alice/ipc", false),
                m("", "/workspace/alice/tmp", false),
                m("", "/workspace/alice/logs", false),
                m("/opt/docs", "/opt/docs", true),
            ]
        );
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        assert_eq!(host.cap_drop, Some(vec!["ALL".to_owned()]));
        assert_eq!(host.readonly_rootfs, Some(true));
        assert_eq!(b.user.as_deref(), Some("2001:2001"));
        assert_eq!(b.image.as_deref(), Some("files-mcp:local"));
        assert_eq!(b.entrypoint, Some(vec![MCP_SHELL_VM.to_owned()]));
        // The bootstrap, with the daemon's proof key, goes over stdin only.
        let proof_key = keys.proof_key.clone().unwrap().0;
        let sent = serde_json::to_string(&b).unwrap();
        assert!(!sent.contains(&proof_key), "{sent}");
        assert_eq!(b.cmd, Some(vec!["--container".to_owned()]));
        assert_eq!((b.open_stdin, b.stdin_once), (Some(true), Some(true)));
        let stdin = guest(&server).stdin_bootstrap.unwrap().0;
        let boot: ShellBootstrap = serde_json::from_str(&stdin).unwrap();
        assert_eq!(boot.validate(), Ok(()));
        assert_eq!(boot.proof_key.as_ref().map(|k| &k.0), Some(&proof_key));
        assert_eq!(
            boot.socket(),
            PathBuf::from("/workspace/alice/ipc/mcp-files.sock")
        );
        assert_eq!(boot.extra_read_paths, [PathBuf::from("/opt/docs")]);
        assert_eq!(boot.agent_uid, Some(2000));
        server.network = true;
        let networked = body(&server).host_config.unwrap().network_mode;
        assert_eq!(networked.as_deref(), Some("bridge"));
    }
}
