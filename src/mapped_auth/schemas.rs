//! Request bodies of the mapped logins (api-shapes §13.1–13.2; SPIFFE's mirrors Kubernetes').

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

/// `POST /v4/federation/identity_providers/{idp_id}/jwt`: optional; the JWT is the bearer.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct JwtLoginBody {
    #[serde(default)]
    pub auth: Option<ScopeOnly>,
}

/// `{"scope": …}` in the v3 format (project by id or name + domain, domain, system, or
/// `"unscoped"`); absent: unscoped.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ScopeOnly {
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub scope: Option<Value>,
}

/// `POST /v4/k8s_auth/instances/{id}/auth` and `POST /v4/spiffe/trust_domains/{id}/auth`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkloadLoginBody {
    /// The service-account token or the JWT-SVID.
    pub jwt: String,
    /// Evaluate only this rule (it must still match).
    #[serde(default)]
    pub rule_name: Option<String>,
    /// As in a v3 token request; absent: unscoped.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub scope: Option<Value>,
}

/// `POST /v4/federation/identity_providers/{idp_id}/auth`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BrowserStartBody {
    /// Where the IdP sends the browser back; one of the provider's `allowed_redirect_uris`.
    pub redirect_uri: String,
    /// The scope of the token the callback will issue.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub scope: Option<Value>,
}

/// `201` answer of the browser flow's start.
#[derive(serde::Serialize, ToSchema)]
pub struct BrowserStart {
    /// The IdP's authorization URL to send the browser to.
    pub auth_url: String,
}

/// `POST /v4/federation/oidc/callback`: what the IdP sent back to the redirect URI.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CallbackBody {
    pub state: String,
    pub code: String,
}
