//! OS-TRUST: a trustor delegates some of its roles on one project to a trustee, who then gets
//! trust-scoped tokens (acting as the trustor when the trust impersonates). A trust's tokens
//! are valid only while the trust exists, has not expired and the trustor still holds the
//! roles.

pub mod auth;
pub mod schemas;
pub mod trusts;

use crate::assignment::roles::role;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::openapi::{CollectionLinks, SelfLink};
use crate::state::model::{Doc, DocKind, Role};
use crate::state::Reader;
use crate::token::render::iso_micros;

pub use crate::reads::trust::Trust;

impl Trust {
    /// The trust a document holds; a bad record is a 500.
    pub fn of(doc: &Doc) -> ApiResult<Trust> {
        Trust::parse(doc).map_err(ApiError::internal)
    }
}

/// A usable trust, or Keystone's 404.
pub fn load(node: &Core, id: &str) -> ApiResult<Trust> {
    let doc = node.engine.read().doc(DocKind::Trust, id)?;
    match doc.map(|d| Trust::of(&d)).transpose()? {
        Some(t) if t.usable(crate::clock::now_micros()) => Ok(t),
        _ => Err(ApiError::not_found("trust", id)),
    }
}

/// The trust's roles as stored (those that still exist).
pub fn roles(r: &impl Reader, t: &Trust) -> ApiResult<Vec<Role>> {
    let mut out = Vec::new();
    for id in &t.role_ids {
        if let Some(role) = r.role(id)? {
            out.push(role);
        }
    }
    Ok(out)
}

/// Keystone's trust times: whole seconds, shown as `.000000Z`.
fn trust_time(micros: i64) -> String {
    iso_micros(micros - micros.rem_euclid(1_000_000))
}

/// The trust as the API shows it; `with_roles` adds its roles (not in lists).
pub fn render(node: &Core, t: &Trust, with_roles: bool) -> ApiResult<schemas::Trust> {
    let base = node.cfg.public_base();
    let (mut roles_of, mut roles_links) = (None, None);
    if with_roles {
        roles_of = Some(roles(&node.engine.read(), t)?.iter().map(|r| role(r, &base)).collect());
        roles_links = Some(CollectionLinks::whole(format!("{base}/v3/OS-TRUST/trusts/{}/roles", t.id)));
    }
    Ok(schemas::Trust {
        extra: t.extra.clone(),
        id: t.id.clone(),
        trustor_user_id: t.trustor_user_id.clone(),
        trustee_user_id: t.trustee_user_id.clone(),
        project_id: t.project_id.clone(),
        impersonation: t.impersonation,
        expires_at: t.expires_at.map(trust_time),
        remaining_uses: t.remaining_uses,
        deleted_at: None,
        redelegated_trust_id: t.redelegated_trust_id.clone(),
        redelegation_count: t.redelegation_count,
        roles: roles_of,
        roles_links,
        links: SelfLink::new(&base, &format!("/v3/OS-TRUST/trusts/{}", t.id)),
    })
}

#[cfg(test)]
mod tests;
