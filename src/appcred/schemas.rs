//! Bodies of application credentials and access rules. The request types are the ones the
//! handlers parse (fields as [`Sent`], so the handlers answer wrong types with Keystone's
//! messages).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::body::Sent;
use crate::http::fields::Obj;
use crate::http::openapi::SelfLink;
use crate::http::wrappers::envelopes;

/// An access rule as stored (its fields as they were accepted).
#[derive(Serialize, ToSchema)]
pub struct AccessRule {
    #[schema(value_type = String)]
    pub id: Value,
    /// The service type, e.g. `compute`.
    #[schema(value_type = String)]
    pub service: Value,
    /// The API path, `*` and `**` wildcards allowed.
    #[schema(value_type = String)]
    pub path: Value,
    /// DELETE, GET, HEAD, PATCH, POST or PUT.
    #[schema(value_type = String)]
    pub method: Value,
}

/// A delegated role (without links or extra attributes).
#[derive(Serialize, ToSchema)]
pub struct AppCredRole {
    pub id: String,
    pub name: String,
    pub domain_id: Option<String>,
    pub description: Option<String>,
    /// Resource options, e.g. `{"immutable": true}`.
    #[schema(value_type = BTreeMap<String, Value>)]
    pub options: Value,
}

/// An application credential (never with its secret after create).
#[derive(Serialize, ToSchema)]
pub struct AppCred {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub user_id: String,
    pub project_id: String,
    /// Always null: credentials are tied to a project.
    pub system: Option<String>,
    /// `YYYY-MM-DDTHH:MM:SS.ffffff` (UTC), or null for no expiry.
    pub expires_at: Option<String>,
    /// True lets its tokens manage application credentials.
    pub unrestricted: Option<bool>,
    pub roles: Vec<AppCredRole>,
    /// Present when the credential has rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_rules: Option<Vec<AccessRule>>,
    pub links: SelfLink,
}

/// The create response's credential: as shown later, plus the secret (shown only here).
#[derive(Serialize, ToSchema)]
pub struct AppCredWithSecret {
    #[serde(flatten)]
    pub credential: AppCred,
    pub secret: String,
}

envelopes! {
    AppCredCreated { application_credential: AppCredWithSecret }
    AppCredEnvelope { application_credential: AppCred }
}

envelopes! { schema_only:
    AppCredList { application_credentials: [AppCred] }
}

/// No other attributes are allowed.
#[derive(Deserialize, ToSchema)]
pub struct AppCredBody {
    /// Unique among the user's credentials; 1 to 255 characters.
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub name: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    /// Generated (86 characters) when absent or empty.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub secret: Sent<String>,
    /// An ISO 8601 time in the future.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub expires_at: Sent<String>,
    /// True lets its tokens manage application credentials.
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    pub unrestricted: Sent<bool>,
    /// `{"id"}` or `{"name"}` of roles the caller's token holds; default: all of them.
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub roles: Sent<Vec<Value>>,
    /// Rules by `id` (the user's existing ones) or by `service`, `path` and `method`.
    #[serde(default)]
    #[schema(value_type = Option<Vec<AccessRule>>)]
    pub access_rules: Sent<Vec<Value>>,
    /// Ignored: the id is generated.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Sent<Value>,
    /// Ignored: the token's project.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub project_id: Sent<Value>,
    /// Ignored.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub system: Sent<Value>,
    /// Anything else, refused.
    #[serde(flatten)]
    #[schema(ignore)]
    pub extra: Obj,
}

/// Nothing besides `application_credential` is allowed.
#[derive(Deserialize, ToSchema)]
pub struct AppCredRequest {
    #[serde(default)]
    #[schema(value_type = AppCredBody, required = true)]
    pub application_credential: Sent<AppCredBody>,
    /// Anything else, refused.
    #[serde(flatten)]
    #[schema(ignore)]
    pub extra: Obj,
}

#[derive(Serialize, ToSchema)]
pub struct AccessRuleWithLinks {
    #[serde(flatten)]
    pub rule: AccessRule,
    pub links: SelfLink,
}

envelopes! {
    AccessRuleEnvelope { access_rule: AccessRuleWithLinks }
}

envelopes! { schema_only:
    AccessRuleList { access_rules: [AccessRuleWithLinks] }
}
