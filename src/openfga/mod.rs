//! The relationship-store assignment driver: with `[assignment] driver = openfga` every grant,
//! revoke, check and listing of role assignments goes to an OpenFGA store (`docs/assignment.md`).
//! It sits beside the core context and imports only the state floor and the toolkit, so the
//! shared read layers and the assignment feature reach it through `Core`.

pub mod client;
pub mod driver;
pub mod forget;
pub mod listing;
pub mod mapping;
pub mod settings;
pub mod tuples;
pub mod wire;

pub use driver::{DriverError, OpenFga};

#[cfg(test)]
mod tests;
