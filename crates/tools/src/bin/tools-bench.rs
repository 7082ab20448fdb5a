//! Tool-layer benchmark: what the registry pipeline (parse, validate, dispatch, timeout, scrub,
//! truncate) adds to a call, what the governance stages (permission, rate limit, PII and secret
//! screening, result redaction, metrics) add to a memory call, what screening costs a 64 KiB
//! write (and the normaliser alone), and memory tools through the registry against the raw
//! memory API.
//!
//! `cargo run --release -p tools --bin tools-bench [-- --calls N] [--screening-only]`

#![allow(clippy::print_stdout, reason = "a benchmark prints its report")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use memory::{HybridQuery, MemoryStore, NoteMetadata};
use serde_json::json;
use tools::{Tool, ToolError, ToolRegistry, ToolSet};
use types::{
    MemoryDialect, SafetyTier, SessionId, ToolExecutionContext, TurnId, UserId, WorkspacePaths,
};

/// A tool that does nothing, so a registry call measures the pipeline alone: a read (`noop`), or a
/// memory write (`gnoop`) that stores nothing, governed like one or, `PlainWrite`, with its memory
/// access hidden (so no governance stage runs).
#[derive(Debug, Clone, Copy)]
enum Noop {
    Read,
    Write,
    PlainWrite,
}

#[async_trait]
impl Tool for Noop {
    fn name(&self) -> &str {
        match self {
            Noop::Read => "noop",
            Noop::Write | Noop::PlainWrite => "gnoop",
        }
    }
    fn description(&self) -> &str {
        match self {
            Noop::Read => "Does nothing; used to measure the tool pipeline.",
            Noop::Write | Noop::PlainWrite => "Does nothing, governed as a memory write.",
        }
    }
    fn parameters(&self) -> serde_json::Value {
        match self {
            Noop::Read => json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "maxLength": 4096 },
                    "top_k": { "type": "integer", "minimum": 1, "maximum": 20 },
                    "flag": { "type": "boolean" }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
            Noop::Write | Noop::PlainWrite => json!({
                "type": "object",
                "properties": { "content": { "type": "string", "maxLength": 8192 } },
                "required": ["content"],
                "additionalProperties": false
            }),
        }
    }
    fn safety_tier(&self) -> SafetyTier {
        match self {
            Noop::Read => SafetyTier::ReadOnly,
            Noop::Write | Noop::PlainWrite => SafetyTier::SideEffecting,
        }
    }
    fn timeout(&self) -> Duration {
        Duration::from_secs(10)
    }
    fn memory_access(&self, _args: &serde_json::Value) -> Option<tools::MemoryAccess> {
        matches!(self, Noop::Write).then(|| tools::MemoryAccess::notes_write(&["content"]))
    }
    async fn execute(
        &self,
        args: &serde_json::Value,
        _ctx: &ToolExecutionContext,
    ) -> Result<String, ToolError> {
        Ok(match self {
            Noop::Read => {
                "shared/notes.md: 3 matches, first at line 12: the user prefers green tea".into()
            }
            Noop::Write | Noop::PlainWrite => {
                json!({"note_id": "note-0", "echo": args["content"]}).to_string()
            }
        })
    }
}

/// An audit sink that only counts (the real one is a row inside the write's own transaction).
#[derive(Debug, Default)]
struct CountingSink(std::sync::atomic::AtomicU64);

#[async_trait]
impl tools::governance::AuditSink for CountingSink {
    async fn append(
        &self,
        _user: &UserId,
        _entry: &memory::AuditEntry<'_>,
    ) -> Result<(), memory::MemoryError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

/// Registry calls of the same write tool, ungoverned (`memory_access` hidden) and governed as an
/// MCP client's write (permissions, rate limits, PII redaction in and out, metrics).
async fn governance_overhead(
    calls: usize,
    ctx: &ToolExecutionContext,
) -> Result<(), Box<dyn std::error::Error>> {
    let config: types::GovernanceConfig = serde_json::from_value(json!({
        "operations": {"read": {"allowed_namespaces": ["session.*", "notes"]},
                       "write": {"allowed_namespaces": ["session.*", "notes"]}},
        "rate_limits": {"tools": {"*": {"per_minute": 1e12, "burst": 1000000}},
                        "namespaces": {"notes": {"per_minute": 1e12, "burst": 1000000}}},
    }))?;
    let governance = tools::Governance::new(config)
        .with_metrics(Arc::new(tools::MemoryMetrics::new()?))
        .with_audit(Arc::new(CountingSink::default()));
    let mut governed = ToolRegistry::default().with_governance(Arc::new(governance));
    governed.register(Arc::new(Noop::Write))?;
    let mut plain = ToolRegistry::default();
    plain.register(Arc::new(Noop::PlainWrite))?;
    let mcp = ToolExecutionContext {
        surface: types::CallSurface::new(types::Surface::Mcp).with_client("bench"),
        ..ctx.clone()
    };
    // A 600-byte note: prose with numbers, one e-mail address to redact.
    let content = "The user moved the weekly planning meeting to Tuesdays at 10:30 in room 404, \
        prefers green tea, runs 10 km on Sundays, works on project 37 with a team of 12 since \
        2023, and wants reports as PDF. Version 3.14.159 of the tool shipped on 2024-01-15; the \
        order #123456 arrived in 3-5 days. Contact for the project is jo.doe@example.com. The \
        thermostat stays at 21 degrees between 6 and 22 o'clock, and the quarterly revenue grew \
        12.5% to 4,500,000 EUR. Bring the Q3 numbers and the laptop with 16 GB of memory.";
    let raw = json!({ "content": content }).to_string();
    for _ in 0..1000 {
        plain.execute("gnoop", &raw, &mcp).await;
        governed.execute("gnoop", &raw, &mcp).await;
    }
    let (mut a, mut b) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    for _ in 0..calls {
        let t = Instant::now();
        let out = plain.execute("gnoop", &raw, &mcp).await;
        a.push(t.elapsed());
        assert!(out.ok);
        let t = Instant::now();
        let out = governed.execute("gnoop", &raw, &mcp).await;
        b.push(t.elapsed());
        assert!(
            out.ok && out.output.contains("[REDACTED:email]"),
            "{}",
            out.output
        );
    }
    a.sort_unstable();
    b.sort_unstable();
    let (p50a, p95a) = (percentile(&a, 0.5), percentile(&a, 0.95));
    let (p50b, p95b) = (percentile(&b, 0.5), percentile(&b, 0.95));
    println!(
        "Governance stages on a 600-byte MCP write ({calls} calls each, interleaved):\n\n| call | p50 | p95 |\n|---|---|---|"
    );
    println!("| registry, ungoverned | {} | {} |", us(p50a), us(p95a));
    println!("| registry, governed | {} | {} |", us(p50b), us(p95b));
    println!(
        "| **governance overhead** | {} | {} |\n",
        us(p50b.saturating_sub(p50a)),
        us(p95b.saturating_sub(p95a))
    );
    Ok(())
}

/// What screening costs a write of 64 KiB: the whole screen (`pii::find`: normalise, every
/// pattern, checksums) on ASCII prose and on prose with accents, dashes and NBSPs (which takes
/// the normaliser's slow path), and the normaliser alone.
fn screening_cost(calls: usize) {
    use tools::governance::{normal::Normalized, pii};
    let sentence = "The user moved the weekly planning meeting to Tuesdays at 10:30 in room 404, \
        prefers green tea, runs 10 km on Sundays, works on project 37 with a team of 12 since \
        2023, and wants reports as PDF. Version 3.14.159 of the tool shipped on 2024-01-15. ";
    let accented = "Le café de la réunion – naïve idée\u{a0}: Zoë préfère le thé à 10\u{a0}h. ";
    let fill = |unit: &str| {
        let mut text = String::with_capacity(64 * 1024 + unit.len());
        while text.len() < 64 * 1024 {
            text.push_str(unit);
        }
        text
    };
    let plain = fill(
        "The user prefers green tea in the morning, runs on Sundays, works on project 37 with \
         a team of 12, and wants the weekly report as a PDF before the planning meeting. ",
    );
    let ascii = fill(sentence);
    let unicode = fill(&format!("{sentence}{accented}"));
    // A log dense with long numbers that are no personal data: every stretch is a window.
    let numbers = fill(
        "2024-01-15T10:30:00Z order 20240115-7781 build 10.0.19045.3693 took 1234567 us, \
         batch 2024/01/15 #98765432, ",
    );
    println!(
        "Screening one 64 KiB write ({calls} calls each):\n\n| pass | p50 | p95 |\n|---|---|---|"
    );
    for (name, text) in [
        ("ASCII prose, short numbers only", &plain),
        ("ASCII prose with dates and versions", &ascii),
        ("prose with accents, – and NBSP", &unicode),
        ("a log dense with long numbers", &numbers),
    ] {
        let mut screen = Vec::with_capacity(calls);
        let mut norm = Vec::with_capacity(calls);
        for _ in 0..calls {
            let t = Instant::now();
            let found = pii::find(text);
            screen.push(t.elapsed());
            assert!(found.is_empty(), "{found:?}");
            let t = Instant::now();
            let view = Normalized::new(text);
            norm.push(t.elapsed());
            assert!(view.as_str().len() >= text.len() / 2);
        }
        screen.sort_unstable();
        norm.sort_unstable();
        println!(
            "| screen, {name} | {} | {} |",
            us(percentile(&screen, 0.5)),
            us(percentile(&screen, 0.95))
        );
        println!(
            "| normaliser alone, {name} | {} | {} |",
            us(percentile(&norm, 0.5)),
            us(percentile(&norm, 0.95))
        );
    }
    println!();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round();
    sorted[(rank as usize).min(sorted.len() - 1)]
}

struct Stats {
    p50: Duration,
    p95: Duration,
}

async fn measure<F, Fut>(n: usize, mut f: F) -> Stats
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        f(i).await;
        samples.push(t.elapsed());
    }
    samples.sort_unstable();
    Stats {
        p50: percentile(&samples, 0.5),
        p95: percentile(&samples, 0.95),
    }
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let calls: usize = std::env::args()
        .skip_while(|a| a != "--calls")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    if std::env::args().any(|a| a == "--screening-only") {
        screening_cost(calls);
        return Ok(());
    }
    let dir = std::env::temp_dir().join(format!("oxydra-tools-bench-{}", std::process::id()));
    let user = UserId::parse("bench")?;
    let ctx = ToolExecutionContext::new(
        user.clone(),
        SessionId::parse("chat-bench")?,
        TurnId::parse("turn-bench")?,
        WorkspacePaths::for_user(&dir, &user),
    );

    println!("# tools-bench ({calls} pipeline calls)\n");
    let mut registry = ToolRegistry::default();
    registry.register(Arc::new(Noop::Read))?;
    let raw = r#"{"path": "shared/notes.md", "top_k": 5, "flag": true}"#;
    let args: serde_json::Value = serde_json::from_str(raw)?;
    let noop = Noop::Read;
    // Warm up.
    for _ in 0..1000 {
        registry.execute("noop", raw, &ctx).await;
    }
    let direct = measure(calls, |_| async {
        let _ = noop.execute(&args, &ctx).await;
    })
    .await;
    let piped = measure(calls, |_| async {
        let out = registry.execute("noop", raw, &ctx).await;
        assert!(out.ok);
    })
    .await;
    println!("| call | p50 | p95 |\n|---|---|---|");
    println!(
        "| tool.execute directly | {} | {} |",
        us(direct.p50),
        us(direct.p95)
    );
    println!(
        "| registry.execute (full pipeline) | {} | {} |",
        us(piped.p50),
        us(piped.p95)
    );
    println!(
        "| **pipeline overhead** | {} | {} |\n",
        us(piped.p50.saturating_sub(direct.p50)),
        us(piped.p95.saturating_sub(direct.p95))
    );

    governance_overhead(calls, &ctx).await?;
    screening_cost(calls.min(500));

    let store = MemoryStore::open(
        memory::Target::File(&ctx.workspace.default_memory_db()),
        memory::OpenOptions::with_embedder(memory::embedding::from_config(&Default::default())?),
    )
    .await?;
    let registry = ToolSet::new(Some(Arc::new(store.clone())))
        .memory_tools(MemoryDialect::Notes)
        .registry()?;
    let n = 1000;
    let note = |i: usize| {
        format!(
            "note {i}: the user prefers green tea in the morning and works on project {}",
            i % 37
        )
    };
    let queries = [
        "green tea",
        "what does the user drink",
        "project 12",
        "morning routine",
        "which projects",
    ];
    // Raw and tool calls alternate, so both see the same store size and machine load.
    let (mut raw_save, mut tool_save, mut raw_search, mut tool_search) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let t = Instant::now();
        store
            .save(
                &user,
                None,
                &note(2 * i),
                NoteMetadata::default(),
                memory::Similar::Unchecked,
            )
            .await
            .and_then(memory::Saved::into_note)?;
        raw_save.push(t.elapsed());
        let args = json!({ "content": note(2 * i + 1) }).to_string();
        let t = Instant::now();
        let out = registry.execute("memory_save", &args, &ctx).await;
        tool_save.push(t.elapsed());
        assert!(out.ok, "{}", out.output);
    }
    for i in 0..n {
        let text = queries[i % queries.len()];
        let q = HybridQuery::new(vec![SessionId::user_memory(&user)], text, 5);
        let t = Instant::now();
        store.search(&q).await?;
        raw_search.push(t.elapsed());
        let args = json!({ "query": text }).to_string();
        let t = Instant::now();
        let out = registry.execute("memory_search", &args, &ctx).await;
        tool_search.push(t.elapsed());
        assert!(out.ok, "{}", out.output);
    }
    let stats = |mut v: Vec<Duration>| {
        v.sort_unstable();
        Stats {
            p50: percentile(&v, 0.5),
            p95: percentile(&v, 0.95),
        }
    };
    let (raw_save, tool_save, raw_search, tool_search) = (
        stats(raw_save),
        stats(tool_save),
        stats(raw_search),
        stats(tool_search),
    );
    println!(
        "Memory through the tool layer vs the raw store API ({n} calls each, interleaved, builtin embedder, store growing 0→2k notes):\n"
    );
    println!(
        "| operation | raw p50 | raw p95 | tool p50 | tool p95 | tool/raw (p50) |\n|---|---|---|---|---|---|"
    );
    for (name, raw, tool) in [
        ("save", &raw_save, &tool_save),
        ("search", &raw_search, &tool_search),
    ] {
        println!(
            "| {name} | {} | {} | {} | {} | {:.2} |",
            us(raw.p50),
            us(raw.p95),
            us(tool.p50),
            us(tool.p95),
            tool.p50.as_secs_f64() / raw.p50.as_secs_f64()
        );
    }
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
