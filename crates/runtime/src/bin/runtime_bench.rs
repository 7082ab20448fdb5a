//! `runtime-bench`: what the runtime itself costs per turn, with the model's own time taken out.
//!
//! An in-process provider answers instantly (no HTTP). The user's store holds 10,000 saved notes and
//! each measured turn runs in a session that already has 50 messages, so every turn pays for what a
//! real one does: storing the user message, recall (a hybrid query over the 10k notes), reading the
//! summary and history, assembling the context, the stream, storing the reply — and, in the tool
//! scenario, a `memory_search` call through the registry and a second model call.
//!
//! The capture scenario is the plain one with `[memory.capture] mode = "auto"` and `idle_secs = 0`:
//! after every turn the capture call runs in the background (its model answers at once with one
//! new note, so captures run back to back beside the measured turns — the worst case for the
//! turn the user waits for), and the report says how many captures ran while turns were measured.
//!
//! `cargo run --release -p runtime --bin runtime-bench [-- --turns N] [-- --builtin]`
//! (`--builtin` uses the shipped static embedding model instead of the hash embedder).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use memory::embedding::BuiltinEmbedder;
use memory::{Embedder, ExportedNote, HashEmbedder, MemoryStore, NoteMetadata};
use provider::{
    ChatRequest, ChatResponse, EventStream, FinishReason, Provider, ProviderError, StreamEvent,
};
use runtime::{AgentRuntime, ModelLimits, TurnEvent};
use tokio::sync::mpsc;
use tools::ToolSet;
use types::{
    CaptureConfig, CaptureMode, MemoryDialect, Message, NoteId, Role, RuntimeConfig, SessionId,
    ToolExecutionContext, TurnId, UserId, WorkspacePaths,
};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const NOTES: usize = 10_000;
const HISTORY: usize = 50;
const WARMUP: usize = 20;
/// The measured kinds of turn, each in sessions of its own.
const SCENARIOS: [&str; 4] = ["plain", "capture", "search", "bare"];

/// Answers at once. In `search` mode, a user message is answered with one `memory_search` call and
/// the tool result with text; otherwise every call gets a short text reply. A capture call (the
/// request forcing `record_memories`) is answered with one new note and counted.
#[derive(Debug)]
struct InstantProvider {
    search: bool,
    captures: Arc<AtomicUsize>,
}

/// A capture call's answer: one `record_memories` call adding a note no other capture adds.
fn capture_events(n: usize) -> Vec<StreamEvent> {
    let args = serde_json::json!({"memories": [{
        "action": "add",
        "content": format!("The user mentioned bench fact number {n} about {}.", OBJECTS[n % 16]),
    }]});
    vec![
        StreamEvent::ToolCallStart {
            index: 0,
            id: format!("capture_{n}"),
            name: "record_memories".into(),
        },
        StreamEvent::ToolCallArgsDelta {
            index: 0,
            fragment: args.to_string(),
        },
        StreamEvent::Done {
            finish_reason: FinishReason::ToolCalls,
        },
    ]
}

fn reply_events(req: &ChatRequest, search: bool) -> Vec<StreamEvent> {
    let after_user = req.messages.last().is_some_and(|m| m.role == Role::User);
    let mut events = Vec::new();
    if search && after_user {
        events.push(StreamEvent::ToolCallStart {
            index: 0,
            id: "call_1".into(),
            name: "memory_search".into(),
        });
        events.push(StreamEvent::ToolCallArgsDelta {
            index: 0,
            fragment: r#"{"query": "favourite programming language"}"#.into(),
        });
        events.push(StreamEvent::Done {
            finish_reason: FinishReason::ToolCalls,
        });
    } else {
        for piece in ["Sure — ", "here is ", "the answer."] {
            events.push(StreamEvent::TextDelta(piece.into()));
        }
        events.push(StreamEvent::Done {
            finish_reason: FinishReason::Stop,
        });
    }
    events
}

#[async_trait]
impl Provider for InstantProvider {
    fn model(&self) -> &str {
        "instant"
    }

    async fn stream(&self, req: &ChatRequest) -> Result<EventStream, ProviderError> {
        let events = if req.force_tool.as_deref() == Some("record_memories") {
            capture_events(self.captures.fetch_add(1, Ordering::SeqCst))
        } else {
            reply_events(req, self.search)
        };
        Ok(futures::stream::iter(events.into_iter().map(Ok)).boxed())
    }

    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let stream = self.stream(req).await?;
        provider::collect_response(stream).await
    }
}

const SUBJECTS: [&str; 8] = [
    "prefers",
    "dislikes",
    "is learning",
    "works with",
    "asked about",
    "uses",
    "recommends",
    "avoids",
];
const OBJECTS: [&str; 16] = [
    "Rust",
    "green tea",
    "hiking in the Alps",
    "SQLite",
    "mechanical keyboards",
    "jazz piano",
    "early mornings",
    "Python for data work",
    "the Oxford comma",
    "dark mode",
    "Go modules",
    "cycling to work",
    "sourdough baking",
    "Kubernetes",
    "vim keybindings",
    "chess openings",
];

fn note_text(i: usize) -> String {
    format!(
        "The user {} {} (note {i}; mentioned in project {}).",
        SUBJECTS[i % SUBJECTS.len()],
        OBJECTS[(i / SUBJECTS.len()) % OBJECTS.len()],
        i % 97
    )
}

struct Args {
    turns: usize,
    builtin: bool,
}

fn args() -> Args {
    let mut out = Args {
        turns: 300,
        builtin: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--turns" => {
                if let Some(n) = it.next().and_then(|n| n.parse().ok()) {
                    out.turns = n;
                }
            }
            "--builtin" => out.builtin = true,
            _ => {}
        }
    }
    out
}

#[allow(clippy::print_stdout, reason = "a benchmark binary reports on stdout")]
fn main() -> Result<(), BoxError> {
    let args = args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let dir = std::env::temp_dir().join(format!("oxydra-runtime-bench-{}", std::process::id()));
    let result = rt.block_on(bench(&dir, &args));
    let _ = std::fs::remove_dir_all(&dir);
    let report = result?;
    println!("{report}");
    Ok(())
}

async fn bench(dir: &std::path::Path, args: &Args) -> Result<String, BoxError> {
    let embedder: Arc<dyn Embedder> = if args.builtin {
        let builtin = BuiltinEmbedder::new(64)?;
        builtin.preload().await?;
        Arc::new(builtin)
    } else {
        Arc::new(HashEmbedder::new(256))
    };
    let model = embedder.model_id().to_owned();
    let user = UserId::parse("bench")?;
    let root = dir.join("bench");
    let store = MemoryStore::open(
        memory::Target::File(&root.join(".oxydra/memory.db")),
        memory::OpenOptions::with_embedder(embedder),
    )
    .await?;

    let setup = Instant::now();
    let first = store
        .save(
            &user,
            None,
            &note_text(0),
            NoteMetadata::default(),
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)?;
    let notes: Vec<ExportedNote> = (1..NOTES)
        .map(|i| {
            let id = NoteId::from_uuid_str(&format!("{i:08x}-0000-4000-8000-{i:012x}"))?;
            Ok(ExportedNote {
                note_id: id,
                content: note_text(i),
                ..first.clone()
            })
        })
        .collect::<Result<_, types::IdError>>()?;
    store
        .import(&user, None, notes, memory::Similar::Unchecked, None)
        .await
        .map(|report| report.imported)?;

    let sessions = WARMUP + args.turns;
    for scenario in SCENARIOS {
        for i in 0..sessions {
            let session = SessionId::parse(&format!("{scenario}-{i}"))?;
            for m in 0..HISTORY / 2 {
                let q = Message::user(format!("Question {m}: what about {}?", OBJECTS[m % 16]));
                let a = Message::assistant(format!("Answer {m}: {} is fine.", OBJECTS[m % 16]));
                store.sessions().append_message(&session, &user, &q).await?;
                store.sessions().append_message(&session, &user, &a).await?;
            }
        }
    }
    let setup = setup.elapsed();

    let registry = ToolSet::new(Some(Arc::new(store.clone())))
        .memory_tools(MemoryDialect::Notes)
        .registry()?;
    let registry = Arc::new(registry);
    let limits = ModelLimits {
        context_window: 128_000,
        max_output_tokens: 4096,
    };

    let mut rows = Vec::new();
    let mut captured = (0, 0);
    for scenario in SCENARIOS {
        let search = scenario == "search";
        // "bare": recall off, so the turn does no search at all.
        let config = RuntimeConfig {
            recall_notes: if scenario == "bare" { 0 } else { 3 },
            ..RuntimeConfig::default()
        };
        let captures = Arc::new(AtomicUsize::new(0));
        let provider = Arc::new(InstantProvider {
            search,
            captures: Arc::clone(&captures),
        });
        let mut runtime = AgentRuntime::new(provider, Arc::clone(&registry), config, limits)
            .with_memory(store.clone());
        if scenario == "capture" {
            let capture = CaptureConfig {
                mode: CaptureMode::Auto,
                idle_secs: 0,
                model: None,
                max_calls_per_hour: 600,
            };
            runtime = runtime.with_capture(capture, None);
        }
        let mut times = Vec::with_capacity(args.turns);
        let mut measured_from = 0;
        for i in 0..sessions {
            let ctx = ToolExecutionContext::new(
                user.clone(),
                SessionId::parse(&format!("{scenario}-{i}"))?,
                TurnId::parse(&format!("turn-{i}"))?,
                WorkspacePaths::new(&root),
            );
            let (tx, mut rx) = mpsc::channel::<TurnEvent>(64);
            let start = Instant::now();
            let outcome = runtime
                .run_turn(&ctx, "Which programming language do I like best?", &tx)
                .await?;
            let took = start.elapsed();
            drop(tx);
            while rx.recv().await.is_some() {}
            if outcome.tool_rounds != u32::from(search) {
                return Err(
                    format!("{scenario}: unexpected tool rounds {}", outcome.tool_rounds).into(),
                );
            }
            if i + 1 == WARMUP {
                measured_from = captures.load(Ordering::SeqCst);
            }
            if i >= WARMUP {
                times.push(took);
            }
        }
        if scenario == "capture" {
            captured = (captures.load(Ordering::SeqCst) - measured_from, args.turns);
            if captured.0 == 0 {
                return Err("capture: no capture ran beside the measured turns".into());
            }
        }
        rows.push((scenario, stats(&mut times)));
    }

    let parts = breakdown(&store, &user, args.turns).await?;

    let mut report = format!(
        "runtime-bench: {NOTES} notes, {HISTORY}-message history per session, embedder {model}, \
         {} measured turns per scenario (setup {:.1} s)\n\n\
         | turn | p50 | p95 | p99 | max |\n|---|---|---|---|---|\n",
        args.turns,
        setup.as_secs_f64()
    );
    for (scenario, s) in rows {
        let name = match scenario {
            "plain" => "plain text reply (recall over 10k notes)",
            "search" => "one memory_search call + reply (recall + search)",
            "capture" => "plain text reply, capture auto after every turn (idle 0 s)",
            _ => "plain text reply, recall off (no search at all)",
        };
        report.push_str(&format!(
            "| {name} | {} | {} | {} | {} |\n",
            ms(s.p50),
            ms(s.p95),
            ms(s.p99),
            ms(s.max)
        ));
    }
    report.push_str(&format!(
        "\nCaptures that ran in the background while the {} capture turns were measured: {}\n",
        captured.1, captured.0
    ));
    report.push_str("\nThe store operations inside a turn, alone:\n\n| operation | p50 | p95 |\n|---|---|---|\n");
    for (name, s) in parts {
        report.push_str(&format!("| {name} | {} | {} |\n", ms(s.p50), ms(s.p95)));
    }
    Ok(report)
}

/// Times the store operations a turn performs, one kind at a time.
async fn breakdown(
    store: &MemoryStore,
    user: &UserId,
    turns: usize,
) -> Result<Vec<(&'static str, Stats)>, BoxError> {
    let session = SessionId::parse("plain-0")?;
    let scratch = SessionId::parse("breakdown")?;
    let query = memory::HybridQuery::new(
        vec![SessionId::user_memory(user)],
        "Which programming language do I like best?",
        3,
    );
    let mut out = Vec::new();
    for op in [
        "append_message",
        "hybrid_query (recall, 10k notes)",
        "history (400)",
        "summary",
    ] {
        let mut times = Vec::with_capacity(turns);
        for _ in 0..turns {
            let start = Instant::now();
            match op {
                "append_message" => {
                    store
                        .sessions()
                        .append_message(&scratch, user, &Message::user("Which language do I like?"))
                        .await
                        .map(|_| ())?;
                }
                "history (400)" => store
                    .sessions()
                    .history(&session, None, 400)
                    .await
                    .map(|_| ())?,
                "summary" => store.sessions().summary(&session).await.map(|_| ())?,
                _ => store.search(&query).await.map(|_| ())?,
            }
            times.push(start.elapsed());
        }
        out.push((op, stats(&mut times)));
    }
    Ok(out)
}

struct Stats {
    p50: Duration,
    p95: Duration,
    p99: Duration,
    max: Duration,
}

fn stats(times: &mut [Duration]) -> Stats {
    times.sort();
    let at = |q: f64| {
        let last = times.len().saturating_sub(1);
        let i = ((last as f64) * q).round() as usize;
        times.get(i.min(last)).copied().unwrap_or_default()
    };
    Stats {
        p50: at(0.50),
        p95: at(0.95),
        p99: at(0.99),
        max: times.last().copied().unwrap_or_default(),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}
