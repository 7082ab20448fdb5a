//! The in-memory indexes behind memory search, and everything they need that is not the store:
//! text chunked ([`chunk_text`]) and embedded ([`Embedder`]: the builtin static model, an
//! OpenAI-compatible server, or a hash for tests); an int8 vector index per session
//! ([`VectorIndex`]: exact scan, or a binary first pass of sign codes with exact rescoring, whose
//! recall live probes keep in check); BM25 keyword postings ([`KeywordIndex`]); the filters a
//! search applies to each chunk ([`ChunkFacets`], [`QueryFilters`]); and the fusion of the two legs
//! ([`fuse`]).
//!
//! Its interface is plain data: the store hands it [`IndexChange`]s after each commit (and at
//! load) and asks it for ranked chunk ids. It never reads or writes a database (the architecture
//! test bans libsql here), so its tests and benches run without one.

pub mod calibration;
mod category;
pub mod chunking;
pub mod dot;
pub mod embedding;
pub mod facets;
pub mod facts;
mod filters;
pub mod flat;
pub mod fusion;
pub mod hamming;
mod huge_pages;
mod index_change;
pub mod keyword;
mod keyword_index;
mod query_words;
pub mod related_words;
pub mod sign_codes;
pub mod terms;
pub mod time_keys;
mod topk;
pub mod vector_index;
mod vector_leg;
mod vocatives;

pub use calibration::{Probe, yield_to_searches};
pub use category::{Category, UnknownCategory};
pub use chunking::{CHUNK_CHARS, MAX_OVERLAP_CHARS, chunk_text};
pub use embedding::{EmbedError, Embedder, HashEmbedder};
pub use facets::{ChunkFacets, FacetFilter};
pub use facts::{DEFAULT_DUPLICATE_SIMILARITY, FactDifference, fact_difference, restates};
pub use filters::{QueryFilters, Scope, time_text};
pub use fusion::{Fusion, Weights, fuse};
pub use index_change::{IndexChange, read, write};
pub use keyword_index::{KeywordIndex, Locked, Searched, View};
pub use query_words::query_terms;
pub use topk::TopK;
pub use vector_index::VectorIndex;
pub use vector_leg::{APPROX_MIN_ROWS, VectorLeg};
