//! [`SessionHub`]: the live side of one session — its event sequence, the bounded log of recent
//! turn events, the active turn, and the clients subscribed to it.
//!
//! Everything here happens under one short `std` mutex that is never held across an `.await`:
//! numbering an event, logging it and offering it to every subscriber is one step, so all
//! subscribers see the same events in the same order, and a client that subscribes (with a
//! replay of what it missed) can neither miss nor repeat an event.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use types::{CancellationToken, ServerFrame, SessionId, TurnId};

use crate::outbound::{ConnId, OfferError, Outbound, Outbox};

#[derive(Debug)]
pub(crate) struct SessionHub {
    id: SessionId,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// The last `seq` given out (0: none yet).
    last_seq: u64,
    log: VecDeque<ServerFrame>,
    log_capacity: usize,
    active: Option<ActiveTurn>,
    subscribers: Vec<Outbox>,
}

#[derive(Debug, Clone)]
struct ActiveTurn {
    turn_id: TurnId,
    cancel: CancellationToken,
    /// The `seq` of its `turn_started`.
    start_seq: u64,
}

/// The result of [`SessionHub::subscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Subscribed {
    /// Events the client asked for had already left the log.
    pub(crate) expired: bool,
}

/// What a turn needs once [`SessionHub::start_turn`] admitted it.
#[derive(Debug)]
pub(crate) struct StartedTurn {
    pub(crate) cancel: CancellationToken,
}

impl SessionHub {
    pub(crate) fn new(id: SessionId, log_capacity: usize) -> Self {
        Self {
            id,
            state: Mutex::new(State {
                last_seq: 0,
                log: VecDeque::new(),
                log_capacity: log_capacity.max(1),
                active: None,
                subscribers: Vec::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every update below leaves the state consistent before it can panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn id(&self) -> &SessionId {
        &self.id
    }

    /// The latest `seq` and the running turn, for session summaries.
    pub(crate) fn live(&self) -> (u64, Option<TurnId>) {
        let state = self.state();
        (
            state.last_seq,
            state.active.as_ref().map(|a| a.turn_id.clone()),
        )
    }

    /// Admits a turn unless one is running, and publishes its `turn_started`.
    pub(crate) fn start_turn(&self, turn_id: &TurnId, client_turn_id: &str) -> Option<StartedTurn> {
        let mut state = self.state();
        if state.active.is_some() {
            return None;
        }
        let cancel = CancellationToken::default();
        let seq = state.last_seq + 1;
        state.active = Some(ActiveTurn {
            turn_id: turn_id.clone(),
            cancel: cancel.clone(),
            start_seq: seq,
        });
        let frame = ServerFrame::TurnStarted {
            seq,
            session_id: self.id.clone(),
            turn_id: turn_id.clone(),
            client_turn_id: client_turn_id.to_owned(),
        };
        self.push(&mut state, frame);
        Some(StartedTurn { cancel })
    }

    /// Numbers the event `make` builds, logs it and offers it to every subscriber. A terminal
    /// event ends the active turn in the same step, so a new turn can start as soon as a client
    /// has seen it.
    pub(crate) fn publish(&self, make: impl FnOnce(u64) -> ServerFrame) {
        let mut state = self.state();
        let frame = make(state.last_seq + 1);
        self.push(&mut state, frame);
    }

    fn push(&self, state: &mut State, frame: ServerFrame) {
        let Some(seq) = frame.seq() else {
            return;
        };
        state.last_seq = seq;
        if frame.ends_turn() {
            state.active = None;
        }
        state
            .subscribers
            .retain(|sub| match sub.offer(Outbound::Frame(frame.clone())) {
                Ok(()) => true,
                Err(OfferError::Full) => {
                    tracing::info!(session = %self.id, conn = sub.id(), "client fell behind");
                    sub.report_lag(&self.id, seq - 1);
                    false
                }
                Err(OfferError::Closed) => false,
            });
        if state.log.len() >= state.log_capacity {
            state.log.pop_front();
        }
        state.log.push_back(frame);
    }

    /// Ends `turn` with `turn_failed` if it is still active (its task stopped without a terminal
    /// event).
    pub(crate) fn end_orphaned(&self, turn: &TurnId) {
        let mut state = self.state();
        if state.active.as_ref().is_some_and(|a| &a.turn_id == turn) {
            tracing::error!(session = %self.id, turn = %turn, "turn stopped without ending");
            let frame = ServerFrame::TurnFailed {
                seq: state.last_seq + 1,
                session_id: self.id.clone(),
                turn_id: turn.clone(),
                reason: "the turn stopped unexpectedly; send the message again".into(),
            };
            self.push(&mut state, frame);
        }
    }

    /// Cancels the running turn; false when none runs.
    pub(crate) fn cancel(&self) -> bool {
        let active = self.state().active.clone();
        match active {
            Some(turn) => {
                turn.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// The running turn's id.
    pub(crate) fn active_turn(&self) -> Option<TurnId> {
        self.state().active.as_ref().map(|a| a.turn_id.clone())
    }

    /// Subscribes `outbox`, first queueing the logged events after `after` — or, without `after`
    /// (or with a `seq` this gateway never gave out), the events of the running turn.
    pub(crate) fn subscribe(&self, outbox: &Outbox, after: Option<u64>) -> Subscribed {
        let mut state = self.state();
        state.subscribers.retain(|s| s.id() != outbox.id());
        let after = match after {
            Some(seq) if seq <= state.last_seq => Some(seq),
            _ => state.active.as_ref().map(|a| a.start_seq - 1),
        };
        let mut expired = false;
        if let Some(after) = after {
            let first_logged = state.log.front().and_then(ServerFrame::seq);
            expired = first_logged.is_some_and(|first| after + 1 < first);
            let replay: Vec<ServerFrame> = state
                .log
                .iter()
                .filter(|f| f.seq().is_some_and(|s| s > after))
                .cloned()
                .collect();
            if !replay.is_empty() {
                match outbox.offer(Outbound::Batch(replay)) {
                    Ok(()) => {}
                    Err(OfferError::Full) => {
                        outbox.report_lag(&self.id, after);
                        return Subscribed { expired };
                    }
                    Err(OfferError::Closed) => return Subscribed { expired },
                }
            }
        }
        state.subscribers.push(outbox.clone());
        Subscribed { expired }
    }

    pub(crate) fn unsubscribe(&self, conn: ConnId) {
        self.state().subscribers.retain(|s| s.id() != conn);
    }
}
