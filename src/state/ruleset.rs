//! The mapping ruleset exactly as it travels on the wire (api-shapes §12.1, the spec's model,
//! not NG's): one set of types that parses, validates and documents at once. It lives in the
//! state floor because apply stores and checks rulesets and the shadow registry keeps parts of
//! them; `mapping::model` re-exports it for the feature.
//!
//! Storage note: the wire shape needs internally tagged (`type`) and untagged enums, which a
//! non-self-describing format such as postcard cannot read back. A stored ruleset is therefore
//! kept as JSON text inside its postcard record (as `extra` is, `state/model.rs`); use
//! [`MappingRuleSet::to_stored`] / [`MappingRuleSet::from_stored`]. Nothing here holds a
//! free-form `serde_json::Value`: condition values are normalized to strings on the way in.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// A ruleset: the `mapping` envelope's content.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MappingRuleSet {
    /// Optional on create (the server may assign one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping_id: Option<String>,
    /// The mapping's domain; forced null for `claims_or_mapping` and `claims_only`.
    #[serde(default)]
    pub domain_id: Option<String>,
    pub provider_id: String,
    pub source: Source,
    /// Absent means `fixed`, the mode that lets claims choose nothing.
    #[serde(default)]
    pub domain_resolution_mode: DomainResolutionMode,
    /// Domains a claims-driven mode may resolve to; empty for `fixed`.
    #[serde(default)]
    pub allowed_domains: Vec<String>,
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Ordered: the first matching rule wins.
    pub rules: Vec<MappingRule>,
    /// Minutes the group memberships a `local` rule grants last after the login that last
    /// vouched for them (Keystone's identity provider `authorization_ttl` and its expiring
    /// group memberships). Absent, null or 0: the node's `[federation]
    /// default_authorization_ttl`; when that is 0 too, the memberships are synced for good.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_ttl: Option<u32>,
    /// Response only (a request may echo it; the server replaces it on every change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "9f86d081884c7d659a2feaa0c55ad015")]
    pub ruleset_version: Option<RulesetVersion>,
}

/// Claim values longer than this (in bytes) are dropped before evaluation (spec, Limits).
pub const MAX_CLAIM_VALUE_BYTES: usize = 4096;

fn default_true() -> bool {
    true
}

impl MappingRuleSet {
    /// A system mapping (any rule with `is_system`) is immutable: PUT and rule mutations are
    /// refused (422 `system_mapping_immutable`); it can only be deleted.
    pub fn is_system(&self) -> bool {
        self.rules.iter().any(|r| r.identity.is_system)
    }

    /// The bytes kept inside a stored record (see the module note on postcard).
    pub fn to_stored(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }

    pub fn from_stored(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// Where the identities a ruleset maps come from.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, PartialEq, Eq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Source {
    Federation { idp_id: String },
    K8s { cluster_id: String },
    Spiffe { trust_domain: String },
}

#[derive(Serialize, Deserialize, ToSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum DomainResolutionMode {
    /// Locked to the mapping's domain; claim templates in `user_domain_id` are refused.
    #[default]
    Fixed,
    /// The rule's `user_domain_id` template when it resolves, else the mapping's domain.
    ClaimsOrMapping,
    /// The domain must come from the claims.
    ClaimsOnly,
}

#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MappingRule {
    /// Unique within the ruleset; an alphanumeric handle (`validate::is_rule_name`).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "match")]
    pub matcher: Match,
    pub identity: Identity,
    #[serde(default)]
    pub authorizations: Vec<Authorization>,
    #[serde(default)]
    pub groups: Vec<GroupBinding>,
    /// A token restriction (`/v4/tokens/restrictions`) of the ruleset's domain: the tokens
    /// this rule mints stand under it (project-scoped, its roles only, renewal and re-scoping
    /// as it allows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_restriction_id: Option<String>,
}

#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_mode: Option<IdentityMode>,
    #[serde(default)]
    pub is_system: bool,
    /// Template; a display field (truncated to 253 characters plus `...`).
    pub user_name: String,
    /// Template; an identifier (over 256 characters is an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Template; an identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_domain_id: Option<String>,
}

#[derive(Serialize, Deserialize, ToSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum IdentityMode {
    /// A real user created or found, groups synced.
    Local,
    /// A virtual record in the shadow registry.
    Ephemeral,
}

#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, PartialEq, Eq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Authorization {
    Project {
        project_id: String,
        project_domain_id: String,
        roles: Vec<RoleRef>,
    },
    Domain {
        domain_id: String,
        roles: Vec<RoleRef>,
    },
    /// `system_id` is usually `all`.
    System {
        system_id: String,
        roles: Vec<RoleRef>,
    },
}

impl Authorization {
    pub fn roles(&self) -> &[RoleRef] {
        match self {
            Authorization::Project { roles, .. }
            | Authorization::Domain { roles, .. }
            | Authorization::System { roles, .. } => roles,
        }
    }
}

#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RoleRef {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct GroupBinding {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    /// Template; a display field.
    pub group_name: String,
    /// Absent: the domain the rule resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_domain_id: Option<String>,
    #[serde(default)]
    pub strategy: GroupStrategy,
}

#[derive(Serialize, Deserialize, ToSchema, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum GroupStrategy {
    #[default]
    CreateOrGet,
    /// The group must exist (`group_not_found` otherwise).
    Get,
}

/// `{"all_of": [...]}`, `{"any_of": [...]}` or `{"all_of_strict": {...}}`.
#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Match {
    /// Every element holds (an empty list holds).
    AllOf(Vec<Element>),
    /// At least one element holds (an empty list never does).
    AnyOf(Vec<Element>),
    AllOfStrict(StrictMatch),
}

#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StrictMatch {
    pub conditions: Vec<Element>,
    /// Also require every claim named anywhere below (`engine` has the precise rule).
    #[serde(default)]
    pub require_all_keys: bool,
}

/// A claim condition or a nested match. Serialized untagged; parsed by looking for `type`
/// (a condition always has one, a match never does), so errors name the real problem
/// instead of serde's "did not match any variant".
#[derive(Serialize, ToSchema, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum Element {
    Condition(ClaimCondition),
    /// The recursion edge: `Match` is collected through `MappingRule` already.
    #[schema(no_recursion)]
    Match(Match),
}

impl<'de> Deserialize<'de> for Element {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        if v.get("type").is_some() {
            ClaimCondition::deserialize(v).map(Element::Condition).map_err(de::Error::custom)
        } else {
            Match::deserialize(v).map(Element::Match).map_err(de::Error::custom)
        }
    }
}

#[derive(Serialize, Deserialize, ToSchema, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClaimCondition {
    /// Some value of the claim equals `value`.
    Equals { claim: String, value: ClaimValue },
    /// Some value of the claim is one of `values`.
    AnyOf { claim: String, values: Vec<ClaimValue> },
    /// Some value of the claim matches (unanchored search; anchor with `^`/`$`).
    MatchesRegex { claim: String, regex: String },
}

impl ClaimCondition {
    pub fn claim(&self) -> &str {
        match self {
            ClaimCondition::Equals { claim, .. }
            | ClaimCondition::AnyOf { claim, .. }
            | ClaimCondition::MatchesRegex { claim, .. } => claim,
        }
    }
}

/// A JSON scalar kept as the string claims are compared with ("claim values are compared as
/// strings"): `"a"` → `a`, `42` → `42`, `1.5` → `1.5`, `true` → `true`, the same text
/// [`scalar_string`] gives a claim. Objects, arrays and null are refused.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClaimValue(pub String);

impl ClaimValue {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The one normalization of a JSON scalar to the string it is compared as; `None` for
/// objects, arrays and null.
pub fn scalar_string(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl Serialize for ClaimValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ClaimValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ClaimValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a claim value: a string, number or boolean (not an object, array or null)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ClaimValue, E> {
                Ok(ClaimValue(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<ClaimValue, E> {
                Ok(ClaimValue(v))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ClaimValue, E> {
                Ok(ClaimValue(v.to_string()))
            }
            // Numbers go through serde_json's `Number` so a condition's `1.0` and a claim's
            // `1.0` print alike (`scalar_string`).
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ClaimValue, E> {
                Ok(ClaimValue(serde_json::Number::from(v).to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ClaimValue, E> {
                Ok(ClaimValue(serde_json::Number::from(v).to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ClaimValue, E> {
                serde_json::Number::from_f64(v)
                    .map(|n| ClaimValue(n.to_string()))
                    .ok_or_else(|| E::custom("a claim value must be a finite number"))
            }
        }
        d.deserialize_any(V)
    }
}

impl PartialSchema for ClaimValue {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::String, Type::Number, Type::Boolean]))
            .description(Some("Compared as a string; numbers and booleans are normalized."))
            .into()
    }
}

impl ToSchema for ClaimValue {}

/// 128 bits naming one state of a ruleset; a lowercase hex string on the wire (a JSON number
/// cannot carry 128 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RulesetVersion(pub [u8; 16]);

impl RulesetVersion {
    /// A fresh value for every change, so a reverted ruleset never revives old tokens.
    pub fn fresh() -> Self {
        RulesetVersion(rand::random())
    }
}

impl fmt::Display for RulesetVersion {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl Serialize for RulesetVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RulesetVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let mut out = [0u8; 16];
        hex::decode_to_slice(&s, &mut out)
            .map_err(|_| de::Error::custom("ruleset_version must be 32 hexadecimal digits (128 bits)"))?;
        Ok(RulesetVersion(out))
    }
}
