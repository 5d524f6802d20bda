//! Assembly, the top floor: startup, the public router and its OpenAPI document, version
//! discovery and the ops listener. Nothing below imports this module.

pub mod allocator;
pub mod discovery;
pub mod engine;
pub mod host_metrics;
pub mod logging;
pub mod node;
pub mod openapi;
pub mod ops;
#[cfg(test)]
mod route_parity;
pub mod router;
pub mod startup;
