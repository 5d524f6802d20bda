//! The `application_credential` authentication method: by id, or by name and owner, with the
//! secret. The token is scoped to the credential's project and may carry only its roles.

use serde_json::Value;

use super::{find, name_term, AppCred};
use crate::auth::proven::Proven;
use crate::clock::now_micros;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::state::keys::{doc_unique_ns, ns};
use crate::state::model::{Doc, DocKind};
use crate::state::Command;
use crate::state::Reader;
use crate::token::{Delegation, Method, TokenScope};

const SUFFIX: &str = "The server could not comply with the request since it is either malformed or otherwise \
                      incorrect. The client is assumed to be in error.";

/// The owner a by-name request names: `{"id"}` or `{"name", "domain": {"id"|"name"}}`.
fn owner_id(node: &Core, user: &Value) -> ApiResult<Option<String>> {
    let view = node.engine.read();
    if let Some(id) = user.get("id").and_then(Value::as_str) {
        return Ok(Some(id.to_string()));
    }
    let (Some(name), Some(domain)) = (user.get("name").and_then(Value::as_str), user.get("domain")) else {
        return Err(ApiError::bad_request(format!("Expecting to find user in application credential. {SUFFIX}")));
    };
    let domain_id = match (domain.get("id").and_then(Value::as_str), domain.get("name").and_then(Value::as_str)) {
        (Some(id), _) => Some(id.to_string()),
        (None, Some(n)) => view.id_by_name(ns::DOMAIN_NAME, "", n)?,
        _ => None,
    };
    match domain_id {
        Some(d) => Ok(view.id_by_name(ns::USER_NAME, &d, name)?),
        None => Ok(None),
    }
}

pub async fn authenticate(node: &Core, body: Option<&Value>) -> ApiResult<Proven> {
    let body = body.ok_or_else(|| ApiError::bad_request("'application_credential' is a required property."))?;
    let secret = body.get("secret").and_then(Value::as_str).map(str::to_string);
    let doc = match (body.get("id").and_then(Value::as_str), body.get("name").and_then(Value::as_str)) {
        (Some(id), _) => {
            Some(find(&node.engine.read(), id)?.ok_or_else(|| ApiError::not_found("Application Credential", id))?)
        }
        (None, Some(name)) => {
            let user = body.get("user").ok_or_else(|| {
                ApiError::bad_request(format!("Expecting to find user in application credential. {SUFFIX}"))
            })?;
            match owner_id(node, user)? {
                Some(uid) => {
                    let view = node.engine.read();
                    match view.id_by_name(&doc_unique_ns(DocKind::ApplicationCredential), "", &name_term(&uid, name))? {
                        Some(doc_id) => view.doc(DocKind::ApplicationCredential, &doc_id)?,
                        None => None,
                    }
                }
                None => None,
            }
        }
        _ => {
            return Err(ApiError::bad_request(format!(
                "Expecting to find name or ID in application credential. {SUFFIX}"
            )))
        }
    };
    // Unknown names, wrong secrets and expired credentials all look alike.
    let hash = doc.as_ref().and_then(AppCred::secret_hash);
    let ok = match (&secret, hash) {
        (Some(s), Some(h)) => node.verify_password(s.clone(), h).await?,
        (Some(s), None) => {
            node.verify_password(s.clone(), node.dummy_hash.clone()).await?;
            false
        }
        (None, _) => false,
    };
    let refused = || {
        node.metrics
            .auth_attempts
            .get_or_create(&crate::http::metrics::labels(&[
                ("method", "application_credential"),
                ("result", "failure"),
            ]))
            .inc();
        ApiError::unauthenticated()
    };
    let (Some(doc), true) = (doc, ok) else { return Err(refused()) };
    let cred = AppCred::of(&doc)?;
    if cred.expired(now_micros()) {
        return Err(refused());
    }
    if let Some(s) = secret {
        rehash_kept_secret(node, &doc, s).await;
    }
    let user = node.engine.read().user(&cred.user_id)?.filter(|u| u.enabled).ok_or_else(refused)?;
    Ok(Proven {
        user,
        methods: Method::ApplicationCredential as u8,
        parent: None,
        delegation: Delegation::AppCred(cred.id),
        fixed_scope: Some(TokenScope::Project(cred.project_id)),
        expires_at: cred.expires_at,
        restriction: None,
    })
}

/// A secret hash kept from Keystone (`idnode import keystone`) is replaced with argon2id once
/// the secret proved it, as a kept password is (`identity::rehash`). Credentials never change
/// after creation, so replacing the record cannot undo another change; a refusal (a leader
/// away, the credential deleted meanwhile) leaves the old hash, which keeps working.
async fn rehash_kept_secret(node: &Core, doc: &Doc, secret: String) {
    if AppCred::secret_hash(doc).is_none_or(|h| idnode_keys::PasswordHasher::is_current(&h)) {
        return;
    }
    let hash = match node.hash_password(secret).await {
        Ok(h) => h,
        Err(e) => {
            tracing::warn!(credential = %doc.id, error = %e.message, "could not rehash a secret kept from Keystone");
            return;
        }
    };
    let mut doc = doc.clone();
    doc.private = serde_json::json!({"secret_hash": hash}).to_string();
    let id = doc.id.clone();
    if let Err(e) = node.propose(Command::PutDoc { doc, create: false, requires: Vec::new() }).await {
        tracing::warn!(credential = %id, error = %e.message, "could not rehash a secret kept from Keystone");
    }
}
