//! HTTP: router assembly, the caller's auth context, error rendering, discovery and the ops
//! listener.

pub mod body;
pub mod client_ip;
pub mod discovery;
pub mod docs;
pub mod error;
pub mod extract;
pub mod fields;
pub mod guard;
pub mod limits;
pub mod metrics;
pub mod openapi;
pub mod ops;
pub mod pages;
pub mod ratelimit;
#[cfg(test)]
mod route_parity;
pub mod router;
pub mod tls;

pub use error::ApiError;
pub use extract::{Caller, JsonBody};
