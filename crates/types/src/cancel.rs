//! A std-only cancellation token: cheap to clone, awaitable, cascading to children.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// Shared cancellation flag. Cancelling a token wakes every pending [`Cancelled`] future and
/// cancels every token made with [`CancellationToken::child`].
#[derive(Clone, Default)]
pub struct CancellationToken {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next_key: u64,
    wakers: Vec<(u64, Waker)>,
    children: Vec<CancellationToken>,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        // The state holds no invariants a panic could break; recover from poisoning.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl fmt::Debug for CancellationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancellationToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl CancellationToken {
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// Cancels this token and all its children. Idempotent.
    pub fn cancel(&self) {
        if self.inner.cancelled.swap(true, Ordering::AcqRel) {
            return;
        }
        let (wakers, children) = {
            let mut state = self.inner.state();
            (
                std::mem::take(&mut state.wakers),
                std::mem::take(&mut state.children),
            )
        };
        for (_, waker) in wakers {
            waker.wake();
        }
        for child in children {
            child.cancel();
        }
    }

    /// A token cancelled when this one is (but which can also be cancelled on its own).
    pub fn child(&self) -> CancellationToken {
        let child = CancellationToken::default();
        let mut state = self.inner.state();
        if self.is_cancelled() {
            drop(state);
            child.cancel();
        } else {
            state
                .children
                .retain(|c| !c.is_cancelled() && Arc::strong_count(&c.inner) > 1);
            state.children.push(child.clone());
        }
        child
    }

    /// Resolves once the token is cancelled.
    pub fn cancelled(&self) -> Cancelled {
        Cancelled {
            token: self.clone(),
            key: None,
        }
    }
}

/// Future returned by [`CancellationToken::cancelled`].
#[derive(Debug)]
pub struct Cancelled {
    token: CancellationToken,
    key: Option<u64>,
}

impl Future for Cancelled {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.token.is_cancelled() {
            return Poll::Ready(());
        }
        let inner = Arc::clone(&self.token.inner);
        let mut state = inner.state();
        // Re-check under the lock: `cancel` drains wakers under the same lock.
        if self.token.is_cancelled() {
            return Poll::Ready(());
        }
        match self.key {
            Some(key) => {
                if let Some(slot) = state.wakers.iter_mut().find(|(k, _)| *k == key) {
                    slot.1.clone_from(cx.waker());
                }
            }
            None => {
                let key = state.next_key;
                state.next_key += 1;
                state.wakers.push((key, cx.waker().clone()));
                drop(state);
                self.key = Some(key);
            }
        }
        Poll::Pending
    }
}

impl Drop for Cancelled {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            self.token.inner.state().wakers.retain(|(k, _)| *k != key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Wake;

    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn cancel_wakes_and_cascades() {
        let parent = CancellationToken::default();
        let child = parent.child();
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(Arc::clone(&flag));
        let mut cx = Context::from_waker(&waker);
        let mut fut = Box::pin(child.cancelled());
        assert_eq!(fut.as_mut().poll(&mut cx), Poll::Pending);
        parent.cancel();
        assert!(flag.0.load(Ordering::SeqCst));
        assert!(child.is_cancelled());
        assert_eq!(fut.as_mut().poll(&mut cx), Poll::Ready(()));
    }

    #[test]
    fn dropped_futures_release_their_wakers() {
        let token = CancellationToken::default();
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        for _ in 0..100 {
            let mut fut = Box::pin(token.cancelled());
            assert_eq!(fut.as_mut().poll(&mut cx), Poll::Pending);
        }
        assert_eq!(token.inner.state().wakers.len(), 0);
        let child_of_cancelled = {
            token.cancel();
            token.child()
        };
        assert!(child_of_cancelled.is_cancelled());
    }
}
