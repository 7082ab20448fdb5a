//! Numbered lists the user picks from by number (`/memory edit 2`, `/memory restore 1`,
//! `/memory accept 3`): an item acted on since the list was shown is `None`, so the others keep
//! the numbers the user read.

use super::{App, Entry};

impl App {
    /// Item `n` (from 1) of `list`, or `None` after saying why: `gone` when it was acted on since
    /// the list was shown, `missing` when the list has no such number.
    pub(super) fn numbered<T: Clone>(
        &mut self,
        list: impl FnOnce(&App) -> &[Option<T>],
        n: usize,
        gone: impl FnOnce() -> String,
        missing: impl FnOnce() -> String,
    ) -> Option<T> {
        let message = match n.checked_sub(1).and_then(|i| list(self).get(i)) {
            Some(Some(item)) => return Some(item.clone()),
            Some(None) => gone(),
            None => missing(),
        };
        self.push(Entry::error(message));
        None
    }
}
