//! Domains and projects (Keystone's resource subsystem).

pub mod domain_config;
pub mod domains;
pub mod projects;
pub(crate) mod render;
pub mod schemas;
pub mod tags;
#[cfg(test)]
mod tests;

pub use render::{domain_json, project_json};
