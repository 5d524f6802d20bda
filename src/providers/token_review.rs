//! Kubernetes service-account tokens, verified by the cluster that issued them: a
//! `authentication.k8s.io/v1` `TokenReview` POSTed to
//! `{kubernetes_host}/apis/authentication.k8s.io/v1/tokenreviews` over HTTPS that trusts only
//! the instance's `kubernetes_ca_cert` (no built-in roots), presenting the instance's
//! `token_reviewer_jwt` as `Authorization: Bearer` (none configured: the reviewed token
//! itself, which then needs the `system:auth-delegator` role, as Vault does). Through the
//! node's outbound policy (`outbound`: public addresses only unless allowed, 5 s timeout, no
//! redirects, rate per host), answer at most 1 MiB.
//!
//! Claims handed to the mapping engine ([`ReviewedIdentity::claims`]):
//! - `sub` and `username`: the username the cluster reports;
//! - `uid`: the user's uid (`""` if the cluster gave none);
//! - `groups`: an array of the user's groups;
//! - `extra`: an object of arrays of strings, as the cluster reports it (e.g.
//!   `authentication.kubernetes.io/pod-name`);
//! - for service accounts (username `system:serviceaccount:<namespace>:<name>`) also
//!   `namespace`, `service_account`, and the same under the projected-token names
//!   `kubernetes.io/serviceaccount/namespace`,
//!   `kubernetes.io/serviceaccount/service-account.name` and
//!   `kubernetes.io/serviceaccount/service-account.uid` (= `uid`).

use serde::Deserialize;
use serde_json::{json, Map};

use super::jwks::read_capped;
use super::outbound::Outbound;
use super::verify::{Claims, VerifyError};
use crate::state::providers::ClusterIssuer;

pub const MAX_REVIEW_BYTES: usize = 1024 * 1024;
pub const TOKEN_REVIEW_PATH: &str = "/apis/authentication.k8s.io/v1/tokenreviews";

/// Who the cluster says the token belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct ReviewedIdentity {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl ReviewedIdentity {
    /// `(namespace, name)` for a service account's username.
    pub fn service_account(&self) -> Option<(&str, &str)> {
        let rest = self.username.strip_prefix("system:serviceaccount:")?;
        let (ns, name) = rest.split_once(':')?;
        (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
    }

    /// The claims the mapping engine sees (listed in the module description).
    pub fn claims(&self) -> Claims {
        let mut c = Map::new();
        c.insert("sub".into(), json!(self.username));
        c.insert("username".into(), json!(self.username));
        c.insert("uid".into(), json!(self.uid));
        c.insert("groups".into(), json!(self.groups));
        c.insert("extra".into(), json!(self.extra));
        if let Some((ns, name)) = self.service_account() {
            c.insert("namespace".into(), json!(ns));
            c.insert("service_account".into(), json!(name));
            c.insert("kubernetes.io/serviceaccount/namespace".into(), json!(ns));
            c.insert("kubernetes.io/serviceaccount/service-account.name".into(), json!(name));
            c.insert("kubernetes.io/serviceaccount/service-account.uid".into(), json!(self.uid));
        }
        c
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ReviewStatus {
    authenticated: bool,
    user: Option<ReviewedIdentity>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct Review {
    #[serde(default)]
    status: ReviewStatus,
}

fn unavailable(why: impl Into<String>) -> VerifyError {
    VerifyError::ReviewUnavailable(why.into())
}

/// The HTTPS client of one instance: its CA certificates only.
fn client(outbound: &Outbound, instance: &ClusterIssuer) -> Result<reqwest::Client, VerifyError> {
    let Some(ca) = instance.kubernetes_ca_cert.as_deref() else {
        return Err(unavailable("the instance has no kubernetes_ca_cert"));
    };
    let certs = reqwest::Certificate::from_pem_bundle(ca.as_bytes())
        .map_err(|_| unavailable("kubernetes_ca_cert does not parse"))?;
    if certs.is_empty() {
        return Err(unavailable("kubernetes_ca_cert holds no certificate"));
    }
    let mut builder = outbound.builder().use_rustls_tls().tls_built_in_root_certs(false).https_only(true);
    for cert in certs {
        builder = builder.add_root_certificate(cert);
    }
    builder.build().map_err(|e| unavailable(format!("no HTTPS client: {e}")))
}

/// Asks the instance's cluster who `token` belongs to.
pub async fn review(
    outbound: &Outbound,
    instance: &ClusterIssuer,
    token: &str,
) -> Result<ReviewedIdentity, VerifyError> {
    let client = client(outbound, instance)?;
    let url = format!("{}{TOKEN_REVIEW_PATH}", instance.kubernetes_host.trim_end_matches('/'));
    let reviewer = instance.token_reviewer_jwt.as_ref().map_or(token, |s| s.0.as_str());
    let body = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token},
    });
    let req = client.post(url).bearer_auth(reviewer).header(reqwest::header::ACCEPT, "application/json").json(&body);
    let mut resp = outbound.send(&client, req).await.map_err(unavailable)?;
    let status = resp.status();
    let bytes = read_capped(&mut resp, MAX_REVIEW_BYTES).await.map_err(unavailable)?;
    if !status.is_success() {
        return Err(unavailable(format!("the API server answered {status}")));
    }
    let review: Review =
        serde_json::from_slice(&bytes).map_err(|_| unavailable("the API server's answer is not a TokenReview"))?;
    let st = review.status;
    match (st.authenticated, st.user) {
        (true, Some(user)) if !user.username.is_empty() => Ok(user),
        (true, _) => Err(unavailable("the review names no user")),
        (false, _) => Err(VerifyError::NotAuthenticated(st.error.map(|e| e.chars().take(200).collect()))),
    }
}
