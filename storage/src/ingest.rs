//! Replacing whole column families from a snapshot stream with bounded memory: the stream is
//! first turned into table files on disk (one per column family, values sealed under this
//! node's data key), verified to its very end, and only then are the families emptied and the
//! files ingested. Nothing passes through the memtables, so a state of any size moves with
//! flat memory, and a stream that fails to verify leaves the database untouched.
//!
//! The two steps are separate (`stage_import`, `commit_import`) so a caller can record, in
//! between, that a replacement is under way: a crash inside `commit_import` leaves a mix of old
//! and new families, which only redoing the import from the same stream repairs.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use rocksdb::{IngestExternalFileOptions, IteratorMode, Options, SstFileWriter, WriteBatch};

use crate::codec::value_ad;
use crate::running::Acc;
use crate::stream::{read_magic, read_record};
use crate::{Batch, Engine, Result, StorageError};

/// A verified stream, staged as table files and ready to replace the column families.
pub struct Staged {
    dir: PathBuf,
    cfs: Vec<String>,
    files: Vec<(String, PathBuf)>,
    records: u64,
    /// Each family's running-digest sum over the pairs staged (what it holds once committed).
    sums: BTreeMap<String, Acc>,
}

impl Staged {
    /// Records the stream held.
    pub fn records(&self) -> u64 {
        self.records
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn table_options() -> Options {
    let mut o = Options::default();
    o.set_compression_type(rocksdb::DBCompressionType::None);
    o.set_block_based_table_factory(&crate::engine::table_format());
    o
}

fn stream_err(e: rocksdb::Error) -> StorageError {
    StorageError::Stream(format!("snapshot stream out of order or unwritable: {e}"))
}

impl Engine {
    /// Reads the whole stream from `input` into table files under `dir` (emptied first). The
    /// database is not touched. After the stream's end marker `input` must be exhausted: a
    /// sealed reader only reports its end once its last frame verified.
    pub fn stage_import(&self, cfs: &[&str], input: &mut impl Read, dir: &Path) -> Result<Staged> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir)?;
        let mut staged = Staged {
            dir: dir.to_path_buf(),
            cfs: cfs.iter().map(|c| c.to_string()).collect(),
            files: Vec::new(),
            records: 0,
            sums: BTreeMap::new(),
        };
        let opts = table_options();
        read_magic(input)?;
        let mut writer: Option<(String, SstFileWriter<'_>)> = None;
        while let Some(rec) = read_record(input, cfs)? {
            if writer.as_ref().is_none_or(|(cf, _)| *cf != rec.cf) {
                if let Some((_, mut w)) = writer.take() {
                    w.finish().map_err(stream_err)?;
                }
                if staged.files.iter().any(|(cf, _)| *cf == rec.cf) {
                    return Err(StorageError::Stream(format!("column family {} appears twice", rec.cf)));
                }
                let path = dir.join(format!("{}.sst", staged.files.len()));
                let w = SstFileWriter::create(&opts);
                w.open(&path).map_err(stream_err)?;
                staged.files.push((rec.cf.clone(), path));
                writer = Some((rec.cf.clone(), w));
            }
            if let Some((cf, w)) = writer.as_mut() {
                let sealed = self.keys().seal(&value_ad(cf, &rec.key), &rec.value);
                w.put(&rec.key, sealed).map_err(stream_err)?;
                staged.sums.entry(cf.clone()).or_default().insert(&rec.key, &rec.value);
            }
            staged.records += 1;
        }
        if let Some((_, mut w)) = writer.take() {
            w.finish().map_err(stream_err)?;
        }
        if input.read(&mut [0u8; 1])? != 0 {
            return Err(StorageError::Stream("bytes after the end of the snapshot stream".into()));
        }
        Ok(staged)
    }

    /// Empties the staged column families, ingests the staged files, then writes `extra`
    /// (synced). Returns the records imported.
    pub fn commit_import(&self, staged: Staged, extra: Batch) -> Result<u64> {
        let mut wb = WriteBatch::default();
        for cf in &staged.cfs {
            let handle = self.cf(cf)?;
            let first = self.db.iterator_cf(&handle, IteratorMode::Start).next().transpose()?;
            let last = self.db.iterator_cf(&handle, IteratorMode::End).next().transpose()?;
            if let (Some((first, _)), Some((last, _))) = (first, last) {
                wb.delete_range_cf(&handle, &first[..], &last[..]);
                wb.delete_cf(&handle, &last[..]);
            }
        }
        self.write_raw(wb, false)?;
        let mut opts = IngestExternalFileOptions::default();
        opts.set_move_files(true);
        for (cf, path) in &staged.files {
            self.db.ingest_external_file_cf_opts(&self.cf(cf)?, &opts, vec![path])?;
        }
        if let Some(running) = self.running.get() {
            let _writer = running.writer();
            let _turn = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
            for cf in &staged.cfs {
                running.replace(cf, staged.sums.get(cf).copied().unwrap_or_default());
            }
        }
        self.write(extra, true)?;
        Ok(staged.records)
    }

    /// Loads the stream into `cfs`, which must be empty (a new data directory), staging it
    /// under `dir`; `extra` lands last, synced. Not atomic: callers mark the directory until
    /// this returns (see `restore`).
    pub fn import_fresh(&self, cfs: &[&str], input: &mut impl Read, extra: Batch, dir: &Path) -> Result<u64> {
        for cf in cfs {
            if self.db.iterator_cf(&self.cf(cf)?, IteratorMode::Start).next().is_some() {
                return Err(StorageError::Stream(format!("column family {cf} is not empty")));
            }
        }
        let staged = self.stage_import(cfs, input, dir)?;
        self.commit_import(staged, extra)
    }
}
