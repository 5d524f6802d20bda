//! Digests of logical state, for consistency checks between replicas (like etcd's hash
//! check): SHA-256 over the decrypted pairs of chosen column families in key order. Values
//! are opened first, so the digest does not depend on a node's data keys, only on what the
//! state holds.

use sha2::{Digest, Sha256};

use crate::{ReadView, Result};

/// A state digest and the number of pairs it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDigest {
    pub sha256: [u8; 32],
    pub records: u64,
    /// Each family's own digest, in the order digested: when the whole digest differs from
    /// the cluster's, these tell which families differ (and are quarantined).
    pub families: Vec<FamilyDigest>,
}

impl StateDigest {
    pub fn hex(&self) -> String {
        hex(&self.sha256)
    }
}

/// The digest of one column family alone and the number of pairs it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyDigest {
    pub cf: String,
    pub sha256: [u8; 32],
    pub records: u64,
}

impl FamilyDigest {
    pub fn hex(&self) -> String {
        hex(&self.sha256)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn put_len_prefixed(h: &mut Sha256, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_be_bytes());
    h.update(bytes);
}

/// Digest of `cfs` (in the order given) as seen by `view`, with each family's own digest
/// from the same walk (a family's hasher sees its name, its pairs and its count, like the
/// whole digest's; the whole digest is unchanged by them).
pub fn digest_view(view: &ReadView<'_>, cfs: &[&str]) -> Result<StateDigest> {
    let mut h = Sha256::new();
    let mut records = 0u64;
    let mut families = Vec::with_capacity(cfs.len());
    h.update(b"idnode-state-digest-v1");
    for cf in cfs {
        let mut f = Sha256::new();
        f.update(b"idnode-family-digest-v1");
        put_len_prefixed(&mut h, cf.as_bytes());
        put_len_prefixed(&mut f, cf.as_bytes());
        let mut in_cf = 0u64;
        view.for_each(cf, |k, v| {
            for hasher in [&mut h, &mut f] {
                put_len_prefixed(hasher, k);
                put_len_prefixed(hasher, v);
            }
            in_cf += 1;
            Ok(())
        })?;
        // The count closes each family, so pairs cannot shift from one family to the next.
        h.update(in_cf.to_be_bytes());
        f.update(in_cf.to_be_bytes());
        records += in_cf;
        families.push(FamilyDigest { cf: cf.to_string(), sha256: f.finalize().into(), records: in_cf });
    }
    Ok(StateDigest { sha256: h.finalize().into(), records, families })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use idnode_keys::DataKeys;

    use super::*;
    use crate::Engine;

    const CFS: &[&str] = &["a", "b", "c"];

    /// The whole digest as `digest_view` computed it before families had their own: the
    /// digests members exchange must not change with the upgrade.
    fn whole_digest_v1(e: &Engine, cfs: &[&str]) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"idnode-state-digest-v1");
        for cf in cfs {
            h.update((cf.len() as u64).to_be_bytes());
            h.update(cf.as_bytes());
            let mut n = 0u64;
            for (k, v) in e.read().scan_prefix(cf, b"", usize::MAX).unwrap() {
                h.update((k.len() as u64).to_be_bytes());
                h.update(&k);
                h.update((v.len() as u64).to_be_bytes());
                h.update(&v);
                n += 1;
            }
            h.update(n.to_be_bytes());
        }
        h.finalize().into()
    }

    fn filled(dir: &std::path::Path, b_value: &[u8]) -> Engine {
        let e = Engine::open(dir, CFS, Arc::new(DataKeys::ephemeral())).unwrap();
        let mut b = e.batch();
        b.put("a", b"x".to_vec(), b"1");
        b.put("a", b"y".to_vec(), b"2");
        b.put("b", b"k".to_vec(), b_value);
        // "c" stays empty: an empty family has a digest too.
        e.write(b, false).unwrap();
        e
    }

    #[test]
    fn each_family_has_its_own_digest_and_the_whole_one_is_unchanged() {
        let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (e1, e2) = (filled(d1.path(), b"same"), filled(d2.path(), b"other"));
        let (s1, s2) = (digest_view(&e1.snapshot(), CFS).unwrap(), digest_view(&e2.snapshot(), CFS).unwrap());
        assert_eq!(s1.sha256, whole_digest_v1(&e1, CFS));
        assert_eq!(s2.sha256, whole_digest_v1(&e2, CFS));
        assert_ne!(s1.sha256, s2.sha256);
        assert_eq!((s1.records, s2.records), (3, 3));

        let names: Vec<&str> = s1.families.iter().map(|f| f.cf.as_str()).collect();
        assert_eq!(names, CFS);
        assert_eq!(s1.families.iter().map(|f| f.records).collect::<Vec<_>>(), [2, 1, 0]);
        let differing: Vec<&str> =
            s1.families.iter().zip(&s2.families).filter(|(x, y)| x != y).map(|(x, _)| x.cf.as_str()).collect();
        assert_eq!(differing, ["b"], "exactly the family that differs");
        assert_eq!(s1.families[0].hex().len(), 64);

        // A family's digest depends on its name and its content only, not on what else is digested.
        let alone = digest_view(&e1.snapshot(), &["b"]).unwrap();
        assert_eq!(alone.families, [s1.families[1].clone()]);
        assert_ne!(alone.families[0].sha256, alone.sha256, "its own domain, not the whole digest's");
        // Same pairs under another family's name: another digest.
        let mut b = e1.batch();
        b.put("c", b"k".to_vec(), b"same");
        e1.write(b, false).unwrap();
        let s = digest_view(&e1.snapshot(), CFS).unwrap();
        assert_ne!(s.families[2].sha256, s.families[1].sha256);
        assert_eq!(s.sha256, whole_digest_v1(&e1, CFS));
    }
}
