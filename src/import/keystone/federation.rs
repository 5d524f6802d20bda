//! OS-FEDERATION (`mapping`, `identity_provider` with `idp_remote_ids`, `federation_protocol`,
//! `service_provider`) as the document records idnode's federation API stores
//! (`src/federation/*.rs`): mappings first, then identity providers (each needing its domain),
//! then their protocols (each needing its provider and mapping), then service providers.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::db::Db;
use super::source::Source;
use crate::federation::mapping_rules;
use crate::state::import::ImportRecord;
use crate::state::model::{Doc, DocKind, Ref};

/// The expand revisions older than `47147121`, the one that added `mapping.schema_version`:
/// a database at one of these has no such column.
const BEFORE_SCHEMA_VERSION: [&str; 3] = ["29e87d24a316", "b4f8b3f584e0", "11c3b243b4cb"];

/// What Keystone's mapping API assumes when a mapping names no version (and what the column
/// defaults to).
const DEFAULT_SCHEMA_VERSION: &str = "1.0";

pub async fn read(db: &Db, src: &mut Source) -> anyhow::Result<()> {
    let (mappings, skipped_mappings) = read_mappings(db, src).await?;
    let idps = read_identity_providers(db, src).await?;
    read_protocols(db, src, &mappings, &skipped_mappings, &idps).await?;
    read_service_providers(db, src).await?;
    Ok(())
}

/// Whether the database has `mapping.schema_version`: read off its alembic heads (which
/// `Db::open` already checked are ones this reader knows), since `Db` cannot list columns.
async fn has_schema_version(db: &Db) -> anyhow::Result<bool> {
    let heads = db.rows("alembic_version", &["version_num"], "").await?;
    Ok(!heads.iter().any(|h| BEFORE_SCHEMA_VERSION.contains(&h.text("version_num").as_str())))
}

/// Pushes the mappings idnode can read; answers the ids pushed and those skipped.
async fn read_mappings(db: &Db, src: &mut Source) -> anyhow::Result<(HashSet<String>, HashSet<String>)> {
    let cols: &[&'static str] =
        if has_schema_version(db).await? { &["id", "rules", "schema_version"] } else { &["id", "rules"] };
    let (mut pushed, mut skipped) = (HashSet::new(), HashSet::new());
    for r in db.rows("mapping", cols, "ORDER BY `id`").await? {
        let id = r.text("id");
        match mapping_doc(&id, r.opt("rules"), r.opt("schema_version")) {
            Ok(doc) => {
                pushed.insert(id);
                src.push(ImportRecord::Doc { doc, requires: Vec::new() });
            }
            Err(why) => {
                src.skip("mappings", id.clone(), why);
                skipped.insert(id);
            }
        }
    }
    Ok((pushed, skipped))
}

/// Pushes the identity providers with their remote ids; answers the ids pushed.
async fn read_identity_providers(db: &Db, src: &mut Source) -> anyhow::Result<HashSet<String>> {
    let mut remote: HashMap<String, Vec<String>> = HashMap::new();
    for r in db.rows("idp_remote_ids", &["idp_id", "remote_id"], "ORDER BY `idp_id`, `remote_id`").await? {
        // A row without a provider names nobody (Keystone never writes one).
        if let (Some(idp), Some(remote_id)) = (r.opt("idp_id"), r.opt("remote_id")) {
            remote.entry(idp.to_string()).or_default().push(remote_id.to_string());
        }
    }
    let mut pushed = HashSet::new();
    let cols = ["id", "enabled", "description", "domain_id", "authorization_ttl"];
    for r in db.rows("identity_provider", &cols, "ORDER BY `id`").await? {
        let id = r.text("id");
        if let Err(why) = path_id(&id) {
            src.skip("identity providers", id, why);
            continue;
        }
        let domain_id = r.text("domain_id");
        let provider = Provider {
            enabled: r.flag("enabled"),
            description: r.opt("description"),
            domain_id: &domain_id,
            authorization_ttl: r.int("authorization_ttl"),
            remote_ids: remote.remove(&id).unwrap_or_default(),
        };
        let doc = idp_doc(&id, provider);
        pushed.insert(id);
        src.push(ImportRecord::Doc { doc, requires: vec![Ref::Domain(domain_id)] });
    }
    Ok(pushed)
}

async fn read_protocols(
    db: &Db,
    src: &mut Source,
    mappings: &HashSet<String>,
    skipped_mappings: &HashSet<String>,
    idps: &HashSet<String>,
) -> anyhow::Result<()> {
    let cols = ["id", "idp_id", "mapping_id", "remote_id_attribute"];
    for r in db.rows("federation_protocol", &cols, "ORDER BY `idp_id`, `id`").await? {
        let (idp_id, protocol_id, mapping_id) = (r.text("idp_id"), r.text("id"), r.text("mapping_id"));
        let label = format!("{idp_id}/{protocol_id}");
        let refused = if !idps.contains(&idp_id) {
            Some(format!("its identity provider {idp_id} is not imported (see identity providers)"))
        } else if let Err(why) = path_id(&protocol_id) {
            Some(why.to_string())
        } else if skipped_mappings.contains(&mapping_id) {
            Some(format!("its mapping {mapping_id} is not imported (see mappings)"))
        } else if !mappings.contains(&mapping_id) {
            Some(format!(
                "it names mapping {mapping_id}, which Keystone no longer has (deleted after the protocol was made); \
                 idnode needs a protocol's mapping to exist: create the mapping, then the protocol"
            ))
        } else {
            None
        };
        if let Some(why) = refused {
            src.skip("federation protocols", label, why);
            continue;
        }
        let doc = protocol_doc(&idp_id, &protocol_id, &mapping_id, r.opt("remote_id_attribute"));
        let requires = vec![Ref::Doc(DocKind::IdentityProvider, idp_id), Ref::Doc(DocKind::Mapping, mapping_id)];
        src.push(ImportRecord::Doc { doc, requires });
    }
    Ok(())
}

async fn read_service_providers(db: &Db, src: &mut Source) -> anyhow::Result<()> {
    let cols = ["id", "enabled", "description", "auth_url", "sp_url", "relay_state_prefix"];
    for r in db.rows("service_provider", &cols, "ORDER BY `id`").await? {
        let id = r.text("id");
        if let Err(why) = path_id(&id) {
            src.skip("service providers", id, why);
            continue;
        }
        let mut body = Map::new();
        body.insert("auth_url".into(), json!(r.text("auth_url")));
        body.insert("sp_url".into(), json!(r.text("sp_url")));
        body.insert("description".into(), json!(r.opt("description")));
        body.insert("enabled".into(), json!(r.flag("enabled")));
        // NOT NULL in Keystone; a NULL would show as null there too.
        body.insert("relay_state_prefix".into(), json!(r.opt("relay_state_prefix")));
        src.push(ImportRecord::Doc { doc: doc(DocKind::ServiceProvider, &id, body, true), requires: Vec::new() });
    }
    Ok(())
}

/// The columns of one identity provider.
struct Provider<'a> {
    enabled: bool,
    description: Option<&'a str>,
    domain_id: &'a str,
    authorization_ttl: Option<i64>,
    remote_ids: Vec<String>,
}

/// A provider as `identity_providers::create` stores it: every field present (nulls kept),
/// `id` in the body, its remote ids as the kind's unique values. Keystone reads remote ids back
/// in order, so they are kept sorted.
fn idp_doc(id: &str, p: Provider<'_>) -> Doc {
    let mut remote_ids = p.remote_ids;
    remote_ids.sort();
    remote_ids.dedup();
    let mut body = Map::new();
    body.insert("enabled".into(), json!(p.enabled));
    body.insert("description".into(), json!(p.description));
    body.insert("remote_ids".into(), json!(remote_ids));
    body.insert("authorization_ttl".into(), json!(p.authorization_ttl));
    body.insert("domain_id".into(), json!(p.domain_id));
    let mut d = doc(DocKind::IdentityProvider, id, body, true);
    d.unique = remote_ids;
    d
}

/// A protocol as `protocols::save` stores it: id `{idp_id}/{protocol_id}`, the body's `id`
/// the protocol's own.
fn protocol_doc(idp_id: &str, protocol_id: &str, mapping_id: &str, remote_id_attribute: Option<&str>) -> Doc {
    let mut body = Map::new();
    body.insert("id".into(), json!(protocol_id));
    body.insert("idp_id".into(), json!(idp_id));
    body.insert("mapping_id".into(), json!(mapping_id));
    body.insert("remote_id_attribute".into(), json!(remote_id_attribute));
    doc(DocKind::FederationProtocol, &format!("{idp_id}/{protocol_id}"), body, false)
}

/// A mapping as `mappings::create` stores it (`id`, `rules`, `schema_version`), or why not:
/// its rules must pass the same schema check the API applies, since idnode's readers of a
/// stored mapping rely on it.
fn mapping_doc(id: &str, rules: Option<&str>, version: Option<&str>) -> Result<Doc, String> {
    path_id(id).map_err(str::to_string)?;
    let rules = decode_rules(rules.unwrap_or_default()).map_err(|e| format!("its rules are not JSON ({e})"))?;
    let version = match version.map(str::trim) {
        None | Some("") => DEFAULT_SCHEMA_VERSION,
        Some(v) => v,
    };
    mapping_rules::check(Some(&rules), version)
        .map_err(|e| format!("its rules do not pass the mapping schema {version}: {}", e.message.trim_end()))?;
    let mut body = Map::new();
    body.insert("rules".into(), rules);
    body.insert("schema_version".into(), json!(version));
    Ok(doc(DocKind::Mapping, id, body, true))
}

/// A mapping's `rules` column: Keystone encodes the rules twice (the model dumps them to JSON
/// text, which the column type dumps again), so the column holds a JSON string of the JSON
/// rules; a column holding the rules themselves is read as well.
fn decode_rules(text: &str) -> serde_json::Result<Value> {
    match serde_json::from_str::<Value>(text)? {
        Value::String(inner) => serde_json::from_str(&inner),
        rules => Ok(rules),
    }
}

/// The federation API's rule for ids chosen in the path (`federation::check_path_id`): 1 to
/// 255 characters without `/` (a `/` would also break a protocol's `{idp_id}/{protocol_id}`).
fn path_id(id: &str) -> Result<(), &'static str> {
    if id.is_empty() || id.chars().count() > 255 || id.contains('/') {
        return Err("its id is empty, longer than 255 characters or holds a '/', which idnode's ids may not");
    }
    Ok(())
}

/// A document record; `shows_id`: whether the API shows the id in the body.
fn doc(kind: DocKind, id: &str, mut body: Map<String, Value>, shows_id: bool) -> Doc {
    if shows_id {
        body.insert("id".into(), json!(id));
    }
    Doc { kind, id: id.to_string(), body: Value::Object(body).to_string(), private: "{}".into(), unique: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(d: &Doc) -> Value {
        serde_json::from_str(&d.body).unwrap()
    }

    #[test]
    fn idp_has_every_field_and_sorted_unique_remote_ids() {
        let p = Provider {
            enabled: true,
            description: None,
            domain_id: "d1",
            authorization_ttl: Some(30),
            remote_ids: vec!["https://b".into(), "https://a".into()],
        };
        let d = idp_doc("acme", p);
        assert_eq!(d.kind, DocKind::IdentityProvider);
        assert_eq!(d.id, "acme");
        assert_eq!(
            body(&d),
            json!({"id": "acme", "enabled": true, "description": null, "remote_ids": ["https://a", "https://b"],
                   "authorization_ttl": 30, "domain_id": "d1"})
        );
        assert_eq!(d.unique, vec!["https://a".to_string(), "https://b".to_string()]);
        assert_eq!(d.private, "{}");

        let none = Provider {
            enabled: false,
            description: Some("x"),
            domain_id: "d",
            authorization_ttl: None,
            remote_ids: vec![],
        };
        let b = body(&idp_doc("p", none));
        assert_eq!(b["remote_ids"], json!([]));
        assert_eq!(b["authorization_ttl"], Value::Null);
        assert_eq!(b["description"], json!("x"));
    }

    #[test]
    fn protocol_id_joins_provider_and_protocol() {
        let d = protocol_doc("acme", "saml2", "m1", None);
        assert_eq!(d.id, "acme/saml2");
        assert_eq!(body(&d), json!({"id": "saml2", "idp_id": "acme", "mapping_id": "m1", "remote_id_attribute": null}));
        let d = protocol_doc("acme", "openid", "m1", Some("HTTP_OIDC_ISS"));
        assert_eq!(body(&d)["remote_id_attribute"], json!("HTTP_OIDC_ISS"));
    }

    #[test]
    fn mapping_keeps_rules_and_defaults_the_version() {
        let rules = r#"[{"local": [{"user": {"name": "{0}"}}], "remote": [{"type": "REMOTE_USER"}]}]"#;
        let d = mapping_doc("m1", Some(rules), None).unwrap();
        let b = body(&d);
        assert_eq!(b["id"], json!("m1"));
        assert_eq!(b["schema_version"], json!("1.0"));
        assert_eq!(b["rules"][0]["remote"][0]["type"], json!("REMOTE_USER"));
        assert_eq!(body(&mapping_doc("m1", Some(rules), Some("")).unwrap())["schema_version"], json!("1.0"));
        assert_eq!(body(&mapping_doc("m1", Some(rules), Some("2.0")).unwrap())["schema_version"], json!("2.0"));
    }

    #[test]
    fn rules_are_decoded_from_keystones_double_encoding() {
        // As Keystone's `mapping.rules` holds them.
        let stored = r#""[{\"local\": [{\"user\": {\"name\": \"{0}\"}}], \"remote\": [{\"type\": \"REMOTE_USER\"}]}]""#;
        let rules = decode_rules(stored).unwrap();
        assert_eq!(rules[0]["remote"][0]["type"], json!("REMOTE_USER"));
        let d = mapping_doc("m1", Some(stored), Some("1.0")).unwrap();
        assert_eq!(body(&d)["rules"], rules);
        assert!(decode_rules(r#""not json""#).is_err());
    }

    #[test]
    fn unreadable_mappings_are_refused_with_a_reason() {
        assert!(mapping_doc("m", Some("not json"), None).unwrap_err().contains("not JSON"));
        assert!(mapping_doc("m", Some("[]"), None).unwrap_err().contains("mapping schema 1.0"));
        let rules = r#"[{"local": [{"user": {"name": "{0}"}}], "remote": [{"type": "REMOTE_USER"}]}]"#;
        assert!(mapping_doc("m", Some(rules), Some("9.9")).is_err());
        assert!(mapping_doc("a/b", Some(rules), None).is_err());
    }

    #[test]
    fn path_ids_follow_the_api_rule() {
        assert!(path_id("acme").is_ok());
        assert!(path_id("").is_err());
        assert!(path_id("a/b").is_err());
        assert!(path_id(&"x".repeat(256)).is_err());
    }
}
