//! Shared read layers: what several features read and none of them owns — effective roles,
//! trusts, application credentials, OAuth1 access tokens, the roles a mapped principal holds. They sit below the
//! features and import only the state floor, so token validation and the login paths read
//! them without importing a feature.

pub mod appcred;
pub mod effective;
pub mod groups;
pub mod hierarchy;
pub mod listing;
pub mod mapped;
pub mod oauth1;
pub mod trust;
