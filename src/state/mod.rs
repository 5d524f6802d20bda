//! The persisted model: one place holds the whole schema (column families, key layouts,
//! records), the replicated `Command`s, the deterministic `apply`, and read helpers shared by
//! services and apply.
//!
//! This file only declares modules and re-exports for code outside the state: files inside
//! import from the file that defines what they use, so no cycle runs through here.

pub mod api_keys;
pub mod apply;
pub mod cf;
pub mod command;
pub mod cutoff;
pub mod derived_ids;
pub mod import;
pub mod index_key;
pub mod keys;
pub mod limits;
pub mod mapping;
pub mod model;
pub mod oauth2;
pub mod passkeys;
pub mod providers;
pub mod read;
pub mod reply;
pub mod restrictions;
pub mod ruleset;
pub mod scim;
pub mod shadow;

pub use command::{Applied, ApplyError, Command};
pub use cutoff::cut_off;
pub use read::Reader;
pub use reply::Reply;
