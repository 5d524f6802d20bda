//! The newest raft log entries, kept decoded in memory beside RocksDB. Every entry is read
//! back soon after it is appended: by the leader once per follower it replicates to, and by
//! every member when it applies the entry. Each such read was a RocksDB lookup, an AEAD open
//! and a postcard decode of the same bytes just written. Entries here are a contiguous run
//! ending at the log's last entry (appends add at the end, truncation and purges cut at the
//! ends the log store cuts), bounded in count and in encoded bytes; a read it does not cover
//! goes to RocksDB as before.

use std::collections::VecDeque;
use std::sync::Mutex;

use openraft::RaftLogId;

use crate::types::Entry;

/// Entries kept at most.
const MAX_ENTRIES: usize = 512;
/// Encoded bytes kept at most (a batched entry holds up to 128 commands).
const MAX_BYTES: usize = 2 << 20;

#[derive(Default)]
struct Run {
    /// Entries with consecutive indexes, and each one's encoded size.
    entries: VecDeque<(Entry, usize)>,
    bytes: usize,
}

impl Run {
    fn first(&self) -> Option<u64> {
        self.entries.front().map(|(e, _)| e.get_log_id().index)
    }

    fn last(&self) -> Option<u64> {
        self.entries.back().map(|(e, _)| e.get_log_id().index)
    }

    fn pop_front(&mut self) {
        if let Some((_, size)) = self.entries.pop_front() {
            self.bytes -= size;
        }
    }
}

#[derive(Default)]
pub(crate) struct RecentEntries {
    run: Mutex<Run>,
}

impl RecentEntries {
    fn lock(&self) -> std::sync::MutexGuard<'_, Run> {
        self.run.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Entries just written to the log (in index order), with their encoded sizes.
    pub(crate) fn appended(&self, entries: Vec<(Entry, usize)>) {
        let mut run = self.lock();
        for (entry, size) in entries {
            let index = entry.get_log_id().index;
            if run.last().is_some_and(|last| last.checked_add(1) != Some(index)) {
                // Not the next entry: start a new run (only truncation moves the end back,
                // and it cuts this run first).
                *run = Run::default();
            }
            run.bytes += size;
            run.entries.push_back((entry, size));
        }
        while run.entries.len() > MAX_ENTRIES || (run.bytes > MAX_BYTES && run.entries.len() > 1) {
            run.pop_front();
        }
    }

    /// The log lost the entries from `index` on.
    pub(crate) fn truncated(&self, index: u64) {
        let mut run = self.lock();
        while run.last().is_some_and(|last| last >= index) {
            if let Some((_, size)) = run.entries.pop_back() {
                run.bytes -= size;
            }
        }
    }

    /// The log lost the entries up to `index`.
    pub(crate) fn purged(&self, index: u64) {
        let mut run = self.lock();
        while run.first().is_some_and(|first| first <= index) {
            run.pop_front();
        }
    }

    /// The entries `start..end` (`None`: to the last), if this run holds every one of them.
    pub(crate) fn get(&self, start: u64, end: Option<u64>) -> Option<Vec<Entry>> {
        let run = self.lock();
        let (first, last) = (run.first()?, run.last()?);
        let end = end.unwrap_or(last.saturating_add(1));
        if start < first || end > last.saturating_add(1) {
            return None;
        }
        let skip = usize::try_from(start - first).ok()?;
        let take = usize::try_from(end.saturating_sub(start)).ok()?;
        Some(run.entries.iter().skip(skip).take(take).map(|(e, _)| e.clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, EntryPayload, LogId};

    use super::*;

    fn entry(index: u64) -> (Entry, usize) {
        let log_id = LogId::new(CommittedLeaderId::new(1, 1), index);
        (Entry { log_id, payload: EntryPayload::Blank }, 100)
    }

    fn indexes(got: Option<Vec<Entry>>) -> Option<Vec<u64>> {
        got.map(|v| v.iter().map(|e| e.log_id.index).collect())
    }

    #[test]
    fn serves_only_ranges_it_holds_whole() {
        let r = RecentEntries::default();
        assert_eq!(indexes(r.get(1, None)), None);
        r.appended((5..=9).map(entry).collect());
        assert_eq!(indexes(r.get(5, None)), Some(vec![5, 6, 7, 8, 9]));
        assert_eq!(indexes(r.get(7, Some(9))), Some(vec![7, 8]));
        assert_eq!(indexes(r.get(9, Some(9))), Some(vec![]));
        assert_eq!(indexes(r.get(4, Some(7))), None, "starts before the run");
        assert_eq!(indexes(r.get(8, Some(11))), None, "ends after the log");
        r.truncated(8);
        assert_eq!(indexes(r.get(5, None)), Some(vec![5, 6, 7]));
        r.appended(vec![entry(8)]);
        assert_eq!(indexes(r.get(7, None)), Some(vec![7, 8]));
        r.purged(6);
        assert_eq!(indexes(r.get(6, None)), None);
        assert_eq!(indexes(r.get(7, None)), Some(vec![7, 8]));
        // A gap (a snapshot installed past the log) starts a new run.
        r.appended(vec![entry(20)]);
        assert_eq!(indexes(r.get(7, None)), None);
        assert_eq!(indexes(r.get(20, None)), Some(vec![20]));
    }

    #[test]
    fn stays_within_its_bounds() {
        let r = RecentEntries::default();
        r.appended((1..=(MAX_ENTRIES as u64 + 10)).map(entry).collect());
        assert_eq!(indexes(r.get(10, Some(11))), None);
        assert_eq!(indexes(r.get(11, Some(12))), Some(vec![11]));
        let big = |i: u64| (entry(i).0, MAX_BYTES / 2);
        r.appended(vec![big(MAX_ENTRIES as u64 + 11), big(MAX_ENTRIES as u64 + 12)]);
        let last = MAX_ENTRIES as u64 + 12;
        assert_eq!(indexes(r.get(last - 1, None)), Some(vec![last - 1, last]));
        assert_eq!(indexes(r.get(last - 2, None)), None);
    }
}
