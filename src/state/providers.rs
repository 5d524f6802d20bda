//! The provider registries' persisted model: external identity providers (OIDC), Kubernetes
//! cluster issuers and SPIFFE workload trust domains, in the `providers` column family. One
//! record shape for all three (the common head: id, owning domain, `provider_id` handle,
//! times; and the kind's own configuration), one pair of commands.
//!
//! Secrets (an OIDC client secret, a Kubernetes token-reviewer JWT) are kept as values the
//! provider needs in clear to present them: sealed at rest like every value, never rendered,
//! and redacted from `Debug` (so never logged).

use serde::{Deserialize, Serialize};

/// Key layouts of the `providers` column family.
pub mod keys {
    use crate::state::providers::ProviderKind;

    /// A record by kind and server-assigned id.
    pub fn record(kind: ProviderKind, id: &str) -> Vec<u8> {
        format!("r/{}/{id}", kind.tag()).into_bytes()
    }
    pub fn records_prefix(kind: ProviderKind) -> Vec<u8> {
        format!("r/{}/", kind.tag()).into_bytes()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProviderKind {
    Oidc,
    K8s,
    Spiffe,
}

impl ProviderKind {
    pub fn tag(self) -> &'static str {
        match self {
            ProviderKind::Oidc => "oidc",
            ProviderKind::K8s => "k8s",
            ProviderKind::Spiffe => "spiffe",
        }
    }

    /// The keyed-hash name index (`cf::NAMES`) of the kind's `provider_id` handles, scoped by
    /// domain id (`""`: global providers): unique per kind and domain, and never stored in
    /// clear (as with every name).
    pub fn handle_ns(self) -> &'static str {
        match self {
            ProviderKind::Oidc => "provider-id-oidc",
            ProviderKind::K8s => "provider-id-k8s",
            ProviderKind::Spiffe => "provider-id-spiffe",
        }
    }

    /// The resource's name in messages and policy (`identity/<name>/*`).
    pub fn resource(self) -> &'static str {
        match self {
            ProviderKind::Oidc => "identity_provider",
            ProviderKind::K8s => "k8s_instance",
            ProviderKind::Spiffe => "trust_domain",
        }
    }
}

/// A secret the service must present in clear (to an IdP's token endpoint, to a TokenReview
/// API). Serialized as is (the storage layer seals every value); `Debug` shows no byte of it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// An external OpenID Connect identity provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OidcProvider {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<Secret>,
    pub jwks_uri: String,
    pub allowed_redirect_uris: Vec<String>,
    pub oidc_scopes: Vec<String>,
    pub token_endpoint_auth_method: Option<String>,
}

/// A Kubernetes cluster whose service-account tokens are verified with its TokenReview API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterIssuer {
    pub kubernetes_host: String,
    /// PEM certificates the API server's TLS certificate must chain to.
    pub kubernetes_ca_cert: Option<String>,
    pub token_reviewer_jwt: Option<Secret>,
    pub disable_local_ca_jwt: bool,
}

/// A SPIFFE trust domain whose JWT-SVIDs are verified offline against its bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustDomain {
    pub trust_domain: String,
    pub trust_bundle_pem: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ProviderConfig {
    Oidc(OidcProvider),
    K8s(ClusterIssuer),
    Spiffe(TrustDomain),
}

impl ProviderConfig {
    pub fn kind(&self) -> ProviderKind {
        match self {
            ProviderConfig::Oidc(_) => ProviderKind::Oidc,
            ProviderConfig::K8s(_) => ProviderKind::K8s,
            ProviderConfig::Spiffe(_) => ProviderKind::Spiffe,
        }
    }
}

/// One registered provider of any kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provider {
    pub id: String,
    /// The owning domain; `None`: global (administered by cloud admins only).
    pub domain_id: Option<String>,
    /// The mapping coordinate (`domain_id`, `provider_id`): unique per kind and domain.
    pub provider_id: String,
    pub config: ProviderConfig,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Provider {
    pub fn kind(&self) -> ProviderKind {
        self.config.kind()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ProviderCommand {
    /// Creates (`create`: the id must be free) or replaces (it must exist, same kind and
    /// domain) a provider; its `provider_id` must be free in its kind and domain.
    Put {
        provider: Box<Provider>,
        create: bool,
    },
    Delete {
        kind: ProviderKind,
        id: String,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ProviderApplied {
    Done,
    Provider(Box<Provider>),
}
