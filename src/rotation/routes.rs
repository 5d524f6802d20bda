//! The ops listener's key routes, behind the cluster credential (like backups):
//! `GET /keys`, `POST /keys/token/rotate`, `POST /keys/data/rotate`, `POST /keys/kek/rekey`,
//! `PUT`/`DELETE /keys/keystone-fernet` (an imported Keystone fernet key repository).

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use idnode_keys::TokenKeyRing;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::state::read::TokenReads;
use crate::state::Command;
use crate::token::Tokens;

pub const PATH_KEYS: &str = "/keys";
pub const PATH_ROTATE_TOKEN: &str = "/keys/token/rotate";
pub const PATH_ROTATE_DATA: &str = "/keys/data/rotate";
pub const PATH_REKEY: &str = "/keys/kek/rekey";
pub const PATH_KEYSTONE_FERNET: &str = "/keys/keystone-fernet";

pub fn router(node: Arc<Tokens>) -> Router {
    let routes = Router::new()
        .route(PATH_KEYS, get(show))
        .route(PATH_ROTATE_TOKEN, post(rotate_token))
        .route(PATH_ROTATE_DATA, post(rotate_data))
        .route(PATH_REKEY, post(rekey))
        .route(PATH_KEYSTONE_FERNET, put(keystone_fernet).delete(forget_keystone_fernet))
        .with_state(node.clone());
    node.raft.operator_only(routes)
}

fn failure(status: StatusCode, message: impl std::fmt::Display) -> Response {
    (status, Json(json!({"error": message.to_string()}))).into_response()
}

/// Ids, states and creation times of the token keys; never key material.
fn token_keys(ring: &TokenKeyRing) -> Value {
    let keys: Vec<Value> = ring
        .keys
        .iter()
        .map(|k| json!({"id": k.id, "state": format!("{:?}", k.state), "created_at": k.created_at}))
        .collect();
    Value::Array(keys)
}

fn status(node: &Tokens) -> Value {
    let ring = node.token_ring().ok();
    json!({
        "node_id": node.cfg.node_id,
        // The name `idnode backup inspect` shows for this cluster's backups (never the secret).
        "cluster_id": node.cfg.cluster_secret.as_deref().map(|s| idnode_raft::BackupKey::from_secret(s).cluster_id()),
        "data_keys": node.node_keys.status(),
        "token_keys": ring.as_deref().map(token_keys),
        "cluster_version": node.raft.cluster_version(),
        // How many imported Keystone fernet keys validate Keystone's tokens (never the keys).
        "keystone_fernet_keys": node.engine.read().keystone_fernet_keys().ok().flatten().map_or(0, |k| k.len()),
    })
}

async fn show(State(node): State<Arc<Tokens>>) -> Response {
    Json(status(&node)).into_response()
}

/// `idnode keys rotate --token`: the rotation the schedule also makes (`schedule::rotate_ring`).
async fn rotate_token(State(node): State<Arc<Tokens>>) -> Response {
    match super::schedule::rotate_ring(&node).await {
        Ok(_) => {
            tracing::info!("token keys rotated");
            Json(status(&node)).into_response()
        }
        Err(e) => failure(e.status, e.message),
    }
}

async fn rotate_data(State(node): State<Arc<Tokens>>) -> Response {
    match node.node_keys.rotate() {
        Ok(_) => Json(status(&node)).into_response(),
        Err(e) => failure(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}")),
    }
}

#[derive(Deserialize)]
struct Rekey {
    /// A file on the node's own file system holding the new KEK (base64 of 32 bytes).
    kek_file: PathBuf,
}

async fn rekey(
    State(node): State<Arc<Tokens>>,
    body: Result<Json<Rekey>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Ok(Json(req)) = body else {
        return failure(StatusCode::BAD_REQUEST, "expected {\"kek_file\": \"/path/on/the/node\"}");
    };
    match node.node_keys.rekey(&req.kek_file, &node.cfg.data_dir) {
        Ok(()) => Json(status(&node)).into_response(),
        Err(e) => failure(StatusCode::BAD_REQUEST, format!("{e:#}")),
    }
}

#[derive(Deserialize)]
struct KeystoneFernet {
    /// The repository's keys, each as its file holds it.
    keys: Vec<String>,
    /// Keystone's `[auth] methods`, when they are not its defaults (the bit order of its
    /// tokens' method masks).
    #[serde(default)]
    auth_methods: Option<Vec<String>>,
}

async fn set_keystone_fernet(node: &Tokens, keys: Vec<String>, auth_methods: Option<Vec<String>>) -> Response {
    let forget = keys.is_empty();
    let set = Command::SetKeystoneFernetKeys { keys };
    let cmd = match auth_methods {
        Some(methods) => Command::All(vec![set, Command::SetKeystoneAuthMethods { methods }]),
        None if forget => Command::All(vec![set, Command::SetKeystoneAuthMethods { methods: Vec::new() }]),
        None => set,
    };
    match node.propose(cmd).await {
        Ok(_) => Json(status(node)).into_response(),
        Err(e) => failure(e.status, e.message),
    }
}

/// Replicated: one node stores them for the whole cluster.
async fn keystone_fernet(
    State(node): State<Arc<Tokens>>,
    body: Result<Json<KeystoneFernet>, axum::extract::rejection::JsonRejection>,
) -> Response {
    match body {
        Ok(Json(req)) if !req.keys.is_empty() => set_keystone_fernet(&node, req.keys, req.auth_methods).await,
        _ => failure(StatusCode::BAD_REQUEST, "expected {\"keys\": [\"<key>\", ...]} with at least one key"),
    }
}

async fn forget_keystone_fernet(State(node): State<Arc<Tokens>>) -> Response {
    set_keystone_fernet(&node, Vec::new(), None).await
}
