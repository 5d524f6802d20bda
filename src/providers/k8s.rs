//! Kubernetes cluster issuers, `/v4/k8s_auth/instances` (envelope `instance`, as the
//! upstream API names it): where service-account tokens are checked with the cluster's
//! TokenReview API. The reviewer JWT is write-only: stored sealed, shown only as
//! `token_reviewer_jwt_set`.

use serde::Deserialize;
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use super::registry::{bad, pem_certificates, registry_handlers, registry_kind, required, text, Registry};
use crate::http::error::ApiResult;
use crate::http::openapi::{CollectionLinks, SelfLink};
use crate::state::providers::{ClusterIssuer, Secret};

/// A cluster issuer as written by create (`provider_id` and `kubernetes_host` required) and
/// PATCH (absent fields are kept; `null` clears `kubernetes_ca_cert` and
/// `token_reviewer_jwt`). No `Debug`: it carries the JWT in clear.
#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InstanceBody {
    /// Server-chosen; accepted only when equal to the path's (PATCH).
    pub id: Option<String>,
    /// The owning domain; absent or null: a global issuer (cloud admins only). Fixed.
    #[serde(default, deserialize_with = "crate::http::fields::present")]
    #[schema(value_type = Option<String>)]
    pub domain_id: Option<Option<String>>,
    /// The mapping coordinate: unique per domain (letters, digits, `.`, `-`, `_`).
    pub provider_id: Option<String>,
    /// The API server: an `https` URL at a public address (unless
    /// `[federation] allow_private_networks`).
    pub kubernetes_host: Option<String>,
    /// PEM certificates the API server's certificate must chain to.
    #[serde(default, deserialize_with = "crate::http::fields::present")]
    #[schema(value_type = Option<String>)]
    pub kubernetes_ca_cert: Option<Option<String>>,
    /// Write-only: the JWT this service presents to the TokenReview API.
    #[serde(default, deserialize_with = "crate::http::fields::present")]
    #[schema(value_type = Option<String>, write_only)]
    pub token_reviewer_jwt: Option<Option<String>>,
    pub disable_local_ca_jwt: Option<bool>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InstanceEnvelope {
    pub instance: InstanceBody,
}

impl InstanceEnvelope {
    fn into_body(self) -> InstanceBody {
        self.instance
    }
}

/// A cluster issuer as the API shows it.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: `Registry::render` writes the body
pub struct Instance {
    id: String,
    domain_id: Option<String>,
    provider_id: String,
    kubernetes_host: String,
    kubernetes_ca_cert: Option<String>,
    /// Whether a reviewer JWT is stored (the JWT itself is never shown).
    token_reviewer_jwt_set: bool,
    disable_local_ca_jwt: bool,
    /// Unix seconds.
    created_at: i64,
    updated_at: i64,
    links: SelfLink,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct InstanceOne {
    instance: Instance,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct InstanceList {
    instances: Vec<Instance>,
    links: CollectionLinks,
}

/// `https://host[:port][/path]`, nothing else: the TokenReview API is called over TLS only.
fn kubernetes_host(v: String) -> ApiResult<String> {
    let ok = url::Url::parse(&v)
        .is_ok_and(|u| u.scheme() == "https" && u.host().is_some() && u.query().is_none() && u.fragment().is_none());
    if !ok || v.len() > 2048 {
        return Err(bad("kubernetes_host", format!("{v:?} is not an https URL without query or fragment.")));
    }
    Ok(v)
}

pub struct K8s;

impl Registry for K8s {
    registry_kind! {
        variant = K8s, path = "/v4/k8s_auth/instances", envelope = "instance", collection = "instances",
        body = InstanceBody, config = ClusterIssuer,
    }

    fn merge(current: Option<ClusterIssuer>, b: InstanceBody) -> ApiResult<ClusterIssuer> {
        let mut c = match current {
            Some(c) => c,
            None => ClusterIssuer {
                kubernetes_host: required("kubernetes_host", b.kubernetes_host.clone())?,
                kubernetes_ca_cert: None,
                token_reviewer_jwt: None,
                disable_local_ca_jwt: false,
            },
        };
        if let Some(v) = b.kubernetes_host {
            c.kubernetes_host = kubernetes_host(v)?;
        }
        if let Some(v) = b.kubernetes_ca_cert {
            c.kubernetes_ca_cert = v.map(|pem| pem_certificates("kubernetes_ca_cert", pem)).transpose()?;
        }
        if let Some(v) = b.token_reviewer_jwt {
            c.token_reviewer_jwt = v.map(|jwt| text("token_reviewer_jwt", jwt, 16 * 1024).map(Secret)).transpose()?;
        }
        if let Some(v) = b.disable_local_ca_jwt {
            c.disable_local_ca_jwt = v;
        }
        Ok(c)
    }

    fn render(c: &ClusterIssuer, out: &mut Map<String, Value>) {
        out.insert("kubernetes_host".into(), json!(c.kubernetes_host));
        out.insert("kubernetes_ca_cert".into(), json!(c.kubernetes_ca_cert));
        out.insert("token_reviewer_jwt_set".into(), json!(c.token_reviewer_jwt.is_some()));
        out.insert("disable_local_ca_jwt".into(), json!(c.disable_local_ca_jwt));
    }

    fn fetched_urls(c: &ClusterIssuer) -> Vec<(&'static str, String)> {
        vec![("kubernetes_host", c.kubernetes_host.clone())]
    }
}

registry_handlers! {
    registry = K8s, tag = "k8s_auth",
    path = "/v4/k8s_auth/instances", item_path = "/v4/k8s_auth/instances/{id}",
    ops = ["v4_k8s_instances_list", "v4_k8s_instances_create", "v4_k8s_instances_get",
           "v4_k8s_instances_update", "v4_k8s_instances_delete"],
    envelope = InstanceEnvelope, one = InstanceOne, list = InstanceList,
}
