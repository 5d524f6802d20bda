//! Users (Keystone's identity subsystem) and the cluster bootstrap.

pub mod bootstrap;
pub mod users;
