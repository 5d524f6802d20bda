//! The authenticated caller from `X-Auth-Token`: the extractor every protected handler takes.

use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts, OptionalFromRequestParts};
use axum::http::request::Parts;

use super::validate::{Tokens, ValidToken};
use crate::context::Core;
use crate::http::ApiError;

/// The authenticated caller.
pub struct Caller(pub Arc<ValidToken>);

impl<S> FromRequestParts<S> for Caller
where
    S: Send + Sync,
    Arc<Tokens>: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let tokens = Arc::<Tokens>::from_ref(state);
        let token = parts
            .headers
            .get("x-auth-token")
            .and_then(|v| v.to_str().ok())
            .filter(|t| !t.is_empty())
            .ok_or_else(ApiError::unauthenticated)?;
        let vt = tokens.validate_token(token, false).await.map_err(|e| {
            if e.status.as_u16() == 404 {
                ApiError::unauthenticated()
            } else {
                e
            }
        })?;
        if vt.payload.is_delegated() {
            // Keystone: tokens minted from signed requests serve other services, not this API.
            return Err(ApiError::forbidden("EC2 credential tokens cannot be used for authorization."));
        }
        crate::http::access::note_subject(&vt.user.id, vt.project.as_ref().map(|p| p.id.as_str()));
        Ok(Caller(vt))
    }
}

/// The caller when the request carries a token (an invalid one is still refused), for the
/// operations Keystone serves without one.
impl<S> OptionalFromRequestParts<S> for Caller
where
    S: Send + Sync,
    Arc<Tokens>: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Option<Self>, ApiError> {
        if !parts.headers.contains_key("x-auth-token") {
            return Ok(None);
        }
        <Caller as FromRequestParts<S>>::from_request_parts(parts, state).await.map(Some)
    }
}

/// The core context and the authenticated caller, for the handlers that need both: the same
/// as taking `State<Arc<Core>>` and then [`Caller`].
pub struct Call(pub Arc<Core>, pub Arc<ValidToken>);

impl<S> FromRequestParts<S> for Call
where
    S: Send + Sync,
    Arc<Core>: FromRef<S>,
    Arc<Tokens>: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let core = Arc::<Core>::from_ref(state);
        let Caller(ctx) = <Caller as FromRequestParts<S>>::from_request_parts(parts, state).await?;
        Ok(Call(core, ctx))
    }
}
