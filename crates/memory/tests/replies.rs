//! The turns after a conversation hit: the reply to a question that matches the query, and the
//! same speaker's follow-up to a statement, join the hits just below them — across tool calls,
//! under the query's filters, on a file and on a server alike.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use chrono::{DateTime, Duration, Utc};
use memory::{HitSource, HybridQuery, QueryFilters, SearchHit};
use test_support::{Need, need};
use types::{Message, SessionId, ToolCall};

use crate::common::{Backend, Fixture, fixture, fixture_on, save_note, session, user};

/// Unrelated turns the store also holds, so that a reply sharing nothing with the query is not
/// among the best few by chance.
const CHATTER: [&str; 12] = [
    "The weather was grey all morning, then it cleared up",
    "I repotted the basil and the mint on the balcony",
    "My sister is visiting in the spring with her kids",
    "We watched a documentary about octopuses last night",
    "The bakery on the corner sells rye bread on Fridays",
    "I finally fixed the squeaky hinge on the kitchen door",
    "Our neighbour plays the piano every evening at eight",
    "The bus was late again so I walked to the office",
    "I am reading a long novel about a lighthouse keeper",
    "The cat knocked a glass of water off the desk",
    "We are painting the hallway a pale shade of green",
    "I signed up for a pottery class on Wednesdays",
];

fn day(n: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000, 0).unwrap() + Duration::days(n)
}

/// Writes `turns` into `chat` (user and assistant in turn, or as given), a minute apart from
/// `start`; gives back each turn's sequence number.
async fn say(f: &Fixture, chat: &SessionId, start: DateTime<Utc>, turns: &[Message]) -> Vec<u64> {
    let alice = user("alice");
    let mut seqs = Vec::new();
    for (i, message) in turns.iter().enumerate() {
        let at = start + Duration::minutes(i64::try_from(i).unwrap());
        let seq = f
            .store
            .sessions()
            .append_message_at(chat, &alice, message, Some(at))
            .await
            .unwrap();
        seqs.push(seq);
    }
    seqs
}

async fn chatter(f: &Fixture, chat: &SessionId) {
    let turns: Vec<Message> = CHATTER
        .iter()
        .enumerate()
        .map(|(i, t)| match i % 2 {
            0 => Message::user(*t),
            _ => Message::assistant(*t),
        })
        .collect();
    say(f, chat, day(0), &turns).await;
}

async fn search(f: &Fixture, chat: &SessionId, text: &str, top_k: usize) -> Vec<SearchHit> {
    let query = HybridQuery::new(vec![chat.clone()], text, top_k);
    f.store.search(&query).await.unwrap()
}

fn position(hits: &[SearchHit], seq: u64) -> Option<usize> {
    hits.iter().position(|h| h.event_seq == seq)
}

async fn a_reply_joins_the_question_it_answers(f: &Fixture) {
    let chat = session("season");
    chatter(f, &chat).await;
    let seqs = say(
        f,
        &chat,
        day(1),
        &[
            Message::user("Big news: I signed with a new basketball team today!"),
            Message::assistant("Congratulations! Which team did you sign with?"),
            Message::user("The Minnesota Wolves, starting in autumn."),
            Message::assistant("Wonderful, good luck with the season."),
        ],
    )
    .await;
    let (question, reply) = (seqs[1], seqs[2]);
    let hits = search(f, &chat, "Which team did I sign with?", 3).await;
    let q = position(&hits, question).expect("the question matches");
    let r = position(&hits, reply).unwrap_or_else(|| panic!("the reply is not among {hits:?}"));
    assert_eq!(
        r,
        q + 1,
        "the reply comes right after its question: {hits:?}"
    );
    assert!((hits[r].score - 0.98 * hits[q].score).abs() < 1e-9);
    assert_eq!(hits[r].source, HitSource::Conversation);
    assert!(hits[r].text.contains("Minnesota Wolves"));
    assert_eq!(hits[r].created_at, day(1) + Duration::minutes(2));
}

#[tokio::test]
async fn a_reply_joins_the_question_it_answers_on_a_file() {
    a_reply_joins_the_question_it_answers(&fixture().await).await;
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn a_reply_joins_the_question_it_answers_on_a_server() {
    need(Need::Sqld);
    a_reply_joins_the_question_it_answers(&fixture_on(Backend::Remote).await).await;
}

#[tokio::test]
async fn a_statement_lends_to_the_same_speakers_next_turn_across_tool_calls() {
    let f = fixture().await;
    let chat = session("trip");
    chatter(&f, &chat).await;
    let call = ToolCall {
        id: "c1".into(),
        name: "web_search".into(),
        arguments: "{}".into(),
    };
    let seqs = say(
        &f,
        &chat,
        day(2),
        &[
            Message::user("Our team trip next month needs a destination city"),
            Message::assistant_tool_calls(None, vec![call]),
            Message::tool_result("c1", "castles, museums, old towns"),
            Message::assistant("Do you prefer old towns or beaches?"),
            Message::user("Edinburgh, the old town and the castle."),
        ],
    )
    .await;
    let (statement, reaction, follow_up) = (seqs[0], seqs[3], seqs[4]);
    let hits = search(&f, &chat, "team trip destination city", 3).await;
    let s = position(&hits, statement).expect("the statement matches");
    let u =
        position(&hits, follow_up).unwrap_or_else(|| panic!("the follow-up is not among {hits:?}"));
    assert!(
        (hits[u].score - 0.9 * hits[s].score).abs() < 1e-9,
        "{hits:?}"
    );
    assert!(
        hits.iter()
            .all(|h| h.event_seq != reaction || h.score < hits[u].score),
        "the other speaker's reaction borrows nothing: {hits:?}"
    );
}

#[tokio::test]
async fn a_turn_the_filters_exclude_never_joins() {
    let f = fixture().await;
    let chat = session("filtered");
    chatter(&f, &chat).await;
    let asked = say(
        &f,
        &chat,
        day(3),
        &[Message::assistant("Which team did you sign with?")],
    )
    .await;
    let answered = say(&f, &chat, day(5), &[Message::user("The Minnesota Wolves.")]).await;
    let query = HybridQuery {
        filters: QueryFilters {
            created_before: Some(day(4)),
            ..QueryFilters::default()
        },
        ..HybridQuery::new(vec![chat.clone()], "Which team did I sign with?", 3)
    };
    let hits = f.store.search(&query).await.unwrap();
    assert!(position(&hits, asked[0]).is_some(), "{hits:?}");
    assert_eq!(
        position(&hits, answered[0]),
        None,
        "said after created_before: {hits:?}"
    );
    // Without the filter, the same reply joins.
    let hits = search(&f, &chat, "Which team did I sign with?", 3).await;
    assert!(position(&hits, answered[0]).is_some(), "{hits:?}");
}

#[tokio::test]
async fn notes_lend_nothing() {
    let f = fixture().await;
    let alice = user("alice");
    let notes = SessionId::user_memory(&alice);
    for text in [
        "Which team did the user sign with? Unknown yet.",
        "The user's favourite colour is teal.",
        "The user's dentist is Dr. Okafor.",
    ] {
        save_note(&f.store, &alice, text).await;
    }
    let hits = search(&f, &notes, "Which team did I sign with?", 3).await;
    assert!(!hits.is_empty());
    assert!(
        hits.iter().all(|h| h.source == HitSource::UserMemory),
        "{hits:?}"
    );
    for (a, b) in hits.iter().zip(hits.iter().skip(1)) {
        for share in [0.98, 0.9] {
            assert!(
                (b.score - share * a.score).abs() > 1e-9,
                "no note's score is lent from another: {hits:?}"
            );
        }
    }
}

/// A long answer of the agent's (several chunks) that ends with a question: its first chunk
/// matches the query, and the user's reply to the question at its end still joins it.
async fn a_long_message_asking_at_its_end_lends_to_its_reply(f: &Fixture) {
    let chat = session("long");
    chatter(f, &chat).await;
    let advice = "For the marathon training plan, start with three easy runs a week and one long \
                  run on the weekend, adding ten percent of distance each week. ";
    let filler = "Keep most runs at a pace where you can still talk, sleep enough, eat well \
                  before the long runs and take a rest week every month to recover. ";
    let long = format!(
        "{advice}{}Which shoes are you running in at the moment?",
        filler.repeat(12)
    );
    assert!(
        long.len() > memory_index::CHUNK_CHARS * 2,
        "three chunks at least"
    );
    let seqs = say(
        f,
        &chat,
        day(3),
        &[
            Message::assistant(long),
            Message::user("Old Brooks Ghost, nearly worn out."),
            Message::assistant("Then new shoes first, before the long runs grow."),
        ],
    )
    .await;
    let (asked, reply) = (seqs[0], seqs[1]);
    let hits = search(f, &chat, "marathon training plan long run distance", 3).await;
    let a = position(&hits, asked).expect("the long message matches");
    assert!(
        !hits[a].text.contains('?'),
        "the matching chunk is not the one asking: {hits:?}"
    );
    let r = position(&hits, reply).unwrap_or_else(|| panic!("the reply is not among {hits:?}"));
    assert_eq!(r, a + 1, "{hits:?}");
    assert!((hits[r].score - 0.98 * hits[a].score).abs() < 1e-9);
}

#[tokio::test]
async fn a_long_message_asking_at_its_end_lends_to_its_reply_on_a_file() {
    a_long_message_asking_at_its_end_lends_to_its_reply(&fixture().await).await;
}

#[tokio::test]
#[ignore = "needs sqld"]
async fn a_long_message_asking_at_its_end_lends_to_its_reply_on_a_server() {
    need(Need::Sqld);
    a_long_message_asking_at_its_end_lends_to_its_reply(&fixture_on(Backend::Remote).await).await;
}
