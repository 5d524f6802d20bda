//! Snapshot streams: a consistent export of chosen column families as plaintext records
//! (each node re-seals with its own data key on import, so nodes never share data keys).
//! Frame format: magic, then `u32 BE length || postcard(Record)` per record, then a zero length.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use crate::{decode, encode, Engine, ReadView, Result, StorageError};

const MAGIC: &[u8; 8] = b"IDNSNAP1";

#[derive(Serialize, Deserialize)]
pub(crate) struct Record {
    pub(crate) cf: String,
    pub(crate) key: Vec<u8>,
    pub(crate) value: Vec<u8>,
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
}

pub(crate) fn read_magic(input: &mut impl Read) -> Result<()> {
    let mut magic = [0u8; 8];
    input.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Err(StorageError::Stream("not an idnode snapshot".into()));
    }
    Ok(())
}

/// The next record of a stream, `None` at its end marker.
pub(crate) fn read_record(input: &mut impl Read, cfs: &[&str]) -> Result<Option<Record>> {
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
