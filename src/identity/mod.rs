//! Users, groups and passwords (Keystone's identity subsystem) and the cluster bootstrap.

pub mod bootstrap;
pub mod compliance;
pub mod groups;
pub mod hash_pool;
pub mod lockout;
mod options;
pub mod password;
mod rehash;
pub mod schemas;
pub mod users;

#[cfg(test)]
mod compliance_tests;
#[cfg(test)]
mod rehash_tests;
#[cfg(test)]
mod tests;
