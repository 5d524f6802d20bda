//! The peer listener's routes: raft RPCs and leader work forwarded by followers. Every route
//! sits behind the cluster credential check.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, VoteRequest};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tracing::Instrument;

use crate::admin::{AdminRequest, AppliedRequest, PATH_ADMIN, PATH_APPLIED, PATH_STATUS};
use crate::auth;
use crate::consistency::{
    CheckRequest, DigestRequest, FamiliesRequest, VerdictRefused, PATH_CHECK, PATH_CHECK_LEADER, PATH_DIGEST,
    PATH_DIGEST_FAMILIES, PATH_VERDICT,
};
use crate::options::CHECK_MAX_WAIT;
use crate::request_tag;
use crate::types::TypeConfig;
use crate::wire::{
    LeaderError, LeaderRequest, LeaderResult, StampedAppend, StampedReply, WatermarkedAppend, PATH_APPEND,
    PATH_APPEND_STAMPED, PATH_APPEND_WATERMARKED, PATH_LEADER, PATH_SNAPSHOT, PATH_VOTE,
};
use crate::{ConsistencyReport, ProposeError, RaftNode};

/// Append batches and snapshot chunks (1 MiB) must fit with room to spare.
const MAX_BODY: usize = auth::MAX_BODY;

impl RaftNode {
    /// axum Router for the peer listener (raft RPCs, forwarded proposals, read index and
    /// membership changes). Callers without the cluster credential get 401; only the member
    /// id route is open.
    pub fn peer_router(self: &Arc<Self>) -> Router {
        self.operator_only(self.peer_routes())
            // Outside the credential check: a tool asks it to learn whom to sign for.
            .merge(self.member_id_router())
    }

    /// The peer routes without the credential check, for a server that puts its own bounds
    /// between the check ([`RaftNode::operator_only`]) and the handlers: a request should
    /// be authenticated before it waits for a request slot, so strangers never hold one.
    pub fn peer_routes(self: &Arc<Self>) -> Router {
        Router::new()
            .route(PATH_APPEND, post(append))
            .route(PATH_APPEND_STAMPED, post(append_stamped))
            .route(PATH_APPEND_WATERMARKED, post(append_watermarked))
            .route(PATH_VOTE, post(vote))
            .route(PATH_SNAPSHOT, post(snapshot))
            .route(PATH_LEADER, post(leader))
            .route(PATH_STATUS, post(status))
            .route(PATH_ADMIN, post(admin))
            .route(PATH_APPLIED, post(applied))
            .route(PATH_DIGEST, post(digest))
            .route(PATH_DIGEST_FAMILIES, post(digest_families))
            .route(PATH_CHECK, post(check))
            .route(PATH_CHECK_LEADER, post(check_leader))
            .route(PATH_VERDICT, post(verdict))
            .route(crate::version::PATH_VERSION, post(version))
            .route(crate::leadership::PATH_TAKE_LEADERSHIP, post(take_leadership))
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(self.clone())
    }

    /// How long the peer listener lets one request run ([`crate::RaftOptions::peer_request_timeout`]).
    pub fn peer_request_timeout(&self) -> std::time::Duration {
        self.opts.peer_request_timeout()
    }
}

fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, Response> {
    postcard::from_bytes(body).map_err(|e| (StatusCode::BAD_REQUEST, format!("bad request body: {e}")).into_response())
}

fn reply<T: Serialize>(value: &T) -> Response {
    match postcard::to_allocvec(value) {
        Ok(bytes) => ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn append(State(node): State<Arc<RaftNode>>, body: Bytes) -> Response {
    match decode::<AppendEntriesRequest<TypeConfig>>(&body) {
        Ok(req) => {
            let result = node.raft.append_entries(req).await;
            if matches!(&result, Ok(r) if !matches!(r, AppendEntriesResponse::HigherVote(_))) {
                node.contact.appended();
            }
            reply(&result)
        }
        Err(resp) => resp,
    }
}

/// An append with freshness stamps: a leader this node accepts refreshes its freshness.
async fn append_stamped(State(node): State<Arc<RaftNode>>, body: Bytes) -> Response {
    let StampedAppend { echo, rpc } = match decode::<StampedAppend>(&body) {
        Ok(req) => req,
        Err(resp) => return resp,
    };
    let commit = rpc.leader_commit.map_or(0, |l| l.index);
    let result = node.raft.append_entries(rpc).await;
    if matches!(&result, Ok(r) if !matches!(r, AppendEntriesResponse::HigherVote(_))) {
        node.freshness.heard(echo, commit);
        node.contact.appended();
    }
    reply(&StampedReply { stamp: node.freshness.stamp(), result })
}

/// A stamped append with the leader's watermark (`watermark`).
async fn append_watermarked(State(node): State<Arc<RaftNode>>, body: Bytes) -> Response {
    let WatermarkedAppend { echo, watermark, rpc } = match decode::<WatermarkedAppend>(&body) {
        Ok(req) => req,
        Err(resp) => return resp,
    };
    let commit = rpc.leader_commit.map_or(0, |l| l.index);
    let term = rpc.vote.leader_id().term;
    let result = node.raft.append_entries(rpc).await;
    if matches!(&result, Ok(r) if !matches!(r, AppendEntriesResponse::HigherVote(_))) {
        node.freshness.heard(echo, commit);
        node.watermark.heard(term, echo, node.freshness.epoch(), watermark);
        node.contact.appended();
    }
    reply(&StampedReply { stamp: node.freshness.stamp(), result })
}

async fn vote(State(node): State<Arc<RaftNode>>, body: Bytes) -> Response {
    match decode::<VoteRequest<u64>>(&body) {
        Ok(req) => {
            let result = node.raft.vote(req).await;
            // A vote granted is a leader on its way: wait a lease for it, as openraft does.
            if matches!(&result, Ok(r) if r.vote_granted) {
                node.contact.appended();
            }
            reply(&result)
        }
        Err(resp) => resp,
    }
}

async fn snapshot(State(node): State<Arc<RaftNode>>, body: Bytes) -> Response {
    match decode::<InstallSnapshotRequest<TypeConfig>>(&body) {
        Ok(req) => {
            // A leader is streaming (the last chunk waits for the whole install): no election.
            let _receiving = node.contact.receiving();
            let result = node.raft.install_snapshot(req).await;
            node.contact.appended();
            reply(&result)
        }
        Err(resp) => resp,
    }
}

async fn leader(State(node): State<Arc<RaftNode>>, headers: HeaderMap, body: Bytes) -> Response {
    let req = match decode::<LeaderRequest>(&body) {
        Ok(req) => req,
        Err(resp) => return resp,
    };
    // The API requests the follower took, so this member's lines about them name the same ids.
    let tag = headers.get(request_tag::HEADER).and_then(|v| v.to_str().ok()).map(Arc::<str>::from);
    let span = tracing::info_span!("forwarded", request_id = tag.as_deref().unwrap_or(""));
    crate::trace_context::adopt(&span, &headers);
    let run = async {
        let result: LeaderResult = if node.is_leader() {
            match tokio::time::timeout(node.opts.forward_timeout, node.execute(req)).await {
                Ok(r) => r,
                Err(_) => Err(LeaderError::Unavailable("leader timed out".into())),
            }
        } else {
            Err(LeaderError::NotLeader(node.leader_id()))
        };
        match &result {
            Ok(_) => tracing::debug!("forwarded work done"),
            Err(e) => tracing::debug!(error = ?e, "forwarded work not done"),
        }
        result
    };
    let result = request_tag::within(tag, run).instrument(span).await;
    reply(&result)
}

/// The node's status with every member's versions (what `idnode cluster status` prints).
async fn status(State(node): State<Arc<RaftNode>>) -> Response {
    let mut status = node.status();
    status.versions = node.member_versions().await;
    reply(&status)
}

async fn version(State(node): State<Arc<RaftNode>>) -> Response {
    reply(&node.own_version())
}

/// `idnode cluster move-leader` named this member: campaign until it leads (bounded).
async fn take_leadership(State(node): State<Arc<RaftNode>>, body: Bytes) -> Response {
    match decode::<crate::leadership::TakeLeadership>(&body) {
        Ok(req) => reply(&node.take_leadership(std::time::Duration::from_millis(req.wait_ms)).await),
        Err(resp) => resp,
    }
}

async fn admin(State(node): State<Arc<RaftNode>>, body: Bytes) -> Response {
    match decode::<AdminRequest>(&body) {
        Ok(req) => reply(&node.admin_request(req).await),
        Err(resp) => resp,
    }
}

async fn digest(State(node): State<Arc<RaftNode>>, body: Bytes) -> Response {
    match decode::<DigestRequest>(&body) {
        Ok(req) => reply(&node.digest_at(req).await),
        Err(resp) => resp,
    }
}

/// Per-family digests at a checkpoint (asked when another member's digest differs).
async fn digest_families(State(node): State<Arc<RaftNode>>, body: Bytes) -> Response {
    match decode::<FamiliesRequest>(&body) {
        Ok(req) => reply(&node.families_at(req)),
        Err(resp) => resp,
    }
}

async fn check(State(node): State<Arc<RaftNode>>, body: Bytes) -> Response {
    match decode::<CheckRequest>(&body) {
        Ok(req) => {
            // Capped so the whole check stays inside the listener's request timeout.
            let wait = std::time::Duration::from_millis(req.wait_ms).min(CHECK_MAX_WAIT);
            reply(&node.check_consistency(wait).await.map_err(|e| e.to_string()))
        }
        Err(resp) => resp,
    }
}

/// A check a follower forwarded: run only while leading (a former leader answers an error,
/// never forwards again, so two confused members cannot bounce it between them).
async fn check_leader(State(node): State<Arc<RaftNode>>, body: Bytes) -> Response {
    match decode::<CheckRequest>(&body) {
        Ok(req) => {
            let wait = std::time::Duration::from_millis(req.wait_ms).min(CHECK_MAX_WAIT);
            if !node.is_leader() {
                return reply(&Err::<ConsistencyReport, _>(LeaderError::NotLeader(node.leader_id())));
            }
            let result = node.check_as_leader(wait).await.map_err(|e| match e {
                ProposeError::NoLeader | ProposeError::Timeout => LeaderError::Unavailable(e.to_string()),
                ProposeError::Rejected(e) => LeaderError::Rejected(e),
                ProposeError::Fatal(e) => LeaderError::Fatal(e),
            });
            reply(&result)
        }
        Err(resp) => resp,
    }
}

/// 400 for a verdict that does not decode or lacks its sender, term and leader; 409 for one
/// that is not from this node's leader in its current term.
async fn verdict(State(node): State<Arc<RaftNode>>, body: Bytes) -> Response {
    match node.accept_verdict_bytes(&body) {
        Ok(()) => reply(&()),
        Err(VerdictRefused::Malformed(e)) => (StatusCode::BAD_REQUEST, e).into_response(),
        Err(VerdictRefused::NotFromLeader(e)) => (StatusCode::CONFLICT, e).into_response(),
    }
}

async fn applied(State(node): State<Arc<RaftNode>>, body: Bytes) -> Response {
    match decode::<AppliedRequest>(&body) {
        Ok(req) => reply(&node.applied_request(req).await),
        Err(resp) => resp,
    }
}
