//! `/v3/auth/*`: token issue (password, TOTP, token and application credential methods, with
//! multi-factor rules and auth receipts), validation, revocation, and the caller's scoping
//! targets.

pub mod methods;
mod mfa;
pub mod projects;
pub mod proven;
pub mod receipt;
mod restricted;
pub mod schemas;
pub mod scope;
pub mod tokens;
pub mod totp;
mod totp_code;
