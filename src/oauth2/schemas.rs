//! The OAuth2 provider's answers: the handlers serialize these, the OpenAPI document
//! describes them.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use crate::http::openapi::{CollectionLinks, SelfLink};

/// A registered client (never its secret).
#[derive(Serialize, ToSchema)]
pub struct Client {
    pub id: String,
    pub client_id: String,
    pub domain_id: String,
    pub name: String,
    pub description: Option<String>,
    pub provider_id: Option<String>,
    pub confidential: bool,
    pub token_endpoint_auth_method: String,
    pub grant_types: Vec<String>,
    pub redirect_uris: Vec<String>,
    pub require_pkce: bool,
    pub allowed_scopes: Vec<String>,
    pub claims_template: BTreeMap<String, String>,
    pub pre_authorized: bool,
    pub enabled: bool,
    /// Unix seconds.
    pub created_at: i64,
    pub updated_at: i64,
    #[schema(value_type = SelfLink)]
    pub links: Link,
}

/// A resource's own URL, serialized as [`SelfLink`] describes it.
#[derive(Serialize)]
pub struct Link {
    #[serde(rename = "self")]
    pub self_: String,
}

#[derive(Serialize, ToSchema)]
pub struct ClientOne {
    pub oauth2_client: Client,
}

/// The create response: the only time (with rotate-secret) the secret is shown.
#[derive(Serialize, ToSchema)]
pub struct ClientCreated {
    pub oauth2_client: Client,
    /// Confidential clients only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the shared pager (`http::pages::page`) builds the list
pub struct ClientList {
    oauth2_clients: Vec<Client>,
    links: CollectionLinks,
}

#[derive(Serialize, ToSchema)]
pub struct ClientSecret {
    pub client_secret: String,
}

/// RFC 6749 §5.2 error body of the OAuth2 endpoints.
#[derive(Serialize, ToSchema)]
pub struct OAuthErrorBody {
    #[schema(example = "invalid_grant")]
    pub error: String,
    pub error_description: String,
}
