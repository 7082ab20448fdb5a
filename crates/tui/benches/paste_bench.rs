//! `cargo bench -p tui --bench paste-bench`: a large paste into the input editor, one line of
//! words (the worst case: every character lands on the same line). `insert_str` (the paste path)
//! against typing the same text a character at a time through `insert_char`, which is what the
//! paste path did before issue 35 (quadratic: each insert walked the line to the cursor).

#![allow(clippy::print_stdout, reason = "a bench prints its report")]

use std::time::{Duration, Instant};

use tui::Editor;

fn words(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 16);
    let mut n = 0u64;
    while text.len() < bytes {
        text.push_str(&format!("word{n} "));
        n += 1;
    }
    text
}

fn time(f: impl FnOnce() -> Editor) -> (Duration, usize) {
    let started = Instant::now();
    let editor = f();
    (started.elapsed(), editor.text().len())
}

fn main() {
    println!("| paste (one line of words) | insert_str | per character (the path before) |");
    println!("|---|---|---|");
    for kb in [16usize, 32, 94, 288] {
        let text = words(kb * 1024);
        let (fast, len) = time(|| {
            let mut e = Editor::default();
            e.insert_str(&text);
            e
        });
        assert_eq!(len, text.len());
        // Quadratic: only the small sizes (94 KB took 5 s in a release build before).
        let slow = if kb <= 32 {
            let (slow, len) = time(|| {
                let mut e = Editor::default();
                text.chars().for_each(|c| e.insert_char(c));
                e
            });
            assert_eq!(len, text.len());
            format!("{slow:?}")
        } else {
            "not run".to_owned()
        };
        println!("| {kb} KB | {fast:?} | {slow} |");
    }
}
