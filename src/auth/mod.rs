//! `/v3/auth/*`: token issue (password and token methods), validation, revocation, and the
//! caller's scoping targets.

mod methods;
mod projects;
mod scope;
pub mod tokens;

pub use projects::{auth_catalog, auth_domains, auth_projects, auth_system};
