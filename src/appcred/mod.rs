//! Application credentials (`/v3/users/{user_id}/application_credentials`) and their access
//! rules: a user delegates some of its roles on one project to a secret that programs
//! (Kubernetes, Terraform) authenticate with. Stored as document records under the user, so
//! they go when the user goes; a token from one is valid only while the credential exists and
//! the user still holds the roles.

pub mod access_rules;
pub mod auth;
pub mod credentials;
pub mod schemas;

use serde_json::Value;

use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::json_obj;
use crate::http::openapi::SelfLink;
use crate::state::model::{Doc, DocKind};
use crate::state::Reader;
use crate::token::render::iso_micros_naive;

pub use crate::reads::appcred::{find, id_term, AppCred};

impl AppCred {
    /// The credential a document holds; a bad record is a 500.
    pub fn of(doc: &Doc) -> ApiResult<AppCred> {
        AppCred::parse(doc).map_err(ApiError::internal)
    }

    /// The argon2 hash of the secret.
    pub fn secret_hash(doc: &Doc) -> Option<String> {
        serde_json::from_str::<Value>(&doc.private).ok()?.get("secret_hash")?.as_str().map(str::to_string)
    }
}

/// The names-index value that keeps names unique per user.
pub fn name_term(user_id: &str, name: &str) -> String {
    format!("name:{user_id}/{name}")
}

/// An access rule as the API shows it, from its stored body.
pub fn access_rule(body: &Value) -> schemas::AccessRule {
    let field = |k: &str| body.get(k).cloned().unwrap_or(Value::Null);
    schemas::AccessRule { id: field("id"), service: field("service"), path: field("path"), method: field("method") }
}

/// The credential as the API shows it (never with its secret).
pub fn render(node: &Core, c: &AppCred) -> ApiResult<schemas::AppCred> {
    let view = node.engine.read();
    let base = node.cfg.public_base();
    let mut roles = Vec::new();
    for id in &c.role_ids {
        if let Some(r) = view.role(id)? {
            let options = json_obj(&r.options);
            let (id, name, domain_id, description) = (r.id, r.name, r.domain_id, r.description);
            roles.push(schemas::AppCredRole { id, name, domain_id, description, options });
        }
    }
    let mut access_rules = None;
    if !c.access_rule_ids.is_empty() {
        let mut rules = Vec::new();
        for id in &c.access_rule_ids {
            if let Some(d) = view.doc(DocKind::AccessRule, &format!("{}/{id}", c.user_id))? {
                rules.push(access_rule(&json_obj(&d.body)));
            }
        }
        access_rules = Some(rules);
    }
    Ok(schemas::AppCred {
        id: c.id.clone(),
        name: c.name.clone(),
        description: c.description.clone(),
        user_id: c.user_id.clone(),
        project_id: c.project_id.clone(),
        system: None,
        expires_at: c.expires_at.map(iso_micros_naive),
        unrestricted: c.unrestricted,
        roles,
        access_rules,
        links: SelfLink::new(&base, &format!("/v3/application_credentials/{}", c.id)),
    })
}

#[cfg(test)]
mod tests;
