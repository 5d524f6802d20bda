//! The bodies (without their envelope) that set up a SCIM realm: the OIDC provider `okta` the
//! realm points at, the realm, the ruleset granting its keys a role, and a key. Only
//! `serde_json`, so the black-box tests in `tests/it` use this same file (`#[path]`).

use serde_json::{json, Value};

/// The OIDC provider `okta` of domain `d`.
pub fn idp(d: &str, client_id: &str) -> Value {
    json!({"domain_id": d, "provider_id": "okta", "issuer": "https://okta.example", "client_id": client_id,
           "jwks_uri": "https://okta.example/jwks"})
}

/// The realm of `provider` in domain `d`, over the provider `idp`.
pub fn realm(d: &str, provider: &str, idp: &str, display_name: &str) -> Value {
    json!({"domain_id": d, "provider_id": provider, "idp_id": idp, "display_name": display_name})
}

/// An authorization granting `role` on domain `d`.
pub fn on_domain(d: &str, role: &str) -> Value {
    json!({"type": "domain", "domain_id": d, "roles": [{"id": role}]})
}

/// A ruleset of `provider` with one rule `name` matching its keys, who become the user
/// `scim-{client id}` with `authorization`.
pub fn ruleset(d: &str, provider: &str, idp: &str, name: &str, authorization: Value) -> Value {
    let rule = json!({"name": name, "match": {"all_of": [{"type": "equals", "claim": "provider_id", "value": provider}]},
        "identity": {"user_name": "scim-${claims.client_id}"}, "authorizations": [authorization]});
    json!({"domain_id": d, "provider_id": provider, "source": {"type": "federation", "idp_id": idp}, "rules": [rule]})
}

/// A key of `provider`'s realm, valid until `expires_at`.
pub fn key(d: &str, provider: &str, expires_at: &str) -> Value {
    json!({"domain_id": d, "provider_id": provider, "expires_at": expires_at})
}
