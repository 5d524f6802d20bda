//! OpenAPI schemas of the OS-OAUTH1 objects, and the typed consumer and authorize bodies
//! (with Keystone's checks).

use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::http::body::{Kept, Sent};
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Obj;
use crate::http::openapi::SelfLink;
use crate::http::wrappers::{envelopes, member_requests};

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

envelopes! { schema_only:
    ConsumerCreated { consumer: ConsumerWithSecret }
    ConsumerEnvelope { consumer: Consumer }
    ConsumerList { consumers: [Consumer] }
}

/// A role to delegate: exactly one of `id` or `name`.
#[derive(Deserialize, ToSchema)]
pub struct AuthorizeRole {
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub name: Sent<String>,
}

/// The body may be absent: no roles.
#[derive(Deserialize, ToSchema)]
pub struct AuthorizeRequest {
    #[serde(default)]
    #[schema(value_type = Vec<AuthorizeRole>, required = true)]
    pub roles: Sent<Vec<Sent<Kept<AuthorizeRole>>>>,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct Verifier {
    /// Eight characters the consumer sends with the access-token exchange.
    oauth_verifier: String,
}

envelopes! { schema_only:
    AuthorizeResponse { token: Verifier }
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

envelopes! { schema_only:
    AccessTokenEnvelope { access_token: AccessToken }
    AccessTokenList { access_tokens: [AccessToken] }
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

envelopes! { schema_only:
    AccessTokenRoleEnvelope { role: AccessTokenRole }
    AccessTokenRoleList { roles: [AccessTokenRole] }
}

member_requests! {
    /// `POST /v3/OS-OAUTH1/consumers`.
    ConsumerRequest { consumer: ConsumerBody }
    /// `PATCH /v3/OS-OAUTH1/consumers/{consumer_id}`: at least one attribute, not `secret`; `id`,
    /// if sent, must be the consumer's own.
    ConsumerUpdateRequest { consumer: ConsumerBody }
}

/// Other attributes are kept (Keystone's schema allows them); `secret` and `id` are the
/// server's.
#[derive(Deserialize, ToSchema)]
pub struct ConsumerBody {
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    /// Refused: the server chooses secrets.
    #[serde(default)]
    #[schema(ignore)]
    pub secret: Sent<Value>,
    /// Other attributes, kept and shown.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ConsumerBody {
    /// Keystone's checks of an update made before the body's `id` is compared with the
    /// path's: at least one attribute, and no secret.
    pub fn check_update(&self) -> ApiResult<()> {
        if self.extra.is_empty() && !self.description.is_present() && !self.secret.is_present() {
            return Err(ApiError::bad_request(
                "Invalid input for field/attribute consumer. Value: {}. {} should be non-empty",
            ));
        }
        if self.secret.is_present() {
            return Err(ApiError::bad_request(
                "Invalid input for field/attribute secret: a consumer's secret cannot be changed.",
            ));
        }
        Ok(())
    }

    /// The stored attributes: the others, and `description` when sent (a string or null).
    pub fn stored(self) -> ApiResult<Obj> {
        if matches!(self.description, Sent::Wrong(_)) {
            return Err(ApiError::bad_request(
                "Invalid input for field/attribute description. Value must be a string or null.",
            ));
        }
        let mut out: Obj = self.extra.into_iter().filter(|(k, _)| k != "links" && k != "id").collect();
        self.description.put(&mut out, "description");
        Ok(out)
    }
}
