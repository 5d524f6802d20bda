//! `/v3/auth/*`: token issue (password, TOTP, token and application credential methods, with
//! multi-factor rules and auth receipts), validation, revocation, the caller's scoping
//! targets, and Keystone's list of revocation events (`/v3/OS-REVOKE/events`).

pub mod methods;
mod mfa;
pub mod projects;
pub mod proven;
pub mod receipt;
mod restricted;
pub mod revoke_events;
#[cfg(test)]
mod revoke_events_tests;
pub mod schemas;
pub mod scope;
pub mod tokens;
pub mod totp;
mod totp_code;
