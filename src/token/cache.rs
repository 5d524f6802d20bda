//! A per-node cache whose entries are valid only at the applied index they were computed at:
//! any applied write (a revocation, a disabled user, a removed role) empties it, so a cache
//! can never let a revoked token through.
//!
//! It is bounded twice: in entries, and in approximate bytes through a size function the
//! owner gives (a token body's bytes, a validated token's strings), since one entry can be
//! kilobytes (a catalog, a user's free-form attributes) and a count alone bounds nothing.
//! When either bound would be passed the whole cache is dropped rather than one entry
//! evicted: entries die at the next applied write anyway, so keeping an eviction order
//! would cost on every hit to save at most one recomputation per entry.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::RwLock;

use crate::http::cache_metrics::CacheStats;

/// Approximate bytes an entry holds, key included.
pub type SizeOf<K, V> = fn(&K, &V) -> usize;

pub struct AppliedCache<K, V> {
    inner: RwLock<Inner<K, V>>,
    capacity: usize,
    budget: usize,
    size_of: SizeOf<K, V>,
    stats: CacheStats,
}

struct Inner<K, V> {
    applied: u64,
    entries: HashMap<K, V>,
    bytes: usize,
}

impl<K: Eq + Hash, V: Clone> AppliedCache<K, V> {
    /// At most `capacity` entries, of any size (for caches of a few small entries).
    pub fn new(capacity: usize) -> Self {
        Self::with_budget(capacity, usize::MAX, |_, _| 0)
    }

    /// At most `capacity` entries and about `budget` bytes as `size_of` counts them; an entry
    /// larger than the whole budget is not cached.
    pub fn with_budget(capacity: usize, budget: usize, size_of: SizeOf<K, V>) -> Self {
        AppliedCache {
            inner: RwLock::new(Inner { applied: 0, entries: HashMap::new(), bytes: 0 }),
            capacity,
            budget,
            size_of,
            stats: CacheStats::default(),
        }
    }

    /// Reports hits, misses and what it holds into `stats`.
    pub fn observed(mut self, stats: CacheStats) -> Self {
        self.stats = stats;
        self
    }

    pub fn get(&self, key: &K, applied: u64) -> Option<V> {
        let found = match self.inner.read() {
            Ok(g) if g.applied == applied => g.entries.get(key).cloned(),
            _ => None,
        };
        self.stats.lookup(found)
    }

    pub fn insert(&self, key: K, value: V, applied: u64) {
        let size = (self.size_of)(&key, &value);
        if size > self.budget {
            return;
        }
        let Ok(mut g) = self.inner.write() else { return };
        if g.applied != applied {
            if applied < g.applied {
                return; // computed from an older state than the cache holds
            }
            g.applied = applied;
            g.clear();
        }
        let replaced = g.entries.get(&key).map_or(0, |old| (self.size_of)(&key, old));
        g.bytes = g.bytes.saturating_sub(replaced);
        if g.entries.len() >= self.capacity || g.bytes.saturating_add(size) > self.budget {
            g.clear();
        }
        g.entries.insert(key, value);
        g.bytes += size;
        self.stats.holds(g.entries.len(), g.bytes);
    }

    /// Drops the entries when they were computed before `applied`: no lookup can use them any
    /// more, and without this they stayed until the next insert (a burst of logins followed
    /// by writes that validate no token left megabytes of dead bodies behind).
    pub fn forget_before(&self, applied: u64) {
        let stale = self.inner.read().is_ok_and(|g| g.applied < applied && !g.entries.is_empty());
        if !stale {
            return;
        }
        let Ok(mut g) = self.inner.write() else { return };
        if g.applied < applied {
            g.applied = applied;
            // A new map: `clear` keeps the table a burst grew.
            g.entries = HashMap::new();
            g.bytes = 0;
            self.stats.holds(0, 0);
        }
    }

    /// Approximate bytes held (as the size function counts them).
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.inner.read().map_or(0, |g| g.bytes)
    }
}

impl<K, V> Inner<K, V> {
    fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_die_with_their_index() {
        let c = AppliedCache::new(2);
        c.insert("a", 1, 5);
        assert_eq!(c.get(&"a", 5), Some(1));
        assert_eq!(c.get(&"a", 6), None);
        c.insert("b", 2, 4);
        assert_eq!(c.get(&"b", 4), None, "older computation is not cached");
        c.insert("b", 2, 6);
        assert_eq!(c.get(&"a", 6), None);
        assert_eq!(c.get(&"b", 6), Some(2));
    }

    #[test]
    fn inserting_past_the_byte_budget_evicts() {
        let c: AppliedCache<&str, String> = AppliedCache::with_budget(100, 10, |k, v| k.len() + v.len());
        c.insert("a", "1234".into(), 1);
        c.insert("b", "123".into(), 1);
        assert_eq!((c.get(&"a", 1).as_deref(), c.get(&"b", 1).as_deref(), c.bytes()), (Some("1234"), Some("123"), 9));
        c.insert("c", "12".into(), 1);
        assert_eq!((c.get(&"a", 1), c.get(&"b", 1)), (None, None), "over the budget: evicted");
        assert_eq!((c.get(&"c", 1).as_deref(), c.bytes()), (Some("12"), 3));
        c.insert("d", "1234567890".into(), 1);
        assert_eq!(c.get(&"d", 1), None, "larger than the whole budget: not cached");
        assert_eq!(c.get(&"c", 1).as_deref(), Some("12"), "and nothing evicted for it");
        c.insert("c", "123456".into(), 1);
        assert_eq!(c.bytes(), 7, "a replaced entry's old size is given back");
        c.insert("e", "1".into(), 2);
        assert_eq!(c.bytes(), 2, "a new index starts from nothing");
    }

    #[test]
    fn entries_of_an_older_state_are_forgotten() {
        let c: AppliedCache<&str, String> = AppliedCache::with_budget(100, 100, |k, v| k.len() + v.len());
        c.insert("a", "1234".into(), 3);
        c.forget_before(3);
        assert_eq!((c.get(&"a", 3).as_deref(), c.bytes()), (Some("1234"), 5), "current entries stay");
        c.forget_before(4);
        assert_eq!(c.bytes(), 0, "entries of an older state go");
        c.insert("b", "1".into(), 3);
        assert_eq!((c.get(&"b", 3), c.bytes()), (None, 0), "nor can an older computation come back");
        c.insert("b", "1".into(), 4);
        assert_eq!(c.get(&"b", 4).as_deref(), Some("1"));
    }
}
