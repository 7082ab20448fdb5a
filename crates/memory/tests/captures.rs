//! Proposals of `mode = "suggest"` waiting for their user: at most
//! [`memory::MAX_PENDING_PROPOSALS`] each, a new one pushing out that user's oldest, so the
//! latest are always listed; another user's are never touched.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use crate::common;

use common::{Backend, fixture_on, on_both_backends, session, user};
use memory::{MAX_PENDING_PROPOSALS, ProposalPlace};
use types::TurnId;

async fn the_latest_proposals_wait_and_the_oldest_make_room(backend: Backend) {
    let f = fixture_on(backend).await;
    let (alice, bob) = (user("alice"), user("bob"));
    let (s, turn) = (session("chat"), TurnId::parse("t1").unwrap());
    let place = |who| ProposalPlace {
        user: who,
        session: &s,
        turn: &turn,
        untrusted: None,
    };
    let captures = f.store.captures();
    let bobs = captures
        .add_proposals(place(&bob), vec!["bob 0".into(), "bob 1".into()])
        .await
        .unwrap();
    // Past the bound by five, in batches as capture calls add them.
    let total = MAX_PENDING_PROPOSALS + 5;
    let mut ids = Vec::new();
    for batch in (0..total).collect::<Vec<_>>().chunks(7) {
        let texts = batch.iter().map(|n| format!("alice {n}")).collect();
        ids.extend(captures.add_proposals(place(&alice), texts).await.unwrap());
    }
    let listed = captures.pending_proposals(&alice).await.unwrap();
    assert_eq!(listed.len(), MAX_PENDING_PROPOSALS);
    let listed_ids: Vec<i64> = listed.iter().map(|p| p.id).collect();
    assert_eq!(listed_ids, ids[5..], "the latest, oldest first");
    assert_eq!(
        listed.last().unwrap().proposal_json,
        format!("alice {}", total - 1)
    );
    assert_eq!(captures.proposal(&alice, ids[0]).await.unwrap(), None);
    assert!(captures.proposal(&alice, ids[5]).await.unwrap().is_some());
    let theirs: Vec<i64> = captures
        .pending_proposals(&bob)
        .await
        .unwrap()
        .iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(theirs, bobs, "another user's proposals are untouched");
}

on_both_backends!(the_latest_proposals_wait_and_the_oldest_make_room);
