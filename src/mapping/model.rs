//! The ruleset model: it lives in the state floor (`state::ruleset`), which stores and applies
//! it; the feature names it here.

pub use crate::state::ruleset::*;
