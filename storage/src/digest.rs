//! Digests of logical state, for consistency checks between replicas (like etcd's hash
//! check): SHA-256 over the decrypted pairs of chosen column families in key order. Values
//! are opened first, so the digest does not depend on a node's data keys, only on what the
//! state holds.

use sha2::{Digest, Sha256};

use crate::{ReadView, Result};

/// A state digest and the number of pairs it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateDigest {
    pub sha256: [u8; 32],
    pub records: u64,
}

impl StateDigest {
    pub fn hex(&self) -> String {
        self.sha256.iter().map(|b| format!("{b:02x}")).collect()
    }
}

fn put_len_prefixed(h: &mut Sha256, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_be_bytes());
    h.update(bytes);
}

/// Digest of `cfs` (in the order given) as seen by `view`.
pub fn digest_view(view: &ReadView<'_>, cfs: &[&str]) -> Result<StateDigest> {
    let mut h = Sha256::new();
    let mut records = 0u64;
    h.update(b"idnode-state-digest-v1");
    for cf in cfs {
        put_len_prefixed(&mut h, cf.as_bytes());
        let mut in_cf = 0u64;
        view.for_each(cf, |k, v| {
            put_len_prefixed(&mut h, k);
            put_len_prefixed(&mut h, v);
            in_cf += 1;
            Ok(())
        })?;
        // The count closes each family, so pairs cannot shift from one family to the next.
        h.update(in_cf.to_be_bytes());
        records += in_cf;
    }
    Ok(StateDigest { sha256: h.finalize().into(), records })
}
