//! Key material and cryptography for idnode: the node's key-encryption key (KEK), the
//! data-encryption keys (DEK) it wraps, AEAD sealing, keyed index hashing, password hashing
//! and the replicated token key ring. Nothing here knows about storage or HTTP.

mod aead;
mod derive;
mod error;
mod index;
mod jwt_backend;
mod kek;
pub mod keystone_fernet;
pub mod keystone_hash;
mod oidc;
mod password;
mod random;
mod sealer;
mod stream;
mod token_ring;

pub use aead::{open, seal, KEY_LEN, NONCE_LEN};
pub use derive::derive_key;
pub use error::KeyError;
pub use index::{IndexHasher, IndexKey};
pub use jwt_backend::install_jwt_backend;
pub use kek::{Kek, KekSource};
pub use oidc::{generate_es256, Es256Key, Es256Signer};
pub use password::{PasswordHasher, PasswordParams};
pub use random::{constant_time_eq, random_bytes, random_token};
pub use sealer::{DataKeys, SealStats, KEY_RING_VERSION};
pub use stream::{open_stream, seal_stream, OpenReader, SealWriter, FRAME_LEN};
pub use token_ring::{KeyState, TokenKey, TokenKeyRing};
