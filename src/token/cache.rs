//! A per-node cache whose entries are valid only at the applied index they were computed at:
//! any applied write (a revocation, a disabled user, a removed role) empties it, so a cache
//! can never let a revoked token through.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::RwLock;

pub struct AppliedCache<K, V> {
    inner: RwLock<(u64, HashMap<K, V>)>,
    capacity: usize,
}

impl<K: Eq + Hash, V: Clone> AppliedCache<K, V> {
    pub fn new(capacity: usize) -> Self {
        AppliedCache { inner: RwLock::new((0, HashMap::new())), capacity }
    }

    pub fn get(&self, key: &K, applied: u64) -> Option<V> {
        let g = self.inner.read().ok()?;
        if g.0 != applied {
            return None;
        }
        g.1.get(key).cloned()
    }

    pub fn insert(&self, key: K, value: V, applied: u64) {
        let Ok(mut g) = self.inner.write() else { return };
        if g.0 != applied {
            if applied < g.0 {
                return; // computed from an older state than the cache holds
            }
            g.0 = applied;
            g.1.clear();
        }
        if g.1.len() >= self.capacity {
            g.1.clear();
        }
        g.1.insert(key, value);
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
}
