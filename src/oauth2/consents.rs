//! A user's remembered OAuth2 consents, `/v4/users/{user_id}/oauth2/consents`: listed, and
//! withdrawn (which also revokes the user's refresh tokens of that client; access tokens
//! already issued stay valid until they expire). Policy `identity/oauth2_consent/*`: the
//! user, or an admin. The user must use an ordinary token: an application-credential or
//! trust token (a delegation) cannot manage its owner's consents.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::clock::now_secs;
use crate::http::error::{ApiError, ApiResult};
use crate::http::openapi::errors as E;
use crate::policy::enforce;
use crate::state::oauth2::{Consent, OAuth2Command};
use crate::state::read::OAuth2Reads;
use crate::state::{Command, Reader};
use crate::token::Call;
use crate::token::{Delegation, ValidToken};

/// One remembered consent.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ConsentRecord {
    client_id: String,
    client_name: String,
    scopes: Vec<String>,
    /// Always null: consents here are not tied to a target.
    authorization_target: Option<String>,
    /// Unix seconds.
    granted_at: i64,
    updated_at: i64,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ConsentList {
    consents: Vec<ConsentRecord>,
}

/// The policy `action` on `user_id`'s records (`what`, for the message); the user must use an
/// ordinary token, since a delegation must not reach what its owner granted to applications.
pub(super) fn authorize_owner(action: &str, what: &str, ctx: &ValidToken, user_id: &str) -> ApiResult<()> {
    enforce(action, ctx, &json!({"user": {"id": user_id}}))?;
    if ctx.user.id == user_id && ctx.payload.delegation != Delegation::None {
        return Err(ApiError::forbidden(format!(
            "{what} cannot be managed with an application credential or trust token."
        )));
    }
    Ok(())
}

fn authorize(action: &str, ctx: &ValidToken, user_id: &str) -> ApiResult<()> {
    authorize_owner(action, "OAuth2 consents", ctx, user_id)
}

#[utoipa::path(get, path = "/v4/users/{user_id}/oauth2/consents", operation_id = "oauth2_consents_list", tag = "oauth2",
    params(("user_id" = String, Path, description = "The user whose consents they are.")),
    responses((status = 200, description = "The user's remembered consents (of clients that still exist).", body = ConsentList), E::Read))]
pub async fn list(Call(node, ctx): Call, Path(user_id): Path<String>) -> ApiResult<Json<Value>> {
    authorize("identity/oauth2_consent/list", &ctx, &user_id)?;
    let read = node.engine.read();
    if read.user(&user_id)?.is_none() {
        return Err(ApiError::not_found("user", &user_id));
    }
    let consents: Vec<Consent> = read.oauth2_consents(&user_id)?;
    let mut out = Vec::with_capacity(consents.len());
    for c in consents {
        let Some(client) = read.oauth2_client(&c.domain_id, &c.client_id)? else {
            continue;
        };
        out.push(json!({
            "client_id": c.client_id,
            "client_name": client.name,
            "scopes": c.scopes,
            "authorization_target": Value::Null,
            "granted_at": c.granted_at,
            "updated_at": c.updated_at,
        }));
    }
    Ok(Json(json!({ "consents": out })))
}

#[utoipa::path(delete, path = "/v4/users/{user_id}/oauth2/consents/{client_id}", operation_id = "oauth2_consents_delete", tag = "oauth2",
    params(("user_id" = String, Path, description = "The user."), ("client_id" = String, Path, description = "The client.")),
    responses((status = 204, description = "Withdrawn; the user's refresh tokens of the client are revoked (access tokens stay valid until they expire)."),
              (status = 404, description = "Neither a remembered consent nor a live refresh token of this client exists.", body = crate::http::openapi::ErrorBody),
              E::Unauthorized, E::Forbidden, E::Internal, E::Unavailable))]
pub async fn delete(
    Call(node, ctx): Call,
    Path((user_id, client_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    authorize("identity/oauth2_consent/delete", &ctx, &user_id)?;
    node.propose(Command::OAuth2(OAuth2Command::DeleteConsent { user_id, client_id, at: now_secs() })).await?;
    Ok(StatusCode::NO_CONTENT)
}
