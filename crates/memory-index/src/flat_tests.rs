//! Tests of the flat sections: an index read back answers exactly as the one written (vector leg
//! with and without binary codes, keyword leg, filters, after removals), and every flipped byte
//! or cut of the bytes is an error, never a panic or a silently different index.

use std::io::{self, Cursor};

use super::{SectionReader, SectionWriter};
use crate::category::Category;
use crate::facets::{ChunkFacets, FacetFilter};
use crate::filters::{QueryFilters, Scope};
use crate::keyword::keyword_leg;
use crate::terms::{query_index_terms, text_terms};
use crate::vector_index::{IndexChange, VectorIndex, VectorLeg};

const WORDS: &[&str] = &[
    "tea", "coffee", "lisbon", "porto", "train", "flight", "window", "seat", "party", "python",
    "code", "garden", "night", "morning", "blue", "folder",
];

fn next(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *seed >> 33
}

fn vector(seed: &mut u64, dims: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dims)
        .map(|_| next(seed) as f32 / (1u64 << 31) as f32 - 0.5)
        .collect();
    crate::embedding::normalize(&mut v);
    v
}

/// `rows` chunks over two sessions, with every kind of facet, then a few removed and rewritten
/// (rows move, keyword slots are freed and reused).
fn index(dims: usize, rows: i64, leg: VectorLeg) -> VectorIndex {
    let index = VectorIndex::with_leg("m", dims, leg);
    let mut seed = 11;
    let mut changes = Vec::new();
    for id in 0..rows {
        let text: Vec<&str> = (0..6)
            .map(|_| WORDS[next(&mut seed) as usize % WORDS.len()])
            .collect();
        let facets = ChunkFacets {
            category: Category::ALL.get(id as usize % 5).copied(),
            tags: (0..id % 3).map(|t| format!("tag{t}")).collect(),
            created_at: format!("2026-11-{:02}T10:00:00Z", 1 + id % 28),
            expires_at: (id % 4 == 0).then(|| format!("2027-01-{:02}T00:00:00Z", 1 + id % 28)),
        };
        changes.push(IndexChange::Upsert {
            session: ["alice", "bob"][id as usize % 2].to_owned(),
            chunk_id: id,
            vector: vector(&mut seed, dims),
            facets,
            terms: text_terms(&text.join(" ")),
        });
    }
    index.apply(&changes);
    let mut later = Vec::new();
    for id in (0..rows).step_by(7) {
        let session = ["alice", "bob"][id as usize % 2].to_owned();
        later.push(IndexChange::Remove {
            session,
            chunk_id: id,
        });
    }
    later.push(IndexChange::Upsert {
        session: "alice".into(),
        chunk_id: rows,
        vector: vector(&mut seed, dims),
        facets: ChunkFacets::default(),
        terms: text_terms("tea in a blue garden, a rose for Caroline"),
    });
    index.apply(&later);
    index
}

fn written(index: &VectorIndex) -> Vec<u8> {
    let mut bytes = Vec::new();
    index
        .write_flat(&mut SectionWriter::new(&mut bytes))
        .unwrap();
    bytes
}

fn read_back(like: &VectorIndex, bytes: &[u8]) -> io::Result<VectorIndex> {
    let fresh = like.empty_like();
    let mut cursor = Cursor::new(bytes);
    let mut input = SectionReader::new(&mut cursor, bytes.len() as u64);
    fresh.read_flat(&mut input)?;
    match input.left() {
        0 => Ok(fresh),
        _ => Err(io::Error::new(io::ErrorKind::InvalidData, "trailing")),
    }
}

/// What both legs answer to a few queries, with and without filters.
fn answers(index: &VectorIndex, dims: usize) -> Vec<String> {
    let sessions = ["alice".to_owned(), "bob".to_owned()];
    let tagged = FacetFilter::new(Scope {
        filters: QueryFilters {
            tags_any: vec!["tag1".into()],
            category: Some(Category::Pattern),
            ..QueryFilters::default()
        },
        expired_at: Some("2027-01-10T00:00:00Z".into()),
    });
    let mut seed = 99;
    let mut out = Vec::new();
    for _ in 0..8 {
        let q = vector(&mut seed, dims);
        for filter in [None, Some(&tagged)] {
            out.push(format!("{:?}", index.search(&sessions, &q, 10, filter)));
        }
    }
    for query in ["tea garden", "python code night", "lisbon"] {
        let terms = query_index_terms(query);
        let hits = keyword_leg(index.keywords(), &terms, &sessions, 10, &|_, _| true);
        out.push(format!("{hits:?}"));
    }
    // Per session, in no particular order.
    let mut shares = index.needed_shares();
    shares.sort_by(f64::total_cmp);
    let mut coded = index.coded_rows();
    coded.sort_unstable();
    out.push(format!("{} {shares:?} {coded:?}", index.len()));
    out
}

#[test]
fn an_index_read_back_answers_as_the_one_written() {
    for (leg, rows) in [(VectorLeg::Approximate, 600), (VectorLeg::Exact, 300)] {
        let dims = 96;
        let index = index(dims, rows, leg);
        let bytes = written(&index);
        let back = read_back(&index, &bytes).unwrap();
        back.train();
        assert_eq!(answers(&back, dims), answers(&index, dims), "{leg:?}");
        // How each term was written is kept: Caroline is a name, "rose" a word.
        let asked = ["carolin".to_owned(), "rose".to_owned(), "tea".to_owned()];
        assert_eq!(back.keywords().names_among(&asked), ["carolin"], "{leg:?}");
        assert_eq!(index.keywords().names_among(&asked), ["carolin"], "{leg:?}");
        assert_eq!(
            back.coded_rows().is_empty(),
            leg == VectorLeg::Exact,
            "{leg:?}"
        );
        // The copy keeps following changes like the original.
        let change = [IndexChange::Remove {
            session: "alice".into(),
            chunk_id: 2,
        }];
        index.apply(&change);
        back.apply(&change);
        assert_eq!(answers(&back, dims), answers(&index, dims), "{leg:?}");
    }
}

#[test]
fn any_flipped_byte_or_cut_is_an_error() {
    let index = index(8, 12, VectorLeg::Approximate);
    let bytes = written(&index);
    assert!(read_back(&index, &bytes).is_ok());
    for at in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x10;
        assert!(read_back(&index, &damaged).is_err(), "flip at {at}");
    }
    for len in 0..bytes.len() {
        assert!(read_back(&index, &bytes[..len]).is_err(), "cut at {len}");
    }
    let longer = [bytes.as_slice(), &[0]].concat();
    assert!(read_back(&index, &longer).is_err());
}

#[test]
fn a_section_longer_than_the_file_asks_for_no_memory() {
    let mut bytes = Vec::new();
    SectionWriter::new(&mut bytes).bytes(b"abc").unwrap();
    bytes[..8].copy_from_slice(&u64::MAX.to_ne_bytes());
    let mut cursor = Cursor::new(bytes.as_slice());
    let err = SectionReader::new(&mut cursor, bytes.len() as u64)
        .bytes()
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
}

#[test]
fn a_code_the_int8_kernels_cannot_take_is_refused() {
    // Every section's first byte set to -128 with its checksum made right again: the int8 codes'
    // section is refused for it (the AVX2 kernel assumes -127..=127), not read into the index.
    let index = index(8, 12, VectorLeg::Approximate);
    let bytes = written(&index);
    let mut refused = 0;
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let len = u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
        let body = at + 8;
        if len > 0 && body + len + 4 <= bytes.len() {
            let mut patched = bytes.clone();
            patched[body] = 0x80;
            let crc = crc32fast::hash(&patched[body..body + len]);
            patched[body + len..body + len + 4].copy_from_slice(&crc.to_ne_bytes());
            if let Err(e) = read_back(&index, &patched) {
                refused += usize::from(e.to_string().contains("code out of range"));
            }
        }
        at = body + len + 4;
    }
    assert!(refused >= 1, "no codes section refused a -128");
}
