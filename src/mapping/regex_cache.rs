//! Compiled `matches_regex` patterns, shared by every evaluation, and the match deadline.
//!
//! Why a deadline with a linear-time engine: the `regex` crate cannot backtrack, so a match
//! costs O(pattern × input); inputs are bounded (claim values over 4096 bytes never get here)
//! and so are patterns (write-time `compile_safe`). What is left is a host that is slow for
//! other reasons: the elapsed time of every match is measured, and one that outlived its
//! deadline counts as no match and is reported (`Outcome::TimedOut`) so the caller can emit
//! the spec's `RegexMatchTimeout` audit event.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use regex::{Regex, RegexBuilder};

use crate::http::cache_metrics::CacheStats;

/// The spec's deadline per match.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(2);
/// The spec's cache size and the number of least recently used entries dropped on overflow.
pub const CAPACITY: usize = 1024;
pub const EVICT: usize = 100;
/// Longest pattern accepted at write time, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1024;
/// Longest input a pattern is run against: the engine's claim-value limit.
pub const MAX_INPUT_BYTES: usize = super::model::MAX_CLAIM_VALUE_BYTES;
/// Bounds on the compiled program and on the lazy DFA's cache (bytes): a pattern such as
/// `(a{1000}){1000}` is refused instead of compiling into hundreds of megabytes.
const SIZE_LIMIT: usize = 1 << 20;
const DFA_SIZE_LIMIT: usize = 2 << 20;
const NEST_LIMIT: u32 = 32;

/// Compiles a pattern under the safety bounds; the error says why a pattern is refused
/// (look-around and backreferences are not part of the crate's syntax, so they fail here).
pub fn compile_safe(pattern: &str) -> Result<Regex, String> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!("the pattern is longer than {MAX_PATTERN_BYTES} bytes"));
    }
    RegexBuilder::new(pattern)
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .nest_limit(NEST_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(limit) => format!("the compiled pattern exceeds {limit} bytes"),
            other => other.to_string(),
        })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Match,
    NoMatch,
    /// The match ran longer than its deadline; it counts as no match.
    TimedOut {
        elapsed: Duration,
    },
    /// The pattern does not compile under the safety bounds (a ruleset written before a bound
    /// changed); counts as no match.
    Invalid,
}

struct Entry {
    regex: Arc<Regex>,
    last_used: u64,
}

struct Inner {
    map: HashMap<String, Entry>,
    tick: u64,
}

pub struct RegexCache {
    inner: Mutex<Inner>,
    capacity: usize,
    evict: usize,
    stats: CacheStats,
}

impl Default for RegexCache {
    fn default() -> Self {
        Self::with_limits(CAPACITY, EVICT)
    }
}

impl RegexCache {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_limits(capacity: usize, evict: usize) -> Self {
        RegexCache {
            inner: Mutex::new(Inner { map: HashMap::new(), tick: 0 }),
            capacity: capacity.max(1),
            evict: evict.clamp(1, capacity.max(1)),
            stats: CacheStats::default(),
        }
    }

    /// Reports hits, misses (a compilation) and what it holds (entries, pattern bytes).
    pub fn observed(mut self, stats: CacheStats) -> Self {
        self.stats = stats;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The map stays consistent at every await-free step, so a panic elsewhere leaves it usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    #[cfg(test)]
    pub fn contains(&self, pattern: &str) -> bool {
        self.lock().map.contains_key(pattern)
    }

    /// The compiled pattern, compiled and cached on first use.
    pub fn get(&self, pattern: &str) -> Result<Arc<Regex>, String> {
        {
            let mut inner = self.lock();
            inner.tick += 1;
            let tick = inner.tick;
            let hit = inner.map.get_mut(pattern).map(|e| {
                e.last_used = tick;
                e.regex.clone()
            });
            if let Some(regex) = self.stats.lookup(hit) {
                return Ok(regex);
            }
        }
        // Compile outside the lock; two threads may compile the same pattern once each.
        let regex = Arc::new(compile_safe(pattern)?);
        let mut inner = self.lock();
        if !inner.map.contains_key(pattern) && inner.map.len() >= self.capacity {
            let mut ages: Vec<(u64, String)> = inner.map.iter().map(|(k, e)| (e.last_used, k.clone())).collect();
            ages.sort_unstable();
            for (_, k) in ages.into_iter().take(self.evict) {
                inner.map.remove(&k);
            }
        }
        inner.tick += 1;
        let tick = inner.tick;
        inner.map.insert(pattern.to_owned(), Entry { regex: regex.clone(), last_used: tick });
        self.stats.holds(inner.map.len(), inner.map.keys().map(String::len).sum());
        Ok(regex)
    }

    /// Runs one match under `deadline` (measured around the match itself, not compilation).
    pub fn is_match(&self, pattern: &str, input: &str, deadline: Duration) -> Outcome {
        if input.len() > MAX_INPUT_BYTES {
            return Outcome::NoMatch;
        }
        let Ok(regex) = self.get(pattern) else { return Outcome::Invalid };
        let start = Instant::now();
        let matched = regex.is_match(input);
        let elapsed = start.elapsed();
        if elapsed > deadline {
            Outcome::TimedOut { elapsed }
        } else if matched {
            Outcome::Match
        } else {
            Outcome::NoMatch
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_and_evicts_the_least_recently_used_hundred() {
        let cache = RegexCache::new();
        for i in 0..CAPACITY {
            cache.get(&format!("^p{i}$")).unwrap();
        }
        assert_eq!(cache.len(), CAPACITY);
        // Touch the first ten: they become the most recently used.
        for i in 0..10 {
            assert_eq!(cache.is_match(&format!("^p{i}$"), &format!("p{i}"), DEFAULT_DEADLINE), Outcome::Match);
        }
        cache.get("^overflow$").unwrap();
        assert_eq!(cache.len(), CAPACITY - EVICT + 1);
        for i in 0..10 {
            assert!(cache.contains(&format!("^p{i}$")), "recently used p{i} evicted");
        }
        for i in 10..10 + EVICT {
            assert!(!cache.contains(&format!("^p{i}$")), "p{i} should have been evicted");
        }
        assert!(cache.contains(&format!("^p{}$", 10 + EVICT)));
        assert!(cache.contains("^overflow$"));
    }

    #[test]
    fn a_match_outliving_its_deadline_is_reported_and_counts_as_no_match() {
        let cache = RegexCache::new();
        let input = "a".repeat(MAX_INPUT_BYTES);
        // Would match; a zero deadline makes any measurable match time out.
        match cache.is_match("[a-z]+a$", &input, Duration::ZERO) {
            Outcome::TimedOut { elapsed } => assert!(elapsed > Duration::ZERO),
            other => panic!("expected a timeout, got {other:?}"),
        }
        assert_eq!(cache.is_match("[a-z]+a$", &input, DEFAULT_DEADLINE), Outcome::Match);
    }

    #[test]
    fn inputs_over_the_claim_limit_never_run() {
        let cache = RegexCache::new();
        assert_eq!(cache.is_match("a", &"a".repeat(MAX_INPUT_BYTES + 1), DEFAULT_DEADLINE), Outcome::NoMatch);
    }

    #[test]
    fn unsafe_patterns_are_refused() {
        for p in [r"(a)\1", r"a(?=b)", r"(?<!a)b", "("] {
            assert!(compile_safe(p).is_err(), "{p} accepted");
        }
        assert!(compile_safe(r"(a{1000}){1000}").unwrap_err().contains("exceeds"));
        assert!(compile_safe(&"a".repeat(MAX_PATTERN_BYTES + 1)).unwrap_err().contains("longer"));
        assert!(compile_safe(&format!("{}a{}", "(".repeat(40), ")".repeat(40))).is_err());
        assert_eq!(cache_outcome("x"), Outcome::Invalid);
    }

    fn cache_outcome(input: &str) -> Outcome {
        RegexCache::new().is_match(r"(a)\1", input, DEFAULT_DEADLINE)
    }
}
