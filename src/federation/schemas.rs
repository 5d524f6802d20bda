//! OpenAPI schemas of the OS-FEDERATION objects, and the typed bodies of the identity
//! provider, protocol, mapping and service provider writes, held to Keystone's schemas with its
//! messages.

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::{bool_like, check_url, invalid, member, str_or_null};
use crate::http::body::{Body, Kept, Sent};
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Obj;
use crate::http::openapi::SelfLink;
use crate::http::wrappers::{envelopes, member_requests};

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

envelopes! { schema_only:
    IdentityProviderEnvelope { identity_provider: IdentityProvider }
    IdentityProviderList { identity_providers: [IdentityProvider] }
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

envelopes! { schema_only:
    ProtocolEnvelope { protocol: Protocol }
    ProtocolList { protocols: [Protocol] }
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

envelopes! { schema_only:
    MappingEnvelope { mapping: Mapping }
    MappingList { mappings: [Mapping] }
}

/// Other properties are dropped, as Keystone does.
#[derive(Default, Deserialize, ToSchema)]
pub struct MappingBody {
    /// Required on create; held to Keystone's mapping schema of the version asked for.
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub rules: Sent<Value>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub schema_version: Sent<String>,
}

member_requests! {
    /// The body may be absent (an update then keeps the stored mapping).
    MappingRequest { mapping: MappingBody }
}

impl MappingRequest {
    /// The mapping of a body; an absent body, a body that is no object or one without
    /// `mapping` asks for nothing.
    pub fn mapping(body: Option<Body<Self>>) -> ApiResult<MappingBody> {
        match body.and_then(Body::into_inner).map(|b| b.mapping) {
            Some(Sent::Is(m)) => Ok(m),
            None | Some(Sent::Absent) => Ok(MappingBody::default()),
            Some(wrong) => {
                let v = wrong.unread().unwrap_or_default();
                Err(ApiError::bad_request(format!("{v} is not of type 'object'\n")))
            }
        }
    }
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

envelopes! { schema_only:
    ServiceProviderEnvelope { service_provider: ServiceProvider }
    ServiceProviderList { service_providers: [ServiceProvider] }
}

/// The updatable fields of an identity provider.
const IDP_UPDATABLE: &[&str] = &["enabled", "description", "authorization_ttl", "remote_ids"];
/// The fields of an identity provider's create body.
const IDP_FIELDS: &[&str] = &["enabled", "description", "authorization_ttl", "remote_ids", "domain_id"];

/// `PUT /v3/OS-FEDERATION/identity_providers/{idp_id}`; the body may be absent.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IdentityProviderRequest {
    #[serde(default)]
    #[schema(value_type = IdentityProviderBody)]
    pub identity_provider: Sent<Kept<IdentityProviderBody>>,
}

impl IdentityProviderRequest {
    /// The fields to store (without `domain_id`) and the domain asked for, after Keystone's
    /// checks.
    pub fn checked(body: Sent<Self>) -> ApiResult<(Obj, Option<String>)> {
        let b = member(body, |r| r.identity_provider, "identity_provider", false, (IDP_FIELDS, false))?.typed;
        let stored = b.stored()?;
        let domain_id = match &b.domain_id {
            Sent::Absent | Sent::Null => None,
            Sent::Is(d)
                if !d.is_empty() && d.len() <= 64 && d.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-') =>
            {
                Some(d.clone())
            }
            Sent::Is(d) => {
                return Err(invalid(
                    "domain_id",
                    &Value::from(d.as_str()),
                    &format!("'{d}' does not match '^[a-zA-Z0-9-]+$'"),
                ))
            }
            Sent::Wrong(v) => return Err(invalid("domain_id", v, &format!("{v} is not of type 'string', 'null'"))),
        };
        Ok((stored, domain_id))
    }
}

member_requests! { strict:
    /// `PATCH /v3/OS-FEDERATION/identity_providers/{idp_id}`: at least one field, not `domain_id`.
    IdentityProviderUpdateRequest { identity_provider: IdentityProviderBody }
}

impl IdentityProviderUpdateRequest {
    /// The fields to store, after Keystone's checks.
    pub fn checked(body: Sent<Self>) -> ApiResult<Obj> {
        member(body, |r| r.identity_provider, "identity_provider", true, (IDP_UPDATABLE, true))?.typed.stored()
    }
}

/// An absent field is left out (create: defaulted; update: kept).
#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IdentityProviderBody {
    /// Defaults to false on create; Keystone's boolean words (`"yes"`, `"0"`, ...) are read too.
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    pub enabled: Sent<bool>,
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 65535)]
    pub description: Sent<String>,
    /// Minutes group memberships from it stay valid; null for none.
    #[serde(default)]
    #[schema(value_type = Option<i64>, minimum = 0)]
    pub authorization_ttl: Sent<i64>,
    /// Distinct entity ids of at most 64 characters; null for none.
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub remote_ids: Sent<Vec<String>>,
    /// Create only: the domain its users belong to (`^[a-zA-Z0-9-]+$`, at most 64); absent or
    /// null: a new domain is created for it.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 64)]
    pub domain_id: Sent<String>,
}

impl IdentityProviderBody {
    /// The stored fields (without `domain_id`) after the checks both bodies share; absent
    /// fields are left out, null remote ids are stored as none.
    fn stored(&self) -> ApiResult<Obj> {
        let mut out = Obj::new();
        if let Some(b) = bool_like(&self.enabled, "enabled")? {
            out.insert("enabled".into(), Value::Bool(b));
        }
        if let Some(d) = str_or_null(&self.description, "description", 65535)? {
            out.insert("description".into(), d.map_or(Value::Null, Value::String));
        }
        match &self.authorization_ttl {
            Sent::Absent => {}
            Sent::Null => {
                out.insert("authorization_ttl".into(), Value::Null);
            }
            Sent::Is(n) if *n >= 0 => {
                out.insert("authorization_ttl".into(), Value::from(*n));
            }
            Sent::Is(n) => {
                return Err(invalid(
                    "authorization_ttl",
                    &Value::from(*n),
                    &format!("{n} is less than the minimum of 0"),
                ))
            }
            Sent::Wrong(v) => {
                return Err(invalid("authorization_ttl", v, &format!("{v} is not of type 'integer', 'null'")))
            }
        }
        if let Some(ids) = remote_ids(&self.remote_ids)? {
            out.insert("remote_ids".into(), ids.into_iter().map(Value::String).collect());
        }
        Ok(out)
    }
}

/// Distinct strings of at most 64 characters, or null (none); `None` when absent.
fn remote_ids(sent: &Sent<Vec<String>>) -> ApiResult<Option<Vec<String>>> {
    let v = match sent.value() {
        None => return Ok(None),
        Some(Value::Null) => return Ok(Some(Vec::new())),
        Some(v) => v,
    };
    let Some(items) = v.as_array() else {
        return Err(invalid("remote_ids", &v, &format!("{v} is not of type 'array', 'null'")));
    };
    let mut seen = Vec::new();
    for item in items {
        match item.as_str() {
            Some(r) if r.chars().count() <= 64 => {
                if seen.contains(&r) {
                    return Err(invalid("remote_ids", &v, &format!("{v} has non-unique elements")));
                }
                seen.push(r);
            }
            _ => return Err(invalid("remote_ids", &v, "items must be strings of at most 64 characters")),
        }
    }
    Ok(Some(seen.into_iter().map(str::to_string).collect()))
}

const PROTOCOL_FIELDS: &[&str] = &["mapping_id", "remote_id_attribute"];

member_requests! { strict:
    /// `PUT .../identity_providers/{idp_id}/protocols/{protocol_id}`.
    ProtocolRequest { protocol: ProtocolBody }
}

impl ProtocolRequest {
    /// The mapping id and remote id attribute, after Keystone's checks.
    pub fn checked(body: Sent<Self>) -> ApiResult<(String, Option<Option<String>>)> {
        protocol(member(body, |r| r.protocol, "protocol", true, (PROTOCOL_FIELDS, false))?)
    }
}

member_requests! { strict:
    /// `PATCH .../identity_providers/{idp_id}/protocols/{protocol_id}`: the same body, and not `{}`.
    ProtocolUpdateRequest { protocol: ProtocolBody }
}

impl ProtocolUpdateRequest {
    /// The mapping id and remote id attribute (`None`: keep the stored one), after Keystone's
    /// checks.
    pub fn checked(body: Sent<Self>) -> ApiResult<(String, Option<Option<String>>)> {
        protocol(member(body, |r| r.protocol, "protocol", true, (PROTOCOL_FIELDS, true))?)
    }
}

#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProtocolBody {
    /// An existing mapping (400 otherwise).
    #[serde(default)]
    #[schema(value_type = String, required = true, min_length = 1, max_length = 64)]
    pub mapping_id: Sent<String>,
    /// An update without it keeps the stored one.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 64)]
    pub remote_id_attribute: Sent<String>,
}

/// `mapping_id` (required, 1 to 64 characters) and `remote_id_attribute` (at most 64) of a
/// protocol body.
fn protocol(Kept { typed: b, sent }: Kept<ProtocolBody>) -> ApiResult<(String, Option<Option<String>>)> {
    let mapping_id = match b.mapping_id {
        Sent::Is(m) if !m.is_empty() && m.chars().count() <= 64 => m,
        Sent::Absent => return Err(invalid("protocol", &Value::Object(sent), "'mapping_id' is a required property")),
        v => {
            let v = v.value().unwrap_or_default();
            return Err(invalid("mapping_id", &v, "must be a string of 1 to 64 characters"));
        }
    };
    let remote = match b.remote_id_attribute {
        Sent::Absent => None,
        Sent::Null => Some(None),
        Sent::Is(r) if r.chars().count() <= 64 => Some(Some(r)),
        v => {
            let v = v.value().unwrap_or_default();
            return Err(invalid("remote_id_attribute", &v, "must be a string of at most 64 characters"));
        }
    };
    Ok((mapping_id, remote))
}

const SP_FIELDS: &[&str] = &["auth_url", "sp_url", "description", "enabled", "relay_state_prefix"];

member_requests! { strict:
    /// `PUT /v3/OS-FEDERATION/service_providers/{sp_id}`: `auth_url` and `sp_url` required.
    ServiceProviderRequest { service_provider: ServiceProviderBody }
}

impl ServiceProviderRequest {
    /// The fields to store, after Keystone's checks.
    pub fn checked(body: Sent<Self>) -> ApiResult<Obj> {
        let Kept { typed, sent } = member(body, |r| r.service_provider, "service_provider", true, (SP_FIELDS, false))?;
        for k in ["auth_url", "sp_url"] {
            if !sent.contains_key(k) {
                return Err(invalid(
                    "service_provider",
                    &Value::Object(sent),
                    &format!("'{k}' is a required property"),
                ));
            }
        }
        typed.stored()
    }
}

member_requests! { strict:
    /// `PATCH /v3/OS-FEDERATION/service_providers/{sp_id}`: at least one field.
    ServiceProviderUpdateRequest { service_provider: ServiceProviderBody }
}

impl ServiceProviderUpdateRequest {
    /// The fields to store, after Keystone's checks.
    pub fn checked(body: Sent<Self>) -> ApiResult<Obj> {
        member(body, |r| r.service_provider, "service_provider", true, (SP_FIELDS, true))?.typed.stored()
    }
}

/// An absent field is left out (create: defaulted; update: kept).
#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceProviderBody {
    /// Required on create; `^[a-zA-Z0-9+.-]+:.+`.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 225)]
    pub auth_url: Sent<String>,
    /// Required on create; `^[a-zA-Z0-9+.-]+:.+`.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 225)]
    pub sp_url: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 65535)]
    pub description: Sent<String>,
    /// Defaults to false on create; Keystone's boolean words (`"yes"`, `"0"`, ...) are read too.
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    pub enabled: Sent<bool>,
    /// Defaults to `ss:mem:` on create.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 65535)]
    pub relay_state_prefix: Sent<String>,
}

impl ServiceProviderBody {
    /// The stored fields (absent ones left out), after Keystone's checks.
    fn stored(&self) -> ApiResult<Obj> {
        let mut out = Obj::new();
        for (k, url) in [("auth_url", &self.auth_url), ("sp_url", &self.sp_url)] {
            if let Some(u) = check_url(url, k)? {
                out.insert(k.into(), Value::String(u));
            }
        }
        if let Some(e) = bool_like(&self.enabled, "enabled")? {
            out.insert("enabled".into(), Value::Bool(e));
        }
        for (k, text) in [("description", &self.description), ("relay_state_prefix", &self.relay_state_prefix)] {
            if let Some(t) = str_or_null(text, k, 65535)? {
                out.insert(k.into(), t.map_or(Value::Null, Value::String));
            }
        }
        Ok(out)
    }
}
