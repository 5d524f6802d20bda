//! OpenAPI schemas of the user and group objects, and the typed user, group and
//! password-change bodies (with Keystone's checks). Extra properties are accepted and echoed
//! back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::http::body::Sent;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Obj;
use crate::http::openapi::SelfLink;
use crate::http::wrappers::{envelopes, member_requests};

/// Longer passwords only cost hashing time (bcrypt-era clients cap at 72 as well).
pub const MAX_PASSWORD: usize = 4096;

/// A user. The password is never returned.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct User {
    id: String,
    name: String,
    domain_id: String,
    enabled: bool,
    /// Present when set.
    default_project_id: Option<String>,
    /// When the password expires (`2015-11-07T02:58:43.578887Z`), or null.
    password_expires_at: Option<String>,
    /// User options, e.g. `{"ignore_password_expiry": true}`.
    options: BTreeMap<String, Value>,
    /// Present for users linked to external identity providers.
    federated: Option<Vec<FederatedIdentity>>,
    links: SelfLink,
}

/// A link to an identity provider's user, as Keystone's user schema has it.
#[derive(Clone, Serialize, Deserialize, ToSchema)]
pub struct FederatedIdentity {
    #[schema(min_length = 1, max_length = 255)]
    pub idp_id: String,
    pub protocols: Vec<FederatedProtocol>,
    /// Ignored (and, being flattened, keeps an array from reading as a link).
    #[serde(flatten)]
    #[schema(ignore)]
    pub extra: Obj,
}

#[derive(Clone, Serialize, Deserialize, ToSchema)]
pub struct FederatedProtocol {
    #[schema(min_length = 1, max_length = 255)]
    pub protocol_id: String,
    #[schema(min_length = 1, max_length = 255)]
    pub unique_id: String,
    /// Ignored (and, being flattened, keeps an array from reading as a protocol).
    #[serde(flatten)]
    #[schema(ignore)]
    pub extra: Obj,
}

impl From<FederatedIdentity> for crate::state::model::FederatedIdentity {
    fn from(f: FederatedIdentity) -> Self {
        crate::state::model::FederatedIdentity {
            idp_id: f.idp_id,
            protocols: f
                .protocols
                .into_iter()
                .map(|p| crate::state::model::FederatedProtocol { protocol_id: p.protocol_id, unique_id: p.unique_id })
                .collect(),
        }
    }
}

/// `federated: [{"idp_id", "protocols": [{"protocol_id", "unique_id"}]}]`; absent or null
/// means none, and `null` clears it in an update (`Some(None)`).
pub fn federated(sent: &Sent<Vec<FederatedIdentity>>) -> ApiResult<Option<Option<Vec<FederatedIdentity>>>> {
    let bad = || ApiError::bad_request("Invalid input for field 'federated'.");
    let text = |v: &Value, key: &str| -> ApiResult<()> {
        match v.get(key) {
            Some(Value::String(s)) if !s.is_empty() && s.chars().count() <= 255 => Ok(()),
            _ => Err(ApiError::bad_request(format!("Invalid input for field 'federated': '{key}' must be a string."))),
        }
    };
    let items = match sent.value() {
        None => return Ok(None),
        Some(Value::Null) => return Ok(Some(None)),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(bad()),
    };
    for item in &items {
        let protocols = item.get("protocols").and_then(Value::as_array).ok_or_else(bad)?;
        text(item, "idp_id")?;
        for p in protocols {
            text(p, "protocol_id")?;
            text(p, "unique_id")?;
        }
    }
    match sent {
        Sent::Is(f) => Ok(Some(Some(f.clone()))),
        _ => Err(bad()),
    }
}

// Schema only: the handlers render JSON with the extra attributes merged in.
envelopes! { schema_only:
    UserEnvelope { user: User }
    UserList { users: [User] }
    GroupEnvelope { group: Group }
    GroupList { groups: [Group] }
    MemberGroupList { groups: [MemberGroup] }
}

/// A group.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct Group {
    id: String,
    name: String,
    domain_id: String,
    description: Option<String>,
    links: SelfLink,
}

/// A group in a user's group list.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct MemberGroup {
    id: String,
    name: String,
    domain_id: String,
    description: Option<String>,
    /// When an expiring membership (granted by a federated login through a ruleset with an
    /// `authorization_ttl`) ends, ISO 8601; null for a permanent one.
    membership_expires_at: Option<String>,
    links: SelfLink,
}

member_requests! {
    /// `POST /v3/users`.
    UserCreateRequest { user: UserCreate }
    /// `PATCH /v3/users/{id}`.
    UserUpdateRequest { user: UserUpdate }
    /// `POST /v3/users/{id}/password`.
    PasswordChangeRequest { user: PasswordChange }
    /// `POST /v3/groups`.
    GroupCreateRequest { group: GroupCreate }
    /// `PATCH /v3/groups/{id}`.
    GroupUpdateRequest { group: GroupUpdate }
}

/// What a user's create and update bodies share.
#[derive(Deserialize, ToSchema)]
pub struct UserFields {
    /// Default true on create.
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    pub enabled: Sent<bool>,
    /// Hashed with argon2id; never returned. Checked once the caller is authorized, as
    /// Keystone does.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 4096)]
    pub password: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 64)]
    pub default_project_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<Vec<FederatedIdentity>>)]
    pub federated: Sent<Vec<FederatedIdentity>>,
    /// User options, e.g. `{"ignore_password_expiry": true}`.
    #[serde(default)]
    #[schema(value_type = Option<Map<String, Value>>)]
    pub options: Sent<Obj>,
    /// Other attributes, kept and echoed back (on update, merged into the stored ones).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Deserialize, ToSchema)]
pub struct UserCreate {
    #[serde(default)]
    #[schema(value_type = String, required = true, min_length = 1, max_length = 255)]
    pub name: Sent<String>,
    /// Default: the caller's domain scope, else `default`.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 64)]
    pub domain_id: Sent<String>,
    #[serde(flatten)]
    pub fields: UserFields,
}

/// An absent field is left as it is; `null` clears `password`, `default_project_id` or
/// `federated`. `domain_id`, if sent, must be the user's own.
#[derive(Deserialize, ToSchema)]
pub struct UserUpdate {
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 255)]
    pub name: Sent<String>,
    #[serde(flatten)]
    pub fields: UserFields,
}

#[derive(Deserialize, ToSchema)]
pub struct PasswordChange {
    #[serde(default)]
    #[schema(value_type = String, required = true, max_length = 4096)]
    pub original_password: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String, required = true, max_length = 4096)]
    pub password: Sent<String>,
}

/// What a group's create and update bodies share.
#[derive(Deserialize, ToSchema)]
pub struct GroupFields {
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 65535)]
    pub description: Sent<String>,
    /// Other attributes, kept and echoed back (on update, merged into the stored ones).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Deserialize, ToSchema)]
pub struct GroupCreate {
    #[serde(default)]
    #[schema(value_type = String, required = true, min_length = 1, max_length = 64)]
    pub name: Sent<String>,
    /// Default: the caller's domain scope, else `default`.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 64)]
    pub domain_id: Sent<String>,
    #[serde(flatten)]
    pub fields: GroupFields,
}

/// An absent field is left as it is; `null` clears `description`. `domain_id`, if sent, must
/// be the group's own.
#[derive(Deserialize, ToSchema)]
pub struct GroupUpdate {
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 64)]
    pub name: Sent<String>,
    #[serde(flatten)]
    pub fields: GroupFields,
}
