//! Hybrid search: scoping, hostile queries, filters, one score scale across sessions, grouping.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use crate::common;

use std::collections::BTreeSet;

use chrono::Utc;
use common::{Backend, fixture, fixture_on, on_both_backends, session, user};
use memory::{HitSource, HybridQuery, NoteMetadata, QueryFilters, SearchHit, Weights};
use types::{Message, SessionId};

pub(crate) fn memory_of(name: &str) -> SessionId {
    SessionId::user_memory(&user(name))
}

pub(crate) fn texts(hits: &[SearchHit]) -> BTreeSet<String> {
    hits.iter().map(|h| h.text.clone()).collect()
}

#[tokio::test]
async fn users_never_see_each_other() {
    let f = fixture().await;
    let (alice, bob) = (user("alice"), user("bob"));
    let a = common::save_note(&f.store, &alice, "My favourite colour is green.").await;
    let b = common::save_note(&f.store, &bob, "My favourite colour is blue.").await;
    for (who, own) in [("alice", &a), ("bob", &b)] {
        for text in ["favourite colour", "green", "blue", "colour"] {
            let hits = f
                .store
                .search(&HybridQuery::new(vec![memory_of(who)], text, 10))
                .await
                .unwrap();
            for h in &hits {
                assert_eq!(h.session_id, memory_of(who), "{who} searched {text:?}");
                assert_eq!(
                    h.note_id.as_ref(),
                    Some(&own.note_id),
                    "{who} searched {text:?}"
                );
            }
        }
    }
    // Notes are addressed within the caller's namespace only.
    assert!(
        f.store
            .get(&bob, &a.note_id)
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        f.store
            .update(
                &bob,
                None,
                &a.note_id,
                "hijacked",
                None,
                memory::MetadataPatch::default()
            )
            .await
            .and_then(memory::Written::into_note)
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        f.store
            .delete(&bob, None, &a.note_id)
            .await
            .map(|_| ())
            .unwrap_err()
            .is_not_found()
    );
    assert_eq!(
        f.store.get(&alice, &a.note_id).await.unwrap().content,
        a.content
    );
    // Scope is applied before ranking: a session list without alice's namespace finds nothing of hers.
    let none = f
        .store
        .search(&HybridQuery::new(vec![session("chat-x")], "green", 10))
        .await
        .unwrap();
    assert!(none.is_empty());
    assert!(
        f.store
            .search(&HybridQuery::new(vec![], "green", 10))
            .await
            .unwrap()
            .is_empty()
    );
}

on_both_backends!(hostile_queries_never_error_and_never_act_as_syntax);

async fn hostile_queries_never_error_and_never_act_as_syntax(backend: Backend) {
    let f = fixture_on(backend).await;
    let alice = user("alice");
    let corpus = [
        "The user's favourite tea is oolong.",
        "The office is near the central station.",
        "Drop the old table from the shed.",
        "Meeting moved to Friday (room four).",
    ];
    for text in corpus {
        common::save_note(&f.store, &alice, text).await;
    }
    let [tea, office, shed, meeting] = corpus;
    let huge_word = "a".repeat(100_000);
    let huge_text = "tea ".repeat(25_000);
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("\"", vec![]),
        ("tea*", vec![tea]),
        ("NEAR", vec![office]),
        ("NEAR(tea station)", vec![tea, office]),
        ("NEAR/2", vec![office]),
        ("-tea", vec![tea]),
        ("tea OR coffee", vec![tea]),
        ("tea AND NOT oolong", vec![tea]),
        ("content:tea", vec![tea]),
        ("text:friday", vec![meeting]),
        ("^tea", vec![tea]),
        ("(friday)", vec![meeting]),
        ("'; DROP TABLE notes; --", vec![shed]),
        ("tea\"; DROP", vec![tea, shed]),
        ("\"tea\" \"oolong\"", vec![tea]),
        ("☕🍵 🎉", vec![]),
        (&huge_word, vec![]),
        (&huge_text, vec![tea]),
        ("", vec![]),
        ("?!.,;:()[]{}*^-+", vec![]),
        ("the and of is", vec![]),
        ("%_\\ \0 \u{202e}", vec![]),
    ];
    let scope = vec![memory_of("alice")];
    for (query, expected) in cases {
        let shown: String = query.chars().take(40).collect();
        let keywords = HybridQuery {
            weights: Weights {
                vector: 0.0,
                fts: 1.0,
            },
            ..HybridQuery::new(scope.clone(), query, 10)
        };
        let hits = f
            .store
            .search(&keywords)
            .await
            .unwrap_or_else(|e| panic!("{shown:?}: {e}"));
        let expected: BTreeSet<String> = expected.into_iter().map(str::to_owned).collect();
        assert_eq!(texts(&hits), expected, "keyword leg for {shown:?}");
        // The full hybrid query must not fail either.
        let hybrid = HybridQuery::new(scope.clone(), query, 10);
        let hits = f
            .store
            .search(&hybrid)
            .await
            .unwrap_or_else(|e| panic!("{shown:?}: {e}"));
        assert!(
            hits.iter().all(|h| (0.0..=1.0).contains(&h.score)),
            "{shown:?}"
        );
    }
    assert_eq!(
        f.store.upkeep().stats().await.unwrap().notes,
        4,
        "no query changed anything"
    );
}

#[tokio::test]
async fn several_sessions_share_one_score_scale() {
    let f = fixture().await;
    let alice = user("alice");
    let chat = session("chat-7");
    common::save_note(&f.store, &alice, "Alice prefers window seats on flights.").await;
    common::save_note(&f.store, &alice, "Alice's dentist is Dr. Lopez.").await;
    f.store
        .sessions()
        .append_message(
            &chat,
            &alice,
            &Message::user("Book me a window seat for the Lisbon flight."),
        )
        .await
        .unwrap();
    f.store
        .sessions()
        .append_message(&chat, &alice, &Message::assistant("Done: seat 14A."))
        .await
        .unwrap();
    let q = HybridQuery::new(
        vec![memory_of("alice"), chat.clone()],
        "window seat flight",
        10,
    );
    let hits = f.store.search(&q).await.unwrap();
    assert!(hits.len() >= 2, "{hits:?}");
    assert!(
        hits.windows(2).all(|w| w[0].score >= w[1].score),
        "best first"
    );
    let top_two: BTreeSet<HitSource> = hits[..2].iter().map(|h| h.source).collect();
    assert_eq!(
        top_two,
        [HitSource::UserMemory, HitSource::Conversation].into()
    );
    for h in &hits {
        assert!((0.0..=1.0).contains(&h.score));
        match h.source {
            HitSource::UserMemory => {
                assert!(h.note_id.is_some() && h.session_id == memory_of("alice"))
            }
            HitSource::Conversation => {
                assert!(h.note_id.is_none());
                assert_eq!(h.session_id, chat);
            }
        }
    }
    let conversation = hits
        .iter()
        .find(|h| h.source == HitSource::Conversation)
        .unwrap();
    assert_eq!(
        (conversation.event_seq, conversation.text.as_str()),
        (1, "Book me a window seat for the Lisbon flight.")
    );
    // top_k bounds the results.
    let one = f
        .store
        .search(&HybridQuery { top_k: 1, ..q })
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
}

#[tokio::test]
async fn long_notes_are_one_hit_with_their_best_chunk() {
    let f = fixture().await;
    let alice = user("alice");
    let filler: String = (0..40)
        .map(|i| format!("Paragraph {i} talks about gardening and tomatoes. "))
        .collect();
    let long = format!("{filler}The secret ingredient is smoked paprika. {filler}");
    let note = common::save_note(&f.store, &alice, &long).await;
    common::save_note(&f.store, &alice, "Tomatoes need sun.").await;
    let stats = f.store.upkeep().stats().await.unwrap();
    assert!(stats.chunks > 3, "the long note is split: {stats:?}");
    let hits = f
        .store
        .search(&HybridQuery::new(
            vec![memory_of("alice")],
            "tomatoes gardening",
            10,
        ))
        .await
        .unwrap();
    assert_eq!(hits.len(), 2, "one hit per note");
    let hits = f
        .store
        .search(&HybridQuery::new(
            vec![memory_of("alice")],
            "smoked paprika",
            10,
        ))
        .await
        .unwrap();
    assert_eq!(hits[0].note_id.as_ref(), Some(&note.note_id));
    assert!(hits[0].text.contains("smoked paprika") && hits[0].text.len() < long.len());
}

#[tokio::test]
async fn long_notes_filling_the_first_window_still_leave_top_k_distinct_hits() {
    let f = fixture().await;
    let alice = user("alice");
    // Three long notes whose every chunk names the query's words: their chunks come first, more
    // of them than the first window of details holds, and they make three hits only.
    for n in 0..3 {
        let long: String = (0..60)
            .map(|i| format!("Tomato harvest log {n}.{i}: tomatoes picked, tomato vines tied. "))
            .collect();
        common::save_note(&f.store, &alice, &long).await;
    }
    for n in 0..12 {
        common::save_note(&f.store, &alice, &format!("Short note {n} about tomatoes")).await;
    }
    let stats = f.store.upkeep().stats().await.unwrap();
    assert!(
        stats.chunks >= 3 * 4 + 12,
        "the long notes are split: {stats:?}"
    );
    let hits = f
        .store
        .search(&HybridQuery::new(
            vec![memory_of("alice")],
            "tomato harvest",
            10,
        ))
        .await
        .unwrap();
    let notes: std::collections::HashSet<_> = hits.iter().map(|h| h.note_id.clone()).collect();
    assert_eq!(
        (hits.len(), notes.len()),
        (10, 10),
        "ten distinct notes, the window read again past the long notes' chunks: {hits:?}"
    );
}

#[tokio::test]
async fn filters_restrict_both_legs() {
    let f = fixture().await;
    let alice = user("alice");
    let travel = NoteMetadata {
        tags: vec!["travel".into()],
        ..NoteMetadata::default()
    };
    let food = NoteMetadata {
        tags: vec!["food".into(), "health".into()],
        ..NoteMetadata::default()
    };
    f.store
        .save(
            &alice,
            None,
            "Alice likes trains for travel.",
            travel,
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap();
    let cutoff = Utc::now();
    f.store
        .save(
            &alice,
            None,
            "Alice likes lentils for dinner.",
            food,
            memory::Similar::Unchecked,
        )
        .await
        .and_then(memory::Saved::into_note)
        .unwrap();
    common::save_note(&f.store, &alice, "Alice likes quiet mornings.").await;
    let scope = vec![memory_of("alice")];
    let check = |filters: QueryFilters, expected: &'static [&'static str]| {
        let q = HybridQuery {
            filters,
            ..HybridQuery::new(scope.clone(), "Alice likes", 10)
        };
        let store = f.store.clone();
        async move {
            let hits = store.search(&q).await.unwrap();
            let want: BTreeSet<String> = expected.iter().map(|s| (*s).to_owned()).collect();
            assert_eq!(texts(&hits), want, "{:?}", q.filters);
        }
    };
    check(
        QueryFilters::default(),
        &[
            "Alice likes trains for travel.",
            "Alice likes lentils for dinner.",
            "Alice likes quiet mornings.",
        ],
    )
    .await;
    check(
        QueryFilters {
            tags_any: vec!["travel".into()],
            ..Default::default()
        },
        &["Alice likes trains for travel."],
    )
    .await;
    check(
        QueryFilters {
            tags_any: vec!["health".into(), "travel".into()],
            ..Default::default()
        },
        &[
            "Alice likes trains for travel.",
            "Alice likes lentils for dinner.",
        ],
    )
    .await;
    check(
        QueryFilters {
            tags_any: vec!["nothing".into()],
            ..Default::default()
        },
        &[],
    )
    .await;
    check(
        QueryFilters {
            created_after: Some(cutoff),
            ..Default::default()
        },
        &[
            "Alice likes lentils for dinner.",
            "Alice likes quiet mornings.",
        ],
    )
    .await;
    check(
        QueryFilters {
            created_before: Some(cutoff),
            ..Default::default()
        },
        &["Alice likes trains for travel."],
    )
    .await;
}

/// Both legs keep only candidates of the requested sessions BEFORE taking their best: a session
/// crowded with better matches (far more than either leg's candidate count) never pushes the
/// requested session's weaker matches out.
#[tokio::test]
async fn scope_applies_before_ranking_in_both_legs() {
    let f = fixture().await;
    let (alice, bob) = (user("alice"), user("bob"));
    let crowd: Vec<memory::ExportedNote> = (0..300)
        .map(|i| memory::ExportedNote {
            note_id: types::NoteId::from_uuid_str(&uuid_like(i)).unwrap(),
            content: format!("oolong tea, oolong tea, oolong tea number {i}"),
            metadata: NoteMetadata::default(),
            created_at: Utc::now(),
            updated_at: Utc::now(),
        })
        .collect();
    f.store
        .import(&bob, None, crowd, memory::Similar::Unchecked, None)
        .await
        .map(|report| report.imported)
        .unwrap();
    for text in [
        "Alice once tasted an oolong at a market stall in a long list of other things she did",
        "The shop on the corner sells many things, among them oolong, rice and paper",
    ] {
        common::save_note(&f.store, &alice, text).await;
    }
    let legs = [
        (
            "keyword only",
            Weights {
                vector: 0.0,
                fts: 1.0,
            },
        ),
        (
            "vector only",
            Weights {
                vector: 1.0,
                fts: 0.0,
            },
        ),
        ("hybrid", Weights::default()),
    ];
    for (label, weights) in legs {
        let mut query = HybridQuery::new(vec![memory_of("alice")], "oolong tea", 5);
        query.weights = weights;
        let hits = f.store.search(&query).await.unwrap();
        assert_eq!(hits.len(), 2, "{label}: {hits:?}");
        assert!(
            hits.iter().all(|h| h.session_id == memory_of("alice")),
            "{label}"
        );
        // Both sessions together: the crowd wins the top places, as it should.
        let mut both =
            HybridQuery::new(vec![memory_of("alice"), memory_of("bob")], "oolong tea", 5);
        both.weights = weights;
        let hits = f.store.search(&both).await.unwrap();
        assert_eq!(hits.len(), 5, "{label}");
        assert!(
            hits.iter().all(|h| h.session_id == memory_of("bob")),
            "{label}"
        );
    }
}

fn uuid_like(i: u32) -> String {
    format!("00000000-0000-4000-8000-{i:012}")
}
