//! The storage engine: RocksDB with column families where every stored value is sealed
//! (XChaCha20-Poly1305 under the node's data key, bound to its column family and key), typed
//! values (postcard), hashed index terms, atomic batches, consistent read views and snapshot
//! streams. It knows nothing about identity: callers name column families and keys.

mod batch;
mod codec;
mod digest;
mod engine;
mod error;
mod ingest;
mod reseal;
mod running;
mod stream;
mod view;

pub use batch::Batch;
pub use codec::{decode, encode};
pub use digest::{digest_view, FamilyDigest, StateDigest};
pub use engine::{Engine, MEMORY_BUDGET_BYTES, MIN_MEMORY_BUDGET_BYTES};
pub use error::StorageError;
pub use idnode_keys as keys;
pub use ingest::Staged;
pub use reseal::ResealStep;
pub use running::{sum_digest_view, PendingDigest};
pub use view::ReadView;

pub type Result<T> = std::result::Result<T, StorageError>;
/// A key/value pair as read back (value already opened).
pub type Pair = (Vec<u8>, Vec<u8>);
