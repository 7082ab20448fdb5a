//! Large pastes in the real `oxydra-tui` inside tmux (bracketed paste, as a terminal sends it),
//! against a real gateway with the scripted model: a 94 KB paste shows at once and is sent
//! whole; a 288 KB one (over the gateway's 256 KiB frame limit) shows too, and Enter says it
//! cannot be sent and keeps it in the box, with the connection kept and nothing claimed as sent.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr,
    reason = "tests fail loudly and print what they measured"
)]

use std::time::Instant;

use crate::common;

use test_support::{ScriptedLlm, ScriptedReply, Tmux};

/// `bytes` of words on one line, ending in `marker`.
fn paste_text(bytes: usize, marker: &str) -> String {
    let mut text = String::with_capacity(bytes + marker.len());
    let mut n = 0u64;
    while text.len() < bytes {
        text.push_str(&format!("word{n} "));
        n += 1;
    }
    text.push_str(marker);
    text
}

fn paste(tmux: &Tmux, dir: &std::path::Path, text: &str) {
    let file = dir.join("paste.txt");
    std::fs::write(&file, text).unwrap();
    tmux.run(&["load-buffer", "-b", "big", file.to_str().unwrap()]);
    // -p: bracketed paste, since the client asked the terminal for it.
    tmux.run(&["paste-buffer", "-p", "-b", "big", "-t", "tui"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tmux"]
async fn large_pastes_show_at_once_and_one_over_the_frame_limit_is_not_sent() {
    test_support::need(test_support::Need::Tmux);
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::with_responder(|_| ScriptedReply::text("Got your long message.")).await;
    let (gw, token_file) = common::gateway(dir.path(), "alice", &llm).await;
    let tmux = common::client_in_tmux("oxydra-tui-paste", &gw, &token_file);
    tmux.wait_for("the connection", |s| s.contains("● connected"))
        .await;

    let small = paste_text(94 * 1024, "END94");
    let started = Instant::now();
    paste(&tmux, dir.path(), &small);
    tmux.wait_for("the 94 KB paste in the box", |s| s.contains("END94"))
        .await;
    eprintln!("94 KB paste shown after {:?}", started.elapsed());
    tmux.key("Enter");
    tmux.wait_for("the reply", |s| s.contains("Got your long message."))
        .await;
    let sent = llm.last_request().unwrap().last_user_text().unwrap();
    assert_eq!(sent, small, "the model got the paste whole");

    let large = paste_text(288 * 1024, "END288");
    let started = Instant::now();
    paste(&tmux, dir.path(), &large);
    tmux.wait_for("the 288 KB paste in the box", |s| s.contains("END288"))
        .await;
    eprintln!("288 KB paste shown after {:?}", started.elapsed());
    let requests = llm.requests().len();
    tmux.key("Enter");
    let screen = tmux
        .wait_for("the refusal", |s| s.contains("Not sent: this message is"))
        .await;
    assert!(screen.contains("at most 256 KiB per message"), "{screen}");
    assert!(
        screen.contains("END288"),
        "the text stays in the box: {screen}"
    );
    assert!(!screen.contains("Lost the connection"), "{screen}");
    assert!(!screen.contains("may not have reached"), "{screen}");
    assert!(screen.contains("● connected"), "{screen}");
    assert_eq!(llm.requests().len(), requests, "nothing reached the model");

    gw.shutdown().await;
}
