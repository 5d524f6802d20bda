//! Data-encryption keys (DEKs) by epoch, wrapped by the KEK in a key-ring file. Every value
//! idnode writes to disk is sealed with the current epoch's DEK; older epochs stay readable
//! until background re-sealing has moved every value forward.
//!
//! Key-ring format 2 holds only this node's DEKs. Format 1 also held a per-node index key,
//! which made replicas' name indexes differ after a snapshot install; its data directories are
//! refused (see `KeyError::LegacyDataFormat`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::kek::write_private;
use crate::{aead, random_bytes, Kek, KeyError, KEY_LEN};

const EPOCH_LEN: usize = 4;
/// The key-ring (and data-directory) format this build writes and reads.
pub const KEY_RING_VERSION: u8 = 2;

/// On-disk form: each key sealed by the KEK, associated data naming its role and epoch.
#[derive(Serialize, Deserialize)]
struct KeyRingFile {
    version: u8,
    current: u32,
    deks: Vec<(u32, Vec<u8>)>,
}

/// Counters exported as metrics.
#[derive(Default)]
pub struct SealStats {
    pub sealed: AtomicU64,
    pub opened: AtomicU64,
    pub failures: AtomicU64,
    /// Values sealed under the current epoch since the process started: every seal uses the
    /// current epoch, so one counter suffices until a rotation moves it to `earlier`.
    current_sealed: AtomicU64,
    /// Values sealed under the epochs rotated away from while the process ran.
    earlier: Mutex<BTreeMap<u32, u64>>,
}

/// The current epoch and every epoch's key.
type Epochs = (u32, BTreeMap<u32, Zeroizing<[u8; KEY_LEN]>>);

pub struct DataKeys {
    deks: RwLock<Epochs>,
    pub stats: SealStats,
}

fn dek_ad(epoch: u32) -> Vec<u8> {
    format!("idnode-dek:{epoch}").into_bytes()
}
impl DataKeys {
    /// Opens the key ring at `path`, creating it (epoch 1) when absent.
    pub fn open_or_create(kek: &Kek, path: &Path) -> Result<Self, KeyError> {
        let err = |reason: String| KeyError::KeyFile { path: path.display().to_string(), reason };
        match std::fs::read(path) {
            Ok(bytes) => {
                let (version, _) = postcard::take_from_bytes::<u8>(&bytes).map_err(|e| err(e.to_string()))?;
                if version != KEY_RING_VERSION {
                    return Err(KeyError::LegacyDataFormat { path: path.display().to_string(), version });
                }
                let file: KeyRingFile = postcard::from_bytes(&bytes).map_err(|e| err(e.to_string()))?;
                let mut deks = BTreeMap::new();
                for (epoch, sealed) in file.deks {
                    let raw = aead::open(&kek.0, &dek_ad(epoch), &sealed)
                        .map_err(|_| err("cannot unwrap data key: wrong key-encryption key?".into()))?;
                    deks.insert(epoch, to_key(&raw)?);
                }
                if !deks.contains_key(&file.current) {
                    return Err(KeyError::UnknownEpoch(file.current));
                }
                Ok(Self::from_parts(file.current, deks))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut deks = BTreeMap::new();
                deks.insert(1, Zeroizing::new(random_bytes::<KEY_LEN>()));
                let keys = Self::from_parts(1, deks);
                keys.save(kek, path)?;
                Ok(keys)
            }
            Err(e) => Err(err(e.to_string())),
        }
    }

    /// In-memory keys for tests and tools.
    pub fn ephemeral() -> Self {
        let mut deks = BTreeMap::new();
        deks.insert(1, Zeroizing::new(random_bytes::<KEY_LEN>()));
        Self::from_parts(1, deks)
    }

    fn from_parts(current: u32, deks: BTreeMap<u32, Zeroizing<[u8; KEY_LEN]>>) -> Self {
        DataKeys { deks: RwLock::new((current, deks)), stats: SealStats::default() }
    }

    /// Writes the ring wrapped by `kek` (also how a KEK rotation re-wraps it).
    pub fn save(&self, kek: &Kek, path: &Path) -> Result<(), KeyError> {
        let guard = self.deks.read().map_err(|_| KeyError::Malformed)?;
        let file = KeyRingFile {
            version: KEY_RING_VERSION,
            current: guard.0,
            deks: guard.1.iter().map(|(e, k)| (*e, aead::seal(&kek.0, &dek_ad(*e), &k[..]))).collect(),
        };
        let bytes = postcard::to_allocvec(&file).map_err(|_| KeyError::Malformed)?;
        write_private(path, &bytes)
            .map_err(|e| KeyError::KeyFile { path: path.display().to_string(), reason: e.to_string() })
    }

    /// Adds a new epoch and makes it current; values sealed before stay readable.
    pub fn rotate(&self, kek: &Kek, path: &Path) -> Result<u32, KeyError> {
        let epoch = {
            let mut guard = self.deks.write().map_err(|_| KeyError::Malformed)?;
            let next = guard.1.keys().next_back().copied().unwrap_or(0) + 1;
            guard.1.insert(next, Zeroizing::new(random_bytes()));
            // Under the write lock, so no seal counts against the wrong epoch.
            let done = self.stats.current_sealed.swap(0, Ordering::Relaxed);
            if let Ok(mut earlier) = self.stats.earlier.lock() {
                *earlier.entry(guard.0).or_default() += done;
            }
            guard.0 = next;
            next
        };
        self.save(kek, path)?;
        Ok(epoch)
    }

    /// Forgets every epoch but the current one, once re-sealing moved every value to it (a
    /// value still sealed under a forgotten epoch could never be opened again). Returns the
    /// epochs forgotten.
    pub fn retire_old(&self, kek: &Kek, path: &Path) -> Result<Vec<u32>, KeyError> {
        let retired = {
            let mut guard = self.deks.write().map_err(|_| KeyError::Malformed)?;
            let current = guard.0;
            let old: Vec<u32> = guard.1.keys().copied().filter(|e| *e != current).collect();
            for e in &old {
                guard.1.remove(e);
            }
            if let Ok(mut earlier) = self.stats.earlier.lock() {
                earlier.retain(|e, _| *e == current);
            }
            old
        };
        if !retired.is_empty() {
            self.save(kek, path)?;
        }
        Ok(retired)
    }

    pub fn current_epoch(&self) -> u32 {
        self.deks.read().map(|g| g.0).unwrap_or(0)
    }

    pub fn epochs(&self) -> Vec<u32> {
        self.deks.read().map(|g| g.1.keys().copied().collect()).unwrap_or_default()
    }

    /// Seals under the current epoch. Output: epoch (u32 BE) || nonce || ciphertext.
    pub fn seal(&self, ad: &[u8], plaintext: &[u8]) -> Vec<u8> {
        let guard = match self.deks.read() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let (epoch, deks) = (&guard.0, &guard.1);
        let mut out = Vec::with_capacity(EPOCH_LEN + aead::NONCE_LEN + plaintext.len() + 16);
        out.extend_from_slice(&epoch.to_be_bytes());
        if let Some(key) = deks.get(epoch) {
            out.extend_from_slice(&aead::seal(key, ad, plaintext));
        }
        self.stats.sealed.fetch_add(1, Ordering::Relaxed);
        self.stats.current_sealed.fetch_add(1, Ordering::Relaxed);
        out
    }

    /// Values sealed under each epoch still held, since the process started (the nonce budget
    /// an operator may want to watch per key; `docs/decisions.md`, "Key and version ceilings").
    pub fn sealed_by_epoch(&self) -> Vec<(u32, u64)> {
        let guard = match self.deks.read() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let earlier = self.stats.earlier.lock().map(|m| m.clone()).unwrap_or_default();
        let current = self.stats.current_sealed.load(Ordering::Relaxed);
        guard
            .1
            .keys()
            .map(|e| {
                let before = earlier.get(e).copied().unwrap_or(0);
                (*e, if *e == guard.0 { before + current } else { before })
            })
            .collect()
    }

    pub fn open(&self, ad: &[u8], sealed: &[u8]) -> Result<Vec<u8>, KeyError> {
        let res = self.open_inner(ad, sealed);
        match &res {
            Ok(_) => self.stats.opened.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.stats.failures.fetch_add(1, Ordering::Relaxed),
        };
        res
    }

    fn open_inner(&self, ad: &[u8], sealed: &[u8]) -> Result<Vec<u8>, KeyError> {
        if sealed.len() < EPOCH_LEN {
            return Err(KeyError::Malformed);
        }
        let (e, rest) = sealed.split_at(EPOCH_LEN);
        let epoch = u32::from_be_bytes([e[0], e[1], e[2], e[3]]);
        let guard = self.deks.read().map_err(|_| KeyError::Malformed)?;
        let key = guard.1.get(&epoch).ok_or(KeyError::UnknownEpoch(epoch))?;
        aead::open(key, ad, rest)
    }

    /// The epoch a sealed value was written under (for re-sealing progress).
    pub fn epoch_of(sealed: &[u8]) -> Option<u32> {
        sealed.get(..EPOCH_LEN).map(|e| u32::from_be_bytes([e[0], e[1], e[2], e[3]]))
    }
}

fn to_key(raw: &[u8]) -> Result<Zeroizing<[u8; KEY_LEN]>, KeyError> {
    let arr: [u8; KEY_LEN] = raw.try_into().map_err(|_| KeyError::Malformed)?;
    Ok(Zeroizing::new(arr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_persists_rotates_and_rejects_wrong_kek() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keyring");
        let kek = Kek::generate();
        let keys = DataKeys::open_or_create(&kek, &path).unwrap();
        let old = keys.seal(b"ad", b"secret value");
        assert_eq!(keys.rotate(&kek, &path).unwrap(), 2);
        let new = keys.seal(b"ad", b"other");
        assert_eq!(DataKeys::epoch_of(&old), Some(1));
        assert_eq!(DataKeys::epoch_of(&new), Some(2));

        assert_eq!(keys.sealed_by_epoch(), [(1, 1), (2, 1)], "one value under each epoch");
        let reopened = DataKeys::open_or_create(&kek, &path).unwrap();
        assert_eq!(reopened.current_epoch(), 2);
        assert_eq!(reopened.open(b"ad", &old).unwrap(), b"secret value");
        assert_eq!(reopened.open(b"ad", &new).unwrap(), b"other");
        assert!(DataKeys::open_or_create(&Kek::generate(), &path).is_err());
        let raw = std::fs::read(&path).unwrap();
        assert!(!raw.windows(12).any(|w| w == b"secret value"));

        // Re-wrapped under a new KEK, then the old epoch retired: new values still open,
        // the old KEK opens nothing, values of the retired epoch are gone for good.
        let new_kek = Kek::generate();
        reopened.save(&new_kek, &path).unwrap();
        assert!(DataKeys::open_or_create(&kek, &path).is_err());
        assert_eq!(reopened.retire_old(&new_kek, &path).unwrap(), vec![1]);
        assert_eq!(reopened.sealed_by_epoch(), [(2, 0)], "only epochs still held are counted");
        let last = DataKeys::open_or_create(&new_kek, &path).unwrap();
        assert_eq!((last.epochs(), last.open(b"ad", &new).unwrap()), (vec![2], b"other".to_vec()));
        assert!(matches!(last.open(b"ad", &old), Err(KeyError::UnknownEpoch(1))));
    }

    #[test]
    fn format_1_key_ring_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keyring");
        // Format 1: version, current epoch, DEKs, then a per-node index key.
        #[derive(Serialize)]
        struct V1 {
            version: u8,
            current: u32,
            deks: Vec<(u32, Vec<u8>)>,
            index_key: Vec<u8>,
        }
        let kek = Kek::generate();
        let v1 = V1 {
            version: 1,
            current: 1,
            deks: vec![(1, aead::seal(&kek.0, &dek_ad(1), &[1u8; 32]))],
            index_key: vec![],
        };
        std::fs::write(&path, postcard::to_allocvec(&v1).unwrap()).unwrap();
        match DataKeys::open_or_create(&kek, &path) {
            Err(KeyError::LegacyDataFormat { version: 1, .. }) => {}
            other => panic!("expected the legacy format error, got {:?}", other.map(|_| ())),
        }
    }
}
