//! Moving another identity service into idnode, ids unchanged (`idnode import keystone`).
//!
//! The command reads the source where it runs (`keystone`: Keystone's database), checks it, and
//! sends it through a node's ops listener (`routes`) in batches, each one replicated
//! `Command::Import` that never overwrites (`state::import`), so the cluster can be live and a
//! second run changes nothing. See docs/decisions.md ("Moving from Keystone").

pub mod cli;
mod keystone;
mod report;
pub mod routes;
