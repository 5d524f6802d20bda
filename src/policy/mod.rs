//! The one authorization choke point: `enforce(name, ctx, target)`. Every handler other than
//! discovery and token issue calls it. Rules follow Keystone's default personas (admin,
//! manager, member, reader; system, domain and project scope). A token scoped to the admin
//! project counts as system scope, like Keystone's `is_admin_project`; an admin of any other
//! project is only that project's admin.

mod rules;

use serde_json::Value;

use crate::http::ApiError;
use crate::token::{TokenScope, ValidToken};

/// Decides `name` for the caller on `target` (a JSON object shaped like Keystone's policy
/// target, e.g. `{"project": {"domain_id": …}}`).
pub fn enforce(name: &str, ctx: &ValidToken, target: &Value) -> Result<(), ApiError> {
    let allowed = match rules::rule(name) {
        Some(rule) => rule(&Persona { ctx }, target),
        None => {
            tracing::error!("no policy rule named {name}: denying");
            false
        }
    };
    if allowed {
        Ok(())
    } else {
        Err(ApiError::denied(name))
    }
}

/// The caller as policy rules see it.
pub struct Persona<'a> {
    pub ctx: &'a ValidToken,
}

impl Persona<'_> {
    pub fn system_scoped(&self) -> bool {
        matches!(self.ctx.payload.scope, TokenScope::System) || self.ctx.is_admin_project
    }
    pub fn system(&self, role: &str) -> bool {
        self.system_scoped() && self.ctx.has_role(role)
    }
    /// Holds `role` on a domain-scoped token for `domain_id`.
    pub fn domain(&self, role: &str, domain_id: Option<&str>) -> bool {
        match (&self.ctx.payload.scope, domain_id) {
            (TokenScope::Domain(d), Some(t)) => d == t && self.ctx.has_role(role),
            _ => false,
        }
    }
    /// Holds `role` on a project-scoped token for `project_id`.
    pub fn project(&self, role: &str, project_id: Option<&str>) -> bool {
        match (&self.ctx.payload.scope, project_id) {
            (TokenScope::Project(p), Some(t)) => p == t && self.ctx.has_role(role),
            _ => false,
        }
    }
    /// The domain of the caller's scope (scoped domain, or the scoped project's domain).
    pub fn scope_domain(&self) -> Option<&str> {
        self.ctx.scope_domain.as_ref().map(|d| d.id.as_str())
    }
    pub fn user_id(&self) -> &str {
        &self.ctx.user.id
    }
    pub fn is_service(&self) -> bool {
        self.ctx.has_role("service")
    }
}

/// A string field at `path` in the target (`"project.domain_id"`).
pub fn field<'v>(target: &'v Value, path: &str) -> Option<&'v str> {
    path.split('.').try_fold(target, |v, k| v.get(k)).and_then(Value::as_str)
}
