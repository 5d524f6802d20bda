//! The on-disk spool: where events wait while the sink is slow or failing, oldest first.
//!
//! Segment files `NNNNNNNNNNNNNNNNNNNN.seg` in `[audit] spool_dir`, one record per line. The
//! spool lives in the data directory, which must not show a user name to `grep -r`, so each
//! record is the event's JSON sealed with the node's data key (XChaCha20-Poly1305, the current
//! epoch, as every stored value) and base64-encoded. That epoch is the audit "key version" of
//! the spec's metrics. The sink file itself is plaintext: it is the operator's to ship.
//!
//! Segments are deleted only after their events are in the sink and synced, so spooled events
//! survive a restart; a crash while a segment drains replays that segment (duplicates, never
//! loss). A record cut short by a crash cannot be opened and is counted as `spool_corrupt`.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use idnode_keys::DataKeys;

/// Associated data binding a spooled record to its purpose.
const AD: &[u8] = b"idnode-audit-spool";
/// Largest segment: the drain reads a whole segment into memory.
const SEGMENT_MAX: u64 = 1 << 20;

/// What an append did with its events.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Appended {
    pub stored: u64,
    /// Refused because the spool would exceed `spool_max_bytes`.
    pub full: u64,
    /// Lost to a write error of the spool itself.
    pub failed: u64,
}

/// The oldest segment, decoded, with how many of its events the sink already has.
struct Head {
    seq: u64,
    events: Vec<Vec<u8>>,
    delivered: usize,
}

pub struct Spool {
    dir: PathBuf,
    keys: Arc<DataKeys>,
    max_bytes: u64,
    segment_max: u64,
    /// Segments oldest first: (sequence number, bytes on disk).
    segments: VecDeque<(u64, u64)>,
    /// The newest segment while it takes appends.
    active: Option<File>,
    next_seq: u64,
    bytes: u64,
    head: Option<Head>,
}

fn segment_name(seq: u64) -> String {
    format!("{seq:020}.seg")
}

impl Spool {
    /// Opens (creating) the spool directory and finds the segments a previous run left.
    pub fn open(dir: &Path, keys: Arc<DataKeys>, max_bytes: u64) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        #[cfg(unix)]
        std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        let mut segments = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(seq) = name.to_str().and_then(|n| n.strip_suffix(".seg")).and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            segments.push((seq, entry.metadata()?.len()));
        }
        segments.sort_unstable();
        let next_seq = segments.last().map(|(s, _)| s + 1).unwrap_or(1);
        let bytes = segments.iter().map(|(_, b)| b).sum();
        Ok(Spool {
            dir: dir.to_path_buf(),
            keys,
            max_bytes,
            // Small spools (tests) still get several segments.
            segment_max: SEGMENT_MAX.min((max_bytes / 4).max(1)),
            segments: segments.into(),
            active: None,
            next_seq,
            bytes,
            head: None,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The data-key epoch new records are sealed under.
    pub fn key_version(&self) -> u32 {
        self.keys.current_epoch()
    }

    /// Seals and appends events (JSON lines without their newline), in order. Not synced:
    /// see [`Spool::sync`].
    pub fn append(&mut self, events: impl IntoIterator<Item = Vec<u8>>) -> Appended {
        let mut out = Appended::default();
        let mut pending: Vec<u8> = Vec::new();
        let mut pending_count = 0u64;
        for event in events {
            let mut record = base64::engine::general_purpose::STANDARD.encode(self.keys.seal(AD, &event)).into_bytes();
            record.push(b'\n');
            let len = record.len() as u64;
            if self.bytes + len > self.max_bytes {
                out.full += 1;
                continue;
            }
            let room = self.active.is_some() && self.segments.back().is_some_and(|(_, b)| b + len <= self.segment_max);
            if !room {
                self.write_pending(&mut pending, &mut pending_count, &mut out);
                if let Err(e) = self.start_segment() {
                    tracing::warn!("audit spool: cannot start a segment in {}: {e}", self.dir.display());
                    out.failed += 1;
                    continue;
                }
            }
            if let Some(last) = self.segments.back_mut() {
                last.1 += len;
            }
            self.bytes += len;
            pending.extend_from_slice(&record);
            pending_count += 1;
        }
        self.write_pending(&mut pending, &mut pending_count, &mut out);
        out
    }

    /// Writes what was staged for the active segment; on error those events are lost (and
    /// counted), and the segment is closed so the next append starts a fresh one.
    fn write_pending(&mut self, pending: &mut Vec<u8>, count: &mut u64, out: &mut Appended) {
        if pending.is_empty() {
            return;
        }
        let res = match self.active.as_mut() {
            Some(f) => f.write_all(pending),
            None => Err(io::Error::other("no active segment")),
        };
        match res {
            Ok(()) => out.stored += *count,
            Err(e) => {
                tracing::warn!("audit spool: write failed in {}: {e}", self.dir.display());
                out.failed += *count;
                self.active = None;
                // The accounting keeps the staged bytes; the file may hold part of them. Both
                // settle when the segment is drained and deleted.
            }
        }
        pending.clear();
        *count = 0;
    }

    fn start_segment(&mut self) -> io::Result<()> {
        let seq = self.next_seq;
        let mut opts = OpenOptions::new();
        opts.append(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let f = opts.open(self.dir.join(segment_name(seq)))?;
        // The new name must survive a crash as well as its contents.
        File::open(&self.dir)?.sync_all()?;
        self.next_seq += 1;
        self.segments.push_back((seq, 0));
        self.active = Some(f);
        Ok(())
    }

    /// Makes appended records durable.
    pub fn sync(&mut self) -> io::Result<()> {
        match self.active.as_mut() {
            Some(f) => f.sync_data(),
            None => Ok(()),
        }
    }

    /// Up to `max` of the oldest undelivered events as newline-terminated JSON lines, with
    /// their count and the number of undecodable records skipped on the way. The same chunk
    /// comes back until [`Spool::commit`] says the sink has it.
    pub fn next_chunk(&mut self, max: usize) -> io::Result<(Vec<u8>, usize, u64)> {
        let mut corrupt = 0;
        loop {
            if self.head.is_none() {
                let Some(&(seq, _)) = self.segments.front() else { return Ok((Vec::new(), 0, corrupt)) };
                if self.segments.len() == 1 {
                    // Draining the segment that takes appends: close it, newer events go to
                    // a new one behind it.
                    self.active = None;
                }
                let (events, bad) = self.load(seq)?;
                corrupt += bad;
                self.head = Some(Head { seq, events, delivered: 0 });
            }
            let Some(head) = self.head.as_ref() else { continue };
            if head.delivered >= head.events.len() {
                self.finish_head()?;
                continue;
            }
            let end = (head.delivered + max).min(head.events.len());
            let mut buf = Vec::new();
            for e in &head.events[head.delivered..end] {
                buf.extend_from_slice(e);
                buf.push(b'\n');
            }
            return Ok((buf, end - head.delivered, corrupt));
        }
    }

    /// The sink has (durably) the `count` events of the last chunk.
    pub fn commit(&mut self, count: usize) -> io::Result<()> {
        if let Some(head) = self.head.as_mut() {
            head.delivered += count;
            if head.delivered >= head.events.len() {
                self.finish_head()?;
            }
        }
        Ok(())
    }

    fn finish_head(&mut self) -> io::Result<()> {
        if let Some(head) = self.head.take() {
            match std::fs::remove_file(self.dir.join(segment_name(head.seq))) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    self.head = Some(head);
                    return Err(e);
                }
            }
            if let Some((_, size)) = self.segments.pop_front() {
                self.bytes = self.bytes.saturating_sub(size);
            }
        }
        Ok(())
    }

    /// Reads and opens one segment's records.
    fn load(&self, seq: u64) -> io::Result<(Vec<Vec<u8>>, u64)> {
        let raw = match std::fs::read(self.dir.join(segment_name(seq))) {
            Ok(raw) => raw,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut events = Vec::new();
        let mut corrupt = 0;
        for line in raw.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let opened = base64::engine::general_purpose::STANDARD
                .decode(line)
                .ok()
                .and_then(|sealed| self.keys.open(AD, &sealed).ok());
            match opened {
                Some(event) => events.push(event),
                None => corrupt += 1,
            }
        }
        Ok((events, corrupt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(spool: &mut Spool) -> Vec<String> {
        let mut out = Vec::new();
        loop {
            let (buf, n, _) = spool.next_chunk(3).unwrap();
            if n == 0 {
                return out;
            }
            out.extend(String::from_utf8(buf).unwrap().lines().map(str::to_string));
            spool.commit(n).unwrap();
        }
    }

    #[test]
    fn sealed_segments_in_order_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let keys = Arc::new(DataKeys::ephemeral());
        let mut spool = Spool::open(dir.path(), keys.clone(), 4000).unwrap();
        let events: Vec<Vec<u8>> = (0..20).map(|i| format!("{{\"n\":{i},\"who\":\"alice\"}}").into_bytes()).collect();
        let r = spool.append(events.clone());
        assert_eq!(r, Appended { stored: 20, full: 0, failed: 0 });
        spool.sync().unwrap();
        assert!(std::fs::read_dir(dir.path()).unwrap().count() > 1, "several segments");
        for f in std::fs::read_dir(dir.path()).unwrap() {
            let text = std::fs::read(f.unwrap().path()).unwrap();
            assert!(!String::from_utf8_lossy(&text).contains("alice"), "spooled records are sealed");
        }
        let bytes = spool.bytes();
        drop(spool);
        let mut spool = Spool::open(dir.path(), keys, 4000).unwrap();
        assert_eq!(spool.bytes(), bytes);
        let got = drain(&mut spool);
        let want: Vec<String> = events.iter().map(|e| String::from_utf8(e.clone()).unwrap()).collect();
        assert_eq!(got, want);
        assert!(spool.is_empty());
        assert_eq!(spool.bytes(), 0);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn full_spool_refuses_and_torn_records_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let keys = Arc::new(DataKeys::ephemeral());
        let mut spool = Spool::open(dir.path(), keys, 400).unwrap();
        let r = spool.append((0..10).map(|i| format!("{{\"n\":{i}}}").into_bytes()));
        assert!(r.stored > 0 && r.full > 0 && r.stored + r.full == 10, "{r:?}");
        assert!(spool.bytes() <= 400);
        // A crash mid-append leaves a partial record at the end of the newest segment.
        let last = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).max().unwrap();
        std::fs::OpenOptions::new().append(true).open(last).unwrap().write_all(b"AAAA").unwrap();
        let mut corrupt = 0;
        let mut delivered = 0;
        loop {
            let (_, n, bad) = spool.next_chunk(100).unwrap();
            corrupt += bad;
            if n == 0 {
                break;
            }
            delivered += n as u64;
            spool.commit(n).unwrap();
        }
        assert_eq!((delivered, corrupt), (r.stored, 1));
    }
}
