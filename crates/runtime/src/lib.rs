//! The agent turn loop. (Not built yet: see docs/ARCHITECTURE.md.)
