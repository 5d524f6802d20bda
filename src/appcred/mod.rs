//! Application credentials (`/v3/users/{user_id}/application_credentials`) and their access
//! rules: a user delegates some of its roles on one project to a secret that programs
//! (Kubernetes, Terraform) authenticate with. Stored as document records under the user, so
//! they go when the user goes; a token from one is valid only while the credential exists and
//! the user still holds the roles.

pub mod access_rules;
pub mod auth;
pub mod credentials;
pub mod schemas;

use serde_json::{json, Value};

use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::state::model::{Doc, DocKind};
use crate::state::Reader;
use crate::token::render::iso_micros_naive;

pub use crate::reads::appcred::{find, id_term, rule_json, AppCred};

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

/// The credential as the API shows it (never with its secret).
pub fn render(node: &Core, c: &AppCred) -> ApiResult<Value> {
    let view = node.engine.read();
    let base = node.cfg.public_base();
    let mut roles = Vec::new();
    for id in &c.role_ids {
        if let Some(r) = view.role(id)? {
            roles.push(json!({"id": r.id, "name": r.name, "domain_id": r.domain_id, "description": r.description,
                              "options": crate::http::fields::json_obj(&r.options)}));
        }
    }
    let mut v = json!({
        "id": c.id, "name": c.name, "description": c.description, "user_id": c.user_id,
        "project_id": c.project_id, "system": null, "expires_at": c.expires_at.map(iso_micros_naive),
        "unrestricted": c.unrestricted, "roles": roles,
        "links": {"self": format!("{base}/v3/application_credentials/{}", c.id)},
    });
    if !c.access_rule_ids.is_empty() {
        let mut rules = Vec::new();
        for id in &c.access_rule_ids {
            if let Some(d) = view.doc(DocKind::AccessRule, &format!("{}/{id}", c.user_id))? {
                rules.push(rule_json(&crate::http::fields::json_obj(&d.body)));
            }
        }
        if let Some(o) = v.as_object_mut() {
            o.insert("access_rules".into(), Value::Array(rules));
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests;
