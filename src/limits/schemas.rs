//! Bodies of `/v3/registered_limits` and `/v3/limits` (Keystone's `keystone/limit/schema.py`),
//! read with Keystone's 400 messages.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::body::{Kept, Sent};
use crate::http::error::{ApiError, ApiResult};
use crate::http::openapi::{CollectionLinks, SelfLink};

/// Keystone's `_limit_integer_type`: a signed 32-bit count, -1 meaning unlimited.
const MIN_LIMIT: i64 = -1;
const MAX_LIMIT: i64 = 0x7FFF_FFFF;
const MAX_ID: usize = 64;
const MAX_NAME: usize = 255;
const MAX_DESCRIPTION: usize = 65535;

pub fn invalid(key: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("Invalid input for field '{key}': {why}"))
}

fn required(key: &str) -> ApiError {
    ApiError::bad_request(format!("'{key}' is a required property"))
}

/// A JSON value as Python's jsonschema quotes it in its messages.
fn quoted(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        Value::Null => "None".into(),
        other => other.to_string(),
    }
}

/// The items of a `registered_limits` or `limits` list: at least one, each an object.
pub fn items<T>(key: &str, list: Sent<Vec<Sent<Kept<T>>>>, allowed: &[&str]) -> ApiResult<Vec<T>> {
    let list = match list {
        Sent::Absent => return Err(required(key)),
        Sent::Is(l) => l,
        Sent::Null | Sent::Wrong(_) => {
            return Err(invalid(key, &format!("{} is not of type 'array'", quoted(&list.unread().unwrap_or_default()))))
        }
    };
    if list.is_empty() {
        return Err(invalid(key, "[] is too short"));
    }
    list.into_iter().enumerate().map(|(n, item)| object(&format!("{key}/{n}"), item, allowed)).collect()
}

/// One object of a body (`Kept` refuses an unknown property by failing to read).
pub fn object<T>(key: &str, item: Sent<Kept<T>>, allowed: &[&str]) -> ApiResult<T> {
    match item {
        Sent::Is(k) => Ok(k.typed),
        Sent::Absent => Err(required(key)),
        Sent::Wrong(Value::Object(o)) => {
            let extra: Vec<String> =
                o.keys().filter(|k| !allowed.contains(&k.as_str())).map(|k| format!("'{k}'")).collect();
            Err(invalid(key, &format!("Additional properties are not allowed ({} was unexpected)", extra.join(", "))))
        }
        Sent::Null => Err(invalid(key, "None is not of type 'object'")),
        Sent::Wrong(v) => Err(invalid(key, &format!("{} is not of type 'object'", quoted(&v)))),
    }
}

/// A string of 1 to `max` characters (`None`: absent; `null` only where `nullable`).
fn string(key: &str, v: &Sent<String>, max: usize, nullable: bool) -> ApiResult<Option<String>> {
    match v {
        Sent::Absent => Ok(None),
        Sent::Null if nullable => Ok(None),
        Sent::Null => Err(invalid(key, "None is not of type 'string'")),
        Sent::Wrong(w) => Err(invalid(key, &format!("{} is not of type 'string'", quoted(w)))),
        Sent::Is(s) if s.chars().count() > max => Err(invalid(key, &format!("'{s}' is too long"))),
        Sent::Is(s) if s.is_empty() => Err(invalid(key, "'' is too short")),
        Sent::Is(s) => Ok(Some(s.clone())),
    }
}

/// An id (a service's, a project's, a domain's).
pub fn id(key: &str, v: &Sent<String>) -> ApiResult<Option<String>> {
    string(key, v, MAX_ID, false)
}

/// A region id, which may be null.
pub fn region(key: &str, v: &Sent<String>) -> ApiResult<Option<String>> {
    string(key, v, MAX_NAME, true)
}

/// Keystone's `parameter_types.name`: non-blank, at most 255 characters.
pub fn name(key: &str, v: &Sent<String>) -> ApiResult<Option<String>> {
    match string(key, v, MAX_NAME, false)? {
        Some(s) if s.trim().is_empty() => Err(invalid(key, &format!("'{s}' does not match '^[\\S]+.*$'"))),
        other => Ok(other),
    }
}

/// A description: any string, or null.
pub fn description(key: &str, v: &Sent<String>) -> ApiResult<Option<String>> {
    match v {
        Sent::Is(s) if s.is_empty() => Ok(Some(String::new())),
        _ => string(key, v, MAX_DESCRIPTION, true),
    }
}

/// A limit value: an integer from -1 (unlimited) to 2^31 - 1.
pub fn count(key: &str, v: &Sent<i64>) -> ApiResult<Option<i64>> {
    match v {
        Sent::Absent => Ok(None),
        Sent::Null => Err(invalid(key, "None is not of type 'integer'")),
        Sent::Wrong(w) => Err(invalid(key, &format!("{} is not of type 'integer'", quoted(w)))),
        Sent::Is(n) if *n < MIN_LIMIT => Err(invalid(key, &format!("{n} is less than the minimum of {MIN_LIMIT}"))),
        Sent::Is(n) if *n > MAX_LIMIT => Err(invalid(key, &format!("{n} is greater than the maximum of {MAX_LIMIT}"))),
        Sent::Is(n) => Ok(Some(*n)),
    }
}

pub fn must<T>(key: &str, v: Option<T>) -> ApiResult<T> {
    v.ok_or_else(|| required(key))
}

/// One registered limit to create.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisteredLimitCreate {
    /// The service the limit belongs to.
    #[serde(default)]
    #[schema(value_type = String)]
    pub service_id: Sent<String>,
    /// The region, when the limit is per region.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub region_id: Sent<String>,
    /// The resource limited (e.g. `cores`).
    #[serde(default)]
    #[schema(value_type = String)]
    pub resource_name: Sent<String>,
    /// The default for every project without a limit of its own; -1 is unlimited.
    #[serde(default)]
    #[schema(value_type = i64, minimum = -1, maximum = 2147483647)]
    pub default_limit: Sent<i64>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
}

pub const REGISTERED_CREATE_KEYS: &[&str] =
    &["service_id", "region_id", "resource_name", "default_limit", "description"];

/// `POST /v3/registered_limits`: all of them are created or none.
#[derive(Deserialize, ToSchema)]
pub struct RegisteredLimitsCreateRequest {
    #[serde(default)]
    #[schema(value_type = Vec<RegisteredLimitCreate>, min_items = 1)]
    pub registered_limits: Sent<Vec<Sent<Kept<RegisteredLimitCreate>>>>,
}

/// A registered limit's changes; absent fields keep their value.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisteredLimitUpdate {
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub service_id: Sent<String>,
    /// `null` makes the limit apply to every region.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub region_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub resource_name: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<i64>)]
    pub default_limit: Sent<i64>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
}

#[derive(Deserialize, ToSchema)]
pub struct RegisteredLimitUpdateRequest {
    #[serde(default)]
    #[schema(value_type = RegisteredLimitUpdate)]
    pub registered_limit: Sent<Kept<RegisteredLimitUpdate>>,
}

/// One project or domain limit to create: exactly one of `project_id` and `domain_id`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitCreate {
    /// The project limited (a project acting as a domain makes a domain limit).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub project_id: Sent<String>,
    /// The domain limited.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub domain_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String)]
    pub service_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub region_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String)]
    pub resource_name: Sent<String>,
    /// The override of the registered default; -1 is unlimited.
    #[serde(default)]
    #[schema(value_type = i64, minimum = -1, maximum = 2147483647)]
    pub resource_limit: Sent<i64>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
}

pub const LIMIT_CREATE_KEYS: &[&str] =
    &["project_id", "domain_id", "service_id", "region_id", "resource_name", "resource_limit", "description"];

/// `POST /v3/limits`: all of them are created or none.
#[derive(Deserialize, ToSchema)]
pub struct LimitsCreateRequest {
    #[serde(default)]
    #[schema(value_type = Vec<LimitCreate>, min_items = 1)]
    pub limits: Sent<Vec<Sent<Kept<LimitCreate>>>>,
}

/// A limit's changes: only its value and description change.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitUpdate {
    #[serde(default)]
    #[schema(value_type = Option<i64>)]
    pub resource_limit: Sent<i64>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
}

#[derive(Deserialize, ToSchema)]
pub struct LimitUpdateRequest {
    #[serde(default)]
    #[schema(value_type = LimitUpdate)]
    pub limit: Sent<Kept<LimitUpdate>>,
}

/// A registered limit as the API shows it.
#[derive(Serialize, ToSchema)]
pub struct RegisteredLimitView {
    pub id: String,
    pub service_id: String,
    pub region_id: Option<String>,
    pub resource_name: String,
    pub default_limit: i64,
    pub description: Option<String>,
    pub links: SelfLink,
}

/// A project or domain limit as the API shows it (one of `project_id`, `domain_id` is null).
#[derive(Serialize, ToSchema)]
pub struct LimitView {
    pub id: String,
    pub project_id: Option<String>,
    pub domain_id: Option<String>,
    pub service_id: String,
    pub region_id: Option<String>,
    pub resource_name: String,
    pub resource_limit: i64,
    pub description: Option<String>,
    pub links: SelfLink,
}

#[derive(Serialize, ToSchema)]
pub struct RegisteredLimitOne {
    pub registered_limit: RegisteredLimitView,
}

/// The created registered limits (no links, as Keystone).
#[derive(Serialize, ToSchema)]
pub struct RegisteredLimitsCreated {
    pub registered_limits: Vec<RegisteredLimitView>,
}

#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
pub struct RegisteredLimitList {
    pub registered_limits: Vec<RegisteredLimitView>,
    pub links: CollectionLinks,
}

#[derive(Serialize, ToSchema)]
pub struct LimitOne {
    pub limit: LimitView,
}

#[derive(Serialize, ToSchema)]
pub struct LimitsCreated {
    pub limits: Vec<LimitView>,
}

#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
pub struct LimitList {
    pub limits: Vec<LimitView>,
    pub links: CollectionLinks,
}

/// The node's enforcement model.
#[derive(Serialize, ToSchema)]
pub struct ModelView {
    /// `flat` or `strict_two_level`.
    pub name: String,
    pub description: String,
}

#[derive(Serialize, ToSchema)]
pub struct ModelOne {
    pub model: ModelView,
}
