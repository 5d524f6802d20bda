//! `GET /v3/OS-REVOKE/events`: Keystone's revocation events, for services that judge tokens
//! against a list of them.
//!
//! Two kinds are listed. A revoked token (`DELETE /v3/auth/tokens`) is an `audit_id` event: it
//! ends that token and every token re-scoped from it. A user's token cut-off
//! (`tokens_valid_after`, moved by a password change, a disable or a deprovision) is a
//! `user_id` event: it ends every token of the user issued before it. Keystone also records
//! project, domain, role and trust events; idnode has none to list, because its validation
//! reads the scope, the roles and the trust as they are now (`docs/decisions.md`).

use std::collections::HashMap;

use axum::extract::Query;
use axum::Json;
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

use crate::clock::now_micros;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::parse_iso_time;
use crate::http::openapi::{errors as E, CollectionLinks};
use crate::policy::enforce;
use crate::state::read::{IdentityReads, TokenReads};
use crate::token::render::iso_micros;
use crate::token::Call;

const PATH: &str = "/v3/OS-REVOKE/events";

/// One revocation event, shaped like Keystone's: exactly one of `audit_id` and `user_id`.
#[derive(Serialize, ToSchema)]
pub struct RevokeEvent {
    /// The revoked token's audit id (its chain's, for the tokens re-scoped from it).
    #[serde(skip_serializing_if = "Option::is_none")]
    audit_id: Option<String>,
    /// The user whose tokens issued before `issued_before` are ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    user_id: Option<String>,
    /// Tokens issued before this time are ended (UTC, microseconds, `Z`).
    #[schema(example = "2026-11-29T17:00:00.123456Z")]
    issued_before: String,
    /// When the revocation happened; the same time as `issued_before`.
    #[schema(example = "2026-11-29T17:00:00.123456Z")]
    revoked_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct RevokeEvents {
    /// Oldest first.
    events: Vec<RevokeEvent>,
    links: CollectionLinks,
}

/// What an event ends.
enum Subject {
    AuditId(String),
    User(String),
}

/// Listed oldest first (ties by id). A revoked token is listed until its record's time is
/// over (the token's expiry plus `[token] allow_expired_window`), even before apply prunes
/// it. A user's cut-off is listed while a token it ended could still validate: a token issued
/// before the cut-off expires at most `[token] expiration` after it and `allow_expired`
/// accepts it for `allow_expired_window` more, so an older cut-off ends no live token (the
/// longer lifetimes of OAuth2 access tokens are not Keystone tokens and not counted here).
#[utoipa::path(get, path = "/v3/OS-REVOKE/events", operation_id = "os_revoke_events_list", tag = "auth",
    description = "Keystone's revocation events: revoked tokens (by audit id) and users' token cut-offs. Project, domain, role and trust events are never listed: token validation reads their current state.",
    params(("since" = Option<String>, Query, description = "An ISO 8601 time: only events revoked strictly after it. 400 when it does not parse.")),
    responses((status = 200, description = "The revocation events, oldest first.", body = RevokeEvents),
              E::BadRequest, E::Unauthorized, E::Forbidden, E::Internal))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<RevokeEvents>> {
    enforce("identity:list_revoke_events", &ctx, &json!({}))?;
    let since = match q.get("since") {
        None => None,
        Some(s) => Some(parse_iso_time(s).ok_or_else(|| {
            ApiError::bad_request(
                "Invalid date format for 'since': expected an ISO 8601 time such as 2026-11-29T17:00:00.000000Z.",
            )
        })?),
    };
    let after_since = |t: i64| since.is_none_or(|s| t > s);
    let now = now_micros();
    let view = node.engine.snapshot();
    let mut found: Vec<(i64, Subject)> = Vec::new();
    for (audit_id, r) in view.revocations()? {
        if r.expires_at > now && after_since(r.revoked_at) {
            found.push((r.revoked_at, Subject::AuditId(audit_id)));
        }
    }
    let reach_s = node.cfg.token_expiration_s.saturating_add(node.cfg.allow_expired_window_s);
    let horizon = now.saturating_sub(reach_s.saturating_mul(1_000_000));
    for u in view.users()? {
        let cut = u.tokens_valid_after;
        if cut > 0 && cut > horizon && after_since(cut) {
            found.push((cut, Subject::User(u.id)));
        }
    }
    found.sort_by(|(a, sa), (b, sb)| a.cmp(b).then_with(|| sa.id().cmp(sb.id())));
    let events = found.into_iter().map(|(at, subject)| event(at, subject)).collect();
    let links = CollectionLinks::whole(format!("{}{PATH}", node.cfg.public_base()));
    Ok(Json(RevokeEvents { events, links }))
}

impl Subject {
    fn id(&self) -> &str {
        match self {
            Subject::AuditId(id) | Subject::User(id) => id,
        }
    }
}

fn event(at: i64, subject: Subject) -> RevokeEvent {
    let (audit_id, user_id) = match subject {
        Subject::AuditId(id) => (Some(id), None),
        Subject::User(id) => (None, Some(id)),
    };
    RevokeEvent { audit_id, user_id, issued_before: iso_micros(at), revoked_at: iso_micros(at) }
}
