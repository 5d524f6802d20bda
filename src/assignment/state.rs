//! The assignment feature's per-node state: answered role-assignment listings.

use axum::body::Bytes;

use crate::http::cache_metrics::CacheMetrics;
use crate::token::AppliedCache;

/// Most listings kept, and their bytes together: a listing of a large cloud can be megabytes,
/// and one larger than the whole budget is not kept.
const LISTINGS: usize = 1024;
const LISTING_BYTES: usize = 8 << 20;

/// The node's assignment state.
pub struct Assignments {
    /// `GET /v3/role_assignments` bodies per (query string, the domain a domain-scoped caller
    /// sees), for the applied state they were computed at: expanding groups, inherited grants
    /// and implied roles and naming everything was a recomputation per request. Only with the
    /// replicated driver: the relationship store changes without a write here.
    pub listings: AppliedCache<(String, Option<String>), Bytes>,
}

impl Assignments {
    pub fn new(caches: &CacheMetrics) -> Assignments {
        let size = |k: &(String, Option<String>), v: &Bytes| k.0.len() + k.1.as_ref().map_or(0, String::len) + v.len();
        Assignments {
            listings: AppliedCache::with_budget(LISTINGS, LISTING_BYTES, size)
                .observed(caches.stats("role_assignment_listings")),
        }
    }
}
