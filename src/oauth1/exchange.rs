//! The last leg of the OS-OAUTH1 flow: `POST /v3/OS-OAUTH1/access_token`, signed with the
//! consumer's and the request token's secrets and carrying the verifier, trades an authorized
//! request token for an access token. The request token is used up in the same write.

use axum::response::Response;
use serde_json::json;

use super::request_tokens::{expecting, refuse, request_token_not_found};
use super::signature;
use super::signed::Signed;
use super::tokens::{self, AccessToken, RequestToken};
use crate::clock::now_micros;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::new_id;
use crate::http::openapi::errors as E;
use crate::state::model::{DocKind, Ref};
use crate::state::{Command, Reader};

#[utoipa::path(post, path = "/v3/OS-OAUTH1/access_token", operation_id = "oauth1_access_token_create", tag = "oauth1", description = "Signed by the consumer with its secret and the request token's (OAuth 1.0a, HMAC-SHA1), with `oauth_token` and `oauth_verifier`; no X-Auth-Token needed. No body.",
    security(()),
    params(("Authorization" = String, Header, description = "`OAuth oauth_consumer_key=\"..\", oauth_token=\"..\", oauth_verifier=\"..\", oauth_signature=\"..\", ...`")),
    responses((status = 201, description = "`oauth_token=..&oauth_token_secret=..&oauth_expires_at=..`", body = String, content_type = "application/x-www-form-urlencoded"),
              E::BadRequest, E::Unauthorized, E::NotFound, E::Internal, E::Unavailable))]
pub async fn create(Signed { node, req, .. }: Signed) -> ApiResult<Response> {
    let p = &req.oauth;
    let consumer_id = p.get("oauth_consumer_key").ok_or_else(|| expecting("oauth_consumer_key"))?;
    let request_id = p.get("oauth_token").ok_or_else(|| expecting("oauth_token"))?;
    let verifier = p.get("oauth_verifier").ok_or_else(|| expecting("oauth_verifier"))?;
    let now = now_micros();
    let (request_doc, request, consumer) = {
        let view = node.engine.read();
        let doc = tokens::find(&view, DocKind::OAuthRequestToken, request_id)?.ok_or_else(request_token_not_found)?;
        let request: RequestToken = tokens::body(&doc)?;
        if tokens::expired(request.expires_at.as_deref(), now) {
            return Err(refuse("request token expired"));
        }
        signature::check_mandatory(p, now / 1_000_000)?;
        signature::check_exchange(p)?;
        let consumer = view.doc(DocKind::OAuthConsumer, consumer_id)?;
        (doc, request, consumer)
    };
    let consumer = consumer.ok_or_else(|| refuse("unknown consumer"))?;
    if request.consumer_id != consumer_id {
        return Err(refuse("the request token belongs to another consumer"));
    }
    let consumer_secret =
        tokens::private(&consumer, "secret").ok_or_else(|| ApiError::internal("consumer without secret"))?;
    let token_secret =
        tokens::private(&request_doc, "secret").ok_or_else(|| ApiError::internal("request token without secret"))?;
    if !req.verify(&consumer_secret, &token_secret) {
        return Err(refuse("invalid access token signature"));
    }
    let stored = tokens::private(&request_doc, "verifier").unwrap_or_default();
    if stored.is_empty() || !idnode_keys::constant_time_eq(stored.as_bytes(), verifier.as_bytes()) {
        return Err(refuse("the verifier does not match"));
    }
    let Some(user_id) = request.authorizing_user_id.clone() else {
        return Err(refuse("the request token is not authorized"));
    };
    let token = AccessToken {
        id: new_id(),
        consumer_id: request.consumer_id.clone(),
        project_id: request.requested_project_id.clone(),
        authorizing_user_id: user_id,
        expires_at: tokens::expiry(now, node.cfg.oauth1_access_token_duration_s),
        role_ids: request.role_ids.clone(),
    };
    let secret = tokens::new_secret();
    let doc =
        tokens::record(DocKind::OAuthAccessToken, &token.consumer_id, &token.id, &token, json!({"secret": secret}))?;
    let requires = vec![Ref::Doc(DocKind::OAuthConsumer, token.consumer_id.clone())];
    node.propose(Command::All(vec![
        Command::PutDoc { doc, create: true, requires },
        // Deleting it in the same write makes the request token single-use: of two racing
        // exchanges, the second finds it gone and writes nothing.
        Command::DeleteDoc { kind: DocKind::OAuthRequestToken, id: request_doc.id },
    ]))
    .await
    .map_err(|e| if e.status == axum::http::StatusCode::NOT_FOUND { request_token_not_found() } else { e })?;
    Ok(tokens::form_response(&token.id, &secret, token.expires_at.as_deref()))
}
