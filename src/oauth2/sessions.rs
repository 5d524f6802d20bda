//! A user's OAuth2 sessions, `/v4/users/{user_id}/oauth2/sessions`: the live refresh-token
//! families (not revoked, not past their absolute end) of clients that still exist, listed
//! and ended. Ending one revokes the family: its refresh token then fails at `/token` with
//! `invalid_grant`, and access tokens carrying it as `sid` introspect inactive. Policy
//! `identity/oauth2_session/*`, authorized as the consents are (`consents::authorize_owner`).

use axum::extract::Path;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::consents::authorize_owner;
use crate::clock::now_secs;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::openapi::errors as E;
use crate::policy::guard;
use crate::state::oauth2::OAuth2Command;
use crate::state::read::OAuth2Reads;
use crate::state::{Command, Reader};
use crate::token::{Call, ValidToken};

const WHAT: &str = "OAuth2 sessions";

/// One session: a refresh-token family.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionView {
    /// The family id (the part of the refresh token before the dot).
    pub id: String,
    pub client_id: String,
    pub client_name: String,
    pub scopes: Vec<String>,
    /// Unix seconds: when the grant that began it was redeemed.
    pub created_at: i64,
    /// Unix seconds of its last successful refresh; null when never refreshed (or not since
    /// the cluster runs version 15).
    pub last_used_at: Option<i64>,
    /// Unix seconds: its absolute end (`refresh_token_absolute_lifetime_days`).
    pub expires_at: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionView>,
}

/// Policy, then the user's existence (a caller who may not act hears no 404).
fn owner(node: &Core, action: &str, ctx: &ValidToken, user_id: &str) -> ApiResult<()> {
    authorize_owner(&format!("identity/oauth2_session/{action}"), WHAT, ctx, user_id)?;
    if node.engine.read().user(user_id)?.is_none() {
        return Err(ApiError::not_found("user", user_id));
    }
    Ok(())
}

#[utoipa::path(get, path = "/v4/users/{user_id}/oauth2/sessions", operation_id = "oauth2_sessions_list", tag = "oauth2",
    params(("user_id" = String, Path, description = "The user whose sessions they are.")),
    responses((status = 200, description = "The user's live sessions of clients that still exist, oldest first.", body = SessionList), E::Read))]
pub async fn list(Call(node, ctx): Call, Path(user_id): Path<String>) -> ApiResult<Json<SessionList>> {
    owner(&node, "list", &ctx, &user_id)?;
    let read = node.engine.read();
    let now = now_secs();
    let mut sessions = Vec::new();
    for f in read.oauth2_user_families(&user_id)? {
        if !f.live(now) {
            continue;
        }
        let Some(client) = read.oauth2_client(&f.domain_id, &f.client_id)? else { continue };
        sessions.push(SessionView {
            last_used_at: read.oauth2_family_last_used(&f.id)?,
            id: f.id,
            client_id: f.client_id,
            client_name: client.name,
            scopes: f.scopes,
            created_at: f.created_at,
            expires_at: f.expires_at,
        });
    }
    sessions.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    Ok(Json(SessionList { sessions }))
}

#[utoipa::path(delete, path = "/v4/users/{user_id}/oauth2/sessions/{session_id}", operation_id = "oauth2_sessions_delete", tag = "oauth2",
    params(("user_id" = String, Path, description = "The user."), ("session_id" = String, Path, description = "The session (refresh family) id.")),
    responses((status = 204, description = "Ended on every reachable member: its refresh token fails with invalid_grant."),
              (status = 404, description = "The user does not exist, or this is not a live session of the user.", body = crate::http::openapi::ErrorBody),
              E::Remove))]
pub async fn delete(
    Call(node, ctx): Call,
    Path((user_id, session_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    revoke(&node, &ctx, user_id, Some(session_id)).await
}

#[utoipa::path(delete, path = "/v4/users/{user_id}/oauth2/sessions", operation_id = "oauth2_sessions_delete_all", tag = "oauth2",
    params(("user_id" = String, Path, description = "The user.")),
    responses((status = 204, description = "Every live session of the user is ended on every reachable member (none is fine)."),
              E::Remove))]
pub async fn delete_all(Call(node, ctx): Call, Path(user_id): Path<String>) -> ApiResult<StatusCode> {
    revoke(&node, &ctx, user_id, None).await
}

/// Apply decides what is live (at the command's time); the answer waits, like `/revoke`,
/// until every reachable member applied it.
async fn revoke(node: &Core, ctx: &ValidToken, user_id: String, family_id: Option<String>) -> ApiResult<StatusCode> {
    owner(node, "delete", ctx, &user_id)?;
    guard::manage_sign_in(&node.engine.read(), node.fga.as_deref(), ctx, &user_id)?;
    let cmd = OAuth2Command::RevokeSessions { user_id, family_id, at: now_secs() };
    let (index, _) = node.propose_at(Command::OAuth2(cmd)).await?;
    node.wait_cluster_applied(index).await;
    Ok(StatusCode::NO_CONTENT)
}
