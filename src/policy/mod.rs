//! The one authorization choke point: `enforce(name, ctx, target)`. Every handler other than
//! discovery and token issue calls it. The rules are Rego (evaluated by regorus), bundled per
//! subsystem under `policy/default/` and mirroring Keystone's default policies and personas
//! (admin, manager, member, reader; system, domain and project scope). Operators can replace
//! or extend them from `[policy] directory`, reloaded on SIGHUP (see `docs/policy.md`).
//!
//! Who is a cloud administrator is the node's `[policy] admin_scope` ([`AdminScope`](admin_scope::AdminScope)):
//! Keystone's `role:admin` on any scope by default, or only with system scope (or on the admin
//! project) in the strict mode.

mod actions;
pub mod admin_scope;
pub mod guard;
mod input;
#[cfg(test)]
mod matrix;
#[cfg(test)]
mod matrix_confined;
mod persona;
mod scope_types;
mod store;
#[cfg(test)]
mod tests;

use std::sync::OnceLock;

use serde_json::Value;

pub use store::PolicyStore;

use crate::http::ApiError;
use crate::token::{Memo, ValidToken};

/// The node's policy set. One per process: `enforce` has no node at hand, and a process
/// serves one node.
pub fn global() -> &'static PolicyStore {
    static STORE: OnceLock<PolicyStore> = OnceLock::new();
    STORE.get_or_init(PolicyStore::bundled)
}

/// Decides `name` for the caller on `target` (a JSON object shaped like Keystone's policy
/// target, e.g. `{"project": {"domain_id": …}}`). Unknown names are denied (and logged).
/// The caller's token remembers the answer (`token::Memo`) for as long as it stands for this
/// state.
pub fn enforce(name: &str, ctx: &ValidToken, target: &Value) -> Result<(), ApiError> {
    let span = idnode_raft::traced_span!("policy", policy.rule = name, policy.allowed = tracing::field::Empty);
    let _in = span.enter();
    let decision = decide(name, ctx, target);
    span.record("policy.allowed", decision.is_ok());
    decision
}

fn decide(name: &str, ctx: &ValidToken, target: &Value) -> Result<(), ApiError> {
    if !scope_types::admits(name, &ctx.payload.scope) {
        return Err(ApiError::denied(name));
    }
    let key = Memo::key(name, target, global().generation());
    let allowed = match ctx.decisions.get(&key) {
        Some(allowed) => allowed,
        None => {
            let allowed = global().allowed(name, &input::document(name, ctx, target));
            ctx.decisions.put(key, allowed);
            allowed
        }
    };
    if allowed {
        Ok(())
    } else {
        Err(ApiError::denied(name))
    }
}

/// Keystone's order for a target the request names but that may not exist: the policy is
/// asked first, with the target when it was found and with what is known of it (`absent`,
/// often nothing) when it was not, so a caller who may not act on it hears 403 whether or
/// not it exists (no oracle of another domain's ids); only a caller who may hears the 404.
pub fn enforce_found<T>(
    name: &str,
    ctx: &ValidToken,
    found: Result<T, ApiError>,
    target: impl FnOnce(&T) -> Value,
    absent: Value,
) -> Result<T, ApiError> {
    match found {
        Ok(t) => enforce(name, ctx, &target(&t)).map(|()| t),
        Err(e) if e.status == axum::http::StatusCode::NOT_FOUND => {
            enforce(name, ctx, &absent)?;
            Err(e)
        }
        Err(e) => Err(e),
    }
}

/// [`enforce`] for a caller that is not a token's user (an API key).
pub fn enforce_principal(name: &str, p: &input::Principal<'_>, target: &Value) -> Result<(), ApiError> {
    let span = idnode_raft::traced_span!("policy", policy.rule = name);
    let _in = span.enter();
    if scope_types::admits_domain(name) && global().allowed(name, &input::principal_document(name, p, target)) {
        Ok(())
    } else {
        Err(ApiError::denied(name))
    }
}

pub use input::Principal;
pub use persona::Persona;
