//! The per-user memory store. (Being built: see docs/ARCHITECTURE.md.)

pub mod embedding;
