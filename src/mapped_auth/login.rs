//! One login through a mapping, whatever proved the identity: rate limit, evaluate the
//! provider's rulesets, resolve the principal (a real user or a virtual one), scope, mint.
//! The verifying front ends (`oidc`, `browser`, `workloads`) hand over an [`External`].

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value};

use super::rulesets::{self, Live};
use super::state::MappedAuth;
use crate::audit::event::regex_match_timeout;
use crate::auth::tokens::token_response;
use crate::clock::now_micros;
use crate::http::error::{ApiError, ApiResult};
use crate::http::metrics::labels;
use crate::mapping::engine::{self, Claims, Matched};
use crate::mapping::model::{IdentityMode, MappingRuleSet};
use crate::state::providers::{Provider, ProviderConfig};
use crate::state::Reader;
use crate::token::{Delegation, MappedGrant, Method, TokenPayload, Tokens};

/// The domain `${enclosing_domain_id}` names when neither the ruleset nor the provider has one.
const DEFAULT_DOMAIN: &str = "default";

/// An identity a provider vouched for.
pub struct External {
    pub provider: Provider,
    /// The verified token's claims (or the TokenReview's), as the rules see them.
    pub claims: Map<String, Value>,
    /// Who the identity is at the provider, stable across logins: an OIDC `sub`, a service
    /// account's username, a SPIFFE ID. With the provider, it names the principal.
    pub workload: String,
    /// Evaluate only the rule of this name (the caller's hint); it must still match.
    pub rule_name: Option<String>,
}

/// A rule's principal when it does not say: a person from an OIDC provider becomes a real
/// (federated, password-less) user like Keystone's shadow users; a workload (Kubernetes,
/// SPIFFE) a virtual one.
fn default_mode(p: &Provider) -> IdentityMode {
    match p.config {
        ProviderConfig::Oidc(_) => IdentityMode::Local,
        ProviderConfig::K8s(_) | ProviderConfig::Spiffe(_) => IdentityMode::Ephemeral,
    }
}

/// The ruleset narrowed to the hinted rule, when it has one of that name.
fn narrowed(rs: &MappingRuleSet, rule: &str) -> Option<MappingRuleSet> {
    let rule = rs.rules.iter().find(|r| r.name == rule)?.clone();
    Some(MappingRuleSet { rules: vec![rule], ..rs.clone() })
}

/// The first rule of the provider's enabled rulesets (in `mapping_id` order) that matches.
/// A regex that outlives its deadline counts as no match and leaves a `RegexMatchTimeout`
/// audit event.
pub fn evaluate(node: &Tokens, mapped: &MappedAuth, ext: &External) -> ApiResult<(Arc<Live>, Matched)> {
    let claims = Claims::from_json(&ext.claims);
    for live in rulesets::for_provider(node, &ext.provider)? {
        let hinted;
        let rs = match &ext.rule_name {
            None => &live.rs,
            Some(name) => match narrowed(&live.rs, name) {
                Some(rs) => {
                    hinted = rs;
                    &hinted
                }
                None => continue,
            },
        };
        let enclosing = live.rs.domain_id.as_deref().or(ext.provider.domain_id.as_deref()).unwrap_or(DEFAULT_DOMAIN);
        let ev = engine::evaluate(rs, &claims, enclosing, &mapped.regexes, mapped.regex_deadline);
        for t in &ev.regex_timeouts {
            tracing::warn!(mapping_id = %live.id, rule = %t.rule_name, claim = %t.claim, "mapping regex match timed out");
            node.audit.emit(regex_match_timeout(&live.id, &ext.provider.provider_id, &t.rule_name, &t.claim));
        }
        if let Some(m) = ev.result? {
            return Ok((live, m));
        }
    }
    Err(rulesets::no_rule_matched())
}

/// Logs the identity in and answers the Keystone token (200, body and `X-Subject-Token`).
pub async fn login(
    node: &Tokens,
    mapped: &MappedAuth,
    ext: External,
    scope: Option<&Value>,
    nocatalog: bool,
) -> ApiResult<Response> {
    mapped.auth_limit.check(&*node.raft, &ext.provider.id).await?;
    let (live, m) = evaluate(node, mapped, &ext)?;
    super::confine::rule(&node.engine.read(), node.fga.as_deref(), &live.rs, &m)?;
    let domain_ok = node.engine.read().domain(&m.identity.user_domain_id)?.is_some_and(|d| d.enabled);
    if !domain_ok {
        return Err(ApiError::unauthorized("The mapped user's domain does not exist or is disabled."));
    }
    let mode = m.identity.identity_mode.unwrap_or_else(|| default_mode(&ext.provider));
    let user = match mode {
        IdentityMode::Local => super::principal::local(node, mapped, &live, &m, &ext).await?,
        IdentityMode::Ephemeral => super::principal::ephemeral(node, mapped, &live, &m, &ext).await?,
    };
    let restriction = super::restricted::of_rule(node, &live.rs, &m.rule_name, &user)?;
    let scope = match &restriction {
        Some(r) => super::restricted::scope(node, r, scope, &user).await?,
        None => crate::auth::scope::requested(node, scope, &user).await?,
    };
    let now = now_micros();
    let payload = TokenPayload {
        version: crate::token::PAYLOAD_VERSION,
        user_id: user.id.clone(),
        methods: Method::Mapped as u8,
        scope,
        issued_at: now,
        expires_at: now + node.cfg.token_expiration_s * 1_000_000,
        audit_ids: vec![idnode_keys::random_bytes()],
        delegation: Delegation::Mapped(MappedGrant {
            mapping_id: live.id.clone(),
            rule_name: m.rule_name.clone(),
            ruleset_version: live.version.clone(),
            ephemeral: mode == IdentityMode::Ephemeral,
        }),
        restriction: restriction.map(|r| r.id),
        user_cutoff: Some(user.tokens_valid_after),
    };
    let token = node.seal_token(&payload)?;
    // Validation checks the scope (enabled, roles the mapping or the user holds) exactly as
    // every later validation will.
    let vt = node.validate_token(&token, false).await.map_err(|e| {
        if e.status == StatusCode::NOT_FOUND {
            ApiError::unauthorized("The mapped identity holds no role on the requested scope.")
        } else {
            e
        }
    })?;
    let kind = crate::auth::tokens::scope_label(&vt.payload.scope);
    node.metrics.tokens_issued.get_or_create(&labels(&[("scope", kind)])).inc();
    token_response(node, StatusCode::OK, &token, &vt, nocatalog)
}
