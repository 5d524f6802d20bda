//! The node's wall clock: every stored timestamp and token claim reads it here, so the time
//! source is one function and no feature imports another to learn the time.

/// Microseconds since the Unix epoch: the time unit of tokens and stored records.
pub fn now_micros() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// Unix seconds: the time unit of every OAuth2 record, JWT claim and API key expiry.
pub fn now_secs() -> i64 {
    now_micros() / 1_000_000
}
