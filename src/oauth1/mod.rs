//! OS-OAUTH1: consumers (third parties that act for users with delegated roles).

pub mod consumers;
pub mod schemas;
