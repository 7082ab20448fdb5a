//! Notifications of scheduled runs, pushed to every connected client of their user: each
//! authenticated connection joins its user's [`Clients`] for as long as it lives, and on joining
//! is sent the notifications stored while no client was there (`unread: true`), which are then
//! marked read. Another user's clients never receive them (each user has their own list).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use types::{NotificationView, ServerFrame};

use crate::outbound::{Outbound, Outbox};
use crate::user::UserAgent;

/// Most unread notifications sent on connect.
const MAX_UNREAD: u32 = 200;

/// The connected clients of one user.
#[derive(Debug, Default)]
pub(crate) struct Clients(Mutex<Vec<Outbox>>);

impl Clients {
    fn list(&self) -> MutexGuard<'_, Vec<Outbox>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Offers `notice` to every client; whether one took it.
    pub(crate) fn push(&self, notice: &NotificationView) -> bool {
        self.offer(&ServerFrame::Notification {
            notification: notice.clone(),
        })
    }

    /// Offers `frame` to every client; whether one took it.
    pub(crate) fn offer(&self, frame: &ServerFrame) -> bool {
        let clients: Vec<Outbox> = self.list().clone();
        let mut shown = false;
        for client in clients {
            shown |= client.offer(Outbound::Frame(frame.clone())).is_ok();
        }
        shown
    }
}

/// A connection's membership of its user's clients; leaves on drop.
pub(crate) struct Joined {
    user: Arc<UserAgent>,
    id: crate::outbound::ConnId,
}

impl Drop for Joined {
    fn drop(&mut self) {
        self.user.clients.list().retain(|c| c.id() != self.id);
    }
}

/// Joins `outbox` to its user's clients, after sending it what is unread.
pub(crate) async fn join(user: &Arc<UserAgent>, outbox: &Outbox) -> Joined {
    user.clients.list().push(outbox.clone());
    let joined = Joined {
        user: Arc::clone(user),
        id: outbox.id(),
    };
    let Some(scheduler) = &user.scheduler else {
        return joined;
    };
    let unread = match scheduler.unread(MAX_UNREAD).await {
        Ok(unread) => unread,
        Err(e) => {
            tracing::warn!(error = %e, "could not read unread notifications");
            return joined;
        }
    };
    let mut shown = Vec::new();
    for notice in unread {
        let id = notice.id;
        if outbox
            .send(ServerFrame::Notification {
                notification: notice,
            })
            .await
        {
            shown.push(id);
        }
    }
    if let Err(e) = scheduler.mark_read(&shown).await {
        tracing::warn!(error = %e, "could not mark notifications read");
    }
    joined
}
