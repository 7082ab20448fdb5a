//! The runner's shared pieces: what the `runner` and `oxydra-vm` binaries both need to agree on.
//!
//! - `agent` — [`compose`]: one user's agent (store, tool registry, runtime), built in one place
//! - `models` — [`model_options`]: the models the user's sessions may switch to (`[models.<name>]`)
//! - `config` — `runner.toml`: raw file struct, then the resolved [`RunnerConfig`]
//! - `provision` — [`provision`]: a user's `<root>/<user>/{.oxydra,shared,tmp,vault,logs,ipc}`
//! - `bootstrap` — [`VmBootstrap`]: what the runner hands an `oxydra-vm` at start
//! - `marker` — the files of a running user ([`GatewayMarker`], [`Health`], [`RunnerMarker`]) and
//!   where each lives
//! - `beneath` — [`SafeDir`]: the one way to write where a less privileged process can write
//!   (no link, FIFO or hard link planted there is ever followed)
//! - `db_place` — [`check_db_place`]: a local memory database inside a workspace only in `.oxydra/`;
//!   [`check_db_links`]: no link or second name planted on the way to it before an operator's
//!   command opens it
//! - `procs` — process liveness and signals by pid
//! - `heal` — [`heal`]: what the runner owns in a workspace, put back before each (re)start
//! - `cgroup` — [`Tracking`]: each guest and every process it starts in a cgroup that ends with it
//! - `privilege` — per-user guest uids (agent and shell) when the runner is root, and dropping
//!   to them; `guest_ids` — their host-wide allocation record; `ownership` — who owns what in a
//!   workspace ([`own_workspace`])
//! - `memory_key` — per-user memory encryption keys (`[memory_encryption]`), kept outside every
//!   workspace and handed to `oxydra-vm` in its bootstrap
//! - `mcp_guest` — the user's stdio MCP servers confined as the shell: their `read_paths`
//!   checked ([`plan_mcp`]), and in the container tier a server's own container
//!   ([`mcp_container_body`])
//! - `shell_secret` — the per-user secret `oxydra-vm` proves to the shell daemon
//! - `images` — the container tier's guest images, built `FROM scratch` from local binaries
//! - `bins` — where the guest binaries (`oxydra-vm`, `shell-vm`) are found
//! - `toml_error` — TOML mistakes as `line N, key.path: message`
//! - `error` — [`RunnerError`]
//!
//! It does not launch or supervise anything (that is the `runner` binary's process tier) and it
//! does not serve an agent (the `oxydra-vm` binary serves what [`compose`] builds).

mod agent;
mod beneath;
mod bins;
mod bootstrap;
mod cgroup;
mod config;
mod container_config;
pub mod container_spec;
mod db_place;
mod docker;
mod error;
mod guest_ids;
mod heal;
pub mod images;
mod marker;
mod mcp_guest;
mod mcp_launcher;
mod memory_key;
mod models;
mod operator_dir;
mod ownership;
mod privilege;
mod procs;
mod provision;
mod shell_secret;
mod toml_error;

pub use agent::{
    Agent, ComposeError, MCP_READY_WAIT, MemoryState, compose, compose_with, mcp_registry,
};
pub use beneath::{Entry, Found, SafeDir, remove_beneath, write_beneath};
pub use bins::{BIN_DIR_ENV, guest_binary};
pub use bootstrap::{SandboxMode, SecretText, Tier, TlsPem, VmBootstrap};
pub use cgroup::{Placement, Tracking, UserCgroup};
pub use config::{
    CONFIG_FILE_NAME, RestartPolicy, RunnerConfig, Supervision, UserEntry, load_agent_config,
};
pub use container_config::{
    ContainerSettings, Limits, ShellNetwork, default_oxydra_vm_image, default_shell_vm_image,
};
pub use db_place::{check_db_links, check_db_place};
pub use docker::{
    CONTAINER_AGENT_CONFIG, CONTAINER_WORKSPACE_ROOT, LABEL_MANAGED, LABEL_ROLE, LABEL_USER,
    LABEL_WORKSPACE, connect_docker, container_name, docker_message, is_not_found,
};
pub use error::RunnerError;
pub use guest_ids::HOST_GUEST_IDS;
pub use heal::{Occasion, heal};
pub use marker::{
    ChildInfo, GatewayMarker, HEALTH_FILE, Health, RUNNER_DIR, RUNNER_MARKER, RunnerMarker,
    health_path, oxydra_vm_files, read_json, remove_if_exists, remove_run_files, run_files,
    runner_log_dir, runner_log_path, runner_logs, runner_marker_path, write_json_atomic,
};
pub use mcp_guest::{
    LABEL_MCP_SERVER, MCP_SHELL_VM, McpContainer, McpContainerSpec, McpPlan, ReadPathRules,
    check_read_path, mcp_container_body, mcp_container_name, mcp_socket, plan_mcp,
    read_path_mounts,
};
pub use mcp_launcher::ShellLauncher;
pub use memory_key::{
    MEMORY_KEY_FILE, MemoryEncryption, MemoryPlace, UserKey, clear_forgotten, database_files,
    destroy_key, forgotten_at, is_plaintext_db, key_for_agent, key_for_cli, mark_forgotten,
    memory_key_path, new_key, remove_database_files, store_key, stored_key, user_key,
};
pub use models::model_options;
pub use operator_dir::{TargetPolicy, Want, open_operator_dir, open_operator_file};
pub use ownership::own_workspace;
pub use privilege::{
    DEFAULT_GUEST_UID_BASE, GUEST_IDS_FILE, GuestIdentity, SHARED_UID_NOTICE, Separation,
    UserIdentities, agent_config_copy, check_reachable, drop_to, recorded_identity,
    release_identity, runs_as_root, separation, write_owned,
};
pub use procs::{is_alive, looks_like, signal};
pub use provision::provision;
pub use shell_secret::{ShellKeys, issue_shell_secret, stored_verifier, verifier_of};
