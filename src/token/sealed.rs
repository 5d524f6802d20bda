//! State a browser or client carries between two requests instead of a server-side session
//! (an OAuth2 page's pending request, a federation login's pending redirect): sealed under a
//! key derived from a key of the replicated token key ring, so every node opens what any node
//! sealed and the holder can neither read nor change it. The primary key seals; any ring key
//! opens, by the key id in front: base64url(key id ‖ nonce ‖ ciphertext).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use idnode_keys::{derive_key, TokenKeyRing};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// What one kind of sealed state is bound to: its key-derivation label and associated data,
/// so a state of one kind never opens as another.
pub struct Purpose {
    pub label: &'static str,
    pub ad: &'static [u8],
    /// Sealed values longer than this are refused unread.
    pub max_len: usize,
}

pub fn seal<T: Serialize>(ring: &TokenKeyRing, p: &Purpose, value: &T) -> Option<String> {
    let key = ring.primary()?;
    let bytes = postcard::to_allocvec(value).ok()?;
    let mut out = key.id.to_be_bytes().to_vec();
    out.extend_from_slice(&idnode_keys::seal(&derive_key(&key.secret, p.label), p.ad, &bytes));
    Some(URL_SAFE_NO_PAD.encode(out))
}

/// `None`: not sealed by a key of the ring for this purpose, altered, or not a `T`.
pub fn open<T: DeserializeOwned>(ring: &TokenKeyRing, p: &Purpose, sealed: &str) -> Option<T> {
    if sealed.len() > p.max_len {
        return None;
    }
    let raw = URL_SAFE_NO_PAD.decode(sealed.trim()).ok()?;
    let id = u32::from_be_bytes(raw.get(..4)?.try_into().ok()?);
    let key = ring.keys.iter().find(|k| k.id == id)?;
    let bytes = idnode_keys::open(&derive_key(&key.secret, p.label), p.ad, &raw[4..]).ok()?;
    postcard::from_bytes(&bytes).ok()
}
