//! The async half of `oxydra-vm`: the agent (composed by [`runner::compose`]: store, tools,
//! runtime), the gateway serving it, markers, health (see `health`), shutdown.

use std::time::Duration;

use anyhow::Context;
use gateway::{Gateway, GatewayConfig, GatewayToken, RunningGateway, UserAgent};
use memory::{LegacyDir, OpenOptions};
use runner::{GatewayMarker, VmBootstrap};
use types::{AgentConfig, WorkspacePaths};

use crate::health::HealthProbe;

/// How often `.oxydra/health.json` is refreshed.
const HEALTH_EVERY: Duration = Duration::from_secs(10);
/// While the shell does not answer (it starts beside this process, or is restarting), the health
/// is checked again after 10 ms, then twice as long each time up to 250 ms: the file says `ok`
/// within moments of the shell serving.
const RETRY_FIRST: Duration = Duration::from_millis(10);
const RETRY_MAX: Duration = Duration::from_millis(250);

pub async fn run(
    boot: VmBootstrap,
    ws: WorkspacePaths,
    config: AgentConfig,
    token: GatewayToken,
    sandbox: &'static str,
    tls: Option<gateway::TlsIdentity>,
) -> anyhow::Result<()> {
    // From here on SIGTERM/SIGINT are a stop seen once the markers are written (and then removed),
    // never the default action killing this process half-way through writing one.
    let mut stop = sandbox::guest::ShutdownSignal::listen();
    // The runner moved any legacy database before launch; this process cannot see its old place.
    // The memory key (if any) comes only from the bootstrap, never from a file it could read.
    let options = OpenOptions {
        legacy_dir: LegacyDir::Skip,
        encryption_key: boot.memory_key()?,
        ..OpenOptions::default()
    };
    let provider = provider::from_config(&config.provider).context("cannot set up the provider")?;
    let models = runner::model_options(&config, &provider);
    // The user's stdio MCP servers run in the shell's confinement, never as this process's
    // children: the shell daemon (or a server's own container) starts them and pipes their stdio.
    let launcher = std::sync::Arc::new(runner::ShellLauncher::new(ws.clone(), boot.tier));
    let agent = runner::compose_with(&config, &ws.root, provider, options, launcher).await?;
    let mcp_clients = agent.mcp_clients.clone();
    // Sessions start on the user's model from runner.toml, else `[provider]`'s.
    let default_model = boot
        .default_model
        .clone()
        .unwrap_or_else(|| types::DEFAULT_MODEL_NAME.to_owned());
    let runtime = agent
        .runtime
        .with_models(models, &default_model)
        .with_context(|| {
            format!(
                "runner.toml starts this user's sessions on the model {default_model:?}: add \
                 [models.{default_model}] to their agent.toml (or set its key's variable)"
            )
        })?;
    let memory = agent.memory;
    let metrics = agent.metrics;
    let mcp = mcp::McpServer::new(agent.mcp_tools, boot.user_id.clone(), ws.clone())
        .context("cannot set up the MCP server")?;
    let limits = &config.gateway;
    let mcp_limits = mcp::McpLimits {
        max_sessions: limits.mcp_max_sessions as usize,
        idle: Duration::from_secs(limits.mcp_idle_secs),
        ..mcp::McpLimits::default()
    };
    let mut user = UserAgent::new(boot.user_id.clone(), token, ws.clone(), runtime)
        .with_metrics(move || metrics.render())
        .with_mcp(mcp, mcp_limits);
    if let Some(clients) = &mcp_clients {
        user = user.with_mcp_clients(std::sync::Arc::clone(clients));
    }
    if let Some(schedules) = agent.schedules {
        let scheduler = runtime::Scheduler::new(schedules, boot.user_id.clone(), ws.clone());
        user = user.with_scheduler(scheduler);
    }
    let mut gateway = Gateway::new(GatewayConfig {
        port: boot.gateway_port,
        auth_timeout: std::time::Duration::from_secs(limits.auth_timeout_secs),
        max_connections: limits.max_connections.map(|n| n as usize),
        max_unauthenticated: limits.max_unauthenticated.map(|n| n as usize),
        body_timeout: Duration::from_secs(limits.body_timeout_secs),
        bind: limits.bind.unwrap_or(GatewayConfig::default().bind),
        secure_cookie: limits.secure_cookie,
        tls,
        allow_hosts: limits.listed_hosts()?,
        ..GatewayConfig::default()
    });
    gateway.add_user(user)?;
    let running = gateway.start().await?;

    let started_at = now();
    let marker = GatewayMarker {
        url: running.url(),
        pid: std::process::id(),
        started_at,
    };
    let probe = HealthProbe {
        boot: &boot,
        ws: &ws,
        config: &config,
        memory,
        sandbox,
        mcp: mcp_clients,
    };
    // Health first, so whoever sees the endpoint also finds the health file.
    let mut healthy = probe.write().await;
    // The public copy first: once the trusted one exists the runner reports ready, and a client
    // reading `ipc/` then finds the endpoint too. The shell can write `ipc/` (and plant a
    // directory at that name): a failure there is only a warning.
    if let Err(e) = runner::write_json_atomic(&ws.root, &ws.public_endpoint(), &marker) {
        tracing::warn!(error = %e, "could not write the public endpoint copy in ipc/");
    }
    runner::write_json_atomic(&ws.root, &ws.endpoint(), &marker)?;
    tracing::info!(url = %marker.url, "oxydra-vm ready");

    let mut retry = RETRY_FIRST;
    loop {
        let wait = if healthy {
            retry = RETRY_FIRST;
            HEALTH_EVERY
        } else {
            let wait = retry;
            retry = (retry * 2).min(RETRY_MAX);
            wait
        };
        tokio::select! {
            () = stop.recv() => break,
            () = tokio::time::sleep(wait) => healthy = probe.write().await,
        }
    }
    stop_gateway(running, &ws).await;
    Ok(())
}

async fn stop_gateway(running: RunningGateway, ws: &WorkspacePaths) {
    for file in runner::oxydra_vm_files(ws) {
        if let Err(e) = runner::remove_if_exists(&file) {
            tracing::warn!(error = %e, "could not remove a marker");
        }
    }
    if tokio::time::timeout(Duration::from_secs(5), running.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("the gateway did not stop within 5 s");
    }
    tracing::info!("oxydra-vm stopped");
}

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
