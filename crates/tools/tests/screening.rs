//! What is stored is what is screened: the detector's coverage of obfuscated values (Unicode
//! digits, Unicode separators, zero-width characters and soft hyphens inside a value, lower-case
//! IBANs and NINOs, disguised `@`, key shapes, connection strings) and its false positives; then
//! the attacks through the registry, as a client or a prompt-injected model would make them:
//! secrets and personal data in `/memories` paths, renames, a `putMemory` namespace, key,
//! object key or number, an edit that completes a secret from clean pieces; each refused or
//! redacted (and said so), with nothing stored verbatim — not in the notes, not in the audit log.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on broken fixtures"
)]

use serde_json::{Value, json};
use tools::governance::pii;
use tools::scrub_secrets;
use types::Surface;

use crate::governance::{Env, env, error_object};

/// The kinds `pii::find` reports in `input`, in order; and, when any, that redaction leaves none
/// of the value's characters behind.
fn check(input: &str, expected: &[&str]) {
    let kinds: Vec<&str> = pii::find(input).iter().map(|f| f.kind.as_str()).collect();
    assert_eq!(kinds, expected, "input {input:?}");
    let (redacted, _) = pii::redact(input, |_| true);
    assert_eq!(
        pii::find(&redacted),
        vec![],
        "input {input:?} redacted as {redacted:?}"
    );
}

#[test]
fn obfuscated_values_are_found() {
    let table: &[(&str, &[&str])] = &[
        // Unicode digits must pass the checksums the pattern applies.
        ("card ４１１１ １１１１ １１１１ １１１１", &["card"]),
        ("card ٤١١١١١١١١١١١١١١١", &["card"]),
        ("card ४१११ ११११ ११११ ११११", &["card"]),
        // Separators: NBSP, en dash, slash, underscore.
        ("4111\u{A0}1111\u{A0}1111\u{A0}1111", &["card"]),
        ("4111\u{2013}1111\u{2013}1111\u{2013}1111", &["card"]),
        ("4111/1111/1111/1111", &["card"]),
        ("4111_1111_1111_1111", &["card"]),
        ("ssn 123\u{2013}45\u{2013}6789", &["national_id"]),
        ("ssn 123/45/6789", &["national_id"]),
        ("ssn 123_45_6789", &["national_id"]),
        ("+44\u{A0}20\u{A0}7946\u{A0}0958", &["phone"]),
        // Zero-width characters and soft hyphens inside a value.
        ("4111\u{200B}1111\u{200B}1111\u{200B}1111", &["card"]),
        ("4111\u{AD}1111\u{AD}1111\u{AD}1111", &["card"]),
        ("jo@exa\u{200B}mple.com", &["email"]),
        ("sk_li\u{200B}ve_4eC39HqLyjWDarjtT1zdp7dc", &["secret"]),
        (
            "gh\u{AD}p_abcdefghijklmnopqrstuvwxyz0123456789",
            &["secret"],
        ),
        // Lower case.
        ("iban gb82 west 1234 5698 7654 32", &["iban"]),
        ("iban gb82west12345698765432", &["iban"]),
        (
            "IBAN DE89\u{A0}3704\u{A0}0044\u{A0}0532\u{A0}0130\u{A0}00",
            &["iban"],
        ),
        ("nino ab123456c", &["national_id"]),
        ("nino ab 12 34 56 c", &["national_id"]),
        // Disguised @.
        ("jo＠example.com", &["email"]),
        ("jo [at] example.com", &["email"]),
        ("jo(at)example.com", &["email"]),
        ("jo%40example.com", &["email"]),
        // Key shapes.
        ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", &["secret"]),
        ("rk_test_4eC39HqLyjWDarjtT1zdp7dc", &["secret"]),
        ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", &["secret"]),
        ("glpat-AbCdEfGhIj0123456789", &["secret"]),
        ("npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", &["secret"]),
        (
            "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            &["secret"],
        ),
        ("export aws_secret_access_key=abc", &["secret"]),
        ("password = 'x'", &["secret"]),
        ("password = \"correct horse\"", &["secret"]),
        ("db_password: hunter22", &["secret"]),
        (
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=abc123+def456==;EndpointSuffix=core.windows.net",
            &["secret"],
        ),
        ("ｓｋ_ｌｉｖｅ_4eC39HqLyjWDarjtT1zdp7dc", &["secret"]),
        // Connection strings.
        (
            "postgres://admin:s3cr3t@db.example.com:5432/app",
            &["secret"],
        ),
        ("mysql://root:hunter2@localhost/db", &["secret"]),
        ("redis://:p4ss@cache:6379", &["secret"]),
    ];
    for (input, expected) in table {
        check(input, expected);
    }
}

#[test]
fn ordinary_text_is_not_taken_for_a_secret_or_personal_data() {
    for input in [
        "Permission denied",
        "bash: pwd: Permission denied",
        "token: Permission denied",
        "open /shared/x: Permission denied (os error 13)",
        "The meeting moved to Thursday; bring the slides.",
        "Release 1.2.3 shipped; Windows build 10.0.19045.3693",
        "on 2024-01-15 at 10:30, then 12/05/2024",
        "2026-11-28T03:47:52Z",
        "order 20240115, pages 100-200, 10/100/1000 Mbit",
        "max tokens: 4096",
        "see https://example.com:8080/path and postgres://localhost:5432/app",
        "the password policy: twelve characters",
        "use the api_key from the vault",
    ] {
        check(input, &[]);
        assert_eq!(scrub_secrets(input), input, "scrubbed {input:?}");
    }
}

/// `needles` appear nowhere in what the store holds: the notes, the audit log.
async fn nothing_stored(env: &Env, needles: &[&str]) {
    let notes = env.notes().await.join("\n");
    let audit = serde_json::to_string(&env.audit().await).unwrap();
    for needle in needles {
        assert!(
            !notes.contains(needle),
            "{needle:?} stored in a note: {notes}"
        );
        assert!(
            !audit.contains(needle),
            "{needle:?} stored in the audit log: {audit}"
        );
    }
}

const KEY: &str = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";

#[tokio::test]
async fn memories_paths_are_screened_on_create_and_rename() {
    let env = env(json!({})).await;
    let create = |path: &str| json!({"command": "create", "path": path, "file_text": "x"});
    let out = env
        .call(
            Surface::Agent,
            "memory",
            create(&format!("/memories/{KEY}.md")),
        )
        .await;
    assert_eq!(error_object(&out)["code"], "PII_DETECTED");
    let out = env
        .call(
            Surface::Mcp,
            "memory",
            create("/memories/jo@example.com.md"),
        )
        .await;
    assert_eq!(error_object(&out)["code"], "PII_DETECTED");
    let out = env
        .call(Surface::Agent, "memory", create("/memories/a.md"))
        .await;
    assert!(out.ok, "{}", out.output);
    let rename = json!({"command": "rename", "old_path": "/memories/a.md",
                        "new_path": format!("/memories/keys/{KEY}")});
    let out = env.call(Surface::Agent, "memory", rename).await;
    assert_eq!(error_object(&out)["code"], "PII_DETECTED");
    nothing_stored(&env, &[KEY, "4eC39HqLyjWDarjtT1zdp7dc", "jo@example.com"]).await;
    let view = json!({"command": "view", "path": "/memories/a.md"});
    assert!(env.call(Surface::Agent, "memory", view).await.ok);
}

#[tokio::test]
async fn an_edit_is_screened_on_its_result_not_its_fragments() {
    let env = env(json!({})).await;
    let create = json!({"command": "create", "path": "/memories/stripe.md",
                        "file_text": "stripe sk_live_ab"});
    assert!(env.call(Surface::Agent, "memory", create).await.ok);
    let edit = json!({"command": "str_replace", "path": "/memories/stripe.md",
                      "old_str": "ab", "new_str": "abcdefghijklmnop"});
    let out = env.call(Surface::Agent, "memory", edit).await;
    assert_eq!(error_object(&out)["code"], "PII_DETECTED", "{}", out.output);
    let insert = json!({"command": "insert", "path": "/memories/stripe.md",
                        "insert_line": 0, "insert_text": "password = 'hunter22"});
    let out = env.call(Surface::Agent, "memory", insert).await;
    assert!(
        out.ok,
        "an unfinished line is no secret yet: {}",
        out.output
    );
    let edit = json!({"command": "str_replace", "path": "/memories/stripe.md",
                      "old_str": "hunter22", "new_str": "hunter22'"});
    let out = env.call(Surface::Agent, "memory", edit).await;
    assert_eq!(error_object(&out)["code"], "PII_DETECTED", "{}", out.output);
    nothing_stored(&env, &["sk_live_abcdefghijklmnop", "hunter22'"]).await;
    assert_eq!(
        env.notes().await,
        vec!["password = 'hunter22\nstripe sk_live_ab".to_owned()]
    );
}

#[tokio::test]
async fn put_memory_namespace_key_object_keys_and_numbers_are_screened() {
    let env = env(json!({})).await;
    for args in [
        json!({"namespace": format!("keys.{KEY}"), "key": "k", "value": "v"}),
        json!({"namespace": "app", "key": KEY, "value": "v"}),
        json!({"namespace": "app", "key": "jo@example.com", "value": "v"}),
        json!({"namespace": "app", "key": "k", "value": {KEY: 1}}),
    ] {
        let out = env.call(Surface::Mcp, "putMemory", args.clone()).await;
        assert_eq!(error_object(&out)["code"], "PII_DETECTED", "{args}");
    }
    let out = env
        .call(
            Surface::Mcp,
            "putMemory",
            json!({"namespace": "app", "key": "pay", "value": {"card": 4_111_111_111_111_111_u64, "jo@example.com": "x"}}),
        )
        .await;
    assert!(out.ok, "{}", out.output);
    let answer: Value = serde_json::from_str(&out.output).unwrap();
    assert_eq!(answer["success"], true);
    let redacted: Vec<String> = serde_json::from_value(answer["redacted"].clone()).unwrap();
    assert_eq!(redacted, ["value: card", "value: email"], "{answer}");
    nothing_stored(&env, &[KEY, "4111111111111111", "jo@example.com"]).await;
}

#[tokio::test]
async fn a_redacted_write_says_which_fields_were_redacted() {
    let env = env(json!({})).await;
    let out = env
        .call(
            Surface::Mcp,
            "memory_save",
            json!({"content": "Jo's address is jo@example.com", "tags": ["jo＠example.com", "ok"]}),
        )
        .await;
    assert!(out.ok, "{}", out.output);
    let answer: Value = serde_json::from_str(&out.output).unwrap();
    assert_eq!(
        answer["redacted"],
        json!(["content: email", "tags: email"]),
        "{answer}"
    );
    let out = env
        .call(
            Surface::Mcp,
            "store_memory",
            json!({"category": "fact", "content": "call +44 20 7946 0958", "context": "from jo@example.com"}),
        )
        .await;
    assert!(out.ok, "{}", out.output);
    assert!(
        out.output.contains("content: phone") && out.output.contains("context: email"),
        "{}",
        out.output
    );
    nothing_stored(&env, &["jo@example.com", "jo＠example.com", "7946 0958"]).await;
}
