//! Snapshot streams: a consistent export of chosen column families as plaintext records
//! (each node re-seals with its own data key on import, so nodes never share data keys).
//! Frame format: magic, then `u32 BE length || postcard(Record)` per record, then a zero length.

use std::io::{Read, Write};

use rocksdb::{IteratorMode, WriteBatch};
use serde::{Deserialize, Serialize};

use crate::codec::value_ad;
use crate::{decode, encode, Engine, ReadView, Result, StorageError};

const MAGIC: &[u8; 8] = b"IDNSNAP1";

#[derive(Serialize, Deserialize)]
struct Record {
    cf: String,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl Engine {
    /// Writes every pair of `cfs`, as of one instant, to `out`. Returns the record count.
    pub fn export(&self, cfs: &[&str], out: &mut impl Write) -> Result<u64> {
        Self::export_view(&self.snapshot(), cfs, out)
    }

    /// Like [`Engine::export`], from a view the caller took (so it can read other values at
    /// the same instant and release its locks before the long copy).
    pub fn export_view(view: &ReadView<'_>, cfs: &[&str], out: &mut impl Write) -> Result<u64> {
        out.write_all(MAGIC)?;
        let mut n = 0;
        for cf in cfs {
            view.for_each(cf, |key, value| {
                let frame = encode(&Record { cf: cf.to_string(), key: key.to_vec(), value: value.to_vec() })?;
                out.write_all(&(frame.len() as u32).to_be_bytes())?;
                out.write_all(&frame)?;
                n += 1;
                Ok(())
            })?;
        }
        out.write_all(&0u32.to_be_bytes())?;
        Ok(n)
    }

    /// Replaces the whole content of `cfs` with the stream, atomically, plus `extra` puts
    /// (for example the last-applied marker) in the same write.
    pub fn import(&self, cfs: &[&str], input: &mut impl Read, extra: Vec<(&str, Vec<u8>, Vec<u8>)>) -> Result<u64> {
        read_magic(input)?;
        let mut wb = WriteBatch::default();
        for cf in cfs {
            let handle = self.cf(cf)?;
            for item in self.db.iterator_cf(&handle, IteratorMode::Start) {
                let (k, _) = item?;
                wb.delete_cf(&handle, k);
            }
        }
        let mut n = 0;
        while let Some(rec) = read_record(input, cfs)? {
            self.put_sealed(&mut wb, &rec.cf, &rec.key, &rec.value)?;
            n += 1;
        }
        for (cf, key, value) in extra {
            self.put_sealed(&mut wb, cf, &key, &value)?;
        }
        self.write_raw(wb, true)?;
        Ok(n)
    }

    /// Loads the stream into `cfs`, which must be empty (a new data directory), in batches of
    /// about `batch_bytes`, so a state of any size loads with bounded memory; `extra` puts go
    /// in the last batch, which is synced. Not atomic: a load cut short leaves a partial state,
    /// which is why callers mark the directory until this returns (see `restore`).
    pub fn import_fresh(
        &self,
        cfs: &[&str],
        input: &mut impl Read,
        extra: Vec<(&str, Vec<u8>, Vec<u8>)>,
        batch_bytes: usize,
    ) -> Result<u64> {
        for cf in cfs {
            if self.db.iterator_cf(&self.cf(cf)?, IteratorMode::Start).next().is_some() {
                return Err(StorageError::Stream(format!("column family {cf} is not empty")));
            }
        }
        read_magic(input)?;
        let mut wb = WriteBatch::default();
        let mut n = 0;
        while let Some(rec) = read_record(input, cfs)? {
            self.put_sealed(&mut wb, &rec.cf, &rec.key, &rec.value)?;
            n += 1;
            if wb.size_in_bytes() >= batch_bytes {
                self.write_raw(std::mem::take(&mut wb), false)?;
            }
        }
        for (cf, key, value) in extra {
            self.put_sealed(&mut wb, cf, &key, &value)?;
        }
        self.write_raw(wb, true)?;
        Ok(n)
    }

    fn put_sealed(&self, wb: &mut WriteBatch, cf: &str, key: &[u8], value: &[u8]) -> Result<()> {
        let handle = self.cf(cf)?;
        wb.put_cf(&handle, key, self.keys().seal(&value_ad(cf, key), value));
        Ok(())
    }
}

fn read_magic(input: &mut impl Read) -> Result<()> {
    let mut magic = [0u8; 8];
    input.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Err(StorageError::Stream("not an idnode snapshot".into()));
    }
    Ok(())
}

/// The next record of a stream, `None` at its end marker.
fn read_record(input: &mut impl Read, cfs: &[&str]) -> Result<Option<Record>> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len == 0 {
        return Ok(None);
    }
    if len > 64 << 20 {
        return Err(StorageError::Stream("record too large".into()));
    }
    let mut frame = vec![0u8; len];
    input.read_exact(&mut frame)?;
    let rec: Record = decode(&frame)?;
    if !cfs.contains(&rec.cf.as_str()) {
        return Err(StorageError::Stream(format!("unexpected column family {}", rec.cf)));
    }
    Ok(Some(rec))
}
