//! OpenAPI schemas of the OAuth2 provider's bodies. Schema only.
#![allow(dead_code)]

use std::collections::BTreeMap;

use utoipa::ToSchema;

use crate::http::openapi::{CollectionLinks, SelfLink};

/// A registered client (never its secret).
#[derive(ToSchema)]
pub struct Client {
    id: String,
    client_id: String,
    domain_id: String,
    name: String,
    description: Option<String>,
    provider_id: Option<String>,
    confidential: bool,
    token_endpoint_auth_method: String,
    grant_types: Vec<String>,
    redirect_uris: Vec<String>,
    require_pkce: bool,
    allowed_scopes: Vec<String>,
    claims_template: BTreeMap<String, String>,
    pre_authorized: bool,
    enabled: bool,
    /// Unix seconds.
    created_at: i64,
    updated_at: i64,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct ClientOne {
    oauth2_client: Client,
}

/// The create response: the only time (with rotate-secret) the secret is shown.
#[derive(ToSchema)]
pub struct ClientCreated {
    oauth2_client: Client,
    /// Confidential clients only.
    client_secret: Option<String>,
}

#[derive(ToSchema)]
pub struct ClientList {
    oauth2_clients: Vec<Client>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
pub struct ClientSecret {
    client_secret: String,
}

/// RFC 6749 §5.2 error body of the OAuth2 endpoints.
#[derive(ToSchema)]
pub struct OAuthErrorBody {
    #[schema(example = "invalid_grant")]
    error: String,
    error_description: String,
}
