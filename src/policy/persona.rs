//! The caller's standing (cloud administrator, reader, listing domain) as handlers read it.

use super::admin_scope::AdminScope;
use crate::token::{TokenScope, ValidToken};

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
