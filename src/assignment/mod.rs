//! Roles, implication rules, grants and role assignments (Keystone's assignment
//! subsystem), and the effective roles tokens carry.

pub mod effective;
pub mod grants;
pub mod hierarchy;
pub mod implied;
pub mod inherited;
pub mod listing;
pub mod role_assignments;
pub mod roles;
pub mod schemas;

#[cfg(test)]
mod inherit_tests;
#[cfg(test)]
mod tests;
