//! The provider's metric series: grants by type and outcome, introspections by result, key
//! rotations and each domain's key epoch, and live refresh families (counted at scrape).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::http::metrics::{labels, Labels};

#[derive(Clone, Default)]
pub struct OAuth2Metrics {
    /// `grant_type`, `outcome` (`issued` or the OAuth error code).
    pub grants: Family<Labels, Counter>,
    /// `result`: `active` or `inactive`.
    pub introspections: Family<Labels, Counter>,
    pub key_rotations: Counter,
    /// `domain_id`: promotions of the domain's key set so far.
    pub key_epoch: Family<Labels, Gauge>,
    /// Refresh families neither revoked nor past their absolute lifetime (at the last count).
    pub active_refresh_families: Gauge,
}

impl OAuth2Metrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register("idnode_oauth2_grants", "OAuth2 token grants by grant type and outcome", self.grants.clone());
        registry.register(
            "idnode_oauth2_introspections",
            "OAuth2 token introspections by result",
            self.introspections.clone(),
        );
        registry.register("idnode_oauth2_key_rotations", "OAuth2 signing key rotations", self.key_rotations.clone());
        registry.register("idnode_oauth2_key_epoch", "Signing key epoch per domain", self.key_epoch.clone());
        registry.register(
            "idnode_oauth2_active_refresh_families",
            "Refresh-token families that are live",
            self.active_refresh_families.clone(),
        );
    }

    pub fn grant(&self, grant_type: &str, outcome: &str) {
        self.grants.get_or_create(&labels(&[("grant_type", grant_type), ("outcome", outcome)])).inc();
    }
}

/// Sets the live refresh family gauge from the state (at scrape time: the count depends on
/// the clock, since families end at their absolute lifetime without a write).
pub fn count_live_families(node: &crate::context::Core, metrics: &OAuth2Metrics) {
    use crate::state::read::OAuth2Reads;
    let at = crate::clock::now_secs();
    match node.engine.read().oauth2_families() {
        Ok(families) => {
            let live = families.iter().filter(|f| f.live(at)).count();
            metrics.active_refresh_families.set(live as i64);
        }
        Err(e) => tracing::warn!("counting refresh families: {e}"),
    }
}
