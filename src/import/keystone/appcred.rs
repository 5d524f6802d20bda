//! Application credentials (`application_credential` with `application_credential_role` and
//! `application_credential_access_rule`) and the users' access rules (`access_rule`), as the
//! appcred feature stores them: documents under their user (`{user_id}/{id}`), found by id and
//! by name through their unique terms.
//!
//! Keystone's `secret_hash` is kept as it is: idnode verifies Keystone's hash formats natively
//! (`idnode_keys::keystone_hash`), so the secrets programs hold keep working.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::db::{Db, SqlRow};
use super::source::Source;
use crate::appcred::name_term;
use crate::reads::appcred::id_term;
use crate::state::import::ImportRecord;
use crate::state::model::{Doc, DocKind, Ref};

const CREDS: &str = "application credentials";
const RULES: &str = "access rules";

/// A rule as the credentials name it: its owner and its id the API shows.
struct Rule {
    user_id: String,
    external_id: String,
}

pub async fn read(db: &Db, src: &mut Source) -> anyhow::Result<()> {
    // Rules first: a credential requires the rules it names.
    let mut rules: HashMap<String, Rule> = HashMap::new();
    let cols = ["id", "external_id", "user_id", "service", "path", "method"];
    for r in db.rows("access_rule", &cols, "ORDER BY `user_id`, `external_id`").await? {
        let (Some(user_id), Some(external_id)) = (r.opt("user_id"), r.opt("external_id")) else {
            let label = format!("#{} ({} {} {})", r.text("id"), r.text("service"), r.text("method"), r.text("path"));
            src.skip(RULES, label, "it has no owner or no id in Keystone, so no credential can name it");
            continue;
        };
        let body = rule_body(external_id, user_id, r.opt("service"), r.opt("path"), r.opt("method"));
        let doc = Doc {
            kind: DocKind::AccessRule,
            id: format!("{user_id}/{external_id}"),
            body: body.to_string(),
            private: "{}".into(),
            unique: Vec::new(),
        };
        // The handler writes a new rule with its credential, which requires the user; alone
        // here, the rule requires the user itself.
        src.push(ImportRecord::Doc { doc, requires: vec![Ref::User(user_id.to_string())] });
        rules.insert(r.text("id"), Rule { user_id: user_id.to_string(), external_id: external_id.to_string() });
    }

    let mut roles: HashMap<String, Vec<String>> = HashMap::new();
    let order = "ORDER BY `application_credential_id`, `role_id`";
    for r in db.rows("application_credential_role", &["application_credential_id", "role_id"], order).await? {
        roles.entry(r.text("application_credential_id")).or_default().push(r.text("role_id"));
    }
    let mut cred_rules: HashMap<String, Vec<String>> = HashMap::new();
    let order = "ORDER BY `application_credential_id`, `access_rule_id`";
    let cols = ["application_credential_id", "access_rule_id"];
    for r in db.rows("application_credential_access_rule", &cols, order).await? {
        cred_rules.entry(r.text("application_credential_id")).or_default().push(r.text("access_rule_id"));
    }

    let cols = [
        "internal_id",
        "id",
        "name",
        "secret_hash",
        "description",
        "user_id",
        "project_id",
        "system",
        "expires_at",
        "unrestricted",
    ];
    for r in db.rows("application_credential", &cols, "ORDER BY `user_id`, `id`").await? {
        let (id, user_id, name) = (r.text("id"), r.text("user_id"), r.text("name"));
        let label = format!("{id} ({name} of user {user_id})");
        let project_id = match (r.opt("project_id"), r.opt("system")) {
            (Some(p), None) if !p.is_empty() => p.to_string(),
            (_, Some(system)) => {
                let why = format!(
                    "a system-scoped credential (system {system:?}): idnode's application credentials are \
                     scoped to one project"
                );
                src.skip(CREDS, label, why);
                continue;
            }
            _ => {
                src.skip(CREDS, label, "it names no project, so a token from it would have no scope");
                continue;
            }
        };
        let secret_hash = r.text("secret_hash");
        if !verifiable(&secret_hash) {
            let why = format!("its secret hash is in a format idnode cannot verify ({})", ident(&secret_hash));
            src.skip(CREDS, label, why);
            continue;
        }
        let internal = r.text("internal_id");
        let mut role_ids = roles.remove(&internal).unwrap_or_default();
        role_ids.sort();
        role_ids.dedup();
        let (mut rule_ids, mut requires, mut lost) = (Vec::new(), Vec::new(), None);
        for rule in cred_rules.remove(&internal).unwrap_or_default() {
            match rules.get(&rule) {
                Some(rule) if rule.user_id == user_id => {
                    requires.push(Ref::Doc(DocKind::AccessRule, format!("{user_id}/{}", rule.external_id)));
                    rule_ids.push(rule.external_id.clone());
                }
                Some(rule) => lost = Some(format!("its access rule {} belongs to another user", rule.external_id)),
                None => lost = Some(format!("its access rule #{rule} was not moved")),
            }
        }
        // Without one of its rules the credential would reach more than Keystone let it.
        if let Some(why) = lost {
            src.skip(CREDS, label, why);
            continue;
        }
        requires.push(Ref::User(user_id.clone()));
        let body = json!({
            "id": id, "name": name, "description": r.opt("description"),
            "user_id": user_id, "project_id": project_id, "expires_at": expires_at(&r),
            "unrestricted": r.opt("unrestricted").map(|_| r.flag("unrestricted")),
            "role_ids": role_ids, "access_rule_ids": rule_ids,
        });
        let doc = Doc {
            kind: DocKind::ApplicationCredential,
            id: format!("{user_id}/{id}"),
            body: body.to_string(),
            private: json!({"secret_hash": secret_hash}).to_string(),
            unique: vec![id_term(&id), name_term(&user_id, &name)],
        };
        src.push(ImportRecord::Doc { doc, requires });
    }
    Ok(())
}

/// A rule's body as the handler writes it (a column Keystone left NULL stays null).
fn rule_body(id: &str, user_id: &str, service: Option<&str>, path: Option<&str>, method: Option<&str>) -> Value {
    json!({"id": id, "service": service, "path": path, "method": method, "user_id": user_id})
}

/// The expiry in unix microseconds: a `DateTimeInt` (microseconds) in every schema this
/// import reads; a `DATETIME` text is read too, should a database still hold one.
fn expires_at(r: &SqlRow) -> Option<i64> {
    r.int("expires_at").or_else(|| r.micros("expires_at"))
}

/// Whether idnode's password verifier can check the hash: one of Keystone's formats, or
/// idnode's own argon2id.
fn verifiable(hash: &str) -> bool {
    idnode_keys::keystone_hash::is_keystone_hash(hash) || idnode_keys::PasswordHasher::is_current(hash)
}

/// A hash's `$ident$`, for the report (never the hash itself).
fn ident(hash: &str) -> String {
    match hash.strip_prefix('$').and_then(|rest| rest.split_once('$')) {
        Some((ident, _)) if !ident.is_empty() => format!("${ident}$"),
        _ => "no $ident$ prefix".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_bodies_keep_nulls() {
        let b = rule_body("r1", "u1", Some("compute"), None, Some("GET"));
        assert_eq!(b, json!({"id": "r1", "service": "compute", "path": null, "method": "GET", "user_id": "u1"}));
        // The appcred feature reads it back as the API shows it.
        let shown = crate::appcred::access_rule(&b);
        assert_eq!(shown.id, json!("r1"));
        assert_eq!(shown.path, Value::Null);
    }

    #[test]
    fn hash_formats() {
        assert!(verifiable("$2b$12$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234"));
        assert!(verifiable("$scrypt$ln=16,r=8,p=1$c2FsdA$ZGlnZXN0"));
        assert!(verifiable("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$ZGlnZXN0"));
        assert!(!verifiable("$6$rounds=5000$salt$digest"));
        assert_eq!(ident("$6$rounds=5000$salt$digest"), "$6$");
        assert_eq!(ident("plain"), "no $ident$ prefix");
    }
}
