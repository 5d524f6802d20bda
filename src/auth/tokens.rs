//! `POST|GET|HEAD|DELETE /v3/auth/tokens` (also mounted under `/v4`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{OriginalUri, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::schemas as s;
use super::{methods, mfa, receipt, restricted, scope};
use crate::clock::now_micros;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{query_flag, JsonBody};
use crate::http::metrics::labels;
use crate::http::openapi::errors as E;
use crate::policy::enforce;
use crate::state::model::User;
use crate::state::Command;
use crate::token::Caller;
use crate::token::{render_token, Delegation, Method, TokenPayload, TokenScope, Tokens, ValidToken};

const MAX_TOKEN_LEN: usize = 4096;

/// The serialized token object. Rendering it (a catalog of a few KiB included) cost more than
/// the rest of a validation, so the bytes are cached for exactly this validation result (same
/// `ValidToken`, same applied index).
fn token_body(node: &Tokens, token: &str, vt: &Arc<ValidToken>, nocatalog: bool) -> ApiResult<Bytes> {
    let applied = node.app.state_version();
    let key = (token.to_string(), nocatalog);
    if let Some((cached_for, body)) = node.token_bodies.get(&key, applied) {
        if Arc::ptr_eq(&cached_for, vt) {
            return Ok(body);
        }
    }
    let body = render_body(node, vt, nocatalog)?;
    node.token_bodies.insert(key, (vt.clone(), body.clone()), applied);
    Ok(body)
}

fn render_body(node: &Tokens, vt: &ValidToken, nocatalog: bool) -> ApiResult<Bytes> {
    let catalog = match (&vt.payload.scope, nocatalog) {
        (TokenScope::Unscoped, _) | (_, true) => None,
        (scope, false) => Some(node.catalog_for(scope)?),
    };
    let mut token = render_token(vt, catalog.as_deref());
    let sps = crate::federation::service_providers::in_token(&node.engine.read())?;
    if let (false, Some(o)) = (sps.is_empty(), token.as_object_mut()) {
        o.insert("service_providers".into(), Value::Array(sps));
    }
    Ok(Bytes::from(serde_json::to_vec(&json!({"token": token})).map_err(ApiError::internal)?))
}

/// A token's body without the token itself, for an answer about who signed a request
/// (`/v3/s3tokens`, as Keystone answers it): the caller learns the identity, not a bearer
/// credential. Not cached, since no later request names this token.
pub(crate) fn token_body_response(
    node: &Tokens,
    status: StatusCode,
    vt: &ValidToken,
    nocatalog: bool,
) -> ApiResult<Response> {
    let body = render_body(node, vt, nocatalog)?;
    Ok((status, [(header::CONTENT_TYPE, "application/json")], body).into_response())
}

fn subject_token(headers: &HeaderMap) -> ApiResult<String> {
    headers
        .get("x-subject-token")
        .and_then(|v| v.to_str().ok())
        .filter(|t| !t.is_empty() && t.len() <= MAX_TOKEN_LEN)
        .map(str::to_string)
        .ok_or_else(|| ApiError::bad_request("The X-Subject-Token header is required."))
}

pub(crate) fn token_response(
    node: &Tokens,
    status: StatusCode,
    token: &str,
    vt: &Arc<ValidToken>,
    nocatalog: bool,
) -> ApiResult<Response> {
    let body = token_body(node, token, vt, nocatalog)?;
    let mut resp = (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    let header = HeaderValue::from_str(token).map_err(ApiError::internal)?;
    resp.headers_mut().insert("x-subject-token", header);
    Ok(resp)
}

/// The four token operations, mounted unchanged under `/v3/auth/tokens` and
/// `/v4/auth/tokens` (the spec's v4 surface): one annotated handler per path and method, all
/// calling the same logic below.
macro_rules! token_operations {
    ($path:literal, $issue:ident = $issue_id:literal, $validate:ident = $validate_id:literal,
     $check:ident = $check_id:literal, $revoke:ident = $revoke_id:literal) => {
        #[utoipa::path(post, path = $path, tag = "auth", operation_id = $issue_id, description = "Password, TOTP, token (re-scope), application credential or OAuth1 (a signed request with an access token) authentication. 401 for wrong credentials or a disabled user; 404 or 401 for an unknown or unusable scope target. When the methods proven (with those of an `Openstack-Auth-Receipt`) meet none of the user's `multi_factor_auth_rules`: 401 with a receipt body and a new receipt in `Openstack-Auth-Receipt`.",
    security(()),
    params(("nocatalog" = Option<bool>, Query, description = "Present (any value but 0/false/no/off): leave the catalog out."),
           ("Openstack-Auth-Receipt" = Option<String>, Header, description = "A receipt from an earlier 401 of the same user: its methods count as proven. 401 when expired, altered or another user's.")),
    request_body(content = s::AuthRequest, content_type = "application/json"),
    responses((status = 200, description = "The token; its id is in X-Subject-Token.", body = s::TokenEnvelope, headers(("X-Subject-Token" = String, description = "The new token."))),
              (status = 201, description = "The same, when `keystone_compat_status` is set.", body = s::TokenEnvelope, headers(("X-Subject-Token" = String, description = "The new token."))),
              (status = 401, description = "Wrong credentials (an error body), or more methods needed (a receipt body, the receipt in Openstack-Auth-Receipt).", body = s::ReceiptEnvelope, headers(("Openstack-Auth-Receipt" = String, description = "With a receipt body: the receipt to send with the missing methods."))),
              E::BadRequest, E::Forbidden, E::NotFound, E::PayloadTooLarge, E::TooManyRequests, E::Internal, E::Unavailable))]
        pub async fn $issue(
            n: State<Arc<Tokens>>,
            q: Query<HashMap<String, String>>,
            u: OriginalUri,
            h: HeaderMap,
            b: JsonBody<Body<s::AuthRequest>>,
        ) -> ApiResult<Response> {
            issue_token(n, q, u, h, b).await
        }

        #[utoipa::path(get, path = $path, tag = "auth", operation_id = $validate_id, description = "400 without X-Subject-Token; 404 for an invalid, revoked or expired subject token.",
    params(("nocatalog" = Option<bool>, Query, description = "Present (any value but 0/false/no/off): leave the catalog out."),
           ("allow_expired" = Option<bool>, Query, description = "Present (any value but 0/false/no/off): an expired (not revoked) token validates."),
           ("X-Subject-Token" = String, Header, description = "The token to validate.")),
    responses((status = 200, description = "The subject token.", body = s::TokenEnvelope, headers(("X-Subject-Token" = String, description = "The validated token."))),
              E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound, E::Internal))]
        pub async fn $validate(
            n: State<Arc<Tokens>>,
            c: Caller,
            h: HeaderMap,
            q: Query<HashMap<String, String>>,
        ) -> ApiResult<Response> {
            validate_token(n, c, h, q).await
        }

        #[utoipa::path(head, path = $path, tag = "auth", operation_id = $check_id,
    params(("allow_expired" = Option<bool>, Query, description = "Present (any value but 0/false/no/off): an expired (not revoked) token validates."),
           ("X-Subject-Token" = String, Header, description = "The token to validate.")),
    responses((status = 200, description = "The subject token is valid."), E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound, E::Internal))]
        pub async fn $check(
            n: State<Arc<Tokens>>,
            c: Caller,
            h: HeaderMap,
            q: Query<HashMap<String, String>>,
        ) -> ApiResult<StatusCode> {
            check_token(n, c, h, q).await
        }

        #[utoipa::path(delete, path = $path, tag = "auth", operation_id = $revoke_id,
    params(("X-Subject-Token" = String, Header, description = "The token to revoke: the caller's own, or any for an administrator.")),
    responses((status = 204, description = "Revoked everywhere, immediately."), E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound, E::Internal, E::Unavailable))]
        pub async fn $revoke(n: State<Arc<Tokens>>, c: Caller, h: HeaderMap) -> ApiResult<StatusCode> {
            revoke_token(n, c, h).await
        }
    };
}

token_operations!(
    "/v3/auth/tokens",
    issue = "v3_tokens_issue",
    validate = "v3_tokens_validate",
    check = "v3_tokens_check",
    revoke = "v3_tokens_revoke"
);
token_operations!(
    "/v4/auth/tokens",
    v4_issue = "v4_tokens_issue",
    v4_validate = "v4_tokens_validate",
    v4_check = "v4_tokens_check",
    v4_revoke = "v4_tokens_revoke"
);

async fn issue_token(
    State(node): State<Arc<Tokens>>,
    Query(q): Query<HashMap<String, String>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    JsonBody(body): JsonBody<Body<s::AuthRequest>>,
) -> ApiResult<Response> {
    let auth = s::AuthRequest::auth(body)?;
    let identity = auth.identity.value().unwrap_or_default();
    let asked = auth.scope.value();
    let mut proven =
        methods::authenticate(&node, &identity, Some(methods::Request { headers: &headers, uri: &uri })).await?;
    // Keystone's multi-factor step: a receipt adds what the user proved before; still short
    // of a rule, the answer is a new receipt rather than a token.
    proven.methods |= receipt::carried_methods(&node, &headers, &proven.user.id)?;
    let rules = mfa::rules(&proven.user.options);
    if let Some(required) = mfa::unmet(&rules, &receipt::names(proven.methods)) {
        return receipt::ask_for_more(&node, &proven.user, proven.methods, required);
    }
    let trust_scope = asked.as_ref().and_then(|s| s.get("OS-TRUST:trust"));
    let mut user_id = proven.user.id.clone();
    if proven.restriction.is_some() && (proven.fixed_scope.is_some() || trust_scope.is_some()) {
        return Err(ApiError::forbidden(
            "You are not authorized to perform the requested action: a restricted token cannot be combined with \
             an application credential or a trust.",
        ));
    }
    let scope = match (proven.fixed_scope.clone(), trust_scope) {
        (Some(_), _) if asked.is_some() => {
            return Err(ApiError::unauthorized(
                "Error authenticating with application credential: Application credentials cannot request a scope.",
            ))
        }
        (Some(fixed), _) => fixed,
        (None, Some(trust)) => {
            let granted = crate::trust::auth::grant(&node, &proven, trust).await?;
            user_id = granted.user_id;
            proven.delegation = granted.delegation;
            proven.expires_at = granted.expires_at;
            granted.scope
        }
        (None, None) => match &proven.restriction {
            Some(id) => restricted::scope(&node, &proven, id, asked.as_ref()).await?,
            None => scope::requested(&node, asked.as_ref(), &proven.user).await?,
        },
    };
    let now = now_micros();
    let lifetime = node.cfg.token_expiration_s * 1_000_000;
    let (mut expires_at, mut audit_ids) = match &proven.parent {
        // A re-scoped token keeps its parent's expiry and its chain's root audit id (the
        // parent's chain id, or the parent's own id when it is the root), so revoking the
        // first token of a chain kills every token re-scoped from it, however deep.
        Some(parent) => {
            let root = parent.audit_ids.get(1).or(parent.audit_ids.first()).copied();
            (parent.expires_at, std::iter::once(idnode_keys::random_bytes()).chain(root).collect())
        }
        None => (now + lifetime, vec![idnode_keys::random_bytes()]),
    };
    if let Some(limit) = proven.expires_at {
        expires_at = expires_at.min(limit);
    }
    audit_ids.truncate(2);
    let user_cutoff = if user_id == proven.user.id {
        proven.user.tokens_valid_after
    } else {
        // A trust's token acts for the trustor: its cut-off is the trustor's.
        crate::state::Reader::user(&node.engine.read(), &user_id)?.map_or(0, |u| u.tokens_valid_after)
    };
    let payload = TokenPayload {
        version: crate::token::PAYLOAD_VERSION,
        user_id,
        methods: proven.methods,
        scope,
        issued_at: now,
        expires_at,
        audit_ids,
        delegation: proven.delegation.clone(),
        restriction: proven.restriction.clone(),
        user_cutoff: Some(user_cutoff),
    };
    let status = if node.cfg.keystone_compat_status { StatusCode::CREATED } else { StatusCode::OK };
    respond_with(&node, &payload, status, query_flag(q.get("nocatalog"))).await
}

/// The `scope` label of the issued-tokens metric.
pub(crate) fn scope_label(scope: &TokenScope) -> &'static str {
    match scope {
        TokenScope::Unscoped => "unscoped",
        TokenScope::Project(_) => "project",
        TokenScope::Domain(_) => "domain",
        TokenScope::System => "system",
    }
}

/// Seals a new token and answers with it. Validating it first checks the scope (enabled,
/// roles held) exactly as every later validation will, and warms this node's cache.
async fn respond_with(
    node: &Tokens,
    payload: &TokenPayload,
    status: StatusCode,
    nocatalog: bool,
) -> ApiResult<Response> {
    let token = node.seal_token(payload)?;
    // A refusal is Keystone's 401; a server that cannot decide (a relationship store that
    // does not answer) says so instead of refusing.
    let vt = node.validate_token(&token, false).await.map_err(|e| {
        if e.status.is_server_error() {
            e
        } else {
            ApiError::unauthenticated()
        }
    })?;
    node.metrics.tokens_issued.get_or_create(&labels(&[("scope", scope_label(&vt.payload.scope))])).inc();
    crate::http::access::note_subject(&vt.user.id, vt.project.as_ref().map(|p| p.id.as_str()));
    token_response(node, status, &token, &vt, nocatalog)
}

/// An unscoped token for `user`, who proved themselves with `method` (a passkey login).
pub(crate) async fn issue_unscoped(
    node: &Tokens,
    user: &User,
    method: Method,
    status: StatusCode,
) -> ApiResult<Response> {
    let now = now_micros();
    let payload = TokenPayload {
        version: crate::token::PAYLOAD_VERSION,
        user_id: user.id.clone(),
        methods: method as u8,
        scope: TokenScope::Unscoped,
        issued_at: now,
        expires_at: now + node.cfg.token_expiration_s * 1_000_000,
        audit_ids: vec![idnode_keys::random_bytes()],
        delegation: Delegation::None,
        restriction: None,
        user_cutoff: Some(user.tokens_valid_after),
    };
    respond_with(node, &payload, status, true).await
}

async fn validate_token(
    State(node): State<Arc<Tokens>>,
    Caller(ctx): Caller,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let subject = subject_token(&headers)?;
    let vt = node.validate_token(&subject, query_flag(q.get("allow_expired"))).await?;
    enforce("identity:validate_token", &ctx, &json!({"token": {"user_id": vt.user.id}}))?;
    token_response(&node, StatusCode::OK, &subject, &vt, query_flag(q.get("nocatalog")))
}

async fn check_token(
    State(node): State<Arc<Tokens>>,
    Caller(ctx): Caller,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<StatusCode> {
    let subject = subject_token(&headers)?;
    let vt = node.validate_token(&subject, query_flag(q.get("allow_expired"))).await?;
    enforce("identity:check_token", &ctx, &json!({"token": {"user_id": vt.user.id}}))?;
    Ok(StatusCode::OK)
}

/// As in Keystone, the caller (X-Auth-Token) revokes the subject token when the policy lets
/// it: an administrator, or the token's own user. Answers once every reachable node has
/// applied the revocation, so validation anywhere fails from then on.
async fn revoke_token(
    State(node): State<Arc<Tokens>>,
    Caller(ctx): Caller,
    headers: HeaderMap,
) -> ApiResult<StatusCode> {
    let subject = subject_token(&headers)?;
    let vt = node.validate_token(&subject, true).await?;
    enforce("identity:revoke_token", &ctx, &json!({"token": {"user_id": vt.user.id}}))?;
    let audit_ids = vt.payload.audit_id_strings().into_iter().take(1).collect();
    // Kept as long as `allow_expired` could still validate the token.
    let keep_until = vt.payload.expires_at.saturating_add(node.cfg.allow_expired_window_s.saturating_mul(1_000_000));
    let cmd = Command::RevokeToken { audit_ids, expires_at: keep_until, now: now_micros() };
    let (index, _) = node.propose_at(cmd).await?;
    node.wait_cluster_applied(index).await;
    Ok(StatusCode::NO_CONTENT)
}
