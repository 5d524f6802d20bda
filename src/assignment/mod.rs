//! Roles, implication rules, grants and role assignments (Keystone's assignment
//! subsystem). The effective roles tokens carry are a shared read layer (`reads`).

pub mod grants;
pub mod implied;
pub mod inherited;
pub mod role_assignments;
pub mod roles;
pub mod schemas;
mod state;

pub use state::Assignments;

#[cfg(test)]
mod inherit_tests;
#[cfg(test)]
mod tests;
