//! The pooled keyword lists answer exactly as lists per session did: the same chunks with the
//! same scores, over every scope, with filters, after removals, moves and purges, a session
//! leaving the pool, and a snapshot read back.

use std::io::Cursor;

use super::*;
use crate::flat::{SectionReader, SectionWriter};
use crate::keyword::{Allows, keyword_leg};
use crate::terms::{query_index_terms, text_terms};

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// A text of skewed words: "common" in every chunk, a few frequent words, many rare ones.
fn text(rng: &mut Rng) -> String {
    let mut words = vec!["common".to_owned()];
    for _ in 0..1 + rng.below(12) {
        let w = match rng.below(10) {
            0..=3 => format!("often{}", rng.below(4)),
            4..=6 => format!("some{}", rng.below(60)),
            _ => format!("rare{}", rng.below(3000)),
        };
        words.push(w);
    }
    words.join(" ")
}

/// Both forms of the index, changed alike.
struct Pair {
    pooled: KeywordIndex,
    unpooled: KeywordIndex,
}

impl Pair {
    fn upsert(&self, session: &str, id: i64, text: &str, expires: Option<&str>) {
        let bag = text_terms(text);
        self.pooled.upsert(session, id, &bag, expires);
        self.unpooled.upsert(session, id, &bag, expires);
    }

    fn remove(&self, session: &str, id: i64) {
        self.pooled.remove(session, id);
        self.unpooled.remove(session, id);
    }

    /// Every query over every scope, filtered and not, and the lifts' view: the same answers.
    fn agree(&self, scopes: &[Vec<String>], queries: &[&str], what: &str) {
        let allow_all = |_: &str, _: i64| true;
        let some = |s: &str, id: i64| id % 3 != 0 && !s.ends_with('7');
        let filters: [Allows<'_>; 2] = [&allow_all, &some];
        for sessions in scopes {
            for query in queries {
                let terms = query_index_terms(query);
                for (f, allows) in filters.iter().enumerate() {
                    for limit in [5, 100] {
                        let a = keyword_leg(&self.pooled, &terms, sessions, limit, allows);
                        let b = keyword_leg(&self.unpooled, &terms, sessions, limit, allows);
                        assert_eq!(a, b, "{what}: {query:?} over {sessions:?}, filter {f}");
                    }
                }
            }
            let (sa, sb) = (
                self.pooled.searched(sessions),
                self.unpooled.searched(sessions),
            );
            let (la, lb) = (sa.lock(&self.pooled), sb.lock(&self.unpooled));
            let (a, b) = (la.view(), lb.view());
            assert_eq!(
                (a.docs(), a.total_len()),
                (b.docs(), b.total_len()),
                "{what}"
            );
            for now in ["2025-01-01", "2035-01-01"] {
                assert_eq!(a.any_expired(now), b.any_expired(now), "{what} {now}");
            }
            let ids = self.pooled.term_ids(["often1", "common"]);
            for chunk in (0..20_000).step_by(37) {
                assert_eq!(a.chunk_len(chunk), b.chunk_len(chunk), "{what} {chunk}");
                for id in ids.iter().flatten() {
                    assert_eq!(a.holds(chunk, *id), b.holds(chunk, *id), "{what} {chunk}");
                }
            }
        }
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn pooled_lists_answer_as_lists_per_session_did() {
    let pair = Pair {
        pooled: KeywordIndex::default(),
        unpooled: KeywordIndex::unpooled(),
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // 60 small sessions of 50-250 chunks (over 5,000 chunks hold "common": the plan that
    // needs every term), and one that grows past the pool's size on the way.
    let mut id = 0i64;
    let mut texts = Vec::new();
    for s in 0..60 {
        for _ in 0..50 + rng.below(200) {
            let session = format!("s{s}");
            let t = text(&mut rng);
            let expires = (id % 97 == 0).then_some("2030-01-01");
            pair.upsert(&session, id, &t, expires);
            texts.push((session, id, t));
            id += 1;
            pair.upsert("big", 100_000 + id, &text(&mut rng), None);
        }
    }
    assert!(
        read(&pair.pooled.shared).sessions.contains_key("big"),
        "big left the pool"
    );
    let all: Vec<String> = (0..60)
        .map(|s| format!("s{s}"))
        .chain(["big".into()])
        .collect();
    let scopes = [
        all.clone(),
        all[..60].to_vec(),
        names(&["s3"]),
        names(&["s7", "s12", "s40", "nobody"]),
        names(&["big", "s5"]),
        names(&["big"]),
    ];
    let queries = [
        "often1 rare17",
        "common",
        "common often2 often3",
        "some5 rare99 rare1000 often0",
        "nothing-here",
    ];
    pair.agree(&scopes, &queries, "loaded");
    // Removals (a third of the chunks of some sessions, every chunk of one), texts replaced,
    // and a chunk filed under another session.
    for (session, id, _) in &texts {
        if id % 3 == 1 || session == "s12" {
            pair.remove(session, *id);
        }
    }
    for (session, id, _) in texts.iter().filter(|t| t.1 % 11 == 0) {
        pair.upsert(session, *id, &text(&mut rng), None);
    }
    pair.remove("s40", texts[5].1);
    pair.upsert("s40", 7_777_777, "common often1 rare17 moved", None);
    pair.agree(&scopes, &queries, "after removals");
    // Read back from a snapshot: the same again.
    let mut bytes = Vec::new();
    pair.pooled
        .write_flat(&mut SectionWriter::new(&mut bytes))
        .unwrap();
    let fresh = KeywordIndex::default();
    let mut cursor = Cursor::new(&bytes[..]);
    fresh
        .read_flat(&mut SectionReader::new(&mut cursor, bytes.len() as u64))
        .unwrap();
    let read_back = Pair {
        pooled: fresh,
        unpooled: pair.unpooled,
    };
    read_back.agree(&scopes, &queries, "read back");
}

#[test]
fn a_purge_keeps_every_live_chunk() {
    let index = KeywordIndex::default();
    for id in 0..400 {
        index.upsert(
            &format!("s{}", id % 4),
            id,
            &text_terms(&format!("w{id} shared")),
            None,
        );
    }
    for id in (0..400).filter(|id| id % 2 == 0) {
        index.remove(&format!("s{}", id % 4), id);
    }
    let pool = Arc::clone(&read(&index.shared).pool);
    let (slots, dead) = (read(&pool).chunk_ids.len(), read(&pool).dead);
    assert!(
        slots < 400 && dead < 64,
        "purged: {slots} slots, {dead} dead"
    );
    assert_eq!(slots - dead, 200);
    // s0 and s2 held only even ids: their numbers are free again.
    assert_eq!(read(&pool).numbers.len(), 2);
    let sessions = names(&["s0", "s1", "s2", "s3"]);
    let hits = keyword_leg(
        &index,
        &query_index_terms("shared"),
        &sessions,
        1000,
        &|_, _| true,
    );
    let mut ids: Vec<i64> = hits.iter().map(|(id, _)| *id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..400).filter(|id| id % 2 == 1).collect::<Vec<_>>());
    let one = keyword_leg(
        &index,
        &query_index_terms("w201"),
        &sessions,
        10,
        &|_, _| true,
    );
    assert_eq!(one.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [201]);
}
