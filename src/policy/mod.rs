//! The one authorization choke point: `enforce(name, ctx, target)`. Every handler other than
//! discovery and token issue calls it. The rules are Rego (evaluated by regorus), bundled per
//! subsystem under `policy/default/` and mirroring Keystone's default policies and personas
//! (admin, manager, member, reader; system, domain and project scope). Operators can replace
//! or extend them from `[policy] directory`, reloaded on SIGHUP (see `docs/policy.md`).
//!
//! Who is a cloud administrator is the node's `[policy] admin_scope` ([`AdminScope`]):
//! Keystone's `role:admin` on any scope by default, or only with system scope (or on the admin
//! project) in the strict mode.

mod actions;
pub mod admin_scope;
pub mod guard;
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

/// [`enforce`] for a caller that is not a token's user (an API key).
pub fn enforce_principal(name: &str, p: &input::Principal<'_>, target: &Value) -> Result<(), ApiError> {
    if global().allowed(name, &input::principal_document(name, p, target)) {
        Ok(())
    } else {
        Err(ApiError::denied(name))
    }
}

pub use admin_scope::AdminScope;
pub use input::Principal;

/// The caller as handlers see it when they shape a request before `enforce` (e.g. the
/// default domain filter of a listing).
pub struct Persona<'a> {
    pub ctx: &'a ValidToken,
}

impl Persona<'_> {
    /// A system-scoped token, or (in the strict admin mode) one scoped to the admin project.
    pub fn system_scoped(&self) -> bool {
        matches!(self.ctx.payload.scope, TokenScope::System)
            || (self.ctx.admin_scope == AdminScope::System && self.ctx.is_admin_project)
    }
    pub fn system(&self, role: &str) -> bool {
        self.system_scoped() && self.ctx.has_role(role)
    }
    /// Keystone's `admin_required` under the node's admin mode.
    pub fn cloud_admin(&self) -> bool {
        self.ctx.has_role("admin") && (self.ctx.admin_scope == AdminScope::Any || self.system_scoped())
    }
    /// May read everything: Keystone's `rule:admin_required or (role:reader and system_scope:all)`.
    pub fn cloud_reader(&self) -> bool {
        self.cloud_admin() || self.system("reader")
    }
    /// The domain a listing is confined to when the caller names none: a domain-scoped
    /// token's own domain, as Keystone filters (project-scoped callers are left to policy).
    pub fn listing_domain(&self) -> Option<&str> {
        match &self.ctx.payload.scope {
            TokenScope::Domain(d) => Some(d.as_str()),
            _ => None,
        }
    }
    /// The domain of the caller's scope (scoped domain, or the scoped project's domain).
    pub fn scope_domain(&self) -> Option<&str> {
        self.ctx.scope_domain.as_ref().map(|d| d.id.as_str())
    }
}
