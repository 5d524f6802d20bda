//! Domains and projects (Keystone's resource subsystem).

pub mod domains;
pub mod projects;
mod render;
pub mod schemas;
pub mod tags;
#[cfg(test)]
mod tests;

pub use render::{domain_json, project_json};
