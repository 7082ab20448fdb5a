//! The WebSocket gateway. (Not built yet: see docs/ARCHITECTURE.md.)
