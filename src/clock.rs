//! The node's wall clock: every stored timestamp and token claim reads it here, so the time
//! source is one function and no feature imports another to learn the time.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// Added to the system clock: zero unless the clock-jump fault is on (see [`watch_skew_file`]).
static SKEW_MICROS: AtomicI64 = AtomicI64::new(0);

/// Microseconds since the Unix epoch: the time unit of tokens and stored records.
pub fn now_micros() -> i64 {
    chrono::Utc::now().timestamp_micros() + SKEW_MICROS.load(Ordering::Relaxed)
}

/// Unix seconds: the time unit of every OAuth2 record, JWT claim and API key expiry.
pub fn now_secs() -> i64 {
    now_micros() / 1_000_000
}

/// Fault injection for the partition campaign (`tests/it/jepsen`, docs/reliability.md): with
/// `IDNODE_FAULT_CLOCK_SKEW_FILE` set, this node's wall clock runs that file's number of
/// seconds ahead (negative: behind), re-read every 100 ms, so a test can make one member's
/// clock jump while it serves. Raft's timers are monotonic and do not move with it.
pub fn watch_skew_file() {
    let Some(path) = std::env::var_os("IDNODE_FAULT_CLOCK_SKEW_FILE") else { return };
    tracing::warn!(file = ?path, "the wall clock follows a fault-injection skew file");
    std::thread::spawn(move || loop {
        let secs = std::fs::read_to_string(&path).ok().and_then(|s| s.trim().parse::<i64>().ok()).unwrap_or(0);
        SKEW_MICROS.store(secs.saturating_mul(1_000_000), Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(100));
    });
}
