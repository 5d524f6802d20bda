//! OpenAPI schemas of the OS-OAUTH1 objects, and the typed consumer bodies (with Keystone's
//! checks).

use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::http::body::{envelope, Checked};
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{present, Obj};
use crate::http::openapi::{CollectionLinks, SelfLink};

/// An OAuth1 consumer; other attributes given on create are kept and shown.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct Consumer {
    id: String,
    description: Option<String>,
    links: SelfLink,
}

/// The create response: the only time the secret is shown.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct ConsumerWithSecret {
    id: String,
    description: Option<String>,
    secret: String,
    links: SelfLink,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct ConsumerCreated {
    consumer: ConsumerWithSecret,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct ConsumerEnvelope {
    consumer: Consumer,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct ConsumerList {
    consumers: Vec<Consumer>,
    links: CollectionLinks,
}

/// A role to delegate: exactly one of `id` or `name`.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handler reads an optional body itself
pub struct AuthorizeRole {
    id: Option<String>,
    name: Option<String>,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handler reads an optional body itself
pub struct AuthorizeRequest {
    roles: Vec<AuthorizeRole>,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct Verifier {
    /// Eight characters the consumer sends with the access-token exchange.
    oauth_verifier: String,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct AuthorizeResponse {
    token: Verifier,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct AccessTokenLinks {
    #[schema(rename = "self")]
    self_: String,
    roles: String,
}

/// An access token (never its secret).
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
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
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct AccessTokenEnvelope {
    access_token: AccessToken,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct AccessTokenList {
    access_tokens: Vec<AccessToken>,
    links: CollectionLinks,
}

/// A delegated role (the role without its description).
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct AccessTokenRole {
    id: String,
    name: String,
    domain_id: Option<String>,
    options: std::collections::BTreeMap<String, serde_json::Value>,
    links: SelfLink,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct AccessTokenRoleEnvelope {
    role: AccessTokenRole,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct AccessTokenRoleList {
    roles: Vec<AccessTokenRole>,
    links: CollectionLinks,
}

/// `POST /v3/OS-OAUTH1/consumers`.
#[derive(Deserialize, ToSchema)]
pub struct ConsumerRequest {
    pub consumer: ConsumerBody,
}

impl Checked for ConsumerRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = envelope(raw, "consumer")?;
        if o.contains_key("secret") {
            return Err(ApiError::bad_request("Invalid input for field/attribute secret: the server chooses secrets."));
        }
        check_description(o)
    }
}

/// `PATCH /v3/OS-OAUTH1/consumers/{consumer_id}`: at least one attribute, not `secret`; `id`,
/// if sent, must be the consumer's own.
#[derive(Deserialize, ToSchema)]
pub struct ConsumerUpdateRequest {
    pub consumer: ConsumerBody,
}

impl ConsumerUpdateRequest {
    /// The checks made before the body's `id` is compared with the path's.
    pub fn check_head(o: &Obj) -> ApiResult<()> {
        if o.is_empty() {
            return Err(ApiError::bad_request(
                "Invalid input for field/attribute consumer. Value: {}. {} should be non-empty",
            ));
        }
        if o.contains_key("secret") {
            return Err(ApiError::bad_request(
                "Invalid input for field/attribute secret: a consumer's secret cannot be changed.",
            ));
        }
        Ok(())
    }
}

impl Checked for ConsumerUpdateRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = envelope(raw, "consumer")?;
        Self::check_head(o)?;
        check_description(o)
    }
}

/// Other attributes are kept (Keystone's schema allows them); `secret` and `id` are the
/// server's.
#[derive(Deserialize, ToSchema)]
pub struct ConsumerBody {
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    /// Other attributes, kept and shown.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ConsumerBody {
    /// The stored attributes: the others, and `description` when sent.
    pub fn stored(self) -> Obj {
        let mut out: Obj = self.extra.into_iter().filter(|(k, _)| k != "links" && k != "id").collect();
        if let Some(d) = self.description {
            out.insert("description".into(), d.map_or(Value::Null, Value::String));
        }
        out
    }
}

fn check_description(o: &Obj) -> ApiResult<()> {
    if o.get("description").is_some_and(|d| !d.is_null() && !d.is_string()) {
        return Err(ApiError::bad_request(
            "Invalid input for field/attribute description. Value must be a string or null.",
        ));
    }
    Ok(())
}
