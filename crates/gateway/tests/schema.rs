//! The protocol documents stay true: `docs/protocol.schema.json` is what the Rust types generate,
//! every example frame fits the schema, and every JSON example in `docs/protocol.md` parses as a
//! frame, with every frame type shown.
//!
//! After changing a frame: `UPDATE_SCHEMA=1 cargo test -p gateway --test all -- schema::` rewrites
//! the schema file; then update docs/protocol.md.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use gateway::{CLIENT_FRAME_TYPES, example_client_frames, example_server_frames, protocol_schema};
use serde_json::Value;
use types::{ClientFrame, ServerFrame};

fn docs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

#[test]
fn schema_file_matches_the_types() {
    let generated = serde_json::to_string_pretty(&protocol_schema()).unwrap() + "\n";
    let path = docs().join("protocol.schema.json");
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/protocol.schema.json is out of date: run UPDATE_SCHEMA=1 cargo test -p gateway --test all -- schema::"
    );
}

/// A small validator for the subset of JSON Schema the generator emits.
fn validate(schema: &Value, value: &Value, path: &str) {
    if let Some(c) = schema.get("const") {
        assert_eq!(value, c, "{path}");
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        assert!(
            options.contains(value),
            "{path}: {value} not in {options:?}"
        );
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let obj = value
                .as_object()
                .unwrap_or_else(|| panic!("{path}: object"));
            let props = schema["properties"].as_object().unwrap();
            for req in schema["required"].as_array().unwrap() {
                assert!(
                    obj.contains_key(req.as_str().unwrap()),
                    "{path}: missing {req}"
                );
            }
            for (k, v) in obj {
                match props.get(k) {
                    Some(s) => validate(s, v, &format!("{path}.{k}")),
                    None => assert!(
                        schema.get("additionalProperties") != Some(&Value::Bool(false)),
                        "{path}: unexpected field {k}"
                    ),
                }
            }
        }
        Some("array") => {
            for (i, item) in value.as_array().unwrap().iter().enumerate() {
                validate(&schema["items"], item, &format!("{path}[{i}]"));
            }
        }
        Some("string") => assert!(value.is_string(), "{path}"),
        Some("boolean") => assert!(value.is_boolean(), "{path}"),
        Some("integer") => assert!(value.is_u64(), "{path}"),
        Some("number") => assert!(value.as_f64().is_some_and(|n| n >= 0.0), "{path}"),
        _ => {}
    }
}

fn frame_schema<'a>(schema: &'a Value, side: &str, kind: &str) -> &'a Value {
    schema["$defs"][side]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["properties"]["type"]["const"] == kind)
        .unwrap_or_else(|| panic!("no schema for {side} {kind}"))
}

fn kind(v: &Value) -> String {
    v["type"].as_str().unwrap().to_owned()
}

#[test]
fn examples_fit_the_schema_and_cover_every_frame() {
    let schema = protocol_schema();
    let mut client_kinds = Vec::new();
    for (full, bare) in example_client_frames() {
        for frame in [full, bare] {
            let v = serde_json::to_value(&frame).unwrap();
            validate(
                frame_schema(&schema, "ClientFrame", &kind(&v)),
                &v,
                &kind(&v),
            );
            assert_eq!(
                serde_json::from_value::<ClientFrame>(v.clone()).unwrap(),
                frame
            );
        }
        let v =
            serde_json::to_value(example_client_frames()[client_kinds.len()].0.clone()).unwrap();
        client_kinds.push(kind(&v));
    }
    assert_eq!(client_kinds, CLIENT_FRAME_TYPES.to_vec());
    for (full, bare) in example_server_frames() {
        for frame in [full, bare] {
            let v = serde_json::to_value(&frame).unwrap();
            validate(
                frame_schema(&schema, "ServerFrame", &kind(&v)),
                &v,
                &kind(&v),
            );
            assert_eq!(serde_json::from_value::<ServerFrame>(v).unwrap(), frame);
        }
    }
}

/// Takes out, at any depth, the optional fields of the nested objects a frame may carry without
/// them: a time read with an open side ("before the trip" has no `from`), a provenance without a
/// session, a message without text (an assistant's tool call).
fn strip_nested_optionals(v: &mut Value) {
    match v {
        Value::Object(fields) => {
            for (key, value) in fields.iter_mut() {
                let optional: &[&str] = match key.as_str() {
                    "time" => &["from", "until"],
                    "provenance" => &["session_id", "turn_id"],
                    "message" => &["content", "tool_calls", "tool_call_id"],
                    _ => &[],
                };
                if let Value::Object(inner) = value {
                    for name in optional {
                        inner.remove(*name);
                    }
                }
                strip_nested_optionals(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nested_optionals),
        _ => {}
    }
}

#[test]
fn frames_whose_nested_objects_leave_out_their_optional_fields_fit_the_schema() {
    let schema = protocol_schema();
    let mut stripped = 0;
    for (full, _) in example_server_frames() {
        let mut v = serde_json::to_value(&full).unwrap();
        let before = v.clone();
        strip_nested_optionals(&mut v);
        if v == before {
            continue;
        }
        stripped += 1;
        // Still a frame the types accept, so a gateway may send it...
        serde_json::from_value::<ServerFrame>(v.clone()).unwrap();
        // ...and a client validating against the schema must accept it too.
        validate(
            frame_schema(&schema, "ServerFrame", &kind(&v)),
            &v,
            &kind(&v),
        );
    }
    assert!(
        stripped >= 3,
        "only {stripped} example frames carry a time, provenance or message"
    );
}

#[test]
fn protocol_md_examples_parse_and_cover_every_frame() {
    let md = std::fs::read_to_string(docs().join("protocol.md")).unwrap();
    let schema = protocol_schema();
    let mut shown = BTreeSet::new();
    for block in md.split("```json").skip(1) {
        let body = block.split("```").next().unwrap();
        let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        let k = kind(&v);
        let side = if serde_json::from_value::<ClientFrame>(v.clone()).is_ok() {
            "ClientFrame"
        } else {
            serde_json::from_value::<ServerFrame>(v.clone())
                .unwrap_or_else(|e| panic!("{e}: {body}"));
            "ServerFrame"
        };
        validate(frame_schema(&schema, side, &k), &v, &k);
        shown.insert(format!("{side}:{k}"));
    }
    for side in ["ClientFrame", "ServerFrame"] {
        for s in schema["$defs"][side]["oneOf"].as_array().unwrap() {
            let k = s["properties"]["type"]["const"].as_str().unwrap();
            assert!(
                shown.contains(&format!("{side}:{k}")),
                "docs/protocol.md shows no {k}"
            );
        }
    }
}

/// The runtime's events reach the wire unchanged: every server frame shown in
/// `docs/protocol.md` comes back from the Rust types as the same JSON, and each kind of
/// `TurnEvent` is among them, carried by `ServerFrame::Turn` with its own `type` beside the
/// frame's `seq`, `session_id` and `turn_id`.
#[test]
fn protocol_md_server_frames_round_trip_and_carry_every_turn_event() {
    let md = std::fs::read_to_string(docs().join("protocol.md")).unwrap();
    let mut events = BTreeSet::new();
    for block in md.split("```json").skip(1) {
        let body = block.split("```").next().unwrap();
        let shown: Value = serde_json::from_str(body).unwrap();
        if serde_json::from_value::<ClientFrame>(shown.clone()).is_ok() {
            continue;
        }
        let frame: ServerFrame = serde_json::from_value(shown.clone()).unwrap();
        assert_eq!(serde_json::to_value(&frame).unwrap(), shown, "{body}");
        if let ServerFrame::Turn { seq, event, .. } = &frame {
            assert_eq!(Some(*seq), shown["seq"].as_u64());
            let alone = serde_json::to_value(event).unwrap();
            assert_eq!(alone["type"], shown["type"], "{body}");
            for (key, value) in alone.as_object().unwrap() {
                assert_eq!(&shown[key], value, "{key} of {body}");
            }
            events.insert(kind(&shown));
        }
    }
    // The examples name every event kind (an exhaustive match in `schema` makes sure).
    let every: BTreeSet<String> = example_server_frames()
        .iter()
        .filter_map(|(full, _)| full.turn_event())
        .map(|event| kind(&serde_json::to_value(event).unwrap()))
        .collect();
    assert_eq!(every.len(), 9, "{every:?}");
    assert_eq!(events, every);
}
