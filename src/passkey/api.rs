//! `/v4/auth/passkey/{start,finish}` (spec "Passkey (v4)", api-shapes §9: no token needed)
//! and a user's passkeys under `/v4/users/{user_id}/passkeys`: registered, listed, renamed
//! and removed (policy `identity/passkey/*`: the user with an ordinary token, or an admin).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use serde_json::json;

use super::ceremony;
use super::ceremony::RelyingParty;
use super::wire::{
    AssertionBody, AttestationBody, LoginChallenge, PasskeyList, PasskeyOne, PasskeyView, RegisterChallenge,
    RegisterStartRequest, StartRequest, UpdateRequest,
};
use crate::context::Core;
use crate::http::body::{Body, Sent};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::OptionalJson;
use crate::http::openapi::errors as E;
use crate::http::JsonBody;
use crate::policy::{enforce, guard};
use crate::state::model::User;
use crate::state::passkeys::{PasskeyCommand, StoredPasskey, MAX_DESCRIPTION};
use crate::state::{Command, Reader};
use crate::token::render::iso_seconds;
use crate::token::Call;
use crate::token::Caller;
use crate::token::{Delegation, Tokens, ValidToken};

#[utoipa::path(post, path = "/v4/auth/passkey/start", operation_id = "v4_passkey_start", tag = "auth",
    security(()),
    request_body(content = StartRequest, content_type = "application/json"),
    responses((status = 201, description = "A challenge for one of the user's passkeys; an unknown user, or one without passkeys, gets a challenge of the same shape that no passkey can answer.", body = LoginChallenge),
              E::BadRequest, E::TooManyRequests, E::Internal,
              (status = 501, description = "Passkeys are off on this deployment ([passkey] settings).", body = crate::http::openapi::ErrorBody),
              E::Unavailable))]
pub async fn start(
    State(node): State<Arc<Core>>,
    State(rp): State<Arc<RelyingParty>>,
    JsonBody(b): JsonBody<StartRequest>,
) -> ApiResult<(StatusCode, Json<LoginChallenge>)> {
    let user_id = b.passkey.user_id;
    if user_id.is_empty() || user_id.len() > 64 {
        return Err(ApiError::bad_request("Invalid input for field 'user_id': 1 to 64 characters."));
    }
    let rcr = ceremony::login_start(&node, &rp, &user_id).await?;
    Ok((StatusCode::CREATED, Json(LoginChallenge::of(&rcr)?)))
}

#[utoipa::path(post, path = "/v4/auth/passkey/finish", operation_id = "v4_passkey_finish", tag = "auth",
    security(()),
    description = "The signed challenge, in upstream's snake_case spelling or as the browser's `PublicKeyCredential.toJSON()` gives it. Every refusal (unknown, used or expired challenge, another user's challenge, wrong origin or relying party, bad signature, a passkey removed, a disabled user, a signature counter that went back) is the same 401, and writes nothing.",
    request_body(content = AssertionBody, content_type = "application/json"),
    responses((status = 201, description = "An unscoped token; its id is also in X-Subject-Token.", body = crate::auth::schemas::TokenEnvelope, headers(("X-Subject-Token" = String, description = "The new token."))),
              E::BadRequest, E::Unauthorized, E::TooManyRequests, E::Internal,
              (status = 501, description = "Passkeys are off on this deployment.", body = crate::http::openapi::ErrorBody), E::Unavailable))]
pub async fn finish(
    State(node): State<Arc<Tokens>>,
    State(rp): State<Arc<RelyingParty>>,
    JsonBody(b): JsonBody<AssertionBody>,
) -> ApiResult<Response> {
    let cred = b.credential()?;
    let user = ceremony::login_finish(&node, &rp, b.user_id.as_deref(), &cred).await?;
    crate::auth::tokens::issue_unscoped(&node, &user, crate::token::Method::Passkey, StatusCode::CREATED).await
}

/// The owner named in the path, after policy; application-credential and trust tokens may
/// not manage passkeys (a passkey is a way to sign in as the user).
fn owner(node: &Core, action: &str, ctx: &ValidToken, user_id: &str) -> ApiResult<User> {
    enforce(&format!("identity/passkey/{action}"), ctx, &json!({"user": {"id": user_id}}))?;
    ctx.refuse_confined("manage passkeys")?;
    if ctx.payload.delegation != Delegation::None {
        return Err(ApiError::forbidden("Passkeys cannot be managed with a delegated token."));
    }
    node.engine.read().user(user_id)?.ok_or_else(|| ApiError::not_found("user", user_id))
}

fn view(p: &StoredPasskey) -> PasskeyView {
    PasskeyView {
        id: p.id.clone(),
        user_id: p.user_id.clone(),
        description: p.description.clone(),
        credential_id: p.credential_id.clone(),
        sign_count: p.counter,
        backup_eligible: p.backup_eligible,
        backup_state: p.backup_state,
        created_at: iso_seconds(p.created_at),
        last_used_at: p.last_used_at.map(iso_seconds),
    }
}

#[utoipa::path(post, path = "/v4/users/{user_id}/passkeys/register_start", operation_id = "v4_passkeys_register_start", tag = "passkeys",
    params(("user_id" = String, Path, description = "The user.")),
    request_body(content = RegisterStartRequest, content_type = "application/json", description = "Optional."),
    responses((status = 201, description = "Options for `navigator.credentials.create` (`publicKey`, WebAuthn JSON) and the same with snake_case keys (`public_key`).", body = RegisterChallenge),
              (status = 501, description = "Passkeys are off on this deployment.", body = crate::http::openapi::ErrorBody), E::Edit))]
pub async fn register_start(
    State(node): State<Arc<Core>>,
    State(rp): State<Arc<RelyingParty>>,
    Caller(ctx): Caller,
    Path(user_id): Path<String>,
    OptionalJson(body): OptionalJson<Sent<RegisterStartRequest>>,
) -> ApiResult<(StatusCode, Json<RegisterChallenge>)> {
    let user = owner(&node, "register", &ctx, &user_id)?;
    guard::add_authenticator(&node.engine.read(), node.fga.as_deref(), &ctx, &user.id)?;
    // Typed on arrival, refused only here: a missing user or a refused caller answers first.
    let body: RegisterStartRequest = match body {
        None | Some(Sent::Absent | Sent::Null) => RegisterStartRequest::default(),
        Some(Sent::Is(b)) => b,
        Some(Sent::Wrong(v)) => serde_json::from_value(v)
            .map_err(|e| ApiError::bad_request(format!("Invalid input for field 'passkey': {e}.")))?,
    };
    let description = body.passkey.and_then(|p| p.description);
    if description.as_ref().is_some_and(|d| d.chars().count() > MAX_DESCRIPTION) {
        return Err(ApiError::bad_request(format!(
            "Invalid input for field 'description': at most {MAX_DESCRIPTION} characters."
        )));
    }
    let ccr = ceremony::register_start(&node, &rp, &user, description).await?;
    Ok((StatusCode::CREATED, Json(RegisterChallenge::of(&ccr)?)))
}

#[utoipa::path(post, path = "/v4/users/{user_id}/passkeys/register_finish", operation_id = "v4_passkeys_register_finish", tag = "passkeys",
    params(("user_id" = String, Path, description = "The user.")),
    request_body(content = AttestationBody, content_type = "application/json", description = "The new credential, snake_case or as `PublicKeyCredential.toJSON()` gives it."),
    responses((status = 201, description = "The registered passkey.", body = PasskeyOne),
              (status = 400, description = "The challenge is unknown, used or expired, or the credential does not verify (wrong origin, relying party, or challenge).", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "The credential is registered already.", body = crate::http::openapi::ErrorBody),
              (status = 501, description = "Passkeys are off on this deployment.", body = crate::http::openapi::ErrorBody), E::Remove))]
pub async fn register_finish(
    State(node): State<Arc<Core>>,
    State(rp): State<Arc<RelyingParty>>,
    Caller(ctx): Caller,
    Path(user_id): Path<String>,
    JsonBody(b): JsonBody<AttestationBody>,
) -> ApiResult<(StatusCode, Json<PasskeyOne>)> {
    let user = owner(&node, "register", &ctx, &user_id)?;
    guard::add_authenticator(&node.engine.read(), node.fga.as_deref(), &ctx, &user.id)?;
    let stored = ceremony::register_finish(&node, &rp, &user.id, &b.credential()?).await?;
    Ok((StatusCode::CREATED, Json(PasskeyOne { passkey: view(&stored) })))
}

#[utoipa::path(get, path = "/v4/users/{user_id}/passkeys", operation_id = "v4_passkeys_list", tag = "passkeys",
    params(("user_id" = String, Path, description = "The user.")),
    responses((status = 200, description = "The user's passkeys.", body = PasskeyList), E::Read))]
pub async fn list(Call(node, ctx): Call, Path(user_id): Path<String>) -> ApiResult<Json<PasskeyList>> {
    let user = owner(&node, "list", &ctx, &user_id)?;
    let passkeys = ceremony::passkeys_of(&node, &user.id)?.iter().map(view).collect();
    Ok(Json(PasskeyList { passkeys }))
}

#[utoipa::path(patch, path = "/v4/users/{user_id}/passkeys/{passkey_id}", operation_id = "v4_passkeys_update", tag = "passkeys",
    params(("user_id" = String, Path, description = "The user."), ("passkey_id" = String, Path, description = "The passkey.")),
    request_body(content = UpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The renamed passkey, as listed.", body = PasskeyOne),
              (status = 404, description = "The user, or this passkey of the user, does not exist.", body = crate::http::openapi::ErrorBody),
              E::Edit))]
pub async fn update(
    Call(node, ctx): Call,
    Path((user_id, passkey_id)): Path<(String, String)>,
    JsonBody(b): JsonBody<Body<UpdateRequest>>,
) -> ApiResult<Json<PasskeyOne>> {
    let user = owner(&node, "update", &ctx, &user_id)?;
    guard::manage_sign_in(&node.engine.read(), node.fga.as_deref(), &ctx, &user.id)?;
    let description = b.object()?.description()?;
    let cmd = PasskeyCommand::Rename { user_id: user.id, passkey_id, description };
    let stored = node.propose_as::<StoredPasskey>(Command::Passkeys(cmd)).await?;
    Ok(Json(PasskeyOne { passkey: view(&stored) }))
}

#[utoipa::path(delete, path = "/v4/users/{user_id}/passkeys/{passkey_id}", operation_id = "v4_passkeys_delete", tag = "passkeys",
    params(("user_id" = String, Path, description = "The user."), ("passkey_id" = String, Path, description = "The passkey.")),
    responses((status = 204, description = "Removed: it signs nobody in from now on, on any node."),
              (status = 409, description = "It is the last passkey of a user without a password, who could no longer sign in.", body = crate::http::openapi::ErrorBody),
              E::Remove))]
pub async fn delete(
    Call(node, ctx): Call,
    Path((user_id, passkey_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    owner(&node, "delete", &ctx, &user_id)?;
    guard::manage_sign_in(&node.engine.read(), node.fga.as_deref(), &ctx, &user_id)?;
    let (index, _) = node.propose_at(Command::Passkeys(PasskeyCommand::Delete { user_id, passkey_id })).await?;
    node.wait_cluster_applied(index).await;
    Ok(StatusCode::NO_CONTENT)
}
