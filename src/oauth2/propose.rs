//! Replicated writes that answer only once the whole reachable cluster has applied them.

use crate::context::Core;
use crate::http::error::ApiResult;
use crate::state::Reply;

/// Proposes `cmd` and answers once every reachable member has applied it, as a revocation
/// does: what it issues (a code, a refresh family, a client) or revokes (a replay's tokens)
/// holds on whichever node the client turns to next, with no catch-up there. Without it a
/// follower that has not yet heard of the commit answers from before it (a fresh access token
/// `{"active": false}`, a replayed code's token still active, a new code or client unknown).
pub async fn propose_everywhere<R: Reply>(node: &Core, cmd: crate::state::oauth2::OAuth2Command) -> ApiResult<R> {
    let (index, reply) = node.propose_at_as(cmd).await?;
    node.wait_cluster_applied(index).await;
    Ok(reply)
}
