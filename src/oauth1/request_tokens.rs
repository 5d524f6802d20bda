//! The first two legs of the OS-OAUTH1 flow: a consumer asks for a request token for a project
//! (`POST /v3/OS-OAUTH1/request_token`, signed with its secret, no Keystone token), and a user
//! authorizes it with roles it holds there (`PUT /v3/OS-OAUTH1/authorize/{id}`), getting the
//! verifier the consumer needs for the exchange.

use axum::extract::Path;
use axum::response::Response;
use axum::Json;
use serde_json::{json, Value};

use super::schemas::AuthorizeRequest;
use super::signature::{self, invalid};
use super::signed::Signed;
use super::tokens::{self, RequestToken};
use crate::clock::now_micros;
use crate::context::Core;
use crate::federation::invalid as invalid_field;
use crate::http::body::{Kept, Sent};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::OptionalJson;
use crate::http::fields::{json_obj, new_id, Obj};
use crate::http::openapi::errors as E;
use crate::policy::enforce;
use crate::reads::effective::user_roles;
use crate::state::keys::ns;
use crate::state::model::{DocKind, Ref, Target};
use crate::state::{Command, Reader};
use crate::token::Call;
use crate::token::ValidToken;

/// Keystone's ValidationError for a missing request attribute.
pub fn expecting(attribute: &str) -> ApiError {
    ApiError::bad_request(format!(
        "Expecting to find {attribute} in request. The server could not comply with the request since it is either \
         malformed or otherwise incorrect. The client is assumed to be in error."
    ))
}

/// A refused signature, verifier or authorization: 401 without saying which check failed.
pub fn refuse(why: &str) -> ApiError {
    tracing::debug!("OAuth1 request refused: {why}");
    ApiError::unauthenticated()
}

pub fn request_token_not_found() -> ApiError {
    ApiError::not_found_msg("Request token not found")
}

/// Tokens that carry a delegation (application credentials here) cannot mint or manage
/// another, independent delegation (Keystone's rule); nor can a confined token (restricted,
/// or a virtual user's), whose access token would hold roles without its narrowing.
pub fn refuse_delegated(ctx: &ValidToken, what: &str) -> ApiResult<()> {
    ctx.refuse_confined(what)?;
    if ctx.payload.is_delegated() || ctx.payload.app_cred().is_some() {
        return Err(ApiError::forbidden(format!("Cannot {what} with a token issued via delegation.")));
    }
    Ok(())
}

#[utoipa::path(post, path = "/v3/OS-OAUTH1/request_token", operation_id = "oauth1_request_token_create", tag = "oauth1", description = "Signed by the consumer (OAuth 1.0a, HMAC-SHA1, `oauth_callback` required) in the `Authorization` header; no X-Auth-Token needed. No body.",
    security(()),
    params(("Requested-Project-Id" = String, Header, description = "The project the consumer wants access to."),
           ("Authorization" = String, Header, description = "`OAuth oauth_consumer_key=\"..\", oauth_signature=\"..\", ...`")),
    responses((status = 201, description = "`oauth_token=..&oauth_token_secret=..&oauth_expires_at=..`", body = String, content_type = "application/x-www-form-urlencoded"),
              E::BadRequest, E::Unauthorized, E::NotFound, E::Internal, E::Unavailable))]
pub async fn create(Signed { node, req, headers }: Signed) -> ApiResult<Response> {
    let consumer_id = req.oauth.get("oauth_consumer_key").ok_or_else(|| expecting("oauth_consumer_key"))?.to_string();
    let project_id = headers
        .get("requested-project-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| expecting("Requested-Project-Id"))?
        .to_string();
    let consumer = {
        let view = node.engine.read();
        if view.project(&project_id)?.is_none_or(|p| p.is_domain) {
            return Err(ApiError::not_found("project", &project_id));
        }
        view.doc(DocKind::OAuthConsumer, &consumer_id)?.ok_or_else(|| ApiError::not_found_msg("Consumer not found"))?
    };
    let now = now_micros();
    signature::check_mandatory(&req.oauth, now / 1_000_000)?;
    if req.oauth.get("oauth_callback").is_none() {
        return Err(invalid("invalid_request", "Missing callback URI."));
    }
    let secret = tokens::private(&consumer, "secret").ok_or_else(|| ApiError::internal("consumer without secret"))?;
    if !req.verify(&secret, "") {
        return Err(refuse("invalid request token signature"));
    }
    let token = RequestToken {
        id: new_id(),
        consumer_id: consumer_id.clone(),
        requested_project_id: project_id.clone(),
        expires_at: tokens::expiry(now, node.cfg.oauth1_request_token_duration_s),
        authorizing_user_id: None,
        role_ids: Vec::new(),
    };
    let token_secret = tokens::new_secret();
    let doc =
        tokens::record(DocKind::OAuthRequestToken, &consumer_id, &token.id, &token, json!({"secret": token_secret}))?;
    let requires = vec![Ref::Doc(DocKind::OAuthConsumer, consumer_id), Ref::Project(project_id)];
    node.propose(Command::PutDoc { doc, create: true, requires }).await?;
    Ok(tokens::form_response(&token.id, &token_secret, token.expires_at.as_deref()))
}

/// The role ids of an authorize body (`{"roles": [{"id": ..} | {"name": ..}]}`; none given is
/// none authorized).
fn requested_roles(node: &Core, body: Option<Sent<AuthorizeRequest>>) -> ApiResult<Vec<String>> {
    let roles = match body {
        None => return Ok(Vec::new()),
        Some(Sent::Is(b)) => match b.roles {
            Sent::Absent => return Ok(Vec::new()),
            Sent::Is(a) => a,
            other => return Err(invalid_field("roles", &other.unread().unwrap_or_default(), "must be an array")),
        },
        Some(v) => return Err(invalid_field("roles", &v.unread().unwrap_or_default(), "the body must be an object")),
    };
    let view = node.engine.read();
    let mut ids = Vec::new();
    let bad = |r: &Value| invalid_field("roles", r, "each role must be an object with exactly one of 'id' or 'name'");
    for r in roles {
        let (r, sent) = match r {
            Sent::Is(Kept { typed, sent }) if sent.len() == 1 => (typed, Value::Object(sent)),
            Sent::Is(Kept { sent, .. }) => return Err(bad(&Value::Object(sent))),
            other => return Err(bad(&other.unread().unwrap_or_default())),
        };
        match (&r.id, &r.name) {
            (Sent::Is(id), _)
                if (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') =>
            {
                ids.push(id.clone())
            }
            (_, Sent::Is(name)) if (1..=255).contains(&name.chars().count()) => {
                match view.id_by_name(ns::ROLE_NAME, "", name)? {
                    Some(id) => ids.push(id),
                    None => return Err(ApiError::not_found("role", name)),
                }
            }
            _ => return Err(bad(&sent)),
        }
    }
    ids.sort();
    ids.dedup();
    Ok(ids)
}

#[utoipa::path(put, path = "/v3/OS-OAUTH1/authorize/{request_token_id}", operation_id = "oauth1_request_token_authorize", tag = "oauth1", description = "The caller delegates to the consumer these roles, all of which it must hold on the requested project.",
    params(("request_token_id" = String, Path, description = "The request token's id.")),
    request_body(content = super::schemas::AuthorizeRequest, content_type = "application/json"),
    responses((status = 200, description = "The verifier for the access-token exchange.", body = super::schemas::AuthorizeResponse), E::Edit))]
pub async fn authorize(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    OptionalJson(body): OptionalJson<Sent<AuthorizeRequest>>,
) -> ApiResult<Json<Value>> {
    enforce("identity:authorize_request_token", &ctx, &json!({}))?;
    let role_ids = requested_roles(&node, body)?;
    refuse_delegated(&ctx, "authorize a request token")?;
    let (mut doc, mut token) = {
        let view = node.engine.read();
        let doc = tokens::find(&view, DocKind::OAuthRequestToken, &id)?.ok_or_else(request_token_not_found)?;
        let token: RequestToken = tokens::body(&doc)?;
        if tokens::expired(token.expires_at.as_deref(), now_micros()) {
            return Err(refuse("request token expired"));
        }
        (doc, token)
    };
    let held = user_roles(&node, &ctx.user.id, &Target::Project(token.requested_project_id.clone())).await?;
    if !role_ids.iter().all(|r| held.iter().any(|h| h.id == *r)) {
        return Err(refuse("the authorizing user does not hold every role asked for"));
    }
    token.authorizing_user_id = Some(ctx.user.id.clone());
    token.role_ids = role_ids;
    let verifier = tokens::new_verifier();
    let mut private = match json_obj(&doc.private) {
        Value::Object(o) => o,
        _ => Obj::new(),
    };
    private.insert("verifier".into(), json!(verifier));
    doc.body = serde_json::to_string(&token).map_err(ApiError::internal)?;
    doc.private = Value::Object(private).to_string();
    node.propose(Command::PutDoc { doc, create: false, requires: vec![] }).await?;
    Ok(Json(json!({"token": {"oauth_verifier": verifier}})))
}
