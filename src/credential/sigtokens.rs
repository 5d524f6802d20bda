//! `POST /v3/sigtokens` (also `/v3/ec2tokens`, Keystone's path): a token for the user and
//! project of a signature credential, in exchange for a request signed with its secret. No
//! `X-Auth-Token`: the signature is the proof. Refusals are 401; those about the credential or
//! the signature do not say which check failed, those about the timestamp or a replay do (that
//! tells an honest client how to fix its signer and reveals nothing about the secret).
//!
//! Unlike Keystone, a request must carry a signed timestamp within [`AUTH_TTL_MICROS`] of
//! the node's clock (in either direction), and each signature buys one token per node: a
//! replayed request is refused while its timestamp is inside the window ([`super::replay`]).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::replay::{Refused, ReplayGuard};
use super::schemas as s;
use super::signer::{self, SignedRequest};
use super::{blob_field, ec2_id, EC2};
use crate::auth::tokens::token_response;
use crate::clock::now_micros;
use crate::context::Core;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{query_flag, JsonBody};
use crate::http::metrics::labels;
use crate::http::openapi::errors as E;
use crate::state::model::{Credential, Project, User};
use crate::state::Reader;
use crate::token::{Delegation, Method, TokenPayload, TokenScope, Tokens, ValidToken};

/// How far a signed timestamp may be from the node's clock, either way (Keystone's
/// `auth_ttl`, which Keystone applies to the past only).
const AUTH_TTL_MICROS: i64 = 15 * 60 * 1_000_000;

fn refuse(node: &Core, why: &str) -> ApiError {
    tracing::debug!("signed-request token refused: {why}");
    node.metrics.auth_attempts.get_or_create(&labels(&[("method", "ec2credential"), ("result", "failure")])).inc();
    ApiError::unauthorized(why.to_string())
}

/// The signer's form of a signed request (absent members read as empty).
fn signed(r: s::SignedRequest) -> SignedRequest {
    SignedRequest {
        access: r.access.typed().unwrap_or_default(),
        signature: r.signature.typed().unwrap_or_default(),
        host: r.host.typed().unwrap_or_default(),
        verb: r.verb.typed().unwrap_or_default(),
        path: r.path.typed().unwrap_or_default(),
        params: s::string_map(&r.params, "params").unwrap_or_default(),
        headers: s::string_map(&r.headers, "headers").unwrap_or_default().into_iter().collect(),
        body_hash: r.body_hash.typed(),
    }
}

/// Unix micros of a signed timestamp: ISO 8601 extended (`2024-05-01T12:00:00Z`, with or
/// without fraction or zone) or basic (`20240501T120000Z`, AWS V4).
fn parse_timestamp(t: &str) -> Option<i64> {
    if let Ok(d) = chrono::DateTime::parse_from_rfc3339(t) {
        return Some(d.timestamp_micros());
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.fZ", "%Y%m%dT%H%M%SZ"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(t, f).ok())
        .map(|d| d.and_utc().timestamp_micros())
}

/// The freshness check: the timestamp the signature covers must exist and lie within the TTL
/// of `now` in either direction. Keystone accepts a request without one, which makes a
/// captured request usable forever; a timestamp far ahead would do the same for as long as it
/// is ahead. Returns the moment the request leaves the window (Unix micros).
fn fresh(r: &SignedRequest, now: i64) -> Result<i64, &'static str> {
    let ts = signer::signed_timestamp(r).ok_or(
        "The signed request carries no signed timestamp: sign it with a Timestamp parameter (versions 0 to 2) \
         or X-Amz-Date (version 4).",
    )?;
    let at = parse_timestamp(ts).ok_or("Credential timestamp is invalid.")?;
    if now > at + AUTH_TTL_MICROS {
        return Err("Credential is expired.");
    }
    if at > now + AUTH_TTL_MICROS {
        return Err("Credential timestamp is in the future by more than the allowed clock skew.");
    }
    Ok(at + AUTH_TTL_MICROS)
}

/// Records the accepted signature; a second use inside its window is refused.
fn once(node: &Core, guard: &ReplayGuard, r: &SignedRequest, until: i64, now: i64) -> ApiResult<()> {
    match guard.remember(&r.access, &r.signature, until, now) {
        Ok(()) => Ok(()),
        Err(Refused::Replayed) => {
            Err(refuse(node, "This signed request was already exchanged for a token; sign every request anew."))
        }
        Err(Refused::Full { retry_after_s }) => {
            tracing::warn!("the signed-request replay table is full; refusing signed-request tokens for now");
            let mut e = ApiError::unavailable("Too many signed requests in the replay window; retry later.");
            e.retry_after = Some(retry_after_s);
            Err(e)
        }
    }
}

/// The signed-request token operation, documented at each of its paths.
macro_rules! issue_at {
    ($(#[doc = $doc:tt])* $name:ident: $path:tt, $operation_id:tt) => {
        $(#[doc = $doc])*
        #[utoipa::path(post, path = $path, tag = "credentials", operation_id = $operation_id, description = "No X-Auth-Token: the signature is the proof. 401 for an unknown access key, a wrong signature, a missing signed timestamp or one more than 15 minutes from the server's clock, a signature already exchanged, or a disabled user or project.",
            security(()),
            params(("nocatalog" = Option<bool>, Query, description = "Present (any value but 0/false/no/off): leave the catalog out.")),
            request_body(content = s::SignedTokenRequest, content_type = "application/json"),
            responses((status = 200, description = "A token scoped to the credential's project, for its user.", body = crate::auth::schemas::TokenEnvelope, headers(("X-Subject-Token" = String, description = "The new token."))),
                      (status = 201, description = "The same, when `keystone_compat_status` is set.", body = crate::auth::schemas::TokenEnvelope, headers(("X-Subject-Token" = String, description = "The new token."))),
                      E::BadRequest, E::Unauthorized, E::PayloadTooLarge, E::TooManyRequests, E::Internal, E::Unavailable))]
        pub async fn $name(
            node: State<Arc<Tokens>>,
            replays: State<Arc<ReplayGuard>>,
            q: Query<HashMap<String, String>>,
            body: JsonBody<Body<s::SignedTokenRequest>>,
        ) -> ApiResult<Response> {
            issue_token(node, replays, q, body).await
        }
    };
}

issue_at!(issue: "/v3/sigtokens", "sigtokens_issue");
issue_at!(
    /// Keystone's path for the same operation, where existing clients send signed requests.
    issue_ec2tokens: "/v3/ec2tokens", "ec2tokens_issue"
);

/// What both paths answer: the signed request checked, a token for its user and project.
async fn issue_token(
    State(node): State<Arc<Tokens>>,
    State(replays): State<Arc<ReplayGuard>>,
    Query(q): Query<HashMap<String, String>>,
    JsonBody(body): JsonBody<Body<s::SignedTokenRequest>>,
) -> ApiResult<Response> {
    node.ensure_fresh().await?;
    let request =
        s::SignedTokenRequest::signed(body)?.map(signed).ok_or_else(|| refuse(&node, "EC2 signature not supplied."))?;
    if request.signature.is_empty() {
        return Err(refuse(&node, "EC2 signature not supplied."));
    }
    let (cred, secret) =
        signing_secret(&node, &request.access)?.ok_or_else(|| refuse(&node, "Invalid EC2 signature."))?;
    if !signer::verify(&secret, &request).unwrap_or(false) {
        return Err(refuse(&node, "Invalid EC2 signature."));
    }
    let now = now_micros();
    let until = fresh(&request, now).map_err(|why| refuse(&node, why))?;
    let (user, project) =
        holder(&node, &cred)?.ok_or_else(|| refuse(&node, "The request you have made requires authentication."))?;
    once(&node, &replays, &request, until, now)?;
    let (token, vt) =
        seal_for(&node, user, project, now).await?.ok_or_else(|| refuse(&node, "User not valid for project."))?;
    node.metrics.auth_attempts.get_or_create(&labels(&[("method", "ec2credential"), ("result", "success")])).inc();
    node.metrics.tokens_issued.get_or_create(&labels(&[("scope", "project")])).inc();
    let status = if node.cfg.keystone_compat_status { StatusCode::CREATED } else { StatusCode::OK };
    token_response(&node, status, &token, &vt, query_flag(q.get("nocatalog")))
}

/// The signature credential of `access` and its secret; `None` for an unknown access key, a
/// credential of another type or one without a secret.
pub(super) fn signing_secret(node: &Core, access: &str) -> ApiResult<Option<(Credential, String)>> {
    let cred = node.engine.read().credential(&ec2_id(access))?.filter(|c| c.cred_type == EC2);
    Ok(cred.and_then(|c| blob_field(&c, "secret").map(|secret| (c, secret))))
}

/// The user and project a verified signature speaks for: both must exist and be enabled, and
/// the project must not be a domain. `None` otherwise.
pub(super) fn holder(node: &Core, cred: &Credential) -> ApiResult<Option<(User, Project)>> {
    let view = node.engine.read();
    let user = view.user(&cred.user_id)?.filter(|u| u.enabled);
    let project = match &cred.project_id {
        Some(p) => view.project(p)?.filter(|p| p.enabled && !p.is_domain),
        None => None,
    };
    Ok(user.zip(project))
}

/// A project-scoped `ec2credential` token for `user` on `project`, and its validation, which
/// checks what every later use will (user, domain and project enabled, a role held). `None`
/// when it does not validate.
pub(super) async fn seal_for(
    node: &Tokens,
    user: User,
    project: Project,
    now: i64,
) -> ApiResult<Option<(String, Arc<ValidToken>)>> {
    let payload = TokenPayload {
        version: crate::token::PAYLOAD_VERSION,
        user_id: user.id,
        methods: Method::Ec2Credential as u8,
        scope: TokenScope::Project(project.id),
        issued_at: now,
        expires_at: now + node.cfg.token_expiration_s * 1_000_000,
        audit_ids: vec![idnode_keys::random_bytes()],
        delegation: Delegation::None,
        restriction: None,
        user_cutoff: Some(user.tokens_valid_after),
    };
    let token = node.seal_token(&payload)?;
    Ok(node.validate_token(&token, false).await.ok().map(|vt| (token, vt)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_in_every_signed_form() {
        let t = parse_timestamp("2024-05-01T12:00:00Z").unwrap();
        assert_eq!(parse_timestamp("20240501T120000Z"), Some(t));
        assert_eq!(parse_timestamp("2024-05-01T12:00:00.000Z"), Some(t));
        assert_eq!(parse_timestamp("2024-05-01T12:00:00"), Some(t));
        assert_eq!(parse_timestamp("2024-05-01T14:00:00+02:00"), Some(t));
        assert_eq!(parse_timestamp("yesterday"), None);
    }

    #[test]
    fn the_signed_timestamp_is_required_within_the_skew_both_ways() {
        let now = parse_timestamp("2024-05-01T12:00:00Z").unwrap();
        let at = |ts: &str| SignedRequest {
            params: [("SignatureVersion", "2"), ("Timestamp", ts)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        };
        let window_end = parse_timestamp("2024-05-01T12:05:00Z").unwrap();
        assert_eq!(fresh(&at("2024-05-01T11:50:00Z"), now), Ok(window_end));
        assert!(fresh(&at("2024-05-01T12:14:00Z"), now).is_ok(), "a client clock slightly ahead");
        assert_eq!(fresh(&at("2024-05-01T11:40:00Z"), now), Err("Credential is expired."));
        let ahead = fresh(&at("2024-05-01T12:20:00Z"), now).unwrap_err();
        assert!(ahead.contains("future"), "{ahead}");
        assert!(fresh(&at("garbage"), now).is_err());
        let missing = fresh(&SignedRequest::default(), now).unwrap_err();
        assert!(missing.contains("no signed timestamp"), "{missing}");
        let mut unsigned = at("2024-05-01T12:00:00Z");
        unsigned.params.remove("Timestamp");
        unsigned.headers.push(("X-Amz-Date".into(), "20240501T120000Z".into()));
        assert!(fresh(&unsigned, now).is_err(), "version 2 does not sign an X-Amz-Date header");
        let v4 = |date: &str| SignedRequest {
            headers: vec![
                ("Authorization".into(), "AWS4-HMAC-SHA256 Credential=a/20240501/r/ec2/aws4_request".into()),
                ("x-amz-date".into(), date.into()),
            ],
            ..Default::default()
        };
        assert!(fresh(&v4("20240501T115500Z"), now).is_ok());
        assert!(fresh(&v4("20240501T100000Z"), now).is_err());
    }
}
