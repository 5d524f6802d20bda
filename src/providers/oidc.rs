//! External OpenID Connect identity providers, `/v4/federation/identity_providers`
//! (envelope `identity_provider`): the spec's OIDC provider fields. The client secret is
//! write-only: stored sealed, shown only as `client_secret_set`.

use serde::Deserialize;
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use super::registry::{bad, https_url, registry_handlers, registry_kind, required, text, Registry};
use crate::http::error::ApiResult;
use crate::http::openapi::{CollectionLinks, SelfLink};
use crate::state::providers::{OidcProvider, Secret};

/// Client authentication methods at the provider's token endpoint.
pub const AUTH_METHODS: &[&str] = &["client_secret_basic", "client_secret_post", "none", "private_key_jwt"];

/// An identity provider as written by create (`provider_id`, `issuer`, `client_id` and
/// `jwks_uri` required) and PATCH (absent fields are kept; `null` clears `client_secret`
/// and `token_endpoint_auth_method`). No `Debug`: it carries the secret in clear.
#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IdpBody {
    /// Server-chosen; accepted only when equal to the path's (PATCH).
    pub id: Option<String>,
    /// The owning domain; absent or null: a global provider (cloud admins only). Fixed.
    #[serde(default, deserialize_with = "crate::http::fields::present")]
    #[schema(value_type = Option<String>)]
    pub domain_id: Option<Option<String>>,
    /// The mapping coordinate: unique per domain (letters, digits, `.`, `-`, `_`).
    pub provider_id: Option<String>,
    /// The `iss` of the provider's tokens: an https URL (http only for loopback hosts, which
    /// need `[federation] allow_private_networks`).
    pub issuer: Option<String>,
    /// This service's client id at the provider (the `aud` its tokens must carry).
    pub client_id: Option<String>,
    /// Write-only: never returned.
    #[serde(default, deserialize_with = "crate::http::fields::present")]
    #[schema(value_type = Option<String>, write_only)]
    pub client_secret: Option<Option<String>>,
    /// The provider's key set: an https URL at a public address (unless
    /// `[federation] allow_private_networks`; then http is accepted for loopback hosts).
    pub jwks_uri: Option<String>,
    pub allowed_redirect_uris: Option<Vec<String>>,
    pub oidc_scopes: Option<Vec<String>>,
    /// `client_secret_basic`, `client_secret_post`, `none` or `private_key_jwt`.
    #[serde(default, deserialize_with = "crate::http::fields::present")]
    #[schema(value_type = Option<String>)]
    pub token_endpoint_auth_method: Option<Option<String>>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IdpEnvelope {
    pub identity_provider: IdpBody,
}

impl IdpEnvelope {
    fn into_body(self) -> IdpBody {
        self.identity_provider
    }
}

/// An identity provider as the API shows it.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: `Registry::render` writes the body
pub struct IdentityProvider {
    id: String,
    domain_id: Option<String>,
    provider_id: String,
    issuer: String,
    client_id: String,
    /// Whether a client secret is stored (the secret itself is never shown).
    client_secret_set: bool,
    jwks_uri: String,
    allowed_redirect_uris: Vec<String>,
    oidc_scopes: Vec<String>,
    token_endpoint_auth_method: Option<String>,
    /// Unix seconds.
    created_at: i64,
    updated_at: i64,
    links: SelfLink,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct IdentityProviderOne {
    identity_provider: IdentityProvider,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct IdentityProviderList {
    identity_providers: Vec<IdentityProvider>,
    links: CollectionLinks,
}

pub struct Oidc;

impl Registry for Oidc {
    registry_kind! {
        variant = Oidc, path = "/v4/federation/identity_providers", envelope = "identity_provider", collection = "identity_providers",
        body = IdpBody, config = OidcProvider,
    }

    fn merge(current: Option<OidcProvider>, b: IdpBody) -> ApiResult<OidcProvider> {
        let mut c = match current {
            Some(c) => c,
            None => OidcProvider {
                issuer: required("issuer", b.issuer.clone())?,
                client_id: required("client_id", b.client_id.clone())?,
                client_secret: None,
                jwks_uri: required("jwks_uri", b.jwks_uri.clone())?,
                allowed_redirect_uris: Vec::new(),
                oidc_scopes: vec!["openid".to_string()],
                token_endpoint_auth_method: None,
            },
        };
        if let Some(v) = b.issuer {
            c.issuer = https_url("issuer", v)?;
        }
        if let Some(v) = b.client_id {
            c.client_id = text("client_id", v, 255)?;
        }
        if let Some(v) = b.client_secret {
            c.client_secret = v.map(|s| text("client_secret", s, 4096).map(Secret)).transpose()?;
        }
        if let Some(v) = b.jwks_uri {
            c.jwks_uri = https_url("jwks_uri", v)?;
        }
        if let Some(uris) = b.allowed_redirect_uris {
            if uris.len() > 32 {
                return Err(bad("allowed_redirect_uris", "at most 32 URIs."));
            }
            c.allowed_redirect_uris =
                uris.into_iter().map(|u| https_url("allowed_redirect_uris", u)).collect::<ApiResult<_>>()?;
        }
        if let Some(scopes) = b.oidc_scopes {
            if scopes.len() > 64 {
                return Err(bad("oidc_scopes", "at most 64 scopes."));
            }
            if let Some(s) = scopes.iter().find(|s| s.is_empty() || s.len() > 255 || s.contains(char::is_whitespace)) {
                return Err(bad("oidc_scopes", format!("{s:?} is not a scope (a non-empty string without spaces).")));
            }
            let mut out: Vec<String> = Vec::new();
            for s in scopes {
                if !out.contains(&s) {
                    out.push(s);
                }
            }
            c.oidc_scopes = out;
        }
        if let Some(m) = b.token_endpoint_auth_method {
            if let Some(m) = &m {
                if !AUTH_METHODS.contains(&m.as_str()) {
                    return Err(bad("token_endpoint_auth_method", format!("one of {}.", AUTH_METHODS.join(", "))));
                }
            }
            c.token_endpoint_auth_method = m;
        }
        Ok(c)
    }

    fn render(c: &OidcProvider, out: &mut Map<String, Value>) {
        out.insert("issuer".into(), json!(c.issuer));
        out.insert("client_id".into(), json!(c.client_id));
        out.insert("client_secret_set".into(), json!(c.client_secret.is_some()));
        out.insert("jwks_uri".into(), json!(c.jwks_uri));
        out.insert("allowed_redirect_uris".into(), json!(c.allowed_redirect_uris));
        out.insert("oidc_scopes".into(), json!(c.oidc_scopes));
        out.insert("token_endpoint_auth_method".into(), json!(c.token_endpoint_auth_method));
    }

    /// The key set, and the issuer (its discovery document, for the browser flow).
    fn fetched_urls(c: &OidcProvider) -> Vec<(&'static str, String)> {
        vec![("issuer", c.issuer.clone()), ("jwks_uri", c.jwks_uri.clone())]
    }
}

registry_handlers! {
    registry = Oidc, tag = "identity_providers",
    path = "/v4/federation/identity_providers", item_path = "/v4/federation/identity_providers/{id}",
    ops = ["v4_identity_providers_list", "v4_identity_providers_create", "v4_identity_providers_get",
           "v4_identity_providers_update", "v4_identity_providers_delete"],
    envelope = IdpEnvelope, one = IdentityProviderOne, list = IdentityProviderList,
}
