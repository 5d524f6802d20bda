//! OpenAPI schemas of the OS-FEDERATION objects, and the typed bodies of the identity
//! provider, protocol and service provider writes, checked with Keystone's schemas and
//! messages before serde types them.

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::{bool_like, check_url, invalid, member_ref as member, only_keys, str_or_null};
use crate::http::body::Checked;
use crate::http::error::ApiResult;
use crate::http::fields::{present, Obj};
use crate::http::openapi::{CollectionLinks, SelfLink};

/// An identity provider.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render the stored documents
pub struct IdentityProvider {
    id: String,
    /// The domain its users belong to; created for it when the create body names none.
    domain_id: String,
    /// Defaults to false.
    enabled: bool,
    description: Option<String>,
    /// The provider's entity ids, each held by one provider only.
    remote_ids: Vec<String>,
    /// Minutes group memberships from it stay valid; null for none.
    authorization_ttl: Option<i64>,
    links: SelfLink,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render the stored documents
pub struct IdentityProviderEnvelope {
    identity_provider: IdentityProvider,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render the stored documents
pub struct IdentityProviderList {
    identity_providers: Vec<IdentityProvider>,
    links: CollectionLinks,
}

/// A protocol of an identity provider.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render the stored documents
pub struct Protocol {
    id: String,
    idp_id: String,
    mapping_id: String,
    remote_id_attribute: Option<String>,
    links: SelfLink,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render the stored documents
pub struct ProtocolEnvelope {
    protocol: Protocol,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render the stored documents
pub struct ProtocolList {
    protocols: Vec<Protocol>,
    links: CollectionLinks,
}

/// A mapping: rules in Keystone's attribute-mapping schema.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render the stored documents
pub struct Mapping {
    id: String,
    #[schema(value_type = Vec<Object>)]
    rules: Vec<serde_json::Value>,
    /// 1.0 (the default), 2.0 or 3.0.
    schema_version: String,
    links: SelfLink,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render the stored documents
pub struct MappingEnvelope {
    mapping: Mapping,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render the stored documents
pub struct MappingList {
    mappings: Vec<Mapping>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the mapping handlers read the body directly
pub struct MappingBody {
    /// Required on create.
    #[schema(value_type = Option<Vec<Object>>)]
    rules: Option<Vec<serde_json::Value>>,
    schema_version: Option<String>,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the mapping handlers read the body directly
pub struct MappingRequest {
    mapping: MappingBody,
}

/// A service provider (another cloud).
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render the stored documents
pub struct ServiceProvider {
    id: String,
    auth_url: String,
    sp_url: String,
    description: Option<String>,
    /// Defaults to false; enabled ones are listed in tokens.
    enabled: bool,
    /// Defaults to `ss:mem:`.
    relay_state_prefix: Option<String>,
    links: SelfLink,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render the stored documents
pub struct ServiceProviderEnvelope {
    service_provider: ServiceProvider,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render the stored documents
pub struct ServiceProviderList {
    service_providers: Vec<ServiceProvider>,
    links: CollectionLinks,
}

/// The updatable fields of an identity provider.
const IDP_UPDATABLE: &[&str] = &["enabled", "description", "authorization_ttl", "remote_ids"];

/// `PUT /v3/OS-FEDERATION/identity_providers/{idp_id}`; the body may be absent.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IdentityProviderRequest {
    #[serde(default)]
    pub identity_provider: IdentityProviderBody,
}

impl Checked for IdentityProviderRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = member(raw, "identity_provider", false)?;
        only_keys(
            &o,
            &["enabled", "description", "authorization_ttl", "remote_ids", "domain_id"],
            "identity_provider",
            false,
        )?;
        check_idp_fields(&o)?;
        match o.get("domain_id") {
            None | Some(Value::Null) => Ok(()),
            Some(v @ Value::String(d)) => {
                if d.is_empty() || d.len() > 64 || !d.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-') {
                    return Err(invalid("domain_id", v, &format!("'{d}' does not match '^[a-zA-Z0-9-]+$'")));
                }
                Ok(())
            }
            Some(v) => Err(invalid("domain_id", v, &format!("{v} is not of type 'string', 'null'"))),
        }
    }
}

/// `PATCH /v3/OS-FEDERATION/identity_providers/{idp_id}`: at least one field, not `domain_id`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IdentityProviderUpdateRequest {
    pub identity_provider: IdentityProviderBody,
}

impl Checked for IdentityProviderUpdateRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = member(raw, "identity_provider", true)?;
        only_keys(&o, IDP_UPDATABLE, "identity_provider", true)?;
        check_idp_fields(&o)
    }
}

/// An absent field is left out (create: defaulted; update: kept).
#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IdentityProviderBody {
    /// Defaults to false on create; Keystone's boolean words (`"yes"`, `"0"`, ...) are read too.
    #[serde(default, deserialize_with = "super::de_bool_like")]
    pub enabled: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 65535)]
    pub description: Option<Option<String>>,
    /// Minutes group memberships from it stay valid; null for none.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<i64>, minimum = 0)]
    pub authorization_ttl: Option<Option<i64>>,
    /// Distinct entity ids of at most 64 characters; null for none.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>)]
    pub remote_ids: Option<Option<Vec<String>>>,
    /// Create only: the domain its users belong to (`^[a-zA-Z0-9-]+$`, at most 64); absent or
    /// null: a new domain is created for it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 64)]
    pub domain_id: Option<Option<String>>,
}

impl IdentityProviderBody {
    /// The stored fields (without `domain_id`); absent fields are left out, null remote ids
    /// are stored as none.
    pub fn stored(self) -> Obj {
        let mut out = Obj::new();
        if let Some(b) = self.enabled {
            out.insert("enabled".into(), Value::Bool(b));
        }
        if let Some(d) = self.description {
            out.insert("description".into(), d.map_or(Value::Null, Value::String));
        }
        if let Some(t) = self.authorization_ttl {
            out.insert("authorization_ttl".into(), t.map_or(Value::Null, Value::from));
        }
        if let Some(r) = self.remote_ids {
            out.insert("remote_ids".into(), r.unwrap_or_default().into_iter().map(Value::String).collect());
        }
        out
    }
}

/// The checks of the fields both identity provider bodies share.
fn check_idp_fields(o: &Obj) -> ApiResult<()> {
    bool_like(o, "enabled")?;
    str_or_null(o, "description", 65535)?;
    match o.get("authorization_ttl") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_i64() {
            Some(n) if n >= 0 => {}
            Some(n) => return Err(invalid("authorization_ttl", v, &format!("{n} is less than the minimum of 0"))),
            None => return Err(invalid("authorization_ttl", v, &format!("{v} is not of type 'integer', 'null'"))),
        },
    }
    match o.get("remote_ids") {
        None | Some(Value::Null) => {}
        Some(v @ Value::Array(items)) => {
            let mut seen = Vec::new();
            for item in items {
                match item.as_str() {
                    Some(r) if r.chars().count() <= 64 => {
                        if seen.contains(&r) {
                            return Err(invalid("remote_ids", v, &format!("{v} has non-unique elements")));
                        }
                        seen.push(r);
                    }
                    _ => return Err(invalid("remote_ids", v, "items must be strings of at most 64 characters")),
                }
            }
        }
        Some(v) => return Err(invalid("remote_ids", v, &format!("{v} is not of type 'array', 'null'"))),
    }
    Ok(())
}

const PROTOCOL_FIELDS: &[&str] = &["mapping_id", "remote_id_attribute"];

/// `PUT .../identity_providers/{idp_id}/protocols/{protocol_id}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProtocolRequest {
    pub protocol: ProtocolBody,
}

impl Checked for ProtocolRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = member(raw, "protocol", true)?;
        only_keys(&o, PROTOCOL_FIELDS, "protocol", false)?;
        check_protocol(&o)
    }
}

/// `PATCH .../identity_providers/{idp_id}/protocols/{protocol_id}`: the same body, and not `{}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProtocolUpdateRequest {
    pub protocol: ProtocolBody,
}

impl Checked for ProtocolUpdateRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = member(raw, "protocol", true)?;
        only_keys(&o, PROTOCOL_FIELDS, "protocol", true)?;
        check_protocol(&o)
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProtocolBody {
    /// An existing mapping (400 otherwise).
    #[schema(min_length = 1, max_length = 64)]
    pub mapping_id: String,
    /// An update without it keeps the stored one.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 64)]
    pub remote_id_attribute: Option<Option<String>>,
}

/// `mapping_id` (required, 1 to 64 characters) and `remote_id_attribute` (at most 64).
fn check_protocol(o: &Obj) -> ApiResult<()> {
    let whole = Value::Object(o.clone());
    match o.get("mapping_id") {
        Some(Value::String(m)) if !m.is_empty() && m.chars().count() <= 64 => {}
        Some(v) => return Err(invalid("mapping_id", v, "must be a string of 1 to 64 characters")),
        None => return Err(invalid("protocol", &whole, "'mapping_id' is a required property")),
    }
    match o.get("remote_id_attribute") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(r)) if r.chars().count() <= 64 => Ok(()),
        Some(v) => Err(invalid("remote_id_attribute", v, "must be a string of at most 64 characters")),
    }
}

const SP_FIELDS: &[&str] = &["auth_url", "sp_url", "description", "enabled", "relay_state_prefix"];

/// `PUT /v3/OS-FEDERATION/service_providers/{sp_id}`: `auth_url` and `sp_url` required.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceProviderRequest {
    pub service_provider: ServiceProviderBody,
}

impl Checked for ServiceProviderRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = member(raw, "service_provider", true)?;
        only_keys(&o, SP_FIELDS, "service_provider", false)?;
        for k in ["auth_url", "sp_url"] {
            if !o.contains_key(k) {
                return Err(invalid(
                    "service_provider",
                    &Value::Object(o.clone()),
                    &format!("'{k}' is a required property"),
                ));
            }
        }
        check_sp(&o)
    }
}

/// `PATCH /v3/OS-FEDERATION/service_providers/{sp_id}`: at least one field.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceProviderUpdateRequest {
    pub service_provider: ServiceProviderBody,
}

impl Checked for ServiceProviderUpdateRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = member(raw, "service_provider", true)?;
        only_keys(&o, SP_FIELDS, "service_provider", true)?;
        check_sp(&o)
    }
}

/// An absent field is left out (create: defaulted; update: kept).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceProviderBody {
    /// Required on create; `^[a-zA-Z0-9+.-]+:.+`.
    #[serde(default)]
    #[schema(max_length = 225)]
    pub auth_url: Option<String>,
    /// Required on create; `^[a-zA-Z0-9+.-]+:.+`.
    #[serde(default)]
    #[schema(max_length = 225)]
    pub sp_url: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 65535)]
    pub description: Option<Option<String>>,
    /// Defaults to false on create; Keystone's boolean words (`"yes"`, `"0"`, ...) are read too.
    #[serde(default, deserialize_with = "super::de_bool_like")]
    pub enabled: Option<bool>,
    /// Defaults to `ss:mem:` on create.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 65535)]
    pub relay_state_prefix: Option<Option<String>>,
}

impl ServiceProviderBody {
    /// The stored fields; absent fields are left out.
    pub fn stored(self) -> Obj {
        let mut out = Obj::new();
        for (k, v) in [("auth_url", self.auth_url), ("sp_url", self.sp_url)] {
            if let Some(v) = v {
                out.insert(k.into(), Value::String(v));
            }
        }
        if let Some(b) = self.enabled {
            out.insert("enabled".into(), Value::Bool(b));
        }
        for (k, v) in [("description", self.description), ("relay_state_prefix", self.relay_state_prefix)] {
            if let Some(v) = v {
                out.insert(k.into(), v.map_or(Value::Null, Value::String));
            }
        }
        out
    }
}

fn check_sp(o: &Obj) -> ApiResult<()> {
    check_url(o, "auth_url")?;
    check_url(o, "sp_url")?;
    bool_like(o, "enabled")?;
    for k in ["description", "relay_state_prefix"] {
        str_or_null(o, k, 65535)?;
    }
    Ok(())
}
