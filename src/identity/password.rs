//! `POST /v3/users/{id}/password`: a user changes its own password by proving the original
//! one. Every token issued to the user before the change stops validating.
//!
//! As in Keystone, no token is needed: the original password is the proof, so a user whose
//! password has expired (and who can get no token) can still change it. A failed proof counts
//! toward the lockout, and the route is rate limited per source. With a token, the policy and
//! the guard rails decide as for any call.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::json;

use super::compliance;
use super::schemas as s;
use crate::clock::now_micros;
use crate::context::Core;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::openapi::errors as E;
use crate::policy::{enforce, guard};
use crate::state::{Command, Reader};
use crate::token::Caller;

#[utoipa::path(post, path = "/v3/users/{id}/password", operation_id = "password_change", tag = "users", description = "No token is needed, as in Keystone: the original password is the proof (a token, when sent, is checked by policy). 401 also when the original password is wrong; 409 for a user without a local password (federated).",
    params(("id" = String, Path, description = "The user's id.")),
    request_body(content = s::PasswordChangeRequest, content_type = "application/json"),
    responses((status = 204, description = "Changed; the user's existing tokens stop validating."), E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound,
              E::Conflict, E::PayloadTooLarge, E::TooManyRequests, E::Internal, E::Unavailable))]
pub async fn change(
    State(node): State<Arc<Core>>,
    caller: Option<Caller>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::PasswordChangeRequest>>,
) -> ApiResult<StatusCode> {
    let b = body.object()?.user.envelope("user")?;
    let original = b.original_password.required("original_password", s::MAX_PASSWORD)?;
    let new = b.password.required("password", s::MAX_PASSWORD)?;
    let user = node.engine.read().user(&id)?.ok_or_else(|| ApiError::not_found("user", &id))?;
    if let Some(Caller(ctx)) = &caller {
        enforce("identity:change_password", ctx, &json!({"user": {"id": user.id, "domain_id": user.domain_id}}))?;
        guard::add_authenticator(&node.engine.read(), node.fga.as_deref(), ctx, &user.id)?;
    }
    let Some(current) = user.password_hash.clone() else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("User {} is not a local user and has no password.", user.id),
        ));
    };
    node.refuse_if_locked(&user)?;
    if !node.verify_password(original, current.clone()).await? {
        node.note_auth_failure(&user.id).await;
        return Err(ApiError::unauthenticated());
    }
    if !user.enabled {
        return Err(ApiError::unauthorized(format!("The account is disabled for user: {}.", user.id)));
    }
    let sc = &node.cfg.security;
    sc.check_pattern(&new)?;
    if compliance::user_option(&user, "lock_password") {
        return Err(ApiError::bad_request(
            "You cannot change your password at this time due to password policy disallowing password changes. \
             Please contact your administrator to reset your password.",
        ));
    }
    let now = now_micros();
    let state = node.engine.read().password_state(&user.id)?.unwrap_or_default();
    sc.check_age(&state, now)?;
    // The current password counts even when no history was kept for it yet.
    let mut recent: Vec<String> = sc.recent(&state).to_vec();
    if sc.unique_last_password_count > 0 && !recent.contains(&current) {
        recent.push(current.clone());
    }
    for old in recent {
        if node.verify_password(new.clone(), old).await? {
            return Err(ApiError::bad_request(format!(
                "The new password cannot be identical to a previous password. The total number which includes the \
                 new password must be unique is {}.",
                sc.unique_last_password_count
            )));
        }
    }
    let new_hash = node.hash_password(new).await?;
    let record = sc.record(&user, new_hash.clone(), now, true);
    let (index, _) = node
        .propose_at(Command::All(vec![
            Command::ChangePassword { user_id: user.id, expected_hash: current, new_hash, now },
            record,
        ]))
        .await?;
    node.wait_cluster_applied(index).await;
    Ok(StatusCode::NO_CONTENT)
}
