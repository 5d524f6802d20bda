//! OAuth1 request and access tokens as stored: document records under their consumer (ids
//! `{consumer_id}/{token_id}`, so deleting the consumer deletes them), found by their own id
//! through the unique-value index. Secrets and the verifier live in `doc.private`.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::signature::VERIFIER_CHARS;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::json_obj;
use crate::reads::oauth1::id_term;
pub use crate::reads::oauth1::{expired, find, AccessToken};
use crate::state::model::{Doc, DocKind};

/// A request token: asked for by a consumer for one project, then authorized by a user with
/// some of the roles the user holds there.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestToken {
    pub id: String,
    pub consumer_id: String,
    pub requested_project_id: String,
    pub expires_at: Option<String>,
    pub authorizing_user_id: Option<String>,
    pub role_ids: Vec<String>,
}

/// The record of a token with its secret fields.
pub fn record<T: Serialize>(kind: DocKind, consumer_id: &str, id: &str, body: &T, private: Value) -> ApiResult<Doc> {
    Ok(Doc {
        kind,
        id: format!("{consumer_id}/{id}"),
        body: serde_json::to_string(body).map_err(ApiError::internal)?,
        private: private.to_string(),
        unique: vec![id_term(id)],
    })
}

pub fn body<T: for<'de> Deserialize<'de>>(doc: &Doc) -> ApiResult<T> {
    serde_json::from_str(&doc.body).map_err(ApiError::internal)
}

/// A secret field of a record (`secret`, `verifier`).
pub fn private(doc: &Doc, key: &str) -> Option<String> {
    json_obj(&doc.private).get(key)?.as_str().map(str::to_string)
}

/// 32 hex characters from the OS's CSPRNG: form bodies carry it unquoted, and oauthlib's
/// token format checks want hex.
pub fn new_secret() -> String {
    hex::encode(idnode_keys::random_bytes::<16>())
}

/// 8 distinct characters of [`VERIFIER_CHARS`] (Keystone's shape).
pub fn new_verifier() -> String {
    VERIFIER_CHARS.choose_multiple(&mut rand::rngs::OsRng, 8).map(|b| char::from(*b)).collect()
}

/// Keystone's expiry: `duration_s` from now, whole seconds, `...T12:00:00.000000Z`; none for
/// a duration of 0.
pub fn expiry(now_micros: i64, duration_s: i64) -> Option<String> {
    if duration_s <= 0 {
        return None;
    }
    let at = chrono::DateTime::from_timestamp(now_micros / 1_000_000 + duration_s, 0)?;
    Some(at.format("%Y-%m-%dT%H:%M:%S.000000Z").to_string())
}

/// The 201 of the token endpoints: `oauth_token=..&oauth_token_secret=..[&oauth_expires_at=..]`,
/// unquoted (every value is hex or a timestamp), as clients split it by hand.
pub fn form_response(id: &str, secret: &str, expires_at: Option<&str>) -> Response {
    let mut body = format!("oauth_token={id}&oauth_token_secret={secret}");
    if let Some(t) = expires_at {
        body.push_str(&format!("&oauth_expires_at={t}"));
    }
    (StatusCode::CREATED, [(header::CONTENT_TYPE, "application/x-www-form-urlencoded")], body).into_response()
}

/// An access token as the API shows it: never its secret or role ids.
pub fn render_access(base: &str, t: &AccessToken) -> Value {
    let path = format!("{base}/v3/users/{}/OS-OAUTH1/access_tokens/{}", t.authorizing_user_id, t.id);
    json!({
        "id": t.id, "consumer_id": t.consumer_id, "project_id": t.project_id,
        "authorizing_user_id": t.authorizing_user_id, "expires_at": t.expires_at,
        "links": {"self": path, "roles": format!("{path}/roles")},
    })
}
