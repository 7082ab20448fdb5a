//! Memory keeps working for a long-lived agent: thousands of turns and hundreds of saves through
//! one Landlock-confined `oxydra-vm` (process tier, scripted model). SQLite's temporary files
//! (`etilqs_*`, statement journals and sorts once a store grows) must not go to a directory the
//! sandbox refuses; before `temp_store = MEMORY` every turn failed from about turn 300–400 on
//! ("memory database error while storing a vector").

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use common::{Chat, Setup, StopOnDrop, respond};

/// Saves and plain turns; the last saves and a search over them must still succeed.
const SAVES: usize = 200;
const TURNS: usize = 2000;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs landlock"]
async fn a_confined_agent_still_saves_after_thousands_of_turns_and_hundreds_of_notes() {
    test_support::need(test_support::Need::Landlock);
    let server = test_support::ScriptedLlm::with_responder(respond).await;
    let setup = Setup::new(&server, &["alice"]);
    let _guard = StopOnDrop(setup.config.clone());
    setup.runner_ok(&["--insecure", "start", "--detach"]).await;
    let status = setup.runner_ok(&["status"]).await;
    assert!(status.contains("landlock"), "{status}");

    let mut chat = Chat::connect(&setup, "alice", None).await;
    let per_save = TURNS / SAVES;
    for i in 0..TURNS {
        if i % per_save == 0 && i / per_save < SAVES {
            let n = i / per_save;
            let fact = format!(
                "note {n}: the project codename for quarter {n} is aurora-{n}, filed under \
                 planning with the usual reviewers and a long enough body to need a few chunks \
                 of index entries, {}",
                "lorem ipsum dolor sit amet ".repeat(8)
            );
            chat.save(&fact).await;
        } else {
            let turn = chat.turn(&format!("hello {i}")).await;
            assert_eq!(turn.message, "hello", "turn {i}");
        }
    }
    let found = chat.turn(&format!("search aurora-{}", SAVES - 1)).await;
    assert_eq!(
        found.tools,
        vec![("memory_search".to_owned(), true)],
        "{found:?}"
    );
    assert!(
        found.message.contains(&format!("aurora-{}", SAVES - 1)),
        "{found:?}"
    );
}
