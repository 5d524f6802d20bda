//! glibc malloc settings for a long-running server. The allocator keeps memory a burst freed
//! (startup's one-time work, a load peak) in its arenas until the process exits; a node that
//! served a load run then sat at its peak RSS. These settings bound that: fewer arenas, large
//! blocks straight from mmap, and the free pages handed back to the kernel now and then.

use std::time::Duration;

/// How often free heap pages are returned to the kernel.
const TRIM_EVERY: Duration = Duration::from_secs(5);

/// Called once at startup, before any other thread exists.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let arenas = i32::try_from(cores).unwrap_or(i32::MAX);
        // SAFETY: before any other thread exists; mallopt only changes allocator parameters.
        unsafe {
            // argon2id allocates 19 MiB per hash: with glibc's adaptive mmap threshold those
            // blocks stayed in per-thread arenas after a burst of logins (hundreds of MiB).
            libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
            // One arena per core instead of glibc's eight: each arena keeps its own free
            // memory, and tokio's worker and blocking threads spread over all of them.
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

/// Returns the heap's free pages to the kernel every few seconds (glibc only does so for
/// the top of the main arena by itself). `malloc_trim` walks the arenas' free lists: well
/// under a millisecond for a node's heap.
pub fn spawn_trimmer() -> tokio::task::JoinHandle<()> {
    tokio::spawn(async {
        let mut every = tokio::time::interval(TRIM_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            trim();
        }
    })
}

fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim is thread-safe (it takes each arena's lock).
    unsafe {
        libc::malloc_trim(0);
    }
}
