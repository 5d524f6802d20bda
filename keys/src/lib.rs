//! Key material and cryptography for idnode: the node's key-encryption key (KEK), the
//! data-encryption keys (DEK) it wraps, AEAD sealing, keyed index hashing, password hashing
//! and the replicated token key ring. Nothing here knows about storage or HTTP.

mod aead;
mod error;
mod index;
mod kek;
mod password;
mod random;
mod sealer;
mod token_ring;

pub use aead::{open, seal, KEY_LEN, NONCE_LEN};
pub use error::KeyError;
pub use index::IndexHasher;
pub use kek::{Kek, KekSource};
pub use password::{PasswordHasher, PasswordParams};
pub use random::{constant_time_eq, random_bytes, random_token};
pub use sealer::{DataKeys, SealStats};
pub use token_ring::{KeyState, TokenKey, TokenKeyRing};
