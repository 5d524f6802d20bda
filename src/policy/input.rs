//! The input document a policy sees: `{"action", "credentials", "target"}`, with credentials
//! shaped like the ones oslo.policy hands Keystone's rules. Built directly as a regorus value:
//! this runs on every authorized request.

use std::collections::BTreeMap;

use regorus::Value;

use super::persona::Persona;
use crate::token::{TokenScope, ValidToken};

fn text(s: &str) -> Value {
    Value::from(s)
}

fn optional(s: Option<&str>) -> Value {
    s.map_or(Value::Null, Value::from)
}

pub fn document(action: &str, ctx: &ValidToken, target: &serde_json::Value) -> Value {
    let (domain_id, project_id) = match &ctx.payload.scope {
        TokenScope::Domain(d) => (Some(d.as_str()), None),
        TokenScope::Project(p) => (None, Some(p.as_str())),
        _ => (None, None),
    };
    let persona = Persona { ctx };
    let roles: Vec<Value> = ctx.roles.iter().filter(|r| r.domain_id.is_none()).map(|r| text(&r.name)).collect();
    let credentials = BTreeMap::from([
        (text("user_id"), text(&ctx.user.id)),
        (text("user_domain_id"), text(&ctx.user.domain_id)),
        (text("roles"), Value::from(roles)),
        (text("system_scope"), optional(persona.system_scoped().then_some("all"))),
        (text("domain_id"), optional(domain_id)),
        (text("project_id"), optional(project_id)),
        (text("project_domain_id"), optional(project_id.and(persona.scope_domain()))),
        (text("is_admin_project"), Value::from(ctx.is_admin_project)),
    ]);
    wrap(action, ctx.admin_scope.as_str(), credentials, target)
}

fn wrap(action: &str, admin_scope: &str, credentials: BTreeMap<Value, Value>, target: &serde_json::Value) -> Value {
    Value::from(BTreeMap::from([
        (text("action"), text(action)),
        (text("admin_scope"), text(admin_scope)),
        (text("credentials"), Value::from(credentials)),
        (text("target"), Value::from(target.clone())),
    ]))
}

/// A caller that is not a token's user: an API key acting with the roles its mapping rule
/// grants on one domain (SCIM, spec Authentication item 7).
pub struct Principal<'a> {
    /// Who, for `user_is` rules: `api-key:{client_id}`, never a user id.
    pub id: &'a str,
    pub domain_id: &'a str,
    pub roles: &'a [String],
}

/// The input document for a [`Principal`], shaped like a domain-scoped token's; never an
/// administrator of anything beyond the domain (`admin_scope` is strict for it).
pub fn principal_document(action: &str, p: &Principal<'_>, target: &serde_json::Value) -> Value {
    let credentials = BTreeMap::from([
        (text("user_id"), text(p.id)),
        (text("user_domain_id"), text(p.domain_id)),
        (text("roles"), Value::from(p.roles.iter().map(|r| text(r)).collect::<Vec<_>>())),
        (text("system_scope"), Value::Null),
        (text("domain_id"), text(p.domain_id)),
        (text("project_id"), Value::Null),
        (text("project_domain_id"), Value::Null),
        (text("is_admin_project"), Value::from(false)),
    ]);
    wrap(action, "system", credentials, target)
}
