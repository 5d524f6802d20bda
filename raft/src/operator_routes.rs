//! The ops listener's cluster routes, what `idnode cluster …` calls: JSON in and out, behind
//! the cluster credential like backups and key rotation. The node called answers its own
//! view (status), or does the work as the peer path did: membership changes and checks go to
//! the leader, a leadership move to the member that should lead.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::admin::AdminRequest;
use crate::consistency::CheckRequest;
use crate::options::CHECK_MAX_WAIT;
use crate::{ClusterStatus, NodeVersion, RaftNode};

pub const OPS_STATUS: &str = "/cluster/status";
pub const OPS_MEMBERSHIP: &str = "/cluster/membership";
pub const OPS_CHECK: &str = "/cluster/check";
pub const OPS_MOVE_LEADER: &str = "/cluster/move-leader";

/// One member's answer to `GET /cluster/status`: its raft view (with every member's
/// versions, as the peer status route gives) plus what only it knows about itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemberStatus {
    #[serde(flatten)]
    pub status: ClusterStatus,
    /// The binary this member runs.
    pub node_version: NodeVersion,
    /// Column families quarantined on this member (a stored value failed to open).
    pub quarantined: Vec<String>,
    /// Why it is not ready to serve (empty: ready).
    pub not_ready: Vec<String>,
}

/// `POST /cluster/move-leader`: leadership to voter `to` within `timeout_ms`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MoveLeader {
    pub to: u64,
    pub timeout_ms: u64,
}

impl RaftNode {
    /// The cluster routes for the ops listener, behind the cluster credential.
    pub fn cluster_ops_router(self: &Arc<Self>) -> Router {
        let routes = Router::new()
            .route(OPS_STATUS, get(status))
            .route(OPS_MEMBERSHIP, post(membership))
            .route(OPS_CHECK, post(check))
            .route(OPS_MOVE_LEADER, post(move_leader))
            .with_state(self.clone());
        self.operator_only(routes)
    }

    /// This member's [`MemberStatus`], every member asked for its versions.
    pub async fn member_status(&self) -> MemberStatus {
        let mut status = self.status();
        status.versions = self.member_versions().await;
        MemberStatus {
            status,
            node_version: self.own_version(),
            quarantined: self.engine.quarantined(),
            not_ready: self.readiness().reasons,
        }
    }
}

/// A refused or failed operation: 409 with the reason (the caller tells it from an
/// unreachable node).
fn refused(message: impl std::fmt::Display) -> Response {
    (StatusCode::CONFLICT, Json(serde_json::json!({"error": message.to_string()}))).into_response()
}

fn bad_body(e: JsonRejection) -> Response {
    (StatusCode::BAD_REQUEST, Json(serde_json::json!({"error": e.body_text()}))).into_response()
}

async fn status(State(node): State<Arc<RaftNode>>) -> Response {
    Json(node.member_status().await).into_response()
}

async fn membership(State(node): State<Arc<RaftNode>>, body: Result<Json<AdminRequest>, JsonRejection>) -> Response {
    match body {
        Ok(Json(req)) => match node.admin_request(req).await {
            Ok(status) => Json(status).into_response(),
            Err(e) => refused(e),
        },
        Err(e) => bad_body(e),
    }
}

async fn check(State(node): State<Arc<RaftNode>>, body: Result<Json<CheckRequest>, JsonRejection>) -> Response {
    match body {
        Ok(Json(req)) => {
            let wait = Duration::from_millis(req.wait_ms).min(CHECK_MAX_WAIT);
            match node.check_consistency(wait).await {
                Ok(report) => Json(report).into_response(),
                Err(e) => refused(e),
            }
        }
        Err(e) => bad_body(e),
    }
}

async fn move_leader(State(node): State<Arc<RaftNode>>, body: Result<Json<MoveLeader>, JsonRejection>) -> Response {
    match body {
        Ok(Json(req)) => match node.move_leader(req.to, Duration::from_millis(req.timeout_ms)).await {
            Ok(status) => Json(status).into_response(),
            Err(e) => refused(e),
        },
        Err(e) => bad_body(e),
    }
}
