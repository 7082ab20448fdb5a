//! [`SessionHub`]: the live side of one session — its event sequence, the bounded log of recent
//! turn events, the active turn, and the clients subscribed to it.
//!
//! Everything here happens under one short `std` mutex that is never held across an `.await`:
//! numbering an event, logging it and offering it to every subscriber is one step, so all
//! subscribers see the same events in the same order, and a client that subscribes (with a
//! replay of what it missed) can neither miss nor repeat an event.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use types::{CancellationToken, ErrorCode, ServerFrame, SessionId, TurnEvent, TurnId};

use crate::outbound::{ConnId, OfferError, Outbound, Outbox};

/// The `events_expired` message.
const EXPIRED_MESSAGE: &str =
    "some events are no longer buffered: reload the session with get_history";

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
            let frame = ServerFrame::Turn {
                seq: state.last_seq + 1,
                session_id: self.id.clone(),
                turn_id: turn.clone(),
                event: TurnEvent::TurnFailed {
                    reason: "the turn stopped unexpectedly; send the message again".into(),
                },
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
    /// No client is on the session and no turn runs.
    pub(crate) fn is_unused(&self) -> bool {
        let state = self.state();
        state.subscribers.is_empty() && state.active.is_none()
    }

    pub(crate) fn active_turn(&self) -> Option<TurnId> {
        self.state().active.as_ref().map(|a| a.turn_id.clone())
    }

    /// Subscribes `outbox`, first queueing the logged events after `after` — or, without `after`
    /// (or with a `seq` this gateway never gave out), the events of the running turn.
    /// When some of the events asked for have left the log, an `events_expired` error (with
    /// `reference`) is queued *before* the replay, so a client learns of the gap before it sees
    /// the events that follow it.
    pub(crate) fn subscribe(
        &self,
        outbox: &Outbox,
        after: Option<u64>,
        reference: Option<&str>,
    ) -> Subscribed {
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
            let notice = expired.then(|| {
                ServerFrame::error(
                    ErrorCode::EventsExpired,
                    EXPIRED_MESSAGE,
                    reference.map(str::to_owned),
                )
            });
            let replay: Vec<ServerFrame> = notice
                .into_iter()
                .chain(
                    state
                        .log
                        .iter()
                        .filter(|f| f.seq().is_some_and(|s| s > after))
                        .cloned(),
                )
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::extract::ws::Message;
    use futures::StreamExt;
    use futures::channel::mpsc as fmpsc;

    use super::*;
    use crate::outbound::start_writer;

    fn ids() -> (SessionId, TurnId) {
        (
            SessionId::parse("s1").unwrap(),
            TurnId::parse("t1").unwrap(),
        )
    }

    fn delta(seq: u64, text: &str) -> ServerFrame {
        let (session_id, turn_id) = ids();
        ServerFrame::Turn {
            seq,
            session_id,
            turn_id,
            event: TurnEvent::AssistantDelta { text: text.into() },
        }
    }

    async fn next(rx: &mut fmpsc::Receiver<Message>) -> ServerFrame {
        let msg = tokio::time::timeout(Duration::from_secs(5), rx.next())
            .await
            .expect("a frame in time")
            .expect("writer alive");
        match msg {
            Message::Text(text) => serde_json::from_str(text.as_str()).unwrap(),
            other => panic!("unexpected {other:?}"),
        }
    }

    /// A client whose socket takes nothing falls behind: the turn never waits for it, it is told
    /// where it stopped, and a resync from there delivers every later event exactly once.
    #[tokio::test]
    async fn stalled_client_is_lagged_then_resyncs_without_loss_or_duplicates() {
        let (session, turn) = ids();
        let hub = SessionHub::new(session.clone(), 1000);
        // A socket with no buffer: the writer blocks on its second frame until the test reads.
        let (sink, mut socket) = fmpsc::channel::<Message>(0);
        let outbox = start_writer(1, sink, 2, Duration::from_secs(30));
        hub.subscribe(&outbox, None, None);
        assert!(hub.start_turn(&turn, "c1").is_some());
        for i in 0..50 {
            hub.publish(|seq| delta(seq, &format!("{i} ")));
        }
        // The hub dropped the subscriber instead of waiting.
        assert!(hub.state().subscribers.is_empty());

        let mut seen = Vec::new();
        let last = loop {
            match next(&mut socket).await {
                ServerFrame::Lagged {
                    session_id,
                    last_seq,
                } => {
                    assert_eq!(session_id, session);
                    break last_seq;
                }
                frame => seen.push(frame.seq().unwrap()),
            }
        };
        assert_eq!(seen, (1..=last).collect::<Vec<_>>());
        assert!(last < 51, "lagged before the end");

        // Resync from the last seq received while events keep flowing; lag again, resync again.
        let hub = std::sync::Arc::new(hub);
        let publisher = {
            let hub = std::sync::Arc::clone(&hub);
            tokio::spawn(async move {
                for i in 50..150 {
                    hub.publish(|seq| delta(seq, &format!("{i} ")));
                    if i % 10 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        };
        let mut lags = 1;
        assert!(!hub.subscribe(&outbox, Some(last), None).expired);
        while seen.len() < 151 {
            match next(&mut socket).await {
                ServerFrame::Lagged { last_seq, .. } => {
                    lags += 1;
                    assert!(last_seq >= *seen.last().unwrap());
                    assert!(!hub.subscribe(&outbox, seen.last().copied(), None).expired);
                }
                frame => seen.push(frame.seq().unwrap()),
            }
        }
        publisher.await.unwrap();
        assert_eq!(seen, (1..=151).collect::<Vec<_>>());
        assert!(lags >= 1);
    }

    #[tokio::test]
    async fn resubscribing_replays_the_active_turn_and_reports_expired_events() {
        let (session, turn) = ids();
        let hub = SessionHub::new(session, 5);
        hub.start_turn(&turn, "c1").unwrap();
        for i in 0..9 {
            hub.publish(|seq| delta(seq, &i.to_string()));
        }
        let (sink, mut socket) = fmpsc::channel::<Message>(100);
        let outbox = start_writer(1, sink, 16, Duration::from_secs(30));
        // Only the last 5 of 10 events are kept: a client asking from seq 2 lost some.
        assert!(hub.subscribe(&outbox, Some(2), Some("resync")).expired);
        // The notice comes first, then what is left.
        match next(&mut socket).await {
            ServerFrame::Error {
                code, reference, ..
            } => assert_eq!(
                (code, reference.as_deref()),
                (ErrorCode::EventsExpired, Some("resync"))
            ),
            other => panic!("expected events_expired first, got {other:?}"),
        }
        let mut got = Vec::new();
        for _ in 0..5 {
            got.push(next(&mut socket).await.seq().unwrap());
        }
        assert_eq!(got, vec![6, 7, 8, 9, 10]);
        assert!(!hub.subscribe(&outbox, Some(8), None).expired);
        assert_eq!(next(&mut socket).await.seq(), Some(9));
        assert_eq!(next(&mut socket).await.seq(), Some(10));
        // A seq this gateway never gave out (e.g. before a restart) replays the running turn.
        assert!(hub.subscribe(&outbox, Some(999), None).expired);
    }
}
