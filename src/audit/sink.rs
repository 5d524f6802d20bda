//! The append-only JSON-lines sink: one CADF event per line in `[audit] file`.
//!
//! Lines reach the file (the page cache) as soon as the writer has them; `fdatasync` follows
//! at most `flush_interval_ms` later, or at once on flush and shutdown, and always before a
//! spooled segment is deleted. So a process crash loses nothing the writer had written, and a
//! machine crash loses at most one flush interval of lines.
//!
//! Rotation by size (`[audit] max_file_bytes`, `retain_files`): before a write that would take
//! the file past the bound, the file is synced and renamed `FILE.1` (older ones move up to
//! `FILE.2` … and the oldest beyond `retain_files` is deleted), and a new file is started. A
//! shipper that follows the name (Fluent Bit, Vector, filebeat) sees an ordinary rename
//! rotation; one batch alone larger than the bound still lands whole in one file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct FileSink {
    path: PathBuf,
    rotation: Rotation,
    /// Bytes in the open file (from its metadata at open, then counted).
    size: u64,
    /// None until opened, and again after an error, so the next attempt reopens the path (the
    /// operator may have fixed a permission, remounted a disk, or moved the file away).
    file: Option<File>,
    /// Lines written since the last successful sync.
    unsynced: usize,
    /// When the oldest unsynced line was written.
    dirty_since: Option<Instant>,
}

/// When the sink starts a new file, and how many old ones it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// Bytes a file may reach before the next write starts a new one; 0: never rotate (the
    /// operator rotates with copy-and-truncate).
    pub max_bytes: u64,
    /// Rotated files kept (`FILE.1` the newest); at least 1.
    pub retain: u32,
}

impl FileSink {
    pub fn new(path: &Path, rotation: Rotation) -> Self {
        FileSink { path: path.to_path_buf(), rotation, size: 0, file: None, unsynced: 0, dirty_since: None }
    }

    fn file(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            create_parent(&self.path)?;
            let mut opts = OpenOptions::new();
            opts.read(true).append(true).create(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
            let mut f = opts.open(&self.path)?;
            end_with_newline(&mut f)?;
            self.size = f.metadata()?.len();
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
        let res = self.rotate_for(lines.len() as u64).and_then(|()| self.file()).and_then(|f| f.write_all(lines));
        if res.is_err() {
            self.file = None;
        } else {
            self.size += lines.len() as u64;
            self.unsynced += count;
            self.dirty_since.get_or_insert_with(Instant::now);
        }
        res
    }

    /// Starts a new file when `incoming` bytes would take a non-empty one past the bound.
    fn rotate_for(&mut self, incoming: u64) -> io::Result<()> {
        let max = self.rotation.max_bytes;
        if max == 0 {
            return Ok(());
        }
        self.file()?;
        if self.size == 0 || self.size.saturating_add(incoming) <= max {
            return Ok(());
        }
        // Durable before it moves: a rotated file is never written again.
        self.sync()?;
        self.file = None;
        let retain = self.rotation.retain.max(1);
        remove_if_present(&numbered(&self.path, retain))?;
        for n in (1..retain).rev() {
            rename_if_present(&numbered(&self.path, n), &numbered(&self.path, n + 1))?;
        }
        std::fs::rename(&self.path, numbered(&self.path, 1))?;
        sync_parent(&self.path);
        self.size = 0;
        Ok(())
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

/// Creates the file's directory when missing (owner-only, as the spool's), so the default
/// `DATA_DIR/audit/` needs no step of the operator's.
fn create_parent(path: &Path) -> io::Result<()> {
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) else { return Ok(()) };
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// `FILE.n`, the n-th newest rotated file.
fn numbered(path: &Path, n: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn rename_if_present(from: &Path, to: &Path) -> io::Result<()> {
    match std::fs::rename(from, to) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Makes the renames durable; a failure only risks seeing the old names after a machine
/// crash, which loses no line, so it is logged, not raised.
fn sync_parent(path: &Path) {
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else { return };
    if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
        tracing::warn!("audit rotation: syncing {} failed: {e}", dir.display());
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

    const NO_ROTATION: Rotation = Rotation { max_bytes: 0, retain: 1 };

    #[test]
    fn rotates_by_size_and_keeps_only_the_newest_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, b"old-0\n").unwrap();
        let mut sink = FileSink::new(&path, Rotation { max_bytes: 12, retain: 2 });
        for line in ["line-1\n", "line-2\n", "line-3\n", "line-4\n"] {
            sink.write(line.as_bytes(), 1).unwrap();
        }
        sink.sync().unwrap();
        let read = |p: &Path| std::fs::read_to_string(p).unwrap();
        // 6 + 7 > 12 rotates before line-1, 7 + 7 > 12 before every later line.
        assert_eq!(read(&path), "line-4\n");
        assert_eq!(read(&numbered(&path, 1)), "line-3\n");
        assert_eq!(read(&numbered(&path, 2)), "line-2\n");
        assert!(!numbered(&path, 3).exists(), "only retain_files rotated files are kept");
        let mut names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]);

        // A batch larger than the bound lands whole in a fresh file; small writes fill up to it.
        let mut sink = FileSink::new(&path, Rotation { max_bytes: 12, retain: 2 });
        sink.write(b"0123456789abcdef\n", 1).unwrap();
        assert_eq!(read(&path), "0123456789abcdef\n");
        assert_eq!(read(&numbered(&path, 1)), "line-4\n");
        let mut sink = FileSink::new(&dir.path().join("b.jsonl"), Rotation { max_bytes: 12, retain: 1 });
        sink.write(b"ab\n", 1).unwrap();
        sink.write(b"cd\n", 1).unwrap();
        assert_eq!(read(&dir.path().join("b.jsonl")), "ab\ncd\n");
    }

    #[test]
    fn appends_and_repairs_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, b"{\"a\":1}\n{\"torn\"").unwrap();
        let mut sink = FileSink::new(&path, NO_ROTATION);
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
        let mut sink = FileSink::new(&path, NO_ROTATION);
        assert!(sink.write(b"x\n", 1).is_err());
        std::fs::remove_dir(&path).unwrap();
        sink.write(b"x\n", 1).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "x\n");
    }
}
