//! `/v3/auth/*`: token issue (password and token methods), validation, revocation, and the
//! caller's scoping targets.

pub mod methods;
pub mod projects;
pub mod proven;
mod restricted;
pub mod schemas;
pub mod scope;
pub mod tokens;
