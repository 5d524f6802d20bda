//! Domains and projects (Keystone's resource subsystem).

pub mod domains;
pub mod projects;
mod render;
pub mod schemas;

pub use render::{domain_json, project_json};
