//! A tiny key/value state machine for tests.

use std::sync::atomic::{AtomicU64, Ordering};

use idnode_raft::storage::{Batch, Engine};
use idnode_raft::StateApp;
use serde::{Deserialize, Serialize};

pub const KV: &str = "kv";
pub const APP_CFS: &[&str] = &[KV];

#[derive(Debug, Serialize, Deserialize)]
pub enum Op {
    /// Replies with the previous value.
    Put { key: Vec<u8>, value: Vec<u8> },
    /// Replies with the new count.
    Incr { key: Vec<u8> },
    /// `Put` as a kind of command added in command version 2 (for the rolling-upgrade tests).
    PutV2 { key: Vec<u8>, value: Vec<u8> },
    /// Writes `count` values of `size` pseudo-random (incompressible) bytes under
    /// `prefix || BE(from + i)`: a large state from a small log.
    Fill { prefix: String, from: u32, count: u32, size: u32 },
}

pub fn fill(prefix: &str, from: u32, count: u32, size: u32) -> Vec<u8> {
    postcard::to_allocvec(&Op::Fill { prefix: prefix.to_string(), from, count, size }).unwrap()
}

/// Deterministic bytes for `Fill` (xorshift64*, seeded by the key): every replica writes the same.
fn noise(seed: u64, size: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(size + 8);
    while out.len() < size {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(size);
    out
}

pub fn put_v2(key: &str, value: &str) -> Vec<u8> {
    postcard::to_allocvec(&Op::PutV2 { key: key.as_bytes().to_vec(), value: value.as_bytes().to_vec() }).unwrap()
}

pub fn put(key: &str, value: &str) -> Vec<u8> {
    postcard::to_allocvec(&Op::Put { key: key.as_bytes().to_vec(), value: value.as_bytes().to_vec() }).unwrap()
}

pub fn incr(key: &str) -> Vec<u8> {
    postcard::to_allocvec(&Op::Incr { key: key.as_bytes().to_vec() }).unwrap()
}

pub struct KvApp {
    pub applies: AtomicU64,
    pub snapshots_installed: AtomicU64,
    /// The binary's command version: 2 applies `PutV2`, 1 plays an older release.
    pub command_version: u32,
}

impl Default for KvApp {
    fn default() -> Self {
        KvApp::with_version(2)
    }
}

impl KvApp {
    pub fn with_version(command_version: u32) -> Self {
        KvApp { applies: AtomicU64::new(0), snapshots_installed: AtomicU64::new(0), command_version }
    }
}

fn current(engine: &Engine, batch: &Batch, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
    match batch.get(KV, key) {
        Some(v) => Ok(v.map(|v| v.to_vec())),
        None => engine.read().get(KV, key).map_err(|e| e.to_string()),
    }
}

impl StateApp for KvApp {
    fn column_families(&self) -> &'static [&'static str] {
        APP_CFS
    }

    fn apply(&self, engine: &Engine, batch: &mut Batch, _log_index: u64, payload: &[u8]) -> Result<Vec<u8>, String> {
        self.applies.fetch_add(1, Ordering::SeqCst);
        let op: Op = postcard::from_bytes(payload).map_err(|e| e.to_string())?;
        match op {
            Op::PutV2 { .. } if self.command_version < 2 => Err("PutV2 is not a command this binary knows".into()),
            Op::Put { key, value } | Op::PutV2 { key, value } => {
                let prev = current(engine, batch, &key)?;
                batch.put(KV, key, &value);
                postcard::to_allocvec(&prev).map_err(|e| e.to_string())
            }
            Op::Fill { prefix, from, count, size } => {
                for i in from..from.saturating_add(count) {
                    let mut key = prefix.as_bytes().to_vec();
                    key.extend_from_slice(&i.to_be_bytes());
                    batch.put(KV, key, &noise(u64::from(i) ^ ((prefix.len() as u64) << 32), size as usize));
                }
                Ok(Vec::new())
            }
            Op::Incr { key } => {
                let n = match current(engine, batch, &key)? {
                    Some(v) => postcard::from_bytes::<u64>(&v).map_err(|e| e.to_string())? + 1,
                    None => 1,
                };
                batch.put(KV, key, &postcard::to_allocvec(&n).map_err(|e| e.to_string())?);
                postcard::to_allocvec(&n).map_err(|e| e.to_string())
            }
        }
    }

    fn command_version(&self) -> u32 {
        self.command_version
    }

    fn check(&self, payload: &[u8]) -> Result<u32, String> {
        match postcard::from_bytes::<Op>(payload) {
            Ok(Op::PutV2 { .. }) => Ok(2),
            Ok(_) => Ok(1),
            Err(e) => Err(format!("not an operation: {e}")),
        }
    }

    fn installed_snapshot(&self, _engine: &Engine) {
        self.snapshots_installed.fetch_add(1, Ordering::SeqCst);
    }
}

pub fn all_cfs() -> Vec<&'static str> {
    idnode_raft::COLUMN_FAMILIES.iter().chain(APP_CFS).copied().collect()
}
