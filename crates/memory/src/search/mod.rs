//! What is read back by meaning: hybrid search over the in-memory indexes of `memory-index`
//! (`hybrid`, both legs fused in `legs`, lifted by names and length in `priors`, the hits read
//! back in `hits`), what a query asks and returns (`query`), the time a query speaks of (`when`,
//! `when_dates`, events as anchors dated in `anchors`), keeping those indexes fresh against other
//! writers' commits (`freshness`), re-embedding when the model changes (`reindex`), the indexes
//! kept on disk for a fast open (`snapshot`), and past conversations as a scope with the context
//! of a message hit (`conversations`).

pub(crate) mod anchors;
pub(crate) mod conversations;
pub(crate) mod freshness;
mod hits;
pub(crate) mod hybrid;
pub(crate) mod legs;
#[cfg(feature = "bench")]
pub(crate) mod legs_alone;
pub(crate) mod priors;
pub(crate) mod query;
pub(crate) mod reindex;
mod replies;
pub(crate) mod snapshot;
pub(crate) mod snapshot_file;
pub(crate) mod when;
mod when_dates;
pub(crate) mod when_events;
