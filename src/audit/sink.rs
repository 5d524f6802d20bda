//! The append-only JSON-lines sink: one CADF event per line in `[audit] file`.
//!
//! Lines reach the file (the page cache) as soon as the writer has them; `fdatasync` follows
//! at most `flush_interval_ms` later, or at once on flush and shutdown, and always before a
//! spooled segment is deleted. So a process crash loses nothing the writer had written, and a
//! machine crash loses at most one flush interval of lines.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct FileSink {
    path: PathBuf,
    /// None until opened, and again after an error, so the next attempt reopens the path (the
    /// operator may have fixed a permission, remounted a disk, or moved the file away).
    file: Option<File>,
    /// Lines written since the last successful sync.
    unsynced: usize,
    /// When the oldest unsynced line was written.
    dirty_since: Option<Instant>,
}

impl FileSink {
    pub fn new(path: &Path) -> Self {
        FileSink { path: path.to_path_buf(), file: None, unsynced: 0, dirty_since: None }
    }

    fn file(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            let mut opts = OpenOptions::new();
            opts.read(true).append(true).create(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
            let mut f = opts.open(&self.path)?;
            end_with_newline(&mut f)?;
            self.file = Some(f);
        }
        match self.file.as_mut() {
            Some(f) => Ok(f),
            None => Err(io::Error::other("audit sink not open")),
        }
    }

    /// Opens the file now, so a bad path shows at startup rather than at the first event.
    pub fn probe(&mut self) -> io::Result<()> {
        self.file().map(|_| ())
    }

    /// Appends `lines` (each ending in `\n`, `count` of them). On error the file is closed
    /// and the caller keeps the lines; some of them may already be in the file, which is why
    /// events carry an id to de-duplicate by.
    pub fn write(&mut self, lines: &[u8], count: usize) -> io::Result<()> {
        let res = self.file().and_then(|f| f.write_all(lines));
        if res.is_err() {
            self.file = None;
        } else {
            self.unsynced += count;
            self.dirty_since.get_or_insert_with(Instant::now);
        }
        res
    }

    /// Makes every written line durable.
    pub fn sync(&mut self) -> io::Result<()> {
        if self.unsynced == 0 {
            return Ok(());
        }
        let res = self.file().and_then(|f| f.sync_data());
        match res {
            Ok(()) => {
                self.unsynced = 0;
                self.dirty_since = None;
            }
            Err(_) => self.file = None,
        }
        res
    }

    /// How long until unsynced lines are due for a sync (None when all are synced).
    pub fn sync_due_in(&self, interval: Duration) -> Option<Duration> {
        self.dirty_since.map(|t| interval.saturating_sub(t.elapsed()))
    }
}

/// A write cut short (disk full, a crash) can leave a partial last line; the next line must
/// not be glued to it, so a file that does not end in a newline gets one first.
fn end_with_newline(f: &mut File) -> io::Result<()> {
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    #[cfg(unix)]
    {
        let mut last = [0u8; 1];
        std::os::unix::fs::FileExt::read_exact_at(f, &mut last, len - 1)?;
        if last[0] != b'\n' {
            f.write_all(b"\n")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_and_repairs_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, b"{\"a\":1}\n{\"torn\"").unwrap();
        let mut sink = FileSink::new(&path);
        sink.write(b"{\"b\":2}\n", 1).unwrap();
        assert!(sink.sync_due_in(Duration::from_secs(1)).is_some());
        sink.sync().unwrap();
        assert_eq!(sink.sync_due_in(Duration::from_secs(1)), None);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n{\"torn\"\n{\"b\":2}\n");
    }

    #[test]
    fn a_directory_is_an_error_and_retried() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::create_dir(&path).unwrap();
        let mut sink = FileSink::new(&path);
        assert!(sink.write(b"x\n", 1).is_err());
        std::fs::remove_dir(&path).unwrap();
        sink.write(b"x\n", 1).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "x\n");
    }
}
