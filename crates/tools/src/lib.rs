//! Tools the agent can call. (Being built: see docs/ARCHITECTURE.md.)
