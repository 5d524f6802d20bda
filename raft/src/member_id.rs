//! Which member answers at an address. A request is signed for one member id (`auth`), and an
//! operator tool knows only the address it was given; it asks this route first. The id is no
//! secret (it is in every membership list and log line), so the route is open and cheap: no
//! body, no state read beyond a number.

use std::sync::Arc;

use axum::routing::get;
use axum::Router;

use crate::RaftNode;

/// The open route that answers this member's id as decimal text.
pub const PATH_MEMBER_ID: &str = "/cluster/member-id";

impl RaftNode {
    /// The open [`PATH_MEMBER_ID`] route, for the peer and ops listeners.
    pub fn member_id_router(self: &Arc<Self>) -> Router {
        let id = self.id;
        Router::new().route(PATH_MEMBER_ID, get(move || async move { id.to_string() }))
    }
}
