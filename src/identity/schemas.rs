//! OpenAPI schemas of the user and group objects, and the typed user, group and
//! password-change bodies (with Keystone's checks). Extra properties are accepted and echoed
//! back.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::http::body::{envelope, Checked};
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{self as f, Obj};
use crate::http::openapi::{CollectionLinks, SelfLink};

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
#[derive(Deserialize, ToSchema)]
pub struct FederatedIdentity {
    #[schema(min_length = 1, max_length = 255)]
    pub idp_id: String,
    pub protocols: Vec<FederatedProtocol>,
}

#[derive(Deserialize, ToSchema)]
pub struct FederatedProtocol {
    #[schema(min_length = 1, max_length = 255)]
    pub protocol_id: String,
    #[schema(min_length = 1, max_length = 255)]
    pub unique_id: String,
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
/// means none.
fn check_federated(o: &Obj) -> ApiResult<()> {
    let bad = || ApiError::bad_request("Invalid input for field 'federated'.");
    let items = match o.get("federated") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(bad()),
    };
    let text = |v: &Value, key: &str| -> ApiResult<()> {
        match v.get(key) {
            Some(Value::String(s)) if !s.is_empty() && s.chars().count() <= 255 => Ok(()),
            _ => Err(ApiError::bad_request(format!("Invalid input for field 'federated': '{key}' must be a string."))),
        }
    };
    for item in items {
        let protocols = item.get("protocols").and_then(Value::as_array).ok_or_else(bad)?;
        text(item, "idp_id")?;
        for p in protocols {
            text(p, "protocol_id")?;
            text(p, "unique_id")?;
        }
    }
    Ok(())
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct UserEnvelope {
    user: User,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct UserList {
    users: Vec<User>,
    links: CollectionLinks,
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

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct GroupEnvelope {
    group: Group,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct GroupList {
    groups: Vec<Group>,
    links: CollectionLinks,
}

/// A group in a user's group list; memberships do not expire, so the expiry is always null.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct MemberGroup {
    id: String,
    name: String,
    domain_id: String,
    description: Option<String>,
    membership_expires_at: Option<String>,
    links: SelfLink,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct MemberGroupList {
    groups: Vec<MemberGroup>,
    links: CollectionLinks,
}

/// `POST /v3/users`.
#[derive(Deserialize, ToSchema)]
pub struct UserCreateRequest {
    pub user: UserCreate,
}

impl Checked for UserCreateRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = envelope(raw, "user")?;
        f::opt_str(o, "domain_id", 64)?;
        f::req_name(o, "name", 255)?;
        f::opt_bool(o, "enabled")?;
        f::opt_str(o, "default_project_id", 64)?;
        f::opt_options(o)?;
        check_federated(o)
    }
}

#[derive(Deserialize, ToSchema)]
pub struct UserCreate {
    #[schema(min_length = 1, max_length = 255)]
    pub name: String,
    /// Default: the caller's domain scope, else `default`.
    #[serde(default)]
    #[schema(max_length = 64)]
    pub domain_id: Option<String>,
    /// Default true.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Hashed with argon2id; never returned. Checked ([`password`]) once the caller is
    /// authorized, as Keystone does.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 4096)]
    pub password: Option<Value>,
    #[serde(default)]
    #[schema(max_length = 64)]
    pub default_project_id: Option<String>,
    #[serde(default)]
    pub federated: Option<Vec<FederatedIdentity>>,
    /// User options, e.g. `{"ignore_password_expiry": true}`.
    #[serde(default)]
    pub options: Option<Map<String, Value>>,
    /// Other attributes, kept and echoed back.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A create body's password: a string within bounds, or null/absent.
pub fn password(v: Option<Value>) -> ApiResult<Option<String>> {
    let o: Obj = v.map(|v| ("password".to_string(), v)).into_iter().collect();
    f::opt_str(&o, "password", MAX_PASSWORD)
}

/// `PATCH /v3/users/{id}`.
#[derive(Deserialize, ToSchema)]
pub struct UserUpdateRequest {
    pub user: UserUpdate,
}

impl Checked for UserUpdateRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = envelope(raw, "user")?;
        f::opt_name(o, "name", 255)?;
        f::opt_bool(o, "enabled")?;
        f::opt_str(o, "default_project_id", 64)?;
        f::opt_options(o)?;
        check_federated(o)?;
        f::opt_str(o, "password", MAX_PASSWORD).map(drop)
    }
}

/// An absent field is left as it is; `null` clears `password`, `default_project_id` or
/// `federated`. `domain_id`, if sent, must be the user's own.
#[derive(Deserialize, ToSchema)]
pub struct UserUpdate {
    #[serde(default)]
    #[schema(min_length = 1, max_length = 255)]
    pub name: Option<String>,
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default, deserialize_with = "f::present")]
    #[schema(value_type = Option<String>, max_length = 4096)]
    pub password: Option<Option<String>>,
    #[serde(default, deserialize_with = "f::present")]
    #[schema(value_type = Option<String>, max_length = 64)]
    pub default_project_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "f::present")]
    #[schema(value_type = Option<Vec<FederatedIdentity>>)]
    pub federated: Option<Option<Vec<FederatedIdentity>>>,
    #[serde(default)]
    pub options: Option<Map<String, Value>>,
    /// Other attributes, merged into the stored ones.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `POST /v3/users/{id}/password`.
#[derive(Deserialize, ToSchema)]
pub struct PasswordChangeRequest {
    pub user: PasswordChange,
}

impl Checked for PasswordChangeRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = envelope(raw, "user")?;
        required_password(o, "original_password")?;
        required_password(o, "password")
    }
}

#[derive(Deserialize, ToSchema)]
pub struct PasswordChange {
    #[schema(max_length = 4096)]
    pub original_password: String,
    #[schema(max_length = 4096)]
    pub password: String,
}

fn required_password(o: &Obj, key: &str) -> ApiResult<()> {
    match o.get(key) {
        Some(Value::String(s)) if s.chars().count() <= MAX_PASSWORD => Ok(()),
        Some(Value::String(_)) => Err(ApiError::bad_request(format!(
            "Invalid input for field '{key}': is too long (at most {MAX_PASSWORD} characters)."
        ))),
        Some(_) => Err(ApiError::bad_request(format!("Invalid input for field '{key}': must be a string."))),
        None => Err(ApiError::bad_request(format!("'{key}' is a required property."))),
    }
}

/// `POST /v3/groups`.
#[derive(Deserialize, ToSchema)]
pub struct GroupCreateRequest {
    pub group: GroupCreate,
}

impl Checked for GroupCreateRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = envelope(raw, "group")?;
        f::opt_str(o, "domain_id", 64)?;
        f::req_name(o, "name", 64)?;
        f::opt_str(o, "description", 65535).map(drop)
    }
}

#[derive(Deserialize, ToSchema)]
pub struct GroupCreate {
    #[schema(min_length = 1, max_length = 64)]
    pub name: String,
    /// Default: the caller's domain scope, else `default`.
    #[serde(default)]
    #[schema(max_length = 64)]
    pub domain_id: Option<String>,
    #[serde(default)]
    #[schema(max_length = 65535)]
    pub description: Option<String>,
    /// Other attributes, kept and echoed back.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `PATCH /v3/groups/{id}`.
#[derive(Deserialize, ToSchema)]
pub struct GroupUpdateRequest {
    pub group: GroupUpdate,
}

impl Checked for GroupUpdateRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = envelope(raw, "group")?;
        f::opt_name(o, "name", 64)?;
        f::opt_str(o, "description", 65535).map(drop)
    }
}

/// An absent field is left as it is; `null` clears `description`. `domain_id`, if sent, must
/// be the group's own.
#[derive(Deserialize, ToSchema)]
pub struct GroupUpdate {
    #[serde(default)]
    #[schema(min_length = 1, max_length = 64)]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "f::present")]
    #[schema(value_type = Option<String>, max_length = 65535)]
    pub description: Option<Option<String>>,
    /// Other attributes, merged into the stored ones.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
