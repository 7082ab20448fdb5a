//! The capture answer read back: proposals checked whole, tags kept as the store keeps them,
//! the request forcing the one tool.

use super::*;
use types::ToolCall;

fn reply(arguments: &str) -> Message {
    Message::assistant_tool_calls(
        None,
        vec![ToolCall {
            id: "c".into(),
            name: RECORD_MEMORIES.into(),
            arguments: arguments.into(),
        }],
    )
}

fn shown() -> Vec<ShownNote> {
    vec![ShownNote {
        note_id: "note-1".into(),
        edit_token: "v1".into(),
        text: "The user likes tea".into(),
        unconfirmed: false,
    }]
}

fn check(arguments: &str, expected: Result<Vec<Proposal>, &str>) {
    let got = parse(&reply(arguments), &shown());
    match expected {
        Ok(proposals) => assert_eq!(got, Ok(proposals), "{arguments}"),
        Err(part) => {
            let e = got.expect_err(arguments);
            assert!(e.contains(part), "{arguments}: {e}");
        }
    }
}

#[test]
fn proposals_are_checked_whole() {
    check(r#"{"memories": []}"#, Ok(vec![]));
    check(
        r#"{"memories": [{"action": "add", "content": " Lives in Porto ", "tags": ["home"]},
                        {"action": "update", "note_id": "note-1", "content": "Likes green tea"},
                        {"action": "delete", "note_id": "note-1"}]}"#,
        Ok(vec![
            Proposal::Add {
                content: "Lives in Porto".into(),
                category: None,
                tags: vec!["home".into()],
            },
            Proposal::Update {
                note_id: "note-1".into(),
                edit_token: "v1".into(),
                content: "Likes green tea".into(),
                note_text: Some("The user likes tea".into()),
                category: None,
                tags: vec![],
            },
            Proposal::Delete {
                note_id: "note-1".into(),
                edit_token: Some("v1".into()),
                note_text: Some("The user likes tea".into()),
            },
        ]),
    );
    check("{\"memories\": [", Err("not JSON"));
    check(r#"{"notes": []}"#, Err("no \"memories\""));
    check(
        r#"{"memories": [{"action": "add", "content": "ok"}, {"action": "add"}]}"#,
        Err("proposal 2: an add with no content"),
    );
    check(
        r#"{"memories": [{"action": "delete", "note_id": "note-other"}]}"#,
        Err("not one of the notes shown"),
    );
    check(
        r#"{"memories": [{"action": "forget", "note_id": "note-1"}]}"#,
        Err("action must be"),
    );
    // A version the call was not shown (invented, stale, another note's) is a mix-up.
    check(
        r#"{"memories": [{"action": "add", "content": "ok"},
                        {"action": "update", "note_id": "note-1", "version": "v0",
                         "content": "Likes green tea"}]}"#,
        Err("proposal 2: version is not the version of the note shown"),
    );
    // What the notes tools would refuse is refused here, before anything is applied.
    check(
        r#"{"memories": [{"action": "add", "content": "ok", "category": "Fact"}]}"#,
        Err("proposal 1: unknown category \"Fact\""),
    );
    check(
        r#"{"memories": [{"action": "add", "content": "ok", "tags": ["a", ""]}]}"#,
        Err("proposal 1: a tag must be 1 to"),
    );
    let long = serde_json::to_string(&json!({"memories": [
        {"action": "update", "note_id": "note-1", "content": "x".repeat(MAX_CONTENT_BYTES + 1)}
    ]}))
    .unwrap_or_default();
    check(
        &long,
        Err("proposal 1: an update with content of 8193 bytes"),
    );
    check(
        r#"{"memories": [{"action": "add", "content": "ok", "category": "preference", "tags": [" tea "]}]}"#,
        Ok(vec![Proposal::Add {
            content: "ok".into(),
            category: Some("preference".into()),
            tags: vec!["tea".into()],
        }]),
    );
    let many: Vec<Value> = (0..=MAX_PROPOSALS)
        .map(|n| json!({"action": "add", "content": format!("fact {n}")}))
        .collect();
    check(
        &json!({ "memories": many }).to_string(),
        Err("more than 20"),
    );
    let plain = Message::assistant("nothing to record");
    assert!(parse(&plain, &shown()).is_err());
}

fn add_tagged(tags: &[&str]) -> Result<Vec<Proposal>, String> {
    let arguments = json!({"memories": [{"action": "add", "content": "ok", "tags": tags}]});
    parse(&reply(&arguments.to_string()), &shown())
}

#[test]
fn duplicate_tags_are_kept_once_as_memory_save_keeps_them() {
    let tea = Proposal::Add {
        content: "ok".into(),
        category: None,
        tags: vec!["tea".into()],
    };
    assert_eq!(add_tagged(&[" tea"; MAX_TAGS + 1]), Ok(vec![tea]));
}

#[test]
fn too_many_distinct_tags_are_refused_in_memory_save_words() {
    let distinct: Vec<String> = (0..=MAX_TAGS).map(|i| format!("t{i}")).collect();
    let store = NoteMetadata {
        tags: distinct.clone(),
        ..NoteMetadata::default()
    };
    let words = store.validated().map(|_| ()).map_err(|e| e.to_string());
    assert_eq!(words, Err(format!("at most {MAX_TAGS} tags per note")));
    let distinct: Vec<&str> = distinct.iter().map(String::as_str).collect();
    assert_eq!(
        add_tagged(&distinct),
        Err(format!("proposal 1: at most {MAX_TAGS} tags per note"))
    );
}

#[test]
fn the_request_forces_the_one_tool_and_shows_the_exchange() {
    let exchange = vec![
        Entry {
            seq: 1,
            message: Message::user("My sister Ana moved to Porto"),
        },
        Entry {
            seq: 2,
            message: Message::assistant("Nice!"),
        },
    ];
    let req = request(&shown(), &exchange, 500);
    assert_eq!(req.force_tool.as_deref(), Some(RECORD_MEMORIES));
    assert_eq!(req.tools.len(), 1);
    let text = req.messages[0].content.clone().unwrap_or_default();
    assert!(
        text.contains("User: My sister Ana moved to Porto"),
        "{text}"
    );
    assert!(text.contains("\"note_id\":\"note-1\""), "{text}");
}

/// An answer split over several `record_memories` calls (parallel tool calls) is read whole:
/// every call's entries, checked together and bounded together. The first call alone was read,
/// and the facts of the others were lost while the exchange counted as captured.
#[test]
fn every_record_memories_call_of_the_answer_is_read() {
    let call = |id: &str, memories: Value| ToolCall {
        id: id.into(),
        name: RECORD_MEMORIES.into(),
        arguments: json!({ "memories": memories }).to_string(),
    };
    let add = |content: &str| json!({"action": "add", "content": content});
    let split = Message::assistant_tool_calls(
        None,
        vec![
            call("c1", json!([add("The user plays the cello")])),
            call("c2", json!([add("The user's son Leo is six")])),
        ],
    );
    let contents: Vec<Option<String>> = parse(&split, &shown())
        .map(|p| p.iter().map(|p| p.content().map(str::to_owned)).collect())
        .unwrap_or_default();
    assert_eq!(
        contents,
        [
            Some("The user plays the cello".to_owned()),
            Some("The user's son Leo is six".to_owned())
        ]
    );
    // A fault in any call refuses the whole answer; the bound counts every call's entries.
    let one_bad = Message::assistant_tool_calls(
        None,
        vec![
            call("c1", json!([add("The user plays the cello")])),
            call("c2", json!([{"action": "add"}])),
        ],
    );
    assert_eq!(
        parse(&one_bad, &shown()),
        Err("proposal 2: an add with no content".to_owned())
    );
    let half: Vec<Value> = (0..=MAX_PROPOSALS / 2)
        .map(|n| add(&format!("fact {n}")))
        .collect();
    let too_many =
        Message::assistant_tool_calls(None, vec![call("c1", json!(half)), call("c2", json!(half))]);
    assert_eq!(
        parse(&too_many, &shown()),
        Err(format!("more than {MAX_PROPOSALS} proposals"))
    );
}
