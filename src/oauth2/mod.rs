//! The OAuth2 authorization server and OpenID Connect provider of every domain
//! (`/v4/oauth2/{domain_id}`): signing keys, the client registry, discovery and the key set.
//! Every state change (keys, clients, codes, device grants, refresh families, consents,
//! revocations) is a replicated command (`state::oauth2`), so any node finishes a flow
//! another node started and a revocation holds on every node once it returns.

pub mod authorize;
pub mod client_auth;
pub mod clients;
pub mod consents;
pub mod cutoff;
pub mod device;
pub mod discovery;
pub mod error;
pub mod exchange;
pub mod form;
pub mod html;
pub mod introspect;
pub mod keys;
pub mod metrics;
pub mod page_state;
pub mod passkey_login;
pub mod password_login;
pub mod revocations;
pub mod revoke;
pub mod rotate_cli;
pub mod schemas;
pub mod scopes;
pub mod secrets;
pub mod token;
pub mod tokens;
pub mod userinfo;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use axum::extract::FromRef;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::context::Core;
use crate::http::error::ApiResult;
use crate::passkey::ceremony::RelyingParty;
use crate::state::Reply;
use crate::token::{AppliedCache, Tokens};

/// Per-node state of the provider: parsed key sets, cached per state version.
pub struct Provider {
    pub keys: AppliedCache<String, Arc<keys::DomainKeys>>,
    /// The last parsed key set of each domain, kept across writes that do not change it.
    pub parsed_keys: std::sync::Mutex<std::collections::HashMap<String, Arc<keys::DomainKeys>>>,
    pub metrics: metrics::OAuth2Metrics,
    /// Each domain's published revocation list, per state version.
    pub revoked: AppliedCache<String, Arc<revocations::RevokedList>>,
    /// Introspection calls per client (the per-source limit is the router's).
    introspect_per_client: Option<governor::DefaultKeyedRateLimiter<String>>,
}

impl Provider {
    pub fn new(per_second: u32, burst: u32) -> Self {
        // One process-wide choice of JWT backend (RustCrypto: no C build); a second install
        // (tests building several nodes) is refused harmlessly.
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
        let introspect_per_client = std::num::NonZeroU32::new(per_second).map(|rate| {
            let burst = std::num::NonZeroU32::new(burst).unwrap_or(rate);
            governor::RateLimiter::keyed(governor::Quota::per_second(rate).allow_burst(burst))
        });
        Provider {
            keys: AppliedCache::new(1024),
            parsed_keys: Default::default(),
            metrics: metrics::OAuth2Metrics::default(),
            revoked: AppliedCache::with_budget(
                revocations::CACHED_DOMAINS,
                revocations::CACHED_BYTES,
                revocations::footprint,
            ),
            introspect_per_client,
        }
    }

    /// Counts an introspection against the client's own bucket.
    pub fn limit_client(&self, client_id: &str) -> Result<(), error::OAuthError> {
        let Some(limiter) = &self.introspect_per_client else { return Ok(()) };
        limiter.check_key(&client_id.to_string()).map_err(|not_until| {
            use governor::clock::{Clock, DefaultClock};
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            error::OAuthError::rate_limited(wait.as_secs().max(1))
        })
    }

    /// Forgets idle clients' buckets.
    pub fn housekeep(&self) {
        if let Some(l) = &self.introspect_per_client {
            l.retain_recent();
            l.shrink_to_fit();
        }
    }
}

/// Proposes `cmd` and answers once every reachable member has applied it, as a revocation
/// does: what it issues (a code, a refresh family, a client) or revokes (a replay's tokens)
/// holds on whichever node the client turns to next, with no catch-up there. Without it a
/// follower that has not yet heard of the commit answers from before it (a fresh access token
/// `{"active": false}`, a replayed code's token still active, a new code or client unknown).
pub async fn propose_everywhere<R: Reply>(node: &Core, cmd: crate::state::oauth2::OAuth2Command) -> ApiResult<R> {
    let (index, reply) = node.propose_at_as(cmd).await?;
    node.wait_cluster_applied(index).await;
    Ok(reply)
}

/// The issuer of a domain's authorization server, as this node's public URL names it.
pub fn issuer(node: &Core, domain_id: &str) -> String {
    format!("{}/v4/oauth2/{domain_id}", node.cfg.public_base())
}

/// Every operation of the provider but the password logins (`password_login::routes`), for
/// the router and the OpenAPI description.
pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Arc<Core>: FromRef<S>,
    Arc<Tokens>: FromRef<S>,
    Arc<Provider>: FromRef<S>,
    Arc<RelyingParty>: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(discovery::openid_configuration))
        .routes(routes!(discovery::jwks))
        .routes(routes!(discovery::revoked_jtis))
        .routes(routes!(discovery::list_keys))
        .routes(routes!(discovery::rotate_keys))
        .routes(routes!(clients::list, clients::create))
        .routes(routes!(clients::get, clients::update, clients::delete))
        .routes(routes!(clients::rotate_secret))
        .routes(routes!(token::token))
        .routes(routes!(introspect::introspect))
        .routes(routes!(revoke::revoke))
        .routes(routes!(userinfo::get, userinfo::post))
        .routes(routes!(authorize::authorize))
        .routes(routes!(authorize::authorize_consent))
        .routes(routes!(passkey_login::passkey_start))
        .routes(routes!(passkey_login::passkey_login))
        .routes(routes!(device::device_authorization))
        .routes(routes!(device::device_page))
        .routes(routes!(device::device_consent))
        .routes(routes!(consents::list))
        .routes(routes!(consents::delete))
}
