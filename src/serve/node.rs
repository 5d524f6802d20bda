//! What every handler of a node shares: the core context and the features' per-node states.
//! Startup wiring (listeners, background tasks, shutdown) is `startup`.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::FromRef;

use crate::api_keys::simulate::Matched;
use crate::context::Core;
use crate::http::client_ip::{Cidr, TrustedProxies};
use crate::http::error::ApiResult;
use crate::mapped_auth::MappedAuth;
use crate::scim::{KeyChecks, Scim};
use crate::state::api_keys::ApiKey;
use crate::token::Tokens;

/// Everything a request handler needs: the core context every feature uses (`node.engine`,
/// `node.propose(..)` and `&node` as `&Core` reach it through `Deref`) and the features'
/// per-node states.
pub struct Node {
    /// The token layer, over the core context.
    pub tokens: Arc<Tokens>,
    /// Signed requests already exchanged for a token (`/v3/sigtokens`), per node.
    pub signed_requests: Arc<crate::credential::replay::ReplayGuard>,
    /// Per-source limits on token issue, password change and signed-request tokens.
    pub rate_limits: crate::http::ratelimit::RateLimits,
    /// The OAuth2 / OpenID Connect provider's per-node state (parsed keys, metrics).
    pub oauth2: Arc<crate::oauth2::Provider>,
    /// Logins through mapping rulesets (key sets, regexes, rulesets, per-provider limits).
    pub mapped: Arc<MappedAuth>,
    /// API key uses not yet reported through raft (`api_keys::auth`).
    pub api_key_usage: Arc<crate::api_keys::auth::Usage>,
    /// SCIM's per-provider write quota and key grants (`scim`).
    pub scim: Arc<Scim>,
    /// The WebAuthn relying party (`passkey`), or why passkeys are off.
    pub passkeys: Arc<crate::passkey::ceremony::RelyingParty>,
    /// Answered role-assignment listings (`assignment`).
    pub assignments: Arc<crate::assignment::Assignments>,
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

impl FromRef<AppState> for Arc<MappedAuth> {
    fn from_ref(s: &AppState) -> Self {
        s.0.mapped.clone()
    }
}

impl FromRef<AppState> for Arc<Scim> {
    fn from_ref(s: &AppState) -> Self {
        s.0.scim.clone()
    }
}

impl FromRef<AppState> for Arc<dyn KeyChecks> {
    fn from_ref(s: &AppState) -> Self {
        s.0.clone()
    }
}

/// SCIM's view of the API keys feature, over this node's key uses and mapping rulesets.
impl KeyChecks for Node {
    fn presented_hash(&self, authorization: Option<&str>) -> ApiResult<String> {
        crate::api_keys::auth::presented_hash(self, authorization)
    }

    fn find(&self, hash: &str, source: IpAddr) -> ApiResult<ApiKey> {
        crate::api_keys::auth::find(self, &self.api_key_usage, hash, source)
    }

    fn admit(&self, key: &ApiKey, hash: &str, source: IpAddr) -> ApiResult<()> {
        crate::api_keys::auth::admit(&self.api_key_usage, key, hash, source)
    }

    fn matched(&self, key: &ApiKey, idp_id: Option<&str>) -> ApiResult<Result<Matched, &'static str>> {
        crate::api_keys::simulate::matched(self, &self.mapped.regexes, self.mapped.regex_deadline, key, idp_id)
    }
}

impl FromRef<AppState> for Arc<crate::oauth2::Provider> {
    fn from_ref(s: &AppState) -> Self {
        s.0.oauth2.clone()
    }
}

impl FromRef<AppState> for Arc<crate::assignment::Assignments> {
    fn from_ref(s: &AppState) -> Self {
        s.0.assignments.clone()
    }
}

impl FromRef<AppState> for Arc<crate::passkey::ceremony::RelyingParty> {
    fn from_ref(s: &AppState) -> Self {
        s.0.passkeys.clone()
    }
}

impl FromRef<AppState> for Arc<crate::api_keys::auth::Usage> {
    fn from_ref(s: &AppState) -> Self {
        s.0.api_key_usage.clone()
    }
}

impl FromRef<AppState> for Arc<crate::credential::replay::ReplayGuard> {
    fn from_ref(s: &AppState) -> Self {
        s.0.signed_requests.clone()
    }
}

impl Node {
    /// The node's metrics as OpenMetrics text (served on the ops listener, pushed over OTLP).
    pub fn metrics_text(&self) -> Result<String, std::fmt::Error> {
        crate::oauth2::metrics::count_live_families(self, &self.oauth2.metrics);
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
