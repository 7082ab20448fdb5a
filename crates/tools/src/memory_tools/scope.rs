//! `memory_search`'s `scope`: the user's saved notes (`notes`, the default), every past
//! conversation of the user (`conversations`: each of their conversation sessions, not only the
//! current one), or both (`all`) — one query over all the sessions asked for, so notes and
//! messages share one score scale. A message hit is shown with where it was said: its session
//! id and title, its date, its speaker and the turns around it. Sessions are the caller's user's
//! only (from the context, never from arguments).

use std::collections::HashMap;

use memory::{HitSource, MemoryError, MemoryRetrieval, SearchHit};
use serde_json::{Value, json};
use types::{SessionId, ToolExecutionContext, UserId};

use super::render::{Rendered, local_time};
use crate::ToolError;

/// Messages shown on each side of a conversation hit.
const NEIGHBOURS: usize = 2;

/// Where `memory_search` (and `runner memory search --scope`) looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Notes,
    Conversations,
    All,
}

/// The `scope` property of the search schema.
pub(crate) fn scope_schema() -> Value {
    json!({
        "type": "string",
        "enum": ["notes", "conversations", "all"],
        "description": "Where to search: \"notes\" (default) your saved notes; \"conversations\" \
            every past conversation with the user (each hit with its session, date, speaker and \
            the turns around it; the current one too with include_conversation); \"all\" both, \
            ranked together."
    })
}

pub(crate) fn scope_arg(args: &Value) -> Result<Scope, ToolError> {
    match args.get("scope") {
        None | Some(Value::Null) => Ok(Scope::Notes),
        Some(Value::String(s)) if s == "notes" => Ok(Scope::Notes),
        Some(Value::String(s)) if s == "conversations" => Ok(Scope::Conversations),
        Some(Value::String(s)) if s == "all" => Ok(Scope::All),
        Some(_) => Err(ToolError::InvalidArguments {
            field: "scope".into(),
            expected: "one of \"notes\", \"conversations\", \"all\"".into(),
        }),
    }
}

/// Whether a search of past conversations also reads the caller's current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Current {
    Included,
    Left,
}

/// The sessions `scope` searches for the caller (`Notes` is not asked here). The current
/// conversation is left out unless `current` includes it (`include_conversation`): it is the
/// model's context already, and its latest message — the question being asked — would come back
/// as its own best match, above what was said before.
pub(crate) async fn sessions(
    memory: &dyn MemoryRetrieval,
    ctx: &ToolExecutionContext,
    scope: Scope,
    current: Current,
) -> Result<Vec<SessionId>, MemoryError> {
    let leave = (current == Current::Left).then_some(&ctx.session_id);
    scope_sessions(memory, &ctx.user_id, scope, leave).await
}

/// The sessions of `user` that `scope` searches: their notes, their conversation sessions (but
/// `leave`), or both. Never another user's: the sessions are listed by `user`.
pub async fn scope_sessions(
    memory: &dyn MemoryRetrieval,
    user: &UserId,
    scope: Scope,
    leave: Option<&SessionId>,
) -> Result<Vec<SessionId>, MemoryError> {
    let mut sessions = match scope {
        Scope::Notes => Vec::new(),
        Scope::Conversations | Scope::All => memory.conversation_sessions(user).await?,
    };
    if let Some(leave) = leave {
        sessions.retain(|s| s != leave);
    }
    if scope != Scope::Conversations {
        sessions.push(SessionId::user_memory(user));
    }
    Ok(sessions)
}

/// `hits` as the model may read them back: marked where the user has not confirmed what they
/// show, and an unconfirmed note carrying the text the user last confirmed.
///
/// - Those said in the session of a schedule made after untrusted input are marked unconfirmed:
///   that session's user-role messages are the schedule's instruction, text the user never wrote,
///   and its turns were taken under it. Shown so, they mark the context that reads them as an
///   unconfirmed note does. A schedule that cannot be read marks its session's hits.
/// - A note changed after untrusted input carries its confirmed text (see
///   [`memory::MemoryStore::add_confirmed_texts`]); when that cannot be read it is left marked.
pub(crate) async fn read_back(
    memory: &dyn MemoryRetrieval,
    user: &UserId,
    mut hits: Vec<SearchHit>,
) -> Vec<SearchHit> {
    let Some(store) = memory.files() else {
        return hits;
    };
    let mut known: HashMap<String, bool> = HashMap::new();
    for hit in &mut hits {
        let Some(id) = hit.session_id.as_str().strip_prefix("schedule-") else {
            continue;
        };
        let planted = match known.get(id) {
            Some(&planted) => planted,
            None => {
                let planted = match store.schedules().get(user, id).await {
                    Ok(s) => s.is_some_and(|s| crate::schedule_untrusted(&s.provenance).is_some()),
                    Err(_) => true,
                };
                known.insert(id.to_owned(), planted);
                planted
            }
        };
        hit.unconfirmed |= planted;
    }
    if let Err(e) = store.add_confirmed_texts(user, &mut hits).await {
        tracing::warn!(error = %e, "reading the confirmed texts of unconfirmed notes failed");
    }
    hits
}

/// `rendered` results with each conversation result told where it was said (the contexts of
/// all of them read together), dated in the user's time zone `tz`. Each result is matched to the hit it shows by its place, never by
/// its text: a short message is often the start of a longer one left out to fit.
pub(crate) async fn annotate(
    memory: &dyn MemoryRetrieval,
    ctx: &ToolExecutionContext,
    rendered: Rendered,
    hits: &[SearchHit],
    tz: chrono_tz::Tz,
) -> String {
    let Rendered { text: out, shown } = rendered;
    let Ok(mut rendered) = serde_json::from_str::<Value>(&out) else {
        return out;
    };
    let Some(results) = rendered["results"].as_array_mut() else {
        return out;
    };
    // Each rendered conversation result, and the hit it shows.
    let shown: Vec<(usize, (SessionId, u64))> = shown
        .iter()
        .enumerate()
        .filter_map(|(r, &i)| hits.get(i).map(|hit| (r, hit)))
        .filter(|(_, hit)| hit.source == HitSource::Conversation)
        .map(|(r, hit)| (r, (hit.session_id.clone(), hit.event_seq)))
        .collect();
    if shown.is_empty() {
        return out;
    }
    let wanted: Vec<(SessionId, u64)> = shown.iter().map(|(_, hit)| hit.clone()).collect();
    let places = match memory
        .conversation_contexts(&ctx.user_id, &wanted, NEIGHBOURS)
        .await
    {
        Ok(places) => places,
        Err(e) => {
            tracing::debug!(error = %e, "no context for the conversation hits");
            return out;
        }
    };
    for ((r, _), place) in shown.iter().zip(places) {
        let (Some(result), Some(place)) = (results.get_mut(*r), place) else {
            continue;
        };
        result["session_id"] = json!(place.session_id);
        if let Some(title) = place.title {
            result["title"] = json!(title);
        }
        result["date"] = json!(local_time(place.at, tz));
        result["speaker"] = json!(place.speaker);
        result["context"] = place
            .neighbours
            .iter()
            .map(|n| json!({"speaker": n.speaker, "text": n.text}))
            .collect();
    }
    rendered.to_string()
}
