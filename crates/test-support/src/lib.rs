//! Test support. (Being built: see docs/ARCHITECTURE.md.)
