//! The `oauth1` auth method: a consumer turns the access token a user authorized into a token
//! scoped to the access token's project, holding the roles it delegates (Keystone's
//! `keystone.auth.plugins.oauth1`). The request is signed with the consumer's and the access
//! token's secrets; every refusal is the same 401.

use axum::http::{HeaderMap, Uri};

use super::request_tokens::{expecting, refuse};
use super::signature;
use super::signed::SignedRequest;
use super::tokens::{self, AccessToken};
use crate::auth::proven::Proven;
use crate::clock::now_micros;
use crate::http::error::{ApiError, ApiResult};
use crate::state::model::DocKind;
use crate::state::Reader;
use crate::token::{Delegation, Method, TokenScope, Tokens};

pub async fn authenticate(node: &Tokens, headers: &HeaderMap, uri: &Uri) -> ApiResult<Proven> {
    let req = SignedRequest::of(node, headers, uri);
    let p = &req.oauth;
    let access_id = p.get("oauth_token").ok_or_else(|| expecting("oauth_token"))?;
    let now = now_micros();
    signature::check_mandatory(p, now / 1_000_000)?;
    let consumer_id = p.get("oauth_consumer_key").unwrap_or_default();
    let (doc, consumer, user) = {
        let view = node.engine.read();
        let doc =
            tokens::find(&view, DocKind::OAuthAccessToken, access_id)?.ok_or_else(|| refuse("unknown access token"))?;
        let consumer = view.doc(DocKind::OAuthConsumer, consumer_id)?.ok_or_else(|| refuse("unknown consumer"))?;
        let access = AccessToken::parse(&doc).map_err(ApiError::internal)?;
        let user = view.user(&access.authorizing_user_id)?;
        (doc, consumer, user)
    };
    let access = AccessToken::parse(&doc).map_err(ApiError::internal)?;
    if access.consumer_id != consumer_id {
        return Err(refuse("the access token belongs to another consumer"));
    }
    if tokens::expired(access.expires_at.as_deref(), now) {
        return Err(ApiError::unauthorized("Access token is expired"));
    }
    let consumer_secret =
        tokens::private(&consumer, "secret").ok_or_else(|| ApiError::internal("consumer without secret"))?;
    let token_secret =
        tokens::private(&doc, "secret").ok_or_else(|| ApiError::internal("access token without secret"))?;
    if !req.verify(&consumer_secret, &token_secret) {
        return Err(ApiError::unauthorized("Could not validate the access token"));
    }
    let user = user.filter(|u| u.enabled).ok_or_else(|| refuse("the authorizing user is gone or disabled"))?;
    // idnode's own tokens carry the access token from this version on (earlier binaries
    // cannot open them).
    crate::token::keystone::delegations_allowed(node).await?;
    Ok(Proven {
        user,
        methods: Method::OAuth1 as u8,
        parent: None,
        delegation: Delegation::OAuth1(access.id),
        fixed_scope: Some(TokenScope::Project(access.project_id)),
        expires_at: None,
        restriction: None,
    })
}
