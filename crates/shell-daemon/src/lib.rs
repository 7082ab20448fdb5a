//! The shell-vm daemon. (Not built yet: see docs/ARCHITECTURE.md.)
