//! What every handler of a node shares: the core context and the features' per-node states.
//! Startup wiring (listeners, background tasks, shutdown) is `serve::startup`.

use std::sync::Arc;

use axum::extract::FromRef;
use serde_json::Value;

use crate::context::Core;
use crate::http::client_ip::{Cidr, TrustedProxies};
use crate::token::{AppliedCache, Tokens};

/// Everything a request handler needs: the core context every feature uses (`node.engine`,
/// `node.propose(..)` and `&node` as `&Core` reach it through `Deref`) and the features'
/// per-node states.
pub struct Node {
    /// The token layer, over the core context.
    pub tokens: Arc<Tokens>,
    pub catalog_cache: AppliedCache<(), Arc<Value>>,
    /// Signed requests already exchanged for a token (`/v3/sigtokens`), per node.
    pub signed_requests: crate::credential::replay::ReplayGuard,
    /// Per-source limits on token issue, password change and signed-request tokens.
    pub rate_limits: crate::http::ratelimit::RateLimits,
    /// The OAuth2 / OpenID Connect provider's per-node state (parsed keys, metrics).
    pub oauth2: crate::oauth2::Provider,
    /// Logins through mapping rulesets (key sets, regexes, rulesets, per-provider limits).
    pub mapped: crate::mapped_auth::MappedAuth,
    /// API key uses not yet reported through raft (`api_keys::auth`).
    pub api_key_usage: crate::api_keys::auth::Usage,
    /// SCIM's per-provider write quota and key grants (`scim`).
    pub scim: crate::scim::Scim,
    /// The WebAuthn relying party (`passkey`), or why passkeys are off.
    pub passkeys: crate::passkey::RelyingParty,
}

impl std::ops::Deref for Node {
    type Target = Tokens;

    fn deref(&self) -> &Tokens {
        &self.tokens
    }
}

/// The public router's state: handlers take the part they need (`State<Arc<Core>>`, the
/// token layer through `Caller`, or the whole node while they still need a feature's state).
#[derive(Clone)]
pub struct AppState(pub Arc<Node>);

impl FromRef<AppState> for Arc<Node> {
    fn from_ref(s: &AppState) -> Self {
        s.0.clone()
    }
}

impl FromRef<AppState> for Arc<Core> {
    fn from_ref(s: &AppState) -> Self {
        s.0.core.clone()
    }
}

impl FromRef<AppState> for Arc<Tokens> {
    fn from_ref(s: &AppState) -> Self {
        s.0.tokens.clone()
    }
}

impl Node {
    /// The catalog a token of `scope` carries, over this node's catalog cache.
    pub fn catalog_for(&self, scope: &crate::token::TokenScope) -> crate::http::error::ApiResult<Arc<Value>> {
        crate::catalog::for_scope(self, &self.catalog_cache, scope)
    }

    /// The node's metrics as OpenMetrics text (served on the ops listener, pushed over OTLP).
    pub fn metrics_text(&self) -> Result<String, std::fmt::Error> {
        crate::oauth2::metrics::count_live_families(self);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

impl TrustedProxies for AppState {
    fn trusted_proxies(&self) -> &[Cidr] {
        &self.0.rate_limits.trusted_proxies
    }
}
