//! `gateway-bench flood`: the gateway's memory with many idle connections held by another
//! process, a newcomer's turn during each, and the memory left after repeated floods.
//!
//! The connections come from a child process (this binary, `gateway-bench child MODE URL N`), so
//! the resident memory measured here is the gateway's own. Modes: `auth` (N authenticated
//! WebSocket clients that stay idle), `tcp` (N sockets that never send a byte), `ws` (N
//! WebSocket upgrades that never send `hello`).

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::StreamExt;
use gateway::{ConnectionStats, RunningGateway};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use types::UserId;

use crate::{connect, rss_kib, turn};

const TOKEN_ENV: &str = "OXYDRA_BENCH_TOKEN";

/// What one phase measured.
struct Phase {
    mode: &'static str,
    held: usize,
    stats: ConnectionStats,
    rss_held_kib: u64,
    turn: Duration,
}

pub async fn run(
    gw: &RunningGateway,
    token: &str,
    user: &UserId,
    idle: usize,
    floods: usize,
    modes: &[&'static str],
) -> anyhow::Result<String> {
    let url = gw.url();
    let rss_start = rss_kib();
    let mut report = format!(
        "flood bench: {idle} idle connections per phase, from a child process\n\
         rss at start {} MiB\n",
        mib(rss_start)
    );
    let mut phases = Vec::new();
    for &mode in modes {
        phases.push(phase(gw, &url, token, user, mode, idle).await?);
    }
    for p in &phases {
        report.push_str(&format!(
            "{:>4}: held {} -> open {} (unauthenticated {}), evicted {}, refused {}; \
             gateway rss {} MiB; a new client's hello + turn: {:.1} ms\n",
            p.mode,
            p.held,
            p.stats.open,
            p.stats.unauthenticated,
            p.stats.evicted,
            p.stats.refused,
            mib(p.rss_held_kib),
            p.turn.as_secs_f64() * 1000.0,
        ));
    }
    report.push_str(&format!(
        "after the phases drained: rss {} MiB\n",
        mib(settled_rss(gw).await?)
    ));
    let mut after = Vec::new();
    for _ in 0..floods {
        let p = phase(gw, &url, token, user, "ws", idle).await?;
        after.push(format!(
            "{}/{}",
            mib(p.rss_held_kib),
            mib(settled_rss(gw).await?)
        ));
    }
    report.push_str(&format!(
        "{floods} floods of {idle} upgrades without hello, rss held/after drain (MiB): {}\n\
         peak rss (VmHWM) {} MiB\n",
        after.join(", "),
        mib(hwm_kib()),
    ));
    Ok(report)
}

/// Holds `idle` connections of `mode` from a child, measures, runs a newcomer's turn, releases.
async fn phase(
    gw: &RunningGateway,
    url: &str,
    token: &str,
    user: &UserId,
    mode: &'static str,
    idle: usize,
) -> anyhow::Result<Phase> {
    let before = *gw.connections().borrow();
    let exe = std::env::current_exe()?;
    let mut child = tokio::process::Command::new(exe)
        .args(["child", mode, url, &idle.to_string()])
        .env(TOKEN_ENV, token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting the flood child")?;
    let stdout = child.stdout.take().context("child stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let ready = lines.next_line().await?.unwrap_or_default();
    if !ready.starts_with("ready") {
        bail!("flood child: {ready}");
    }
    // Every connection of the child has been seen by the gateway.
    let target = before.accepted + before.refused + idle as u64;
    let mut rx = gw.connections();
    rx.wait_for(|s| s.accepted + s.refused >= target).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut stats = *gw.connections().borrow();
    stats.evicted -= before.evicted;
    stats.refused -= before.refused;
    let rss_held_kib = rss_kib();
    let start = Instant::now();
    let (mut ws, session) = connect(url, token, user).await?;
    turn(&mut ws, &session, 0).await?;
    let took = start.elapsed();
    drop(ws);
    if let Some(mut stdin) = child.stdin.take() {
        stdin.shutdown().await?;
    }
    child.wait().await?;
    Ok(Phase {
        mode,
        held: idle,
        stats,
        rss_held_kib,
        turn: took,
    })
}

/// The resident memory once every connection has closed and the allocator had time to trim.
async fn settled_rss(gw: &RunningGateway) -> anyhow::Result<u64> {
    let mut rx = gw.connections();
    rx.wait_for(|s| s.open == 0).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok(rss_kib())
}

/// The child: opens `n` connections of `mode` to `url`, prints `ready`, holds them until its
/// stdin closes.
pub async fn child(mode: &str, url: &str, n: usize) -> anyhow::Result<()> {
    let token = std::env::var(TOKEN_ENV).context("token")?;
    let user = UserId::parse("bench")?;
    let addr = url
        .trim_start_matches("ws://")
        .trim_end_matches('/')
        .to_owned();
    let held: Vec<anyhow::Result<Box<dyn Send>>> = futures::stream::iter(0..n)
        .map(|_| {
            let (addr, url, token, user) =
                (addr.clone(), url.to_owned(), token.clone(), user.clone());
            async move {
                let held: Box<dyn Send> = match mode {
                    "tcp" => Box::new(TcpStream::connect(&addr).await?),
                    "ws" => Box::new(tokio_tungstenite::connect_async(url.as_str()).await?.0),
                    _ => Box::new(connect(&url, &token, &user).await?),
                };
                Ok(held)
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    let failed = held.iter().filter(|h| h.is_err()).count();
    if mode == "auth" && failed > 0 {
        bail!("{failed} authenticated connections failed");
    }
    let mut out = tokio::io::stdout();
    out.write_all(format!("ready {} {failed}\n", n - failed).as_bytes())
        .await?;
    out.flush().await?;
    let mut line = String::new();
    let _ = BufReader::new(tokio::io::stdin())
        .read_line(&mut line)
        .await;
    drop(held);
    Ok(())
}

fn mib(kib: u64) -> String {
    format!("{:.0}", kib as f64 / 1024.0)
}

fn hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
