//! OS-OAUTH1 consumers (`consumer`) and the access tokens users authorized for them
//! (`access_token`), as the oauth1 feature stores them: a consumer by its id, a token under its
//! consumer (`{consumer_id}/{token_id}`) and found by its own id. Keystone keeps both secrets
//! in clear (signatures are checked with them); here they go in the records' sealed `private`.
//!
//! Request tokens (`request_token`) do not move: they live minutes, for an authorization in
//! flight, which the consumer starts again.

use serde_json::{json, Map, Value};

use super::db::Db;
use super::source::Source;
use crate::oauth1::tokens::{record, AccessToken};
use crate::state::import::ImportRecord;
use crate::state::model::{Doc, DocKind, Ref};

pub async fn read(db: &Db, src: &mut Source) -> anyhow::Result<()> {
    for r in db.rows("consumer", &["id", "description", "secret", "extra"], "ORDER BY `id`").await? {
        let id = r.text("id");
        let Some(secret) = r.opt("secret").filter(|s| !s.is_empty()) else {
            src.skip("OAuth1 consumers", id, "it has no secret, so none of its signatures could be checked");
            continue;
        };
        let body = consumer_body(&id, r.opt("description"), r.opt("extra"));
        let private = json!({"secret": secret}).to_string();
        let doc = Doc { kind: DocKind::OAuthConsumer, id, body: body.to_string(), private, unique: Vec::new() };
        src.push(ImportRecord::Doc { doc, requires: Vec::new() });
    }

    let cols = ["id", "access_secret", "authorizing_user_id", "project_id", "role_ids", "consumer_id", "expires_at"];
    for r in db.rows("access_token", &cols, "ORDER BY `consumer_id`, `id`").await? {
        let (id, consumer_id) = (r.text("id"), r.text("consumer_id"));
        let label = format!("{id} (consumer {consumer_id}, user {})", r.text("authorizing_user_id"));
        let Some(role_ids) = role_ids(r.opt("role_ids")) else {
            src.skip("OAuth1 access tokens", label, "its role_ids are not a JSON list of role ids");
            continue;
        };
        let token = AccessToken {
            id,
            consumer_id,
            project_id: r.text("project_id"),
            authorizing_user_id: r.text("authorizing_user_id"),
            // Keystone's own text (`...T12:00:00.000000Z`), the shape idnode writes.
            expires_at: r.opt("expires_at").map(str::trim).filter(|t| !t.is_empty()).map(str::to_string),
            role_ids,
        };
        let secret = json!({"secret": r.text("access_secret")});
        let doc = record(DocKind::OAuthAccessToken, &token.consumer_id, &token.id, &token, secret)
            .map_err(|e| anyhow::anyhow!("access token {}: {}", token.id, e.message))?;
        let requires = vec![Ref::Doc(DocKind::OAuthConsumer, token.consumer_id.clone())];
        src.push(ImportRecord::Doc { doc, requires });
    }

    for r in db.rows("request_token", &["id", "consumer_id"], "ORDER BY `consumer_id`, `id`").await? {
        src.skip(
            "OAuth1 request tokens",
            format!("{} (consumer {})", r.text("id"), r.text("consumer_id")),
            "a short-lived token of an authorization in flight: the consumer asks for a new one",
        );
    }
    Ok(())
}

/// A consumer's body as the handler stores it: the other attributes the client gave (Keystone
/// keeps them in `extra`), `description` (null when none), and the id.
fn consumer_body(id: &str, description: Option<&str>, extra: Option<&str>) -> Value {
    let mut o = match extra.and_then(|t| serde_json::from_str(t).ok()) {
        Some(Value::Object(o)) => o,
        _ => Map::new(),
    };
    o.retain(|k, _| !matches!(k.as_str(), "links" | "id" | "secret"));
    o.insert("description".into(), json!(description));
    o.insert("id".into(), json!(id));
    Value::Object(o)
}

/// Keystone's `role_ids`: the JSON text of a list of role ids (sorted and distinct here, as
/// idnode's authorization writes them).
fn role_ids(raw: Option<&str>) -> Option<Vec<String>> {
    let mut ids: Vec<String> = serde_json::from_str(raw?).ok()?;
    ids.sort();
    ids.dedup();
    Some(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_bodies() {
        let b = consumer_body("c1", None, Some(r#"{"name": "ci", "id": "other", "secret": "s"}"#));
        assert_eq!(b, json!({"name": "ci", "description": null, "id": "c1"}));
        assert_eq!(consumer_body("c1", Some("d"), Some("{}")), json!({"description": "d", "id": "c1"}));
    }

    #[test]
    fn token_role_ids() {
        assert_eq!(role_ids(Some(r#"["b", "a", "b"]"#)), Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(role_ids(Some("[]")), Some(vec![]));
        assert_eq!(role_ids(Some("not json")), None);
        assert_eq!(role_ids(None), None);
    }
}
