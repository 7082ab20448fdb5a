//! Writes `crates/memory-index/data/related-words.txt`, the related words of the keyword leg,
//! from the builtin model (see `memory_index::related_words`). Run after the model changes:
//!
//! ```sh
//! cargo run --release -p memory-index --example related_words
//! ```

#![allow(clippy::print_stderr, reason = "a one-off generator's progress")]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use memory_index::related_words::build::{Words, vocabulary};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let tokenizer =
        std::fs::read_to_string(root.join("../../models/minilm-l6-static/tokenizer.json"))?;
    let words = Words::embed(vocabulary(&tokenizer)?)?;
    let total = words.words.len();
    eprintln!("{total} words embedded; finding their neighbours");
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let done = AtomicUsize::new(0);
    let mut lines: Vec<Option<String>> = vec![None; total];
    std::thread::scope(|scope| {
        let per = total.div_ceil(threads);
        for (part, out) in lines.chunks_mut(per).enumerate() {
            let (words, done) = (&words, &done);
            scope.spawn(move || {
                for (k, slot) in out.iter_mut().enumerate() {
                    *slot = words.line(part * per + k);
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if n % 2000 == 0 {
                        eprintln!("{n} / {total}");
                    }
                }
            });
        }
    });
    let mut text: String = lines.into_iter().flatten().collect::<Vec<_>>().join("\n");
    text.push('\n');
    let out = root.join("data/related-words.txt");
    std::fs::write(&out, &text)?;
    eprintln!(
        "wrote {} lines, {} bytes to {}",
        text.lines().count(),
        text.len(),
        out.display()
    );
    Ok(())
}
