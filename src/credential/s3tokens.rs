//! `POST /v3/s3tokens`: an S3 service (Swift's s3token middleware, Ceph's RADOS Gateway) asks
//! who signed an S3 request. It sends the access key, the request's string to sign and its
//! signature; the answer is the token body of the credential's user on its project, as
//! Keystone gives it: 200, and no `X-Subject-Token` (the service learns the identity, it gets
//! no bearer token).
//!
//! As in Keystone, the caller must be the service or an administrator
//! (`identity:s3tokens_validate`): a presigned URL carries its string to sign and signature,
//! and its holder must not exchange them for anything. For the same reason there is neither a
//! freshness check nor replay protection here, unlike `/v3/sigtokens`: the string to sign is
//! the service's to check (S3's request time and presigned expiry, up to a week), and a
//! presigned URL is meant to be used many times.
//!
//! Every refusal about the credential or the signature is Keystone's plain 401, which does not
//! say which check failed (an unknown access key included).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

use super::s3sign;
use super::schemas as s;
use super::sigtokens::{holder, seal_for, signing_secret};
use crate::auth::tokens::token_body_response;
use crate::clock::now_micros;
use crate::context::Core;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{query_flag, JsonBody};
use crate::http::metrics::labels;
use crate::http::openapi::errors as E;
use crate::policy::enforce;
use crate::token::{Caller, Tokens};

fn refuse(node: &Core, why: &str) -> ApiError {
    tracing::debug!("S3 signature refused: {why}");
    node.metrics.auth_attempts.get_or_create(&labels(&[("method", "s3credential"), ("result", "failure")])).inc();
    ApiError::unauthenticated()
}

#[utoipa::path(post, path = "/v3/s3tokens", tag = "credentials", operation_id = "s3tokens_validate",
    description = "Asked by an S3 service with its own token (the `service` role, or an administrator: `identity:s3tokens_validate`). The string to sign is checked as AWS Signature Version 4 when it starts with `AWS4`, Version 2 otherwise. 401 for an unknown access key, a wrong signature, or a disabled user or project, with no detail.",
    params(("nocatalog" = Option<bool>, Query, description = "Present (any value but 0/false/no/off): leave the catalog out.")),
    request_body(content = s::S3TokenRequest, content_type = "application/json"),
    responses((status = 200, description = "The token body of the credential's user, scoped to its project; the token itself is not given.", body = crate::auth::schemas::TokenEnvelope),
              E::BadRequest, E::Unauthorized, E::Forbidden, E::PayloadTooLarge, E::TooManyRequests, E::Internal, E::Unavailable))]
pub async fn validate(
    State(node): State<Arc<Tokens>>,
    Caller(ctx): Caller,
    Query(q): Query<HashMap<String, String>>,
    JsonBody(body): JsonBody<Body<s::S3TokenRequest>>,
) -> ApiResult<Response> {
    enforce("identity:s3tokens_validate", &ctx, &json!({}))?;
    let presented = s::S3TokenRequest::presented(body)?.ok_or_else(|| refuse(&node, "no access key"))?;
    let string_to_sign = s3sign::string_to_sign(&presented.token).ok_or_else(|| {
        ApiError::bad_request("Invalid input for field 'token': must be the base64 of the string to sign.")
    })?;
    node.ensure_fresh().await?;
    let (cred, secret) =
        signing_secret(&node, &presented.access)?.ok_or_else(|| refuse(&node, "unknown access key"))?;
    match s3sign::verify(&secret, &string_to_sign, &presented.signature) {
        Ok(true) => {}
        Ok(false) => return Err(refuse(&node, "signature mismatch")),
        Err(why) => return Err(refuse(&node, why.0)),
    }
    let (user, project) = holder(&node, &cred)?.ok_or_else(|| refuse(&node, "user or project missing or disabled"))?;
    let (_, vt) = seal_for(&node, user, project, now_micros())
        .await?
        .ok_or_else(|| refuse(&node, "user not valid for project"))?;
    node.metrics.auth_attempts.get_or_create(&labels(&[("method", "s3credential"), ("result", "success")])).inc();
    token_body_response(&node, StatusCode::OK, &vt, query_flag(q.get("nocatalog")))
}
