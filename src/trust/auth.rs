//! Trust-scoped token requests (`"scope": {"OS-TRUST:trust": {"id": ...}}`): the trustee
//! authenticates as itself and gets a token on the trust's project that carries the trust's
//! roles, as the trustor when the trust impersonates.

use serde_json::Value;

use super::Trust;
use crate::auth::proven::Proven;
use crate::clock::now_micros;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::state::model::DocKind;
use crate::state::{Command, Reader};
use crate::token::{Delegation, TokenScope};

/// What a trust makes of a token request.
pub struct Granted {
    /// The token's user: the trustor when the trust impersonates, else the trustee.
    pub user_id: String,
    pub scope: TokenScope,
    pub delegation: Delegation,
    pub expires_at: Option<i64>,
}

pub async fn grant(node: &Core, proven: &Proven, scope: &Value) -> ApiResult<Granted> {
    let id = scope.get("id").and_then(Value::as_str).ok_or_else(|| {
        ApiError::bad_request(
            "Expecting to find trust_id in trust. The server could not comply with the request since it is either \
             malformed or otherwise incorrect. The client is assumed to be in error.",
        )
    })?;
    if proven.parent.as_ref().is_some_and(|p| p.is_virtual()) {
        return Err(ApiError::forbidden(
            "You are not authorized to perform the requested action: a virtual user (mapped workload) cannot use \
             trusts.",
        ));
    }
    let denied = ApiError::unauthenticated;
    let doc = node.engine.read().doc(DocKind::Trust, id)?.ok_or_else(denied)?;
    let t = Trust::of(&doc)?;
    if !t.usable(now_micros()) {
        return Err(denied());
    }
    let forbidden = || ApiError::forbidden("You are not authorized to perform the requested action.");
    if proven.user.id != t.trustee_user_id {
        return Err(forbidden());
    }
    if !node.engine.read().user(&t.trustor_user_id)?.is_some_and(|u| u.enabled) {
        return Err(forbidden());
    }
    let Some(project_id) = t.project_id.clone() else { return Err(forbidden()) };
    if t.remaining_uses.is_some() {
        // Counted in the log, so two nodes cannot both spend the last use.
        node.propose(Command::UseTrust { id: t.id.clone() }).await.map_err(|_| denied())?;
    }
    Ok(Granted {
        user_id: if t.impersonation { t.trustor_user_id } else { t.trustee_user_id },
        scope: TokenScope::Project(project_id),
        delegation: Delegation::Trust(t.id),
        expires_at: t.expires_at,
    })
}
