//! The files dialect's `memory` tool through the registry, over a real libSQL file: `view` of a
//! 200-file tree and `str_replace` on a 1,000-line file (target: each under 2 ms p95).
//!
//! `cargo run --release -p tools --bin memory-files-bench [-- --calls N]`

#![allow(clippy::print_stdout, reason = "a benchmark prints its report")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use memory::{HashEmbedder, MemoryRetrieval, MemoryStore};
use serde_json::json;
use tools::{MEMORY_FILES_TOOL_NAME, ToolRegistry, ToolSet};
use types::{MemoryDialect, SessionId, ToolExecutionContext, TurnId, UserId, WorkspacePaths};

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "sample counts are small"
    )]
    let rank = ((sorted.len().saturating_sub(1) as f64) * p).round() as usize;
    sorted
        .get(rank.min(sorted.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default()
}

fn report(what: &str, mut samples: Vec<Duration>) {
    samples.sort_unstable();
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
    println!(
        "| {what} | {} | {} | {} |",
        ms(percentile(&samples, 0.5)),
        ms(percentile(&samples, 0.95)),
        ms(percentile(&samples, 0.99))
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> BenchResult<()> {
    let calls: usize = std::env::args()
        .skip_while(|a| a != "--calls")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(500);
    let root = std::env::temp_dir().join(format!("oxydra-files-bench-{}", std::process::id()));
    let store = MemoryStore::open(
        memory::Target::File(&root.join("bench/.oxydra/memory.db")),
        memory::OpenOptions::with_embedder(Arc::new(HashEmbedder::new(256))),
    )
    .await?;
    let memory: Arc<dyn MemoryRetrieval> = Arc::new(store);
    let mut registry = ToolRegistry::default();
    for tool in ToolSet::new(Some(memory))
        .memory_tools(MemoryDialect::Files)
        .tools()?
    {
        registry.register(tool)?;
    }
    let user = UserId::parse("bench")?;
    let ctx = ToolExecutionContext::new(
        user.clone(),
        SessionId::parse("chat-bench")?,
        TurnId::parse("turn-bench")?,
        WorkspacePaths::for_user(&root, &user),
    );
    let call = |args: serde_json::Value| {
        let (registry, ctx) = (&registry, &ctx);
        async move {
            let t = Instant::now();
            let out = registry
                .execute(MEMORY_FILES_TOOL_NAME, &args.to_string(), ctx)
                .await;
            assert!(out.ok, "{}", out.output);
            t.elapsed()
        }
    };
    // 200 files: 10 directories of 10 subdirectories of 2 files.
    for i in 0..200 {
        let path = format!("/memories/area{}/topic{}/file{i}.md", i % 10, (i / 10) % 10);
        call(json!({"command": "create", "path": path, "file_text": format!("note {i}\nabout topic {i}\n")})).await;
    }
    let big: String = (0..1000)
        .map(|i| format!("line {i}: some remembered text\n"))
        .collect();
    call(json!({"command": "create", "path": "/memories/big.md", "file_text": big})).await;

    println!("# memory-files-bench ({calls} calls each, hash embedder)\n");
    println!("| command | p50 | p95 | p99 |\n|---|---|---|---|");
    let mut views = Vec::with_capacity(calls);
    for _ in 0..calls {
        views.push(call(json!({"command": "view", "path": "/memories"})).await);
    }
    report("view /memories (200 files)", views);
    let mut edits = Vec::with_capacity(calls);
    for i in 0..calls {
        // Toggle one line back and forth so every call replaces exactly one occurrence.
        let (old, new) = if i % 2 == 0 {
            (
                "line 500: some remembered text",
                "line 500: SOME remembered text",
            )
        } else {
            (
                "line 500: SOME remembered text",
                "line 500: some remembered text",
            )
        };
        edits.push(
            call(json!({"command": "str_replace", "path": "/memories/big.md", "old_str": old, "new_str": new}))
                .await,
        );
    }
    report("str_replace in a 1,000-line file", edits);
    std::fs::remove_dir_all(&root)?;
    Ok(())
}
