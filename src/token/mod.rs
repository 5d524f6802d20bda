//! Keystone tokens: stateless, AEAD-sealed compact payloads under the replicated key ring.
//! Validation = open + revocation check + entity checks + effective roles; the result is
//! cached per node until the state changes (an applied entry or an installed snapshot).

mod cache;
mod caller;
mod confined;
pub mod footprint;
pub mod keystone;
mod memo;
mod payload;
pub mod render;
mod restriction;
pub mod rulesets;
pub mod sealed;
#[cfg(test)]
mod tests;
mod validate;

pub use cache::AppliedCache;
pub use caller::{Call, Caller};
pub use memo::Memo;
pub use payload::{Delegation, MappedGrant, Method, TokenPayload, TokenScope, PAYLOAD_VERSION};
pub use render::render_token;
pub use rulesets::MappingError;
pub use validate::{Tokens, ValidToken};
