//! Measures what RocksDB's memory does under a write burst, for the default and the smallest
//! memory budget (`[raft] storage_memory_mb`): the peak of the memtables (active and waiting
//! for a flush) and of the block cache they are charged to. These peaks depend on how fast the
//! host flushes, so they are figures to read, not bounds a test asserts (the tests assert the
//! part that does not depend on speed: where the memtables are switched to flushes).
//!
//!     cargo build --workspace --examples && $CARGO_TARGET_DIR/debug/examples/memory_burst [rounds]
//!
//! (`--workspace`: built for `idnode-storage` alone, RocksDB's C++ is compiled again with
//! another feature set.)
//!
//! Each round writes 1,024 values of 4 KiB spread over two families.

use std::sync::Arc;
use std::time::Instant;

use idnode_keys::{DataKeys, Kek};
use idnode_storage::{Engine, MEMORY_BUDGET_BYTES, MIN_MEMORY_BUDGET_BYTES};

const CFS: &[&str] = &["a", "b"];
const MIB: f64 = (1 << 20) as f64;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: u32 = std::env::args().nth(1).map(|a| a.parse()).transpose()?.unwrap_or(16);
    println!("| budget | written | active memtables peak | all memtables peak | block cache peak | time |");
    println!("|---|---|---|---|---|---|");
    for budget in [MEMORY_BUDGET_BYTES, MIN_MEMORY_BUDGET_BYTES] {
        let dir = tempfile::tempdir()?;
        let kek = Kek::from_base64("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")?;
        let keys = DataKeys::open_or_create(&kek, &dir.path().join("keyring"))?;
        let e = Engine::open_within(&dir.path().join("db"), CFS, Arc::new(keys), budget)?;
        let value = vec![3u8; 4096];
        let (mut active, mut all, mut cache) = (0u64, 0u64, 0u64);
        let started = Instant::now();
        for round in 0..rounds {
            let mut b = e.batch();
            for i in 0..1024u32 {
                b.put(CFS[i as usize % CFS.len()], format!("r{round:04}-{i:04}").into_bytes(), &value);
            }
            e.write(b, false)?;
            let (c, m, _) = e.memory_usage();
            (active, all, cache) = (active.max(e.active_memtable_bytes()), all.max(m), cache.max(c));
        }
        println!(
            "| {:.0} MiB | {:.0} MiB | {:.1} MiB | {:.1} MiB | {:.1} MiB | {:.2} s |",
            budget as f64 / MIB,
            f64::from(rounds) * 4.0,
            active as f64 / MIB,
            all as f64 / MIB,
            cache as f64 / MIB,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
