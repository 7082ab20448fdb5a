//! The turns after a hit: in a conversation, what answers a query is often said just after the
//! turn that matches it.
//!
//! "Which team did I sign with?" matches the assistant's "Which team did you sign with?" far
//! better than the user's answer, "The Minnesota Wolves!", which shares no word with it. So after
//! the hits are read, each conversation hit lends part of its score to the turn after it:
//!
//! - a message that asks something (any part of it holds a `?`) to its **reply**, the next user
//!   or assistant message of the session, at [`REPLY_SHARE`] of its score;
//! - any other message to its **follow-up**, the second next one (the same speaker going on after
//!   the other's reaction), at [`FOLLOW_UP_SHARE`].
//!
//! A turn already among the hits keeps the better of its two scores; one that is not joins them
//! when its borrowed score ranks it within `top_k` and the query's filters allow it (checked on
//! the index like every candidate). Tool calls and results between the turns are skipped: only
//! indexed user and assistant messages count, within [`WINDOW`] events. Notes are not a dialogue
//! and lend nothing. Measured on LoCoMo's conversations (`docs/benchmarks.md`, "The turn after").

use std::collections::{HashMap, HashSet};

use libsql::{Row, Value};

use crate::error::MemoryError;
use crate::notes::sessions::to_sql_seq;
use crate::search::hits::{ChunkDetail, detail_of};
use crate::search::query::{HitSource, SearchHit};
use crate::store::batch_read::Reads;
use crate::store::stmt::Stmt;

/// Share of a question's score lent to its reply (0.95–1.0 within noise of each other on
/// LoCoMo; above 1 the reply outranks its question and loses).
pub(crate) const REPLY_SHARE: f64 = 0.98;
/// Share of a statement's score lent to its follow-up (0.85–0.95 within noise; 0.8 gains little).
pub(crate) const FOLLOW_UP_SHARE: f64 = 0.9;
/// Events after a hit searched for its next two messages (tool calls sit between turns).
const WINDOW: u64 = 9;

/// Whether a message asks something (any of its chunks holds a `?`: a long message asks at its
/// end, while its best chunk may be its first), read with the turns after it. `char(63)` is `?`,
/// written so that no client could take it for a placeholder.
const ASKS: &str = "EXISTS (SELECT 1 FROM chunks q
    WHERE q.session_id = w.session_id AND q.event_seq = w.event_seq
    AND q.note_id IS NULL AND instr(q.text, char(63)) > 0)";

/// A conversation message, as the key of what follows it: (session id, event sequence number).
type Turn = (String, i64);

/// The first chunks of the next two indexed messages after a message, and whether its session
/// holds events past those read.
#[derive(Default)]
pub(crate) struct After {
    turns: Vec<(i64, ChunkDetail)>,
    more: bool,
    /// Whether the message itself asks something.
    asks: bool,
}

/// What follows some messages, read with the hits.
pub(crate) type Prefetched = HashMap<Turn, After>;

/// `hits` (best first, at most `top_k`) with the turns after their conversation hits lent their
/// scores, best first again, at most `top_k`. `read` holds what follows some of them (read with the
/// hits); the rest is read here. `allows(session, chunk_id)`: whether the query's filters let a
/// chunk in.
pub(crate) async fn with_replies(
    reads: &Reads,
    mut hits: Vec<SearchHit>,
    mut read: Prefetched,
    top_k: usize,
    allows: impl Fn(&str, i64) -> bool,
) -> Result<Vec<SearchHit>, MemoryError> {
    let mut lenders: Vec<(Turn, f64)> = Vec::new();
    for hit in hits.iter().filter(|h| h.source == HitSource::Conversation) {
        let turn = (hit.session_id.to_string(), to_sql_seq(hit.event_seq)?);
        lenders.push((turn, hit.score));
    }
    if lenders.is_empty() {
        return Ok(hits);
    }
    // A message not read with the hits gets the two events after it read here; one short of two
    // turns where its conversation goes on (tool calls between) is read again, further.
    let unread: Vec<&Turn> = lenders
        .iter()
        .map(|(turn, ..)| turn)
        .filter(|turn| !read.contains_key(*turn))
        .collect();
    if !unread.is_empty() {
        read.extend(turns_within(reads, &unread, 2).await?);
    }
    let short: Vec<&Turn> = lenders
        .iter()
        .map(|(turn, ..)| turn)
        .filter(|turn| read.get(*turn).is_some_and(|a| a.more && a.turns.len() < 2))
        .collect();
    if !short.is_empty() {
        read.extend(turns_within(reads, &short, WINDOW).await?);
    }
    // The best score lent to each turn.
    let mut lent: HashMap<Turn, (f64, &ChunkDetail, i64)> = HashMap::new();
    for (turn, score) in &lenders {
        let Some(after) = read.get(turn) else {
            continue;
        };
        let (next, share) = if after.asks {
            (after.turns.first(), REPLY_SHARE)
        } else {
            (after.turns.get(1), FOLLOW_UP_SHARE)
        };
        let Some((chunk_id, detail)) = next else {
            continue;
        };
        let score = score * share;
        let key = (detail.session.clone(), detail.event_seq);
        if lent.get(&key).is_none_or(|(s, ..)| *s < score) {
            lent.insert(key, (score, detail, *chunk_id));
        }
    }
    for hit in &mut hits {
        let key = (hit.session_id.to_string(), to_sql_seq(hit.event_seq)?);
        if hit.source == HitSource::Conversation
            && let Some((score, ..)) = lent.remove(&key)
        {
            hit.score = hit.score.max(score);
        }
    }
    let floor = if hits.len() < top_k {
        f64::MIN
    } else {
        hits.iter().map(|h| h.score).fold(f64::MAX, f64::min)
    };
    for (score, detail, chunk_id) in lent.into_values() {
        if score > floor && allows(&detail.session, chunk_id) {
            hits.push(detail.hit(score)?);
        }
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(top_k);
    Ok(hits)
}

/// The chunks' columns a turn after is read with, then its message's session and sequence
/// number, whether the session goes on past the events read, and whether the message asks.
const COLUMNS: &str = "c.chunk_id, c.session_id, c.event_seq, c.note_id, c.text, c.metadata_json";

/// What follows the messages of conversation chunks `ids` (notes' chunks are left out): the two
/// events after each, all it takes when no tool call sits between the turns. Sent with the
/// hits' reads (one request to a server); read row by row by [`after_row`].
pub(crate) fn after_chunks_stmt(ids: &[i64]) -> Stmt {
    let marks = vec!["?"; ids.len()].join(", ");
    let args: Vec<Value> = ids.iter().copied().map(Value::Integer).collect();
    Stmt::built(
        format!(
            "SELECT {COLUMNS}, w.session_id, w.event_seq, s.next_seq - 1 > w.event_seq + 2, {ASKS}
             FROM chunks w JOIN sessions s ON s.session_id = w.session_id
             LEFT JOIN chunks c ON c.session_id = w.session_id
                 AND c.event_seq > w.event_seq AND c.event_seq <= w.event_seq + 2
                 AND c.note_id IS NULL AND c.ordinal = 0
             WHERE w.chunk_id IN ({marks}) AND w.note_id IS NULL
             ORDER BY w.session_id, w.event_seq, c.event_seq"
        ),
        args,
    )
}

/// One row of [`after_chunks_stmt`] or [`turns_within`] into `out`, when its message is `wanted`.
pub(crate) fn after_row(
    out: &mut Prefetched,
    row: &Row,
    wanted: Option<&HashSet<Turn>>,
) -> Result<(), MemoryError> {
    let turn: Turn = (
        row.get(6).map_err(MemoryError::db(CTX))?,
        row.get(7).map_err(MemoryError::db(CTX))?,
    );
    if wanted.is_some_and(|w| !w.contains(&turn)) {
        return Ok(());
    }
    let more = row.get::<bool>(8).map_err(MemoryError::db(CTX))?;
    let asks = row.get::<bool>(9).map_err(MemoryError::db(CTX))?;
    let found = row.get::<Option<i64>>(0).map_err(MemoryError::db(CTX))?;
    let after = out.entry(turn).or_default();
    after.more = more;
    after.asks = asks;
    // Two messages at most, each once (a message's several chunks in the hits' window read
    // the same turns): the rest is left unparsed.
    let Some(seq) = found
        .map(|_| row.get::<i64>(2))
        .transpose()
        .map_err(MemoryError::db(CTX))?
    else {
        return Ok(());
    };
    if after.turns.len() < 2 && after.turns.last().is_none_or(|(_, d)| d.event_seq != seq) {
        after.turns.push(detail_of(row)?);
    }
    Ok(())
}

/// What follows messages `turns`, looking `window` events ahead.
async fn turns_within(
    reads: &Reads,
    turns: &[&Turn],
    window: u64,
) -> Result<Prefetched, MemoryError> {
    let mut args = Vec::with_capacity(turns.len() * 2);
    for (session, seq) in turns {
        args.push(Value::Text(session.clone()));
        args.push(Value::Integer(*seq));
    }
    let windows = vec!["(?, ?)"; turns.len()].join(", ");
    let sql = format!(
        "WITH w (session_id, event_seq) AS (VALUES {windows})
         SELECT {COLUMNS}, w.session_id, w.event_seq, s.next_seq - 1 > w.event_seq + {window},
             {ASKS}
         FROM w JOIN sessions s ON s.session_id = w.session_id
         LEFT JOIN chunks c ON c.session_id = w.session_id
             AND c.event_seq > w.event_seq AND c.event_seq <= w.event_seq + {window}
             AND c.note_id IS NULL AND c.ordinal = 0
         ORDER BY w.session_id, w.event_seq, c.event_seq"
    );
    let mut out = Prefetched::new();
    reads
        .each(Stmt::built(sql, args), CTX, |row| {
            after_row(&mut out, row, None)
        })
        .await?;
    Ok(out)
}

const CTX: &str = "reading the turns after the hits";
