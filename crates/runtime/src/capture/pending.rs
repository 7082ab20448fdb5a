//! `mode = "suggest"`: capture's proposals wait in the store (per user) until the user accepts
//! one — then it is applied exactly as `auto` would have, through the registry's pipeline as the
//! `capture` surface, and confirmed, since the user read it — or rejects it (removed, nothing
//! written). A proposal whose note changed since it was made is refused and stays listed. A
//! secret in a proposal's text is redacted before it is kept.

use chrono_tz::Tz;
use memory::{CallKey, MemoryStore, PendingProposal, ProposalPlace};
use tools::Governance;
use tools::governance::pii::{self, PiiKind};
use types::{PendingMemory, SessionId, Surface, ToolExecutionContext, TurnId, UntrustedInput};

use super::apply;
use super::proposal::Proposal;
use crate::RuntimeError;
use crate::runtime::AgentRuntime;
use types::CapturedChange;

/// How an untrusted input is stored with a proposal.
pub(super) fn untrusted_name(input: UntrustedInput) -> &'static str {
    match input {
        UntrustedInput::File => "file",
        UntrustedInput::Shell => "shell",
        UntrustedInput::Web => "web",
        UntrustedInput::Note => "note",
        UntrustedInput::Client => "client",
        UntrustedInput::Mcp => "mcp",
    }
}

/// Stores `proposals` for the user, less those already waiting (a fact the user repeats in each
/// conversation is proposed once, not once per capture), secrets redacted and personal data
/// screened as the capture surface says; returns them as the user will see them.
pub(super) async fn keep(
    store: &MemoryStore,
    governance: &Governance,
    place: ProposalPlace<'_>,
    proposals: &[Proposal],
    zone: Tz,
) -> Result<Vec<PendingMemory>, RuntimeError> {
    let proposals: Vec<Proposal> = proposals
        .iter()
        .map(without_secrets)
        .filter_map(|p| screened(governance, p))
        .collect();
    let waiting: Vec<Proposal> = store
        .captures()
        .pending_proposals(place.user)
        .await
        .map_err(RuntimeError::memory("reading capture proposals"))?
        .iter()
        .filter_map(|row| pending_view(row, zone))
        .map(|(_, p)| p)
        .collect();
    let mut kept: Vec<&Proposal> = Vec::new();
    for p in &proposals {
        if !waiting
            .iter()
            .chain(kept.iter().copied())
            .any(|w| w.same_change(p))
        {
            kept.push(p);
        }
    }
    if kept.is_empty() {
        return Ok(Vec::new());
    }
    let texts: Vec<String> = kept
        .iter()
        .map(|p| serde_json::to_string(p).unwrap_or_default())
        .collect();
    let ids = store
        .captures()
        .add_proposals(place, texts)
        .await
        .map_err(RuntimeError::memory("storing capture proposals"))?;
    // As stored (with the store's own times), so the report and a later list agree.
    let stored = store
        .captures()
        .pending_proposals(place.user)
        .await
        .map_err(RuntimeError::memory("reading capture proposals"))?;
    Ok(stored
        .iter()
        .filter(|row| ids.contains(&row.id))
        .filter_map(|row| pending_view(row, zone))
        .map(|(view, _)| view)
        .collect())
}

/// `p` as a proposal may be kept: a secret in the text it would write redacted, a tag holding
/// one left out. A proposal waits in the store, is sent to every client of the user and listed
/// until they decide; what is stored is what is screened, and the pipeline never lets a secret
/// into a note (refused or redacted, as `[governance]` says), so it is no secret's place either.
fn without_secrets(p: &Proposal) -> Proposal {
    let secret = |kind: PiiKind| kind == PiiKind::Secret;
    let redact = |text: &mut String| *text = pii::redact(text, secret).0;
    let mut p = p.clone();
    if let Proposal::Add { content, tags, .. } | Proposal::Update { content, tags, .. } = &mut p {
        redact(content);
        tags.retain(|t| pii::redact(t, secret).1.is_empty());
    }
    p
}

/// `p` screened as the capture surface's write of it will be (`[governance.surfaces.capture]
/// pii`): personal data redacted where the surface redacts it; `None` where the surface refuses
/// it — it could never be accepted, and it would wait, shown to every client, until rejected. A
/// tag holding personal data is left out.
fn screened(governance: &Governance, mut p: Proposal) -> Option<Proposal> {
    if let Proposal::Add { content, tags, .. } | Proposal::Update { content, tags, .. } = &mut p {
        if governance.screen_kept(Surface::Capture, content).is_err() {
            tracing::info!(
                "capture: a proposal the capture surface refuses (personal data) is not kept"
            );
            return None;
        }
        tags.retain(|t| {
            let mut screened = t.clone();
            governance
                .screen_kept(Surface::Capture, &mut screened)
                .is_ok()
                && screened == *t
        });
    }
    Some(p)
}

fn view(row: &PendingProposal, p: &Proposal, created_at: &str) -> PendingMemory {
    PendingMemory {
        id: row.id,
        action: p.action().to_owned(),
        note_id: p.note_id().map(str::to_owned),
        content: p.content().map(str::to_owned),
        note_text: p.note_text().map(str::to_owned),
        session_id: row.session_id.clone(),
        created_at: created_at.to_owned(),
        untrusted: row.untrusted.clone(),
    }
}

/// A stored proposal as the user sees it, dated in their zone (`None` for a row this version
/// cannot read).
pub(crate) fn pending_view(row: &PendingProposal, zone: Tz) -> Option<(PendingMemory, Proposal)> {
    let proposal: Proposal = serde_json::from_str(&row.proposal_json).ok()?;
    let at = crate::notes::rfc3339_in(row.created_at, zone);
    Some((view(row, &proposal, &at), proposal))
}

impl AgentRuntime {
    /// The proposals of capture waiting for the user of `ctx`, oldest first: a governed read
    /// (`memory_pending`) of the caller's surface, since each shows a text to be saved or the
    /// text of the note it would change.
    pub async fn pending_memories(
        &self,
        ctx: &ToolExecutionContext,
    ) -> Result<Vec<PendingMemory>, RuntimeError> {
        let store = self.notes_store()?;
        let access = tools::MemoryAccess::notes_read();
        let zone = self.zone();
        self.govern(ctx, types::memory_ops::PENDING, access, |_| async move {
            let rows = store
                .captures()
                .pending_proposals(&ctx.user_id)
                .await
                .map_err(RuntimeError::memory("reading capture proposals"))?;
            Ok(rows
                .iter()
                .filter_map(|row| pending_view(row, zone))
                .map(|(v, _)| v)
                .collect::<Vec<_>>())
        })
        .await
    }

    /// Applies the user's pending proposal `id` (confirmed: the user read it) and removes it.
    pub async fn accept_memory(
        &self,
        ctx: &ToolExecutionContext,
        id: i64,
    ) -> Result<Option<CapturedChange>, RuntimeError> {
        let store = self.notes_store()?;
        let capture = self
            .capture
            .as_ref()
            .ok_or(RuntimeError::InvalidNoteRequest(
                "capture is off ([memory.capture] mode = \"off\")".into(),
            ))?;
        let row = store
            .captures()
            .proposal(&ctx.user_id, id)
            .await
            .map_err(RuntimeError::memory("reading a capture proposal"))?
            .ok_or_else(|| no_proposal(id))?;
        let (_, proposal) = pending_view(&row, self.zone()).ok_or_else(|| no_proposal(id))?;
        // The call id makes a retried acceptance write nothing twice. The number alone does not
        // name the proposal: the store reuses numbers once the list is empty, and a later
        // proposal of the same text would be taken for a retry and never written.
        let made = row.created_at.timestamp_micros();
        let mut call = ToolExecutionContext {
            call_id: Some(format!("capture-accept-{id}-{made}")),
            untrusted_input: None,
            ..ctx.clone()
        };
        call.surface = types::CallSurface::new(Surface::Capture);
        // The note comes from the exchange the proposal was made of (its provenance says so),
        // not from the session the user happens to accept it in.
        if let (Ok(session), Ok(turn)) = (
            SessionId::parse(&row.session_id),
            TurnId::parse(&row.turn_id),
        ) {
            (call.session_id, call.turn_id) = (session, turn);
        }
        let change = apply::apply(&capture.notes_tools, store, &call, &proposal)
            .await
            .map_err(|not| {
                let said = not.to_string();
                match not.refused {
                    // The user's rules refused it: said so (the note did not change).
                    Some(
                        e @ RuntimeError::NoteRefused {
                            kind: "permission_denied" | "rate_limited",
                            ..
                        },
                    ) => e,
                    _ => RuntimeError::InvalidNoteRequest(format!(
                        "proposal {id} could not be applied ({said}): the note may have \
                         changed since; reject it and edit the note instead"
                    )),
                }
            })?;
        // Applied: the proposal is done (its audit row is the write's).
        drop_proposal(store, None, ctx, id).await?;
        Ok(change)
    }

    /// Removes the user's pending proposal `id`, no note written: a governed write,
    /// `memory_reject` (permission, rate limit, an audit row, metrics), since it decides what
    /// the user's memory will not hold.
    pub async fn reject_memory(
        &self,
        ctx: &ToolExecutionContext,
        id: i64,
    ) -> Result<(), RuntimeError> {
        let store = self.notes_store()?;
        let access = tools::MemoryAccess::notes_write(&[]);
        self.govern(ctx, types::memory_ops::REJECT, access, |call| async move {
            drop_proposal(store, call.as_ref(), ctx, id).await
        })
        .await
    }
}

/// Drops the user's pending proposal `id` (its audit row in the same transaction, for an audited
/// `call`); an unknown one (or another user's) is an error.
async fn drop_proposal(
    store: &MemoryStore,
    call: Option<&CallKey>,
    ctx: &ToolExecutionContext,
    id: i64,
) -> Result<(), RuntimeError> {
    let dropped = store
        .captures()
        .drop_proposal(&ctx.user_id, call, id)
        .await
        .map_err(RuntimeError::memory("removing a capture proposal"))?;
    if dropped {
        Ok(())
    } else {
        Err(no_proposal(id))
    }
}

fn no_proposal(id: i64) -> RuntimeError {
    RuntimeError::InvalidNoteRequest(format!(
        "there is no pending proposal {id}: list them again"
    ))
}
