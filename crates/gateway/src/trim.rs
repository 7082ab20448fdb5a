//! Giving memory back after a flood of connections.
//!
//! Each connection's buffers and tasks are freed when it closes, but glibc's allocator keeps
//! freed memory in its arenas, so after a flood the process stays as large as at its peak.
//! When at least [`FLOOD`] connections were open at once and fewer than a quarter of that peak
//! remain, the gateway asks the allocator to return free memory to the system
//! (`malloc_trim(0)`), off the async threads. Elsewhere (another C library) this does nothing.

/// Open connections at once that count as a flood worth trimming after.
pub(crate) const FLOOD: usize = 256;

/// Returns free memory to the system on a blocking thread (when called within a runtime).
pub(crate) fn soon() {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn_blocking(release_free_memory);
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_free_memory() {
    // SAFETY: `malloc_trim` only walks the allocator's own free lists; it has no
    // preconditions and is safe to call from any thread at any time.
    #[allow(unsafe_code, reason = "glibc's malloc_trim has no safe wrapper")]
    let released = unsafe { libc::malloc_trim(0) };
    tracing::debug!(released, "returned free memory to the system after a flood");
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_memory() {}
