//! HTTP: router assembly, the caller's auth context, error rendering, discovery and the ops
//! listener.

pub mod discovery;
pub mod error;
pub mod extract;
pub mod fields;
pub mod metrics;
pub mod openapi;
pub mod ops;
pub mod ratelimit;
#[cfg(test)]
mod route_parity;
pub mod router;

pub use error::ApiError;
pub use extract::{Caller, JsonBody};
