//! LLM provider clients. (Being built: see docs/ARCHITECTURE.md.)
