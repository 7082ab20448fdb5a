//! The terminal chat client. (Not built yet: see docs/ARCHITECTURE.md.)
