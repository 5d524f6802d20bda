//! Column families and keys owned by the raft crate (all values are sealed by the engine).

/// Log entries keyed by big-endian index.
pub const CF_LOG: &str = "raft_log";
/// Vote, committed, last purged, state-machine position and the current snapshot.
pub const CF_META: &str = "raft_meta";
/// request_id -> reply of applied proposals (part of snapshots so every node dedups alike).
pub const CF_DEDUP: &str = "raft_dedup";

pub const KEY_VOTE: &[u8] = b"vote";
pub const KEY_COMMITTED: &[u8] = b"committed";
pub const KEY_PURGED: &[u8] = b"purged";
pub const KEY_APPLIED: &[u8] = b"sm_applied";
pub const KEY_MEMBERSHIP: &[u8] = b"sm_membership";
/// Where the snapshot lived inside the metadata before snapshots became files (removed at
/// startup by a binary that finds it).
pub const KEY_LEGACY_SNAPSHOT: &[u8] = b"snapshot";
/// The current snapshot: a `SnapshotRecord` naming its file.
pub const KEY_SNAPSHOT: &[u8] = b"snapshot_file";
/// Present while a received snapshot replaces the state (redone at startup if found).
pub const KEY_INSTALLING: &[u8] = b"snapshot_installing";

/// Dedup records: `r || request_id` -> record; `i || BE(index) || request_id` -> () for pruning.
pub const DEDUP_RECORD: u8 = b'r';
pub const DEDUP_BY_INDEX: u8 = b'i';

pub fn log_key(index: u64) -> Vec<u8> {
    index.to_be_bytes().to_vec()
}

/// The index of a log key; `None` for a malformed key (never written by this crate).
pub fn log_index(key: &[u8]) -> Option<u64> {
    let bytes: [u8; 8] = key.try_into().ok()?;
    Some(u64::from_be_bytes(bytes))
}

pub fn dedup_record_key(request_id: &[u8; 16]) -> Vec<u8> {
    let mut k = Vec::with_capacity(17);
    k.push(DEDUP_RECORD);
    k.extend_from_slice(request_id);
    k
}

pub fn dedup_index_key(index: u64, request_id: &[u8; 16]) -> Vec<u8> {
    let mut k = Vec::with_capacity(25);
    k.push(DEDUP_BY_INDEX);
    k.extend_from_slice(&index.to_be_bytes());
    k.extend_from_slice(request_id);
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_keys_sort_by_index() {
        assert!(log_key(255) < log_key(256));
        assert_eq!(log_index(&log_key(u64::MAX)), Some(u64::MAX));
        assert_eq!(log_index(b"short"), None);
    }
}
