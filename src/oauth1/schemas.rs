//! OpenAPI schemas of the OS-OAUTH1 bodies. Schema only.
#![allow(dead_code)]

use utoipa::ToSchema;

use crate::http::openapi::{CollectionLinks, SelfLink};

/// An OAuth1 consumer; other attributes given on create are kept and shown.
#[derive(ToSchema)]
pub struct Consumer {
    id: String,
    description: Option<String>,
    links: SelfLink,
}

/// The create response: the only time the secret is shown.
#[derive(ToSchema)]
pub struct ConsumerWithSecret {
    id: String,
    description: Option<String>,
    secret: String,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct ConsumerCreated {
    consumer: ConsumerWithSecret,
}

#[derive(ToSchema)]
pub struct ConsumerEnvelope {
    consumer: Consumer,
}

#[derive(ToSchema)]
pub struct ConsumerList {
    consumers: Vec<Consumer>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
pub struct ConsumerBody {
    description: Option<String>,
}

#[derive(ToSchema)]
pub struct ConsumerRequest {
    consumer: ConsumerBody,
}

/// A role to delegate: exactly one of `id` or `name`.
#[derive(ToSchema)]
pub struct AuthorizeRole {
    id: Option<String>,
    name: Option<String>,
}

#[derive(ToSchema)]
pub struct AuthorizeRequest {
    roles: Vec<AuthorizeRole>,
}

#[derive(ToSchema)]
pub struct Verifier {
    /// Eight characters the consumer sends with the access-token exchange.
    oauth_verifier: String,
}

#[derive(ToSchema)]
pub struct AuthorizeResponse {
    token: Verifier,
}

#[derive(ToSchema)]
pub struct AccessTokenLinks {
    #[schema(rename = "self")]
    self_: String,
    roles: String,
}

/// An access token (never its secret).
#[derive(ToSchema)]
pub struct AccessToken {
    id: String,
    consumer_id: String,
    project_id: String,
    authorizing_user_id: String,
    /// `2026-11-24T10:56:42.000000Z`, or null when access tokens do not expire.
    expires_at: Option<String>,
    links: AccessTokenLinks,
}

#[derive(ToSchema)]
pub struct AccessTokenEnvelope {
    access_token: AccessToken,
}

#[derive(ToSchema)]
pub struct AccessTokenList {
    access_tokens: Vec<AccessToken>,
    links: CollectionLinks,
}

/// A delegated role (the role without its description).
#[derive(ToSchema)]
pub struct AccessTokenRole {
    id: String,
    name: String,
    domain_id: Option<String>,
    options: std::collections::BTreeMap<String, serde_json::Value>,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct AccessTokenRoleEnvelope {
    role: AccessTokenRole,
}

#[derive(ToSchema)]
pub struct AccessTokenRoleList {
    roles: Vec<AccessTokenRole>,
    links: CollectionLinks,
}
