//! SPIFFE workload trust domains, `/v4/spiffe/trust_domains` (envelope `trust_domain`):
//! a trust domain name and the bundle its JWT-SVIDs are verified against offline.

use serde::Deserialize;
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use super::registry::{bad, pem_certificates, registry_handlers, registry_kind, required, Registry};
use crate::http::error::ApiResult;
use crate::http::openapi::{CollectionLinks, SelfLink};
use crate::state::providers::TrustDomain;

/// A trust domain as written by create (every field required) and PATCH (absent fields are
/// kept).
#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TrustDomainBody {
    /// Server-chosen; accepted only when equal to the path's (PATCH).
    pub id: Option<String>,
    /// The owning domain; absent or null: a global trust domain (cloud admins only). Fixed.
    #[serde(default, deserialize_with = "crate::http::fields::present")]
    #[schema(value_type = Option<String>)]
    pub domain_id: Option<Option<String>>,
    /// The mapping coordinate: unique per domain (letters, digits, `.`, `-`, `_`).
    pub provider_id: Option<String>,
    /// The trust domain name, e.g. `prod.example.org` (lowercase letters, digits, `.`, `-`,
    /// `_`; no `spiffe://`).
    pub trust_domain: Option<String>,
    /// The bundle: PEM certificates.
    pub trust_bundle_pem: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TrustDomainEnvelope {
    pub trust_domain: TrustDomainBody,
}

impl TrustDomainEnvelope {
    fn into_body(self) -> TrustDomainBody {
        self.trust_domain
    }
}

/// A trust domain as the API shows it.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: `Registry::render` writes the body
pub struct TrustDomainView {
    id: String,
    domain_id: Option<String>,
    provider_id: String,
    trust_domain: String,
    trust_bundle_pem: String,
    /// Unix seconds.
    created_at: i64,
    updated_at: i64,
    links: SelfLink,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct TrustDomainOne {
    trust_domain: TrustDomainView,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct TrustDomainList {
    trust_domains: Vec<TrustDomainView>,
    links: CollectionLinks,
}

/// A SPIFFE trust domain name (SPIFFE-ID §2.1): lowercase letters, digits, `.`, `-`, `_`.
pub fn trust_domain_name(v: String) -> ApiResult<String> {
    if v.starts_with("spiffe://") {
        return Err(bad("trust_domain", "the name only, without the spiffe:// scheme."));
    }
    let ok = !v.is_empty()
        && v.len() <= 255
        && v.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
    if !ok {
        return Err(bad(
            "trust_domain",
            format!("{v:?} is not a trust domain name (lowercase letters, digits, '.', '-', '_')."),
        ));
    }
    Ok(v)
}

pub struct Spiffe;

impl Registry for Spiffe {
    registry_kind! {
        variant = Spiffe, path = "/v4/spiffe/trust_domains", envelope = "trust_domain", collection = "trust_domains",
        body = TrustDomainBody, config = TrustDomain,
    }

    fn merge(current: Option<TrustDomain>, b: TrustDomainBody) -> ApiResult<TrustDomain> {
        let mut c = match current {
            Some(c) => c,
            None => TrustDomain {
                trust_domain: required("trust_domain", b.trust_domain.clone())?,
                trust_bundle_pem: required("trust_bundle_pem", b.trust_bundle_pem.clone())?,
            },
        };
        if let Some(v) = b.trust_domain {
            c.trust_domain = trust_domain_name(v)?;
        }
        if let Some(v) = b.trust_bundle_pem {
            c.trust_bundle_pem = pem_certificates("trust_bundle_pem", v)?;
        }
        Ok(c)
    }

    fn render(c: &TrustDomain, out: &mut Map<String, Value>) {
        out.insert("trust_domain".into(), json!(c.trust_domain));
        out.insert("trust_bundle_pem".into(), json!(c.trust_bundle_pem));
    }
}

registry_handlers! {
    registry = Spiffe, tag = "spiffe",
    path = "/v4/spiffe/trust_domains", item_path = "/v4/spiffe/trust_domains/{id}",
    ops = ["v4_trust_domains_list", "v4_trust_domains_create", "v4_trust_domains_get",
           "v4_trust_domains_update", "v4_trust_domains_delete"],
    envelope = TrustDomainEnvelope, one = TrustDomainOne, list = TrustDomainList,
}
