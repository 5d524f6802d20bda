//! Digests kept up to date by every write, so a consistency check costs the same at any size:
//! the whole-state walk it replaces opened and hashed every value on every member at once, and
//! at 1,000,000 projects took a quarter of a 2-core host for most of a minute
//! (docs/benchmarks.md).
//!
//! Each tracked family keeps a sum: every pair's SHA-256, read as a 256-bit number, added up
//! modulo 2^256, and the pair count. The sum does not depend on order or history, only on what
//! the family holds, so a write updates it by taking out the pair it replaces and adding the
//! new one, and two members with the same state have the same sums however they got there
//! (applied entries, an installed snapshot, a restore).
//!
//! Nothing is stored: a process starts from zero, counts what its writes change, and walks the
//! families once, when the first check asks, to learn what they held before (`base`). So the
//! digest never trusts a figure written by an earlier process (or by an older release that did
//! not keep it), and a process costs one walk, off the path of requests. The walk runs on the
//! checking thread, never a thread of its own: a detached thread still reading RocksDB when
//! the process exits aborts it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use sha2::{Digest, Sha256};

use crate::codec::value_ad;
use crate::digest::{FamilyDigest, StateDigest};
use crate::{Engine, ReadView, Result, StorageError};

/// One family's sum and count. Subtraction is exact, so `a + b - b == a` for any figures:
/// a delta is an `Acc` too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Acc {
    sum: [u64; 4],
    count: u64,
}

impl Acc {
    /// The term a pair adds to its family's sum.
    fn term(key: &[u8], value: &[u8]) -> [u64; 4] {
        let mut h = Sha256::new();
        h.update(b"idnode-pair-v2");
        h.update((key.len() as u64).to_be_bytes());
        h.update(key);
        h.update((value.len() as u64).to_be_bytes());
        h.update(value);
        let d = h.finalize();
        let mut limbs = [0u64; 4];
        for (limb, chunk) in limbs.iter_mut().zip(d.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            *limb = u64::from_le_bytes(b);
        }
        limbs
    }

    pub(crate) fn insert(&mut self, key: &[u8], value: &[u8]) {
        self.plus(&Acc { sum: Self::term(key, value), count: 1 });
    }

    pub(crate) fn remove(&mut self, key: &[u8], value: &[u8]) {
        self.minus(&Acc { sum: Self::term(key, value), count: 1 });
    }

    fn plus(&mut self, o: &Acc) {
        let mut carry = false;
        for (a, b) in self.sum.iter_mut().zip(o.sum) {
            let (s, c1) = a.overflowing_add(b);
            let (s, c2) = s.overflowing_add(u64::from(carry));
            *a = s;
            carry = c1 || c2;
        }
        self.count = self.count.wrapping_add(o.count);
    }

    fn minus(&mut self, o: &Acc) {
        let mut borrow = false;
        for (a, b) in self.sum.iter_mut().zip(o.sum) {
            let (s, b1) = a.overflowing_sub(b);
            let (s, b2) = s.overflowing_sub(u64::from(borrow));
            *a = s;
            borrow = b1 || b2;
        }
        self.count = self.count.wrapping_sub(o.count);
    }

    fn family_digest(&self, cf: &str) -> FamilyDigest {
        let mut h = Sha256::new();
        h.update(b"idnode-family-digest-v2");
        h.update((cf.len() as u64).to_be_bytes());
        h.update(cf.as_bytes());
        for limb in self.sum {
            h.update(limb.to_le_bytes());
        }
        h.update(self.count.to_be_bytes());
        FamilyDigest { cf: cf.to_string(), sha256: h.finalize().into(), records: self.count }
    }
}

/// The state digest of families with these sums, in the order given.
fn state_digest(families: Vec<FamilyDigest>) -> StateDigest {
    let mut h = Sha256::new();
    h.update(b"idnode-state-digest-v2");
    for f in &families {
        h.update((f.cf.len() as u64).to_be_bytes());
        h.update(f.cf.as_bytes());
        h.update(f.sha256);
        h.update(f.records.to_be_bytes());
    }
    StateDigest { sha256: h.finalize().into(), records: families.iter().map(|f| f.records).sum(), families }
}

/// The running digest's definition, computed by walking `cfs` in `view`: what the running
/// sums must always equal (the tests hold them to it) and how a process learns its base.
pub fn sum_digest_view(view: &ReadView<'_>, cfs: &[&str]) -> Result<StateDigest> {
    let mut families = Vec::with_capacity(cfs.len());
    for cf in cfs {
        families.push(walk(view, cf)?.family_digest(cf));
    }
    Ok(state_digest(families))
}

fn walk(view: &ReadView<'_>, cf: &str) -> Result<Acc> {
    let mut acc = Acc::default();
    view.for_each(cf, |k, v| {
        acc.insert(k, v);
        Ok(())
    })?;
    Ok(acc)
}

/// Where the base walk stands.
#[derive(Debug, Clone)]
enum Base {
    Unknown,
    Walking,
    Known,
    Failed(String),
}

struct Inner {
    /// What this process's writes changed, per family, since tracking began or the family was
    /// last replaced wholesale.
    live: BTreeMap<&'static str, Acc>,
    /// The family's content minus `live`, once known (all of them once the walk ended).
    offset: BTreeMap<&'static str, Acc>,
    /// Families replaced by an import while the walk ran: their offset came from the import.
    replaced: BTreeSet<&'static str>,
    /// Bumped by every replacement of a family, so a digest waiting for the walk can tell that
    /// its figures no longer pair with the offsets.
    replacements: u64,
    base: Base,
}

/// The running sums of one engine's tracked families.
pub(crate) struct Running {
    tracked: Vec<&'static str>,
    inner: Mutex<Inner>,
    base_known: Condvar,
    /// Held by a write to tracked families from reading the values it replaces until it
    /// landed (and by an import while it replaces families).
    writer: Mutex<()>,
    /// Writes to tracked families so far (bumped under `writer`): a batch made when this was
    /// `n` may trust what its builder read while it still is.
    writes: AtomicU64,
}

/// Changes a write makes to the sums, applied once the write succeeded.
pub(crate) type Deltas = BTreeMap<&'static str, Acc>;

impl Running {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn writer(&self) -> MutexGuard<'_, ()> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn tracks(&self, cf: &str) -> bool {
        self.tracked.contains(&cf)
    }

    pub(crate) fn writes(&self) -> u64 {
        self.writes.load(Ordering::Acquire)
    }

    /// A write to tracked families landed with these changes (called under `writer`).
    pub(crate) fn commit(&self, deltas: Deltas) {
        self.writes.fetch_add(1, Ordering::AcqRel);
        if deltas.is_empty() {
            return;
        }
        let mut inner = self.lock();
        for (cf, d) in deltas {
            inner.live.entry(cf).or_default().plus(&d);
        }
    }

    /// `cf` now holds exactly the pairs summed in `content` (an import replaced it).
    pub(crate) fn replace(&self, cf: &str, content: Acc) {
        let Some(cf) = self.tracked.iter().copied().find(|t| *t == cf) else { return };
        self.writes.fetch_add(1, Ordering::AcqRel);
        let mut inner = self.lock();
        inner.live.insert(cf, Acc::default());
        inner.offset.insert(cf, content);
        inner.replaced.insert(cf);
        inner.replacements += 1;
    }
}

/// A digest taken at one point of the write order, resolved once the base is known.
pub struct PendingDigest {
    engine: Arc<Engine>,
    running: Arc<Running>,
    cfs: Vec<String>,
    /// The live sums at that point, and the replacement count they go with.
    live: BTreeMap<String, Acc>,
    replacements: u64,
}

impl PendingDigest {
    /// The digest. The first one a process resolves walks the families for the base (on the
    /// caller's thread, which is a blocking one); others wait for that walk.
    pub fn resolve(self) -> Result<StateDigest> {
        let mut inner = self.running.lock();
        if matches!(inner.base, Base::Unknown) {
            inner.base = Base::Walking;
            drop(inner);
            let known = self.engine.walk_base(&self.running);
            inner = self.running.lock();
            inner.base = known;
            self.running.base_known.notify_all();
        }
        let inner = self
            .running
            .base_known
            .wait_while(inner, |i| matches!(i.base, Base::Walking))
            .unwrap_or_else(|p| p.into_inner());
        if let Base::Failed(why) = &inner.base {
            return Err(StorageError::Stream(format!("the running digest has no base: {why}")));
        }
        if inner.replacements != self.replacements {
            // A family was replaced after this point: the offsets no longer pair with `live`.
            return Err(StorageError::Stream("the state was replaced while the digest waited for its base".into()));
        }
        let mut families = Vec::with_capacity(self.cfs.len());
        for cf in &self.cfs {
            let mut acc = self.live.get(cf).copied().unwrap_or_default();
            let offset = inner
                .offset
                .get(cf.as_str())
                .ok_or_else(|| StorageError::Stream(format!("column family {cf} has no running digest")))?;
            acc.plus(offset);
            families.push(acc.family_digest(cf));
        }
        Ok(state_digest(families))
    }
}

impl Engine {
    /// Starts keeping running digests of `cfs`: from here on every write updates them. What
    /// the families held before is learnt by one walk, when the first digest is resolved.
    /// Called once, at startup, before the node writes state; later calls change nothing.
    pub fn track_digests(&self, cfs: &[&'static str]) {
        let running = Arc::new(Running {
            tracked: cfs.to_vec(),
            inner: Mutex::new(Inner {
                live: BTreeMap::new(),
                offset: BTreeMap::new(),
                replaced: BTreeSet::new(),
                replacements: 0,
                base: Base::Unknown,
            }),
            base_known: Condvar::new(),
            writer: Mutex::new(()),
            writes: AtomicU64::new(0),
        });
        let _ = self.running.set(running);
    }

    /// Walks the tracked families for the base: what they held, less what this process's
    /// writes had counted by then, so that live sums plus the base are the content.
    fn walk_base(&self, running: &Running) -> Base {
        let started = std::time::Instant::now();
        // The view and the live sums it pairs with, taken with no write in between.
        let (view, live_then) = {
            let _turn = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
            (self.snapshot(), running.lock().live.clone())
        };
        let walked: Result<Vec<(&'static str, Acc)>> =
            running.tracked.iter().map(|cf| walk(&view, cf).map(|acc| (*cf, acc))).collect();
        drop(view);
        match walked {
            Ok(walked) => {
                let mut inner = running.lock();
                for (cf, mut acc) in walked {
                    if !inner.replaced.contains(cf) {
                        acc.minus(&live_then.get(cf).copied().unwrap_or_default());
                        inner.offset.insert(cf, acc);
                    }
                }
                tracing::info!(
                    families = running.tracked.len(),
                    seconds = started.elapsed().as_secs_f64(),
                    "running state digests have their base"
                );
                Base::Known
            }
            Err(e) => {
                tracing::error!(
                    "the running state digests have no base ({e}): consistency checks report this node unavailable"
                );
                Base::Failed(e.to_string())
            }
        }
    }

    /// The running digest of `cfs` (tracked ones, in the order given) as of the last write,
    /// to resolve off the caller's task: the caller makes sure no write lands between the
    /// point it means and this call (the apply loop calls it holding its lock).
    pub fn running_digest(self: &Arc<Self>, cfs: &[&str]) -> Result<PendingDigest> {
        let running =
            self.running.get().ok_or_else(|| StorageError::Stream("no running digests on this engine".into()))?;
        if let Some(cf) = cfs.iter().find(|cf| !running.tracks(cf)) {
            return Err(StorageError::UnknownCf(format!("{cf} (not tracked by the running digests)")));
        }
        // A quarantined family has no digest, as a walk could not read it: its sums may well
        // agree again (repaired behind raft's back), but only a rebuild lifts a quarantine.
        for cf in cfs {
            self.readable(cf)?;
        }
        let _turn = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let inner = running.lock();
        let live = cfs.iter().map(|cf| (cf.to_string(), inner.live.get(cf).copied().unwrap_or_default())).collect();
        Ok(PendingDigest {
            engine: Arc::clone(self),
            running: running.clone(),
            cfs: cfs.iter().map(|c| c.to_string()).collect(),
            live,
            replacements: inner.replacements,
        })
    }

    /// What `batch` changes in the tracked sums: for each key it writes, the pair it replaces
    /// comes out and the new one goes in. The replaced value is what the batch's builder read,
    /// when no tracked write landed since the batch was made (the apply loop is the only
    /// writer, so that is the rule), else it is read here. The caller holds the digests'
    /// writer lock from here to its write. A value that does not open quarantines its family,
    /// as a read would; its pair cannot be taken out, so the family's digest then differs from
    /// the cluster's, which is the truth.
    pub(crate) fn deltas(&self, batch: &crate::Batch) -> Result<Deltas> {
        let mut deltas = Deltas::new();
        let Some(running) = self.running.get() else { return Ok(deltas) };
        let seen = batch.seen.lock().unwrap_or_else(|p| p.into_inner());
        let trusted = batch.made_at == Some(running.writes());
        for ((cf, key), op) in &batch.ops {
            if !running.tracks(cf) {
                continue;
            }
            let d = deltas.entry(*cf).or_default();
            match seen.get(&(*cf, key.clone())).filter(|_| trusted) {
                Some(Some(old)) => d.remove(key, old),
                Some(None) => {}
                None => {
                    if let Some(sealed) = self.db.get_pinned_cf(&self.cf(cf)?, key)? {
                        match self.keys().open(&value_ad(cf, key), &sealed) {
                            Ok(old) => d.remove(key, &old),
                            Err(e) => self.quarantine(cf, &e),
                        }
                    }
                }
            }
            if let Some((_, plain)) = op {
                d.insert(key, plain);
            }
        }
        Ok(deltas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_are_order_free_and_removal_is_exact() {
        let (mut a, mut b) = (Acc::default(), Acc::default());
        a.insert(b"k1", b"v1");
        a.insert(b"k2", b"v2");
        b.insert(b"k2", b"v2");
        b.insert(b"k1", b"v1");
        assert_eq!(a, b);
        a.insert(b"k3", b"v3");
        a.remove(b"k3", b"v3");
        assert_eq!(a, b);
        let mut c = Acc::default();
        c.remove(b"k1", b"v1");
        c.plus(&a);
        let mut only_k2 = Acc::default();
        only_k2.insert(b"k2", b"v2");
        assert_eq!(c, only_k2, "a delta taken before is the same as after");
        assert_ne!(a.family_digest("x"), a.family_digest("y"), "the family's name is in its digest");
        let mut moved = Acc::default();
        moved.insert(b"k1v", b"1");
        let mut other = Acc::default();
        other.insert(b"k1", b"v1");
        assert_ne!(moved, other, "lengths keep key and value apart");
    }
}
