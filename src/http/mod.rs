//! The HTTP toolkit every feature builds its handlers with: error rendering, body extractors,
//! field checks, pagination, limits, rate-limit buckets, the source address, listener guards,
//! TLS and the OpenAPI building blocks. It imports no feature; the router that assembles the
//! features is in `serve`.

pub mod access;
pub mod body;
pub mod cache_metrics;
pub mod client_ip;
pub mod docs;
pub mod error;
pub mod extract;
pub mod fields;
pub mod guard;
pub mod limits;
pub mod listing;
pub mod metrics;
pub mod openapi;
pub mod pages;
pub mod peer_gate;
pub mod ratelimit;
pub mod request_id;
pub mod tls;
pub mod wrappers;

pub use error::ApiError;
pub use extract::JsonBody;
