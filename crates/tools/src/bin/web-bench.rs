//! `web_fetch` benchmark: a 1 MB HTML page fetched from a local server and converted to Markdown,
//! end to end through the registry (connect, read, decode, convert, cut, scrub), and the
//! conversion alone — in wall time and in the converting thread's CPU time, which a machine shared
//! with other builds does not inflate.
//!
//! `cargo run --release -p tools --bin web-bench [-- --runs N]`
//!
//! `-- --adversarial [--limit SECS]`: instead, pages built to make the conversion slow
//! (`web_bench/adversarial.rs`), each at 1.25, 2.5 and 5 MiB (5 MiB is `[tools.web] max_bytes`'
//! default), in the converting thread's CPU time.

#![allow(clippy::print_stdout, reason = "a benchmark prints its report")]

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tools::{ToolRegistry, ToolSet};
use types::{SessionId, ToolExecutionContext, TurnId, UserId, WebConfig, WorkspacePaths};

#[path = "web_bench/adversarial.rs"]
mod adversarial;

/// The value after `flag` on the command line.
fn arg(flag: &str) -> Option<String> {
    std::env::args().skip_while(|a| a != flag).nth(1)
}

/// An article-like page of about `bytes`: headings, paragraphs with links, lists, a table, and
/// the navigation, scripts and footers real pages carry.
fn page(bytes: usize) -> String {
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Bench page</title>\
         <style>body{font:14px sans-serif}</style><script>var tracking = 1;</script></head><body>\
         <nav><ul><li><a href=\"/\">Home</a></li><li><a href=\"/about\">About</a></li></ul></nav><main>",
    );
    let mut n = 0;
    while html.len() < bytes {
        n += 1;
        html.push_str(&format!(
            "<h2 id=\"s{n}\">Section {n}</h2><p>Rooibos grows in the <a href=\"https://example.org/cederberg/{n}\">Cederberg</a> \
             mountains; its leaves are <em>fermented</em> and <strong>dried</strong> before they are cut. \
             Paragraph {n} goes on about harvest, grading &amp; export.</p>\
             <ul><li>Harvest {n}</li><li>Grade <code>A{n}</code></li></ul>\
             <table><tr><th>Year</th><th>Tonnes</th></tr><tr><td>{n}</td><td>{}</td></tr></table>\
             <aside>Advertisement {n}</aside>",
            n * 7
        ));
    }
    html.push_str("</main><footer>Footer</footer></body></html>");
    html
}

async fn serve(body: String) -> std::io::Result<std::net::SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(body.as_bytes()).await;
            });
        }
    });
    Ok(addr)
}

/// The CPU time the calling thread has used.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.95))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let (Some(case), Some(bytes)) = (arg("--case"), arg("--bytes")) {
        return Ok(adversarial::run_case(&case, bytes.parse()?)?);
    }
    if std::env::args().any(|a| a == "--adversarial") {
        let limit = arg("--limit").and_then(|s| s.parse().ok()).unwrap_or(60);
        let mib = 1024 * 1024;
        let sizes = [mib + mib / 4, 2 * mib + mib / 2, 5 * mib];
        return adversarial::report(&sizes, Duration::from_secs(limit));
    }
    let runs: usize = std::env::args()
        .skip_while(|a| a != "--runs")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(50);
    let html = page(1024 * 1024);
    let addr = serve(html.clone()).await?;
    let config = WebConfig {
        enabled: true,
        allow_hosts: vec!["127.0.0.1".to_owned()],
        ..WebConfig::default()
    };
    let mut registry = ToolRegistry::default();
    for tool in ToolSet::new(None).web(&config).tools()? {
        registry.register(tool)?;
    }
    let dir = std::env::temp_dir();
    let user = UserId::parse("bench")?;
    let ctx = ToolExecutionContext::new(
        user.clone(),
        SessionId::parse("chat-bench")?,
        TurnId::parse("turn-bench")?,
        WorkspacePaths::for_user(&dir, &user),
    );
    let args = json!({"url": format!("http://{addr}/page")}).to_string();
    let first = registry.execute("web_fetch", &args, &ctx).await;
    if !first.ok {
        return Err(first.output.into());
    }
    let mut fetched = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let out = registry.execute("web_fetch", &args, &ctx).await;
        fetched.push(started.elapsed());
        assert!(out.ok, "{}", out.output);
    }
    let mut converted = Vec::with_capacity(runs);
    let mut cpu = Vec::with_capacity(runs);
    let mut markdown = 0;
    for _ in 0..runs {
        let (started, cpu_started) = (Instant::now(), thread_cpu());
        markdown = tools::web::html_to_markdown(&html).len();
        converted.push(started.elapsed());
        cpu.push(thread_cpu().saturating_sub(cpu_started));
    }
    println!(
        "# web-bench ({runs} runs, a {} KiB page → {} KiB of Markdown)\n",
        html.len() / 1024,
        markdown / 1024
    );
    println!("| step | p50 | p95 |\n|---|---|---|");
    let (p50, p95) = percentiles(fetched);
    println!("| web_fetch through the registry (local server) | {p50:.1?} | {p95:.1?} |");
    let (p50, p95) = percentiles(converted);
    println!("| HTML → Markdown alone (wall) | {p50:.1?} | {p95:.1?} |");
    let (p50, p95) = percentiles(cpu);
    println!("| HTML → Markdown alone (thread CPU time) | {p50:.1?} | {p95:.1?} |");
    Ok(())
}
