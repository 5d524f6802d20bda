//! OS-OAUTH1: consumers (third parties that act for users with delegated roles), and the
//! delegation flow: request token, authorization by a user, access token, and the `oauth1`
//! auth method that turns an access token into a token.

pub mod access_tokens;
pub mod auth;
pub mod consumers;
pub mod exchange;
pub mod request_tokens;
pub mod schemas;
pub mod signature;
pub mod signed;
pub mod tokens;

#[cfg(test)]
pub(crate) mod tests;
