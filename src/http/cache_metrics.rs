//! The cache series the spec lists, one label value per cache: hits, misses, entries held and
//! approximate bytes held (`idnode_cache_{hits,misses}_total{cache}`,
//! `idnode_cache_{entries,bytes}{cache}`). A cache keeps a [`CacheStats`] handle and reports
//! through it; a cache built without one (unit tests) reports into detached series.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

type CacheLabel = Vec<(&'static str, &'static str)>;

#[derive(Clone, Default)]
pub struct CacheMetrics {
    hits: Family<CacheLabel, Counter>,
    misses: Family<CacheLabel, Counter>,
    entries: Family<CacheLabel, Gauge>,
    bytes: Family<CacheLabel, Gauge>,
}

impl CacheMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register("idnode_cache_hits", "Cache lookups answered from the cache, by cache", self.hits.clone());
        registry.register("idnode_cache_misses", "Cache lookups that had to compute, by cache", self.misses.clone());
        registry.register("idnode_cache_entries", "Entries a cache holds, by cache", self.entries.clone());
        registry.register("idnode_cache_bytes", "Approximate bytes a cache holds, by cache", self.bytes.clone());
    }

    /// The handle of cache `name` (the series exist, at zero, from then on).
    pub fn stats(&self, name: &'static str) -> CacheStats {
        let label = vec![("cache", name)];
        CacheStats {
            hits: self.hits.get_or_create(&label).clone(),
            misses: self.misses.get_or_create(&label).clone(),
            entries: self.entries.get_or_create(&label).clone(),
            bytes: self.bytes.get_or_create(&label).clone(),
        }
    }
}

/// One cache's series.
#[derive(Clone, Default, Debug)]
pub struct CacheStats {
    hits: Counter,
    misses: Counter,
    entries: Gauge,
    bytes: Gauge,
}

impl CacheStats {
    /// Counts a lookup: a hit when it found something.
    pub fn lookup<T>(&self, found: Option<T>) -> Option<T> {
        match &found {
            Some(_) => self.hits.inc(),
            None => self.misses.inc(),
        };
        found
    }

    /// What the cache holds now.
    pub fn holds(&self, entries: usize, bytes: usize) {
        self.entries.set(i64::try_from(entries).unwrap_or(i64::MAX));
        self.bytes.set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    #[cfg(test)]
    pub fn counts(&self) -> (u64, u64, i64, i64) {
        (self.hits.get(), self.misses.get(), self.entries.get(), self.bytes.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caches_series_are_labelled_with_its_name() {
        let m = CacheMetrics::default();
        let mut registry = Registry::default();
        m.register(&mut registry);
        let s = m.stats("token_validation");
        assert_eq!(s.lookup(Some(1)), Some(1));
        assert_eq!(s.lookup::<u8>(None), None);
        s.holds(3, 120);
        assert_eq!(s.counts(), (1, 1, 3, 120));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            "idnode_cache_hits_total{cache=\"token_validation\"} 1",
            "idnode_cache_misses_total{cache=\"token_validation\"} 1",
            "idnode_cache_entries{cache=\"token_validation\"} 3",
            "idnode_cache_bytes{cache=\"token_validation\"} 120",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
    }
}
