//! The one authorization choke point: `enforce(name, ctx, target)`. Every handler other than
//! discovery and token issue calls it. The rules are Rego (evaluated by regorus), bundled per
//! subsystem under `policy/default/` and mirroring Keystone's default policies and personas
//! (admin, manager, member, reader; system, domain and project scope). Operators can replace
//! or extend them from `[policy] directory`, reloaded on SIGHUP (see `docs/policy.md`).
//!
//! A token scoped to the admin project counts as system scope, like Keystone's
//! `is_admin_project`; an admin of any other project is only that project's admin.

mod actions;
mod input;
#[cfg(test)]
mod matrix;
mod store;
#[cfg(test)]
mod tests;

use std::sync::OnceLock;

use serde_json::Value;

pub use store::PolicyStore;

use crate::http::ApiError;
use crate::token::{TokenScope, ValidToken};

/// The node's policy set. One per process: `enforce` has no node at hand, and a process
/// serves one node.
pub fn global() -> &'static PolicyStore {
    static STORE: OnceLock<PolicyStore> = OnceLock::new();
    STORE.get_or_init(PolicyStore::bundled)
}

/// Decides `name` for the caller on `target` (a JSON object shaped like Keystone's policy
/// target, e.g. `{"project": {"domain_id": …}}`). Unknown names are denied (and logged).
pub fn enforce(name: &str, ctx: &ValidToken, target: &Value) -> Result<(), ApiError> {
    if global().allowed(name, &input::document(name, ctx, target)) {
        Ok(())
    } else {
        Err(ApiError::denied(name))
    }
}

/// The caller as handlers see it when they shape a request before `enforce` (e.g. the
/// default domain filter of a listing).
pub struct Persona<'a> {
    pub ctx: &'a ValidToken,
}

impl Persona<'_> {
    /// A system-scoped token, or one scoped to the admin project.
    pub fn system_scoped(&self) -> bool {
        matches!(self.ctx.payload.scope, TokenScope::System) || self.ctx.is_admin_project
    }
    pub fn system(&self, role: &str) -> bool {
        self.system_scoped() && self.ctx.has_role(role)
    }
    /// The domain of the caller's scope (scoped domain, or the scoped project's domain).
    pub fn scope_domain(&self) -> Option<&str> {
        self.ctx.scope_domain.as_ref().map(|d| d.id.as_str())
    }
}
