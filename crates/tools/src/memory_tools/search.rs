//! `memory_search`: hybrid (semantic + keyword) search over the user's notes and, optionally, the
//! current conversation.

use std::collections::HashSet;

use memory::{HitSource, HybridQuery, QueryFilters, QueryTime, SearchHit, TimeRange, Weights};
use types::SessionId;

use super::MEMORY_SEARCH_TOOL_NAME;
use super::common::{MAX_SEARCH_TOP_K, fetch_k, map_error, readable, string_arg};
use super::meta_args::{category_arg, category_schema, tags_arg, tags_schema};
use super::render::{SEARCH_BUDGET, render, render_shown};
use super::scope::{Current, Scope, annotate, scope_arg, scope_schema};
use crate::MemoryAccess;
use crate::ToolError;
use crate::memory_tools::MemoryState;
use crate::spec::{Call, OpFuture, ToolSpec, boxed};
use serde_json::Value;

/// Longest query accepted, in bytes (the one cap of every surface).
const MAX_QUERY_BYTES: usize = HybridQuery::MAX_TEXT_BYTES;

pub(crate) static SPEC: ToolSpec<MemoryState> = ToolSpec::new(
    MEMORY_SEARCH_TOOL_NAME,
    DESCRIPTION,
    search_parameters,
    search_access,
    search,
)
.timeout_secs(15)
.marks_untrusted(super::render::shows_unconfirmed);

const DESCRIPTION: &str = "Search your persistent memory for relevant information. Use this when you need to recall \
     user preferences, past decisions, stored facts, or anything previously saved. Results are \
     ranked by relevance using semantic similarity and keyword matching. By default searches \
     only your saved notes; set include_conversation to true to also search the current \
     conversation history, or scope to \"conversations\" (every past conversation with the \
     user, each hit with its session_id, title, date, speaker and surrounding turns; the \
     current one too when include_conversation is true) or \"all\" (notes and past \
     conversations ranked together). Returns {\"results\": [...]}: \
     each saved note comes whole, with the \
     version memory_update needs, unless it is too long to fit with the other results; then it \
     is an excerpt marked \"partial\": true with its full \"length\" and no version (search \
     again more narrowly, e.g. top_k 1, to see it whole). \"omitted\" counts results left out \
     to fit. Results from the conversation have source \"conversation\" and no note_id: they \
     cannot be updated or deleted with memory tools. Give category or tags to search only \
     notes of that kind or carrying one of those tags; results show each note's category and \
     tags when set. Every result has its date (created_at, or date for a conversation): a \
     time in the query (\"yesterday\", \"last week\", \"in May\", \"on 3 June 2024\", \"two days \
     ago\", \"before the trip\": an event is dated by the memory that best matches it) ranks \
     what was saved or said then first, read in the user's time zone, and the output's \"time\" \
     says how it was read. \"unconfirmed\": true marks a note saved or changed after \
     untrusted input (a web page, a file, a tool's output) that the user has not confirmed: \
     not the user's word; its \"confirmed_text\", when given, is the note as the user last \
     confirmed it.";

fn search_parameters() -> Value {
    let mut schema = serde_json::json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_BYTES,
                "description": "Natural language search query, e.g. \"the user's preferred name\"."
            },
            "top_k": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_SEARCH_TOP_K,
                "description": "Max results to return (default: 5, max: 20)."
            },
            "include_conversation": {
                "type": "boolean",
                "description": "Also search the current conversation session (default: false)."
            }
        },
        "required": ["query"],
        "additionalProperties": false
    });
    if let Some(props) = schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
    {
        props.insert("category".into(), category_schema());
        props.insert("scope".into(), scope_schema());
        props.insert(
            "tags".into(),
            tags_schema("Optional: only notes carrying at least one of these tags."),
        );
    }
    schema
}

fn search_access(_args: &Value) -> MemoryAccess {
    crate::MemoryAccess::notes_read()
}

fn search(call: Call<'_, MemoryState>) -> OpFuture<'_> {
    let (state, args, ctx, op) = (call.state, call.args, call.ctx, call.span);
    boxed(async move {
        let memory = state.store()?;
        let text = string_arg(args, "query")?;
        // Blank, it is no search: refused, as the user's own searches refuse it (answered with
        // no results, it read as "nothing remembered").
        if text.trim().is_empty() {
            return Err(ToolError::InvalidArguments {
                field: "query".into(),
                expected: "a few words to search for, not only spaces".into(),
            });
        }
        if text.len() > MAX_QUERY_BYTES {
            return Err(ToolError::InvalidArguments {
                field: "query".into(),
                expected: format!("at most {MAX_QUERY_BYTES} bytes: search with a few key words"),
            });
        }
        let top_k = match args.get("top_k").and_then(serde_json::Value::as_u64) {
            Some(k) => usize::try_from(k)
                .unwrap_or(MAX_SEARCH_TOP_K)
                .clamp(1, MAX_SEARCH_TOP_K),
            None => state.default_top_k(),
        };
        let scope = scope_arg(args)?;
        let include_conversation = args
            .get("include_conversation")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        let filters = QueryFilters {
            category: category_arg(args)?,
            tags_any: tags_arg(args)?.unwrap_or_default(),
            ..QueryFilters::default()
        };
        tracing::debug!(query = text, top_k, include_conversation, "memory search");

        let notes = SessionId::user_memory(&ctx.user_id);
        let mut skipped = None;
        let mut asked = if scope != Scope::Notes {
            let current = match include_conversation {
                true => Current::Included,
                false => Current::Left,
            };
            let sessions = super::scope::sessions(memory, ctx, scope, current)
                .await
                .map_err(|e| map_error(e, None))?;
            state.query(sessions, text, fetch_k(ctx, top_k), &filters)
        } else if include_conversation && ctx.session_id != notes {
            // One query over both sessions puts notes and messages on one score scale.
            let both = vec![notes.clone(), ctx.session_id.clone()];
            state.query(both, text, fetch_k(ctx, top_k), &filters)
        } else {
            state.query(vec![notes.clone()], text, fetch_k(ctx, top_k), &filters)
        };
        // Read once, before the search (an event as anchor is dated in the same sessions); the
        // search takes the span as read, or no time at all when none was found.
        let range = memory.read_time(&asked).await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "reading the query's time failed");
            None
        });
        // The user's zone, taken before the time is settled (a query naming no time has none
        // after it): every result is dated in it.
        let tz = asked.time.map_or(chrono_tz::Tz::UTC, |t| t.tz);
        asked.settle_time(range.as_ref());
        let hits = match memory.hybrid_query(&asked).await {
            Ok(hits) => hits,
            Err(e) if scope == Scope::Notes && asked.sessions.len() > 1 => {
                tracing::warn!(error = %e, "conversation search failed; returning saved notes only");
                skipped = Some(
                    "Searching the current conversation failed, so it was skipped; \
                     these results come from saved notes only.",
                );
                asked.sessions = vec![notes];
                memory
                    .hybrid_query(&asked)
                    .await
                    .map_err(|e| map_error(e, None))?
            }
            Err(e) => return Err(map_error(e, None)),
        };
        let hits = readable(ctx, dedup(hits), top_k);
        let hits = super::scope::read_back(memory, &ctx.user_id, hits).await;
        op.results(hits.len());
        let out = match scope {
            Scope::Notes => render(&hits, SEARCH_BUDGET, skipped, tz),
            // Half the room for where each message was said.
            _ => {
                annotate(
                    memory,
                    ctx,
                    render_shown(&hits, SEARCH_BUDGET / 2, skipped, tz),
                    &hits,
                    tz,
                )
                .await
            }
        };
        let out = with_time(out, range.as_ref(), tz);
        Ok(crate::memory_files::with_paths(memory, &ctx.user_id, out).await)
    })
}

/// `out` (rendered results) saying which span of time the query's words were read as.
fn with_time(out: String, range: Option<&TimeRange>, tz: chrono_tz::Tz) -> String {
    let Some(range) = range else {
        return out;
    };
    let (Ok(mut rendered), Ok(time)) = (
        serde_json::from_str::<Value>(&out),
        serde_json::to_value(range.view(tz)),
    ) else {
        return out;
    };
    rendered["time"] = time;
    rendered.to_string()
}

impl MemoryState {
    fn default_top_k(&self) -> usize {
        self.retrieval.top_k.clamp(1, MAX_SEARCH_TOP_K)
    }

    fn query(
        &self,
        sessions: Vec<SessionId>,
        text: &str,
        top_k: usize,
        filters: &QueryFilters,
    ) -> HybridQuery {
        let mut q = HybridQuery::new(sessions, text, top_k);
        q.weights = Weights::from(&self.retrieval);
        q.filters = filters.clone();
        q.time = Some(self.query_time());
        q
    }

    /// Now, in the user's time zone (the host's when none is configured).
    pub(crate) fn query_time(&self) -> QueryTime {
        query_time(self.timezone)
    }
}

/// Now, in the user's time zone — `configured` (`[user] timezone`), else the host's, else UTC:
/// the one reading of "now" every search door (the memory tools, the runtime's note and
/// conversation searches, the CLI) gives a query's words about time.
pub fn query_time(configured: Option<chrono_tz::Tz>) -> QueryTime {
    let tz = configured.unwrap_or_else(|| {
        crate::schedule_tools::resolve_timezone(None).unwrap_or(chrono_tz::Tz::UTC)
    });
    QueryTime::now_in(tz)
}

/// One entry per note or message; a conversation message saying exactly what a returned note says
/// is dropped in favour of the note (which has an id the model can act on).
fn dedup(hits: Vec<SearchHit>) -> Vec<SearchHit> {
    let normal = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let note_texts: HashSet<String> = hits
        .iter()
        .filter(|h| h.source == HitSource::UserMemory)
        .map(|h| normal(h.note_text.as_deref().unwrap_or(&h.text)))
        .collect();
    let mut seen = HashSet::new();
    hits.into_iter()
        .filter(|h| {
            let key = match &h.note_id {
                Some(id) => id.to_string(),
                None => format!("{}#{}", h.session_id, h.event_seq),
            };
            let duplicate_of_note =
                h.source == HitSource::Conversation && note_texts.contains(&normal(&h.text));
            seen.insert(key) && !duplicate_of_note
        })
        .collect()
}
