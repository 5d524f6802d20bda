//! The token key ring, replicated in cluster state so every node validates every token.
//! Like Keystone's fernet repository: one primary key issues, secondary keys still validate,
//! a staged key validates and becomes primary at the next rotation (so every node knows a
//! key before any node issues with it).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use zeroize::Zeroize;

use crate::{aead, random_bytes, KEY_LEN};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyState {
    Staged,
    Primary,
    Secondary,
}

#[derive(Clone, Serialize, Deserialize)]
pub struct TokenKey {
    pub id: u32,
    pub state: KeyState,
    pub secret: [u8; KEY_LEN],
    pub created_at: i64,
}

impl Drop for TokenKey {
    fn drop(&mut self) {
        self.secret.zeroize();
    }
}

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenKey").field("id", &self.id).field("state", &self.state).finish_non_exhaustive()
    }
}

const TOKEN_AD: &[u8] = b"idnode-token-v1";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TokenKeyRing {
    pub keys: Vec<TokenKey>,
}

impl TokenKeyRing {
    /// A fresh ring: one primary and one staged key. Secrets are drawn by the caller's node
    /// and travel inside a command, so apply stays deterministic.
    pub fn generate(now: i64) -> Self {
        TokenKeyRing {
            keys: vec![
                TokenKey { id: 1, state: KeyState::Primary, secret: random_bytes(), created_at: now },
                TokenKey { id: 2, state: KeyState::Staged, secret: random_bytes(), created_at: now },
            ],
        }
    }

    /// Rotation: staged becomes primary, primary becomes secondary, `new_staged` is staged;
    /// only the newest `max_secondary` secondaries are kept.
    pub fn rotate(&mut self, new_staged: [u8; KEY_LEN], now: i64, max_secondary: usize) {
        let next_id = self.keys.iter().map(|k| k.id).max().unwrap_or(0) + 1;
        for k in &mut self.keys {
            k.state = match k.state {
                KeyState::Primary => KeyState::Secondary,
                KeyState::Staged => KeyState::Primary,
                KeyState::Secondary => KeyState::Secondary,
            };
        }
        let mut secondaries: Vec<u32> =
            self.keys.iter().filter(|k| k.state == KeyState::Secondary).map(|k| k.id).collect();
        secondaries.sort_unstable_by(|a, b| b.cmp(a));
        let keep: Vec<u32> = secondaries.into_iter().take(max_secondary).collect();
        self.keys.retain(|k| k.state != KeyState::Secondary || keep.contains(&k.id));
        self.keys.push(TokenKey { id: next_id, state: KeyState::Staged, secret: new_staged, created_at: now });
    }

    pub fn primary(&self) -> Option<&TokenKey> {
        self.keys.iter().find(|k| k.state == KeyState::Primary)
    }

    /// Seals a token payload: base64url(key id || nonce || ciphertext).
    pub fn seal(&self, payload: &[u8]) -> Option<String> {
        let key = self.primary()?;
        let mut out = key.id.to_be_bytes().to_vec();
        out.extend_from_slice(&aead::seal(&key.secret, TOKEN_AD, payload));
        Some(URL_SAFE_NO_PAD.encode(out))
    }

    /// Opens a token sealed by any key in the ring; None for anything else.
    pub fn open(&self, token: &str) -> Option<Vec<u8>> {
        if token.len() > 4096 {
            return None;
        }
        let raw = URL_SAFE_NO_PAD.decode(token).ok()?;
        let id = u32::from_be_bytes(raw.get(..4)?.try_into().ok()?);
        let key = self.keys.iter().find(|k| k.id == id)?;
        aead::open(&key.secret, TOKEN_AD, &raw[4..]).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_keeps_old_tokens_valid_until_dropped() {
        let mut ring = TokenKeyRing::generate(0);
        let t1 = ring.seal(b"payload-1").unwrap();
        ring.rotate(random_bytes(), 1, 1);
        assert_eq!(ring.open(&t1).unwrap(), b"payload-1", "old primary is now secondary");
        let t2 = ring.seal(b"payload-2").unwrap();
        ring.rotate(random_bytes(), 2, 1);
        ring.rotate(random_bytes(), 3, 1);
        assert!(ring.open(&t1).is_none(), "dropped secondary no longer validates");
        assert!(ring.open("garbage").is_none());
        assert!(ring.open(&t2[..t2.len() - 2]).is_none());
        assert_eq!(ring.keys.iter().filter(|k| k.state == KeyState::Primary).count(), 1);
        assert_eq!(ring.keys.iter().filter(|k| k.state == KeyState::Staged).count(), 1);
    }
}
