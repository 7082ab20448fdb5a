//! Writing a LoCoMo conversation into a fresh store, three ways: each turn one note of the user's
//! memory namespace (`import`: `import_notes`, or `save`: one `store_note` each), or each LoCoMo
//! session one conversation session whose turns are its messages (`conversations`: the first
//! speaker's turns as the user's, the other's as the assistant's). Notes and messages carry the
//! session's real date (LoCoMo's `session_<n>_date_time`, read as UTC), a minute apart per turn.

use std::collections::HashMap;

use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use memory::{ExportedNote, MemoryStore, NoteMetadata, SearchHit};
use serde::Deserialize;
use types::{Message, NoteId, SessionId, UserId};

use crate::BenchResult;

/// How the turns are written into the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// `import_notes` (batched transactions).
    Import,
    /// One `store_note` per turn.
    Save,
    /// One conversation session per LoCoMo session, one message per turn.
    Conversations,
}

impl Load {
    pub fn parse(s: &str) -> BenchResult<Self> {
        match s {
            "import" => Ok(Self::Import),
            "save" => Ok(Self::Save),
            "conversations" => Ok(Self::Conversations),
            other => {
                Err(format!("unknown --load {other:?} (import, save or conversations)").into())
            }
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Load::Import => "notes via import_notes",
            Load::Save => "notes via store_note",
            Load::Conversations => "conversation sessions via append_message_at",
        }
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct Conversation {
    pub(crate) conversation: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub(crate) qa: Vec<super::locomo::Qa>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Turn {
    pub(crate) speaker: String,
    pub(crate) dia_id: String,
    text: String,
    #[serde(default)]
    blip_caption: Option<String>,
    /// The LoCoMo session (1, 2, …) and when the turn was said.
    #[serde(skip)]
    pub(crate) session: u32,
    #[serde(skip)]
    pub(crate) at: Option<DateTime<Utc>>,
}

/// The conversation's turns, sessions in numeric order, each dated.
pub(crate) fn turns_of(conv: &Conversation) -> BenchResult<Vec<Turn>> {
    let mut sessions: Vec<(u32, &serde_json::Value)> = conv
        .conversation
        .iter()
        .filter_map(|(k, v)| {
            let n = k.strip_prefix("session_")?.parse::<u32>().ok()?;
            v.is_array().then_some((n, v))
        })
        .collect();
    sessions.sort_by_key(|(n, _)| *n);
    let mut turns = Vec::new();
    for (n, v) in sessions {
        let key = format!("session_{n}_date_time");
        let raw = conv.conversation.get(&key).and_then(|d| d.as_str());
        let date = raw.and_then(session_date).ok_or_else(|| {
            format!("{key}: no date of the form \"1:56 pm on 8 May, 2023\" ({raw:?})")
        })?;
        for (i, mut turn) in Vec::<Turn>::deserialize(v)?.into_iter().enumerate() {
            turn.session = n;
            turn.at = Some(date + Duration::minutes(i64::try_from(i).unwrap_or(0)));
            turns.push(turn);
        }
    }
    Ok(turns)
}

/// "1:56 pm on 8 May, 2023", read as UTC.
fn session_date(text: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(text.trim(), "%I:%M %p on %d %B, %Y")
        .ok()
        .map(|t| t.and_utc())
}

pub(crate) fn note_text(turn: &Turn) -> String {
    match turn
        .blip_caption
        .as_deref()
        .filter(|c| !c.trim().is_empty())
    {
        Some(caption) => format!(
            "{}: {} [shares an image: {caption}]",
            turn.speaker, turn.text
        ),
        None => format!("{}: {}", turn.speaker, turn.text),
    }
}

/// What a loaded conversation is searched with.
pub(crate) struct Loaded {
    /// [`hit_key`] → dia id.
    pub dia_of: HashMap<String, String>,
    /// The sessions a question searches.
    pub sessions: Vec<SessionId>,
    /// When the questions are asked: the last turn's time.
    pub now: DateTime<Utc>,
}

/// The key of a hit: its note id, or its session and sequence number.
pub(crate) fn hit_key(hit: &SearchHit) -> String {
    match &hit.note_id {
        Some(id) => id.to_string(),
        None => format!("{}#{}", hit.session_id, hit.event_seq),
    }
}

/// Writes every turn.
pub(crate) async fn load_turns(
    store: &MemoryStore,
    user: &UserId,
    turns: &[Turn],
    load: Load,
) -> BenchResult<Loaded> {
    let fallback = Utc::now() - Duration::days(1);
    let when = |i: usize, t: &Turn| {
        t.at.unwrap_or(fallback + Duration::seconds(i64::try_from(i).unwrap_or(0)))
    };
    let now = turns
        .iter()
        .enumerate()
        .map(|(i, t)| when(i, t))
        .max()
        .unwrap_or(fallback);
    let mut dia_of = HashMap::new();
    let mut sessions = vec![SessionId::user_memory(user)];
    match load {
        Load::Import => {
            let mut notes = Vec::with_capacity(turns.len());
            for (i, turn) in turns.iter().enumerate() {
                let note_id = NoteId::from_uuid_str(&uuid::Uuid::new_v4().to_string())?;
                dia_of.insert(note_id.to_string(), turn.dia_id.clone());
                notes.push(ExportedNote {
                    note_id,
                    content: note_text(turn),
                    metadata: NoteMetadata::default(),
                    created_at: when(i, turn),
                    updated_at: when(i, turn),
                });
            }
            let added = store
                .import(user, None, notes, memory::Similar::Unchecked, None)
                .await
                .map(|report| report.imported)?;
            if added != turns.len() {
                return Err(format!("imported {added} of {} turns", turns.len()).into());
            }
        }
        Load::Save => {
            for turn in turns {
                let note = store
                    .save(
                        user,
                        None,
                        &note_text(turn),
                        NoteMetadata::default(),
                        memory::Similar::Unchecked,
                    )
                    .await
                    .and_then(memory::Saved::into_note)?;
                dia_of.insert(note.note_id.to_string(), turn.dia_id.clone());
            }
        }
        Load::Conversations => {
            let first = turns.first().map(|t| t.speaker.clone()).unwrap_or_default();
            for (i, turn) in turns.iter().enumerate() {
                let session = SessionId::parse(&format!("locomo-session-{}", turn.session))?;
                let text = note_text(turn);
                let message = match turn.speaker == first {
                    true => Message::user(text),
                    false => Message::assistant(text),
                };
                let seq = store
                    .sessions()
                    .append_message_at(&session, user, &message, Some(when(i, turn)))
                    .await?;
                dia_of.insert(format!("{session}#{seq}"), turn.dia_id.clone());
            }
            sessions = store.conversation_sessions(user).await?;
        }
    }
    Ok(Loaded {
        dia_of,
        sessions,
        now,
    })
}
