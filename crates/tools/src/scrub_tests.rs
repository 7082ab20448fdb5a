//! The scrubber's secrets, kept text, host paths and the shell's environment.

use super::*;

fn check(input: &str, expected: &str) {
    let scrubber = Scrubber::new(Path::new("/srv/oxydra/alice"));
    assert_eq!(scrubber.scrub(input), expected, "input {input:?}");
}

#[test]
fn all_secret_patterns_compile() {
    assert_eq!(SECRETS.patterns.len(), secret_patterns().len());
    assert!(SECRETS.needles.is_some());
    assert!(HIGH_ENTROPY.is_some());
    assert!(
        Scrubber::new(Path::new("/srv/oxydra/alice"))
            .host_paths
            .is_some()
    );
}

#[test]
fn secrets() {
    check("key sk-proj-abcdEFGH1234ijklMNOP5678", "key [REDACTED]");
    check(
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv done",
        "[REDACTED] done",
    );
    check(
        "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "token [REDACTED]",
    );
    check("xoxb-1234567890-abcdefghij", "[REDACTED]");
    check("aws AKIAIOSFODNN7EXAMPLE.", "aws [REDACTED].");
    check(
        "Authorization: Bearer abc.def-ghi_jkl.mnopqrst",
        "Authorization: Bearer [REDACTED]",
    );
    check(
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "jwt [REDACTED]",
    );
    check("db password=hunter22 ok", "db password=[REDACTED] ok");
    check(
        r#"{"api_key": "abc123xyz"}"#,
        r#"{"api_key": "[REDACTED]"}"#,
    );
    check(
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----\nafter",
        "[REDACTED PRIVATE KEY]\nafter",
    );
    check(
        "secret Zk3q9XvB2mLp7RtY4wNc8HdJ6sFa1GuE end",
        "secret [REDACTED] end",
    );
}

#[test]
fn ordinary_text_is_kept() {
    for text in [
        "note-3f2b5c1e-8d4a-4b6f-9c2d-1a2b3c4d5e6f",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "ThisIsAVeryLongIdentifierNameForTests",
        "the basic understanding of a bearer bond",
        "GET /api/v1/users and /usr/bin/python3 and /etc/hosts",
        "see https://example.com/home/page",
        "max tokens: 4096",
    ] {
        check(text, text);
    }
}

#[test]
fn the_shells_environment_keeps_its_directories_and_loses_its_secrets() {
    check(
        "PWD=/srv/oxydra/alice/shared\nOLDPWD=/srv/oxydra/alice\nHOME=/srv/oxydra/alice/shared\n\
         SHLVL=1\nPWD=~/x\npwd=./here\nDB_PASSWORD=hunter22\nOPENAI_API_KEY=sk-proj-abcdEFGH1234ijklMNOP5678",
        "PWD=shared\nOLDPWD=<workspace>\nHOME=shared\nSHLVL=1\nPWD=~/x\npwd=./here\n\
         DB_PASSWORD=[REDACTED]\nOPENAI_API_KEY=[REDACTED]",
    );
    check("PWD=/home/bob/project", "PWD=<host path>");
    check(
        "pwd=hunter22, Pwd=s3cret!",
        "pwd=[REDACTED], Pwd=[REDACTED]",
    );
}

#[test]
fn host_paths() {
    check("/srv/oxydra/alice/shared/notes.md", "shared/notes.md");
    check(
        "open '/srv/oxydra/alice/vault/key': denied",
        "open 'vault/key': denied",
    );
    check("root is /srv/oxydra/alice", "root is <workspace>");
    check("root is /srv/oxydra/alice.", "root is <workspace>.");
    check("other /srv/oxydra/alice2/shared/x", "other <host path>");
    check(
        "user dir /home/bob/project/main.rs:12",
        "user dir <host path>:12",
    );
    check("(/tmp/build-1234/out.txt)", "(<host path>)");
    check("mac /Users/carol/x", "mac <host path>");
}
