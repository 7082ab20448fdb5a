//! The client's pure checks as tables: offered names, schemas, tiers, results.

#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use mcp::client::{check_schema, offered_name, render_result, tier_of};
use serde_json::{Value, json};
use types::{McpServerConfig, SafetyTier};

#[test]
fn offered_names_are_prefixed_and_callable() {
    let check = |tool: &str, expected: Result<&str, &str>| {
        let got = offered_name("files", tool);
        match expected {
            Ok(name) => assert_eq!(got.as_deref(), Ok(name), "{tool}"),
            Err(part) => assert!(got.unwrap_err().contains(part), "{tool}"),
        }
    };
    check("read_file", Ok("files__read_file"));
    check("list-dir", Ok("files__list-dir"));
    check("read.file", Err("characters other than"));
    check("", Err("characters other than"));
    check(&"x".repeat(60), Err("longer than 64"));
}

#[test]
fn schemas_the_registry_cannot_check_are_refused() {
    let check = |schema: Value, expected: Result<(), &str>| match expected {
        Ok(()) => assert_eq!(check_schema(&schema), Ok(()), "{schema}"),
        Err(part) => {
            let err = check_schema(&schema).unwrap_err();
            assert!(err.contains(part), "{schema}: {err}");
        }
    };
    check(json!({"type": "object"}), Ok(()));
    check(
        json!({"type": "object", "properties": {"p": {"type": ["string", "null"]}, "q": true},
               "required": ["p"]}),
        Ok(()),
    );
    check(json!({"type": "string"}), Err("not `type: \"object\"`"));
    check(json!({"properties": {}}), Err("not `type: \"object\"`"));
    check(
        json!({"type": "object", "properties": {"x": {"type": "banana"}}}),
        Err("unknown `type`"),
    );
    check(
        json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["y"]}),
        Err("requires `y`"),
    );
    check(
        json!({"type": "object", "properties": []}),
        Err("`properties`"),
    );
    check(
        json!({"type": "object", "properties": {"x": {"type": "array", "items": 3}}}),
        Err("not a JSON Schema object"),
    );
    let big: serde_json::Map<String, Value> = (0..2000)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    check(json!({"type": "object", "properties": big}), Err("bytes"));
    let mut deep = json!({"type": "string"});
    for _ in 0..20 {
        deep = json!({"type": "object", "properties": {"d": deep}});
    }
    check(deep, Err("deeper"));
}

#[test]
fn tiers_come_from_the_config_then_trusted_annotations_else_approval() {
    let mut config = McpServerConfig::default();
    let check = |config: &McpServerConfig, hint: Option<bool>, expected: SafetyTier| {
        assert_eq!(tier_of(config, "t", hint), expected, "{hint:?}");
    };
    check(&config, Some(true), SafetyTier::Privileged);
    check(&config, None, SafetyTier::Privileged);
    config.trust_annotations = true;
    check(&config, Some(true), SafetyTier::ReadOnly);
    check(&config, Some(false), SafetyTier::Privileged);
    config.tier = Some(SafetyTier::SideEffecting);
    check(&config, Some(true), SafetyTier::SideEffecting);
    config.tool_tiers.insert("t".into(), SafetyTier::ReadOnly);
    check(&config, None, SafetyTier::ReadOnly);
}

#[test]
fn results_become_text_images_a_note_resources_links() {
    let check = |result: Value, text: &str, is_error: bool| {
        assert_eq!(
            render_result(&result),
            (text.to_owned(), is_error),
            "{result}"
        );
    };
    check(
        json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
        "a\nb",
        false,
    );
    check(
        json!({"content": [{"type": "text", "text": "no"}], "isError": true}),
        "no",
        true,
    );
    check(json!({"content": []}), "(the tool returned nothing)", false);
    check(
        json!({"content": [], "structuredContent": {"n": 1}}),
        r#"{"n":1}"#,
        false,
    );
    check(
        json!({"content": [{"type": "text", "text": "{\n \"n\": 1\n}"}], "structuredContent": {"n": 1}}),
        "{\n \"n\": 1\n}",
        false,
    );
    check(
        json!({"content": [{"type": "text", "text": "hi"}], "structuredContent": {"result": "hi"}}),
        "hi",
        false,
    );
    check(
        json!({"content": [{"type": "text", "text": "7"}], "structuredContent": {"result": 7}}),
        "7",
        false,
    );
    check(
        json!({"content": [{"type": "text", "text": "a summary"}], "structuredContent": {"n": 2}}),
        "a summary\n{\"n\":2}",
        false,
    );
    check(
        json!({"content": [{"type": "image", "data": "A".repeat(4096), "mimeType": "image/png"}]}),
        "[image: image/png, 3 KB — not shown]",
        false,
    );
    check(
        json!({"content": [{"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"}]}),
        "[resource: a.txt <file:///a.txt>]",
        false,
    );
    check(
        json!({"content": [{"type": "resource", "resource": {"uri": "mem://x", "text": "body"}}]}),
        "[resource mem://x]\nbody",
        false,
    );
    check(
        json!({"content": [{"type": "resource", "resource": {"uri": "mem://y", "blob": "AAAA", "mimeType": "application/pdf"}}]}),
        "[resource mem://y: application/pdf, 3 bytes — not shown]",
        false,
    );
}
