//! Read access shared by services (a consistent `ReadView`) and by apply (`Tx`: the engine
//! plus the writes the current command has made so far).
//!
//! Column families and key layouts stay in the state floor: features read through the
//! `Reader` methods (reader.rs) and the typed readers of the sibling files, one extension trait per
//! part of the model (implemented for every `Reader`), so a view or a `Tx` reads alike.
//!
//! This file only declares and re-exports: the files here import `Reader` from reader.rs.

mod api_keys;
mod assignment;
mod catalog;
mod credential;
mod identity;
mod limits;
mod mapping;
mod oauth2;
mod passkeys;
mod providers;
pub mod reader;
mod resource;
mod restrictions;
mod scim;
mod shadow;
mod token;
pub mod tx;

pub use api_keys::ApiKeyReads;
pub use assignment::AssignmentReads;
pub use catalog::CatalogReads;
pub use credential::CredentialReads;
pub use identity::IdentityReads;
pub use limits::LimitReads;
pub use mapping::MappingReads;
pub use oauth2::OAuth2Reads;
pub use passkeys::PasskeyReads;
pub use providers::ProviderReads;
pub use reader::Reader;
pub use resource::ResourceReads;
pub use restrictions::RestrictionReads;
pub use scim::ScimReads;
pub use shadow::ShadowReads;
pub use token::TokenReads;
