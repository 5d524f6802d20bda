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
        let mut magic = [0u8; 8];
        input.read_exact(&mut magic)?;
        if &magic != MAGIC {
            return Err(StorageError::Stream("not an idnode snapshot".into()));
        }
        let mut wb = WriteBatch::default();
        for cf in cfs {
            let handle = self.cf(cf)?;
            for item in self.db.iterator_cf(&handle, IteratorMode::Start) {
                let (k, _) = item?;
                wb.delete_cf(&handle, k);
            }
        }
        let mut n = 0;
        loop {
            let mut len = [0u8; 4];
            input.read_exact(&mut len)?;
            let len = u32::from_be_bytes(len) as usize;
            if len == 0 {
                break;
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
            let handle = self.cf(&rec.cf)?;
            wb.put_cf(&handle, &rec.key, self.keys().seal(&value_ad(&rec.cf, &rec.key), &rec.value));
            n += 1;
        }
        for (cf, key, value) in extra {
            let handle = self.cf(cf)?;
            wb.put_cf(&handle, &key, self.keys().seal(&value_ad(cf, &key), &value));
        }
        self.write_raw(wb, true)?;
        Ok(n)
    }
}
