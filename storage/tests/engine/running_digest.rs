//! The running digests against their definition: after any mix of writes, imports and
//! restarts, what the engine kept equals a walk of what it holds (`sum_digest_view`).

use std::sync::Arc;

use idnode_keys::{DataKeys, Kek};
use idnode_storage::{sum_digest_view, Engine, StateDigest};

const CFS: &[&str] = &["a", "b", "c"];
/// Tracked and digested: "c" is written but not tracked, so its writes must change nothing.
const TRACKED: &[&str] = &["a", "b"];

fn open(dir: &std::path::Path, kek: &Kek) -> Arc<Engine> {
    let keys = DataKeys::open_or_create(kek, &dir.join("keyring")).unwrap();
    Arc::new(Engine::open(&dir.join("db"), CFS, Arc::new(keys)).unwrap())
}

fn running(e: &Arc<Engine>) -> StateDigest {
    e.running_digest(TRACKED).unwrap().resolve().unwrap()
}

fn walked(e: &Engine) -> StateDigest {
    sum_digest_view(&e.snapshot(), TRACKED).unwrap()
}

/// xorshift: the same writes on every run, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

/// A batch of 1-8 random puts (new keys and overwrites) and deletes (present and absent), one
/// key sometimes written twice, sometimes with a savepoint rolled back.
fn random_batch(e: &Engine, rng: &mut Rng) {
    let mut b = e.batch();
    for _ in 0..=rng.next(8) {
        let cf = CFS[rng.next(3) as usize];
        let key = format!("k{}", rng.next(60)).into_bytes();
        match rng.next(10) {
            0..=5 => b.put(cf, key, format!("v{}", rng.next(1000)).as_bytes()),
            6 | 7 => b.delete(cf, key),
            8 => {
                b.put(cf, key.clone(), b"first");
                b.put(cf, key, b"second");
            }
            _ => {
                b.savepoint();
                b.put(cf, key.clone(), b"rolled back");
                b.delete(cf, b"k1".to_vec());
                b.rollback();
            }
        }
    }
    e.write(b, false).unwrap();
}

#[test]
fn running_digests_equal_a_walk_after_any_writes() {
    let dir = tempfile::tempdir().unwrap();
    let kek = Kek::generate();
    let e = open(dir.path(), &kek);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // What the families held before tracking began reaches the digest through the base walk.
    for _ in 0..50 {
        random_batch(&e, &mut rng);
    }
    e.track_digests(TRACKED);
    for round in 0..400 {
        random_batch(&e, &mut rng);
        if round % 40 == 0 {
            assert_eq!(running(&e), walked(&e), "after round {round}");
        }
    }
    let before = running(&e);
    assert_eq!(before, walked(&e));
    assert!(before.records > 0);

    // Untracked families change nothing; a tracked one changes only its own digest.
    let mut b = e.batch();
    b.put("c", b"elsewhere".to_vec(), b"x");
    e.write(b, false).unwrap();
    assert_eq!(running(&e), before);
    let mut b = e.batch();
    b.put("b", b"new".to_vec(), b"x");
    e.write(b, false).unwrap();
    let after = running(&e);
    assert_ne!(after.sha256, before.sha256);
    assert_eq!(after.families[0], before.families[0]);
    assert_ne!(after.families[1], before.families[1]);
    assert_eq!(after.records, before.records + 1);

    // A restarted process trusts nothing it did not count: its base walk finds the same sums.
    drop(e);
    let e = open(dir.path(), &kek);
    e.track_digests(TRACKED);
    assert_eq!(running(&e), after);

    // A digest taken before the base walk ended resolves to the state at its own point.
    let fresh = tempfile::tempdir().unwrap();
    let f = open(fresh.path(), &kek);
    for _ in 0..200 {
        random_batch(&f, &mut rng);
    }
    let expected = walked(&f);
    f.track_digests(TRACKED);
    let pending = f.running_digest(TRACKED).unwrap();
    for _ in 0..50 {
        random_batch(&f, &mut rng);
    }
    assert_eq!(pending.resolve().unwrap(), expected);
    assert_eq!(running(&f), walked(&f));
}

#[test]
fn an_import_sets_the_sums_and_members_with_different_keys_agree() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (e1, e2) = (open(d1.path(), &Kek::generate()), open(d2.path(), &Kek::generate()));
    e1.track_digests(TRACKED);
    e2.track_digests(TRACKED);
    let mut rng = Rng(42);
    for _ in 0..150 {
        random_batch(&e1, &mut rng);
        random_batch(&e2, &mut rng);
    }
    assert_ne!(running(&e1), running(&e2));

    let mut stream = Vec::new();
    e1.export(TRACKED, &mut stream).unwrap();
    let staged = e2.stage_import(TRACKED, &mut stream.as_slice(), &d2.path().join("staging")).unwrap();
    let mut extra = e2.batch();
    extra.put("a", b"marker".to_vec(), b"m");
    e2.commit_import(staged, extra).unwrap();
    let mut b = e1.batch();
    b.put("a", b"marker".to_vec(), b"m");
    e1.write(b, false).unwrap();
    assert_eq!(running(&e2), walked(&e2));
    assert_eq!(running(&e1), running(&e2), "same content under different data keys");
    for _ in 0..100 {
        random_batch(&e2, &mut rng);
    }
    assert_eq!(running(&e2), walked(&e2), "writes after an import");
}

#[test]
fn a_quarantined_family_has_no_running_digest() {
    let dir = tempfile::tempdir().unwrap();
    let e = open(dir.path(), &Kek::generate());
    e.track_digests(TRACKED);
    let mut b = e.batch();
    b.put("a", b"k".to_vec(), b"v");
    e.write(b, false).unwrap();
    assert!(e.flip_stored_byte("a", b"k").unwrap());
    assert!(e.read().get("a", b"k").is_err(), "the damaged value quarantines its family");
    assert!(e.running_digest(TRACKED).is_err());
    assert!(e.running_digest(&["b"]).is_ok(), "the other families still have one");
}

#[test]
fn what_a_builder_read_is_trusted_only_while_no_other_write_landed() {
    let dir = tempfile::tempdir().unwrap();
    let e = open(dir.path(), &Kek::generate());
    e.track_digests(TRACKED);
    let mut b = e.batch();
    b.put("a", b"k".to_vec(), b"one");
    e.write(b, false).unwrap();

    // The builder read the current value: the write uses it.
    let mut b = e.batch();
    let now = e.read().get("a", b"k").unwrap();
    b.note_read("a", b"k", now.as_deref());
    b.note_read("a", b"absent", None);
    b.put("a", b"k".to_vec(), b"two");
    b.put("a", b"absent".to_vec(), b"new");
    e.write(b, false).unwrap();
    assert_eq!(running(&e), walked(&e));

    // Another write lands between the batch's making and its write: what the builder read is
    // stale and must not be taken out of the sums.
    let mut late = e.batch();
    late.note_read("a", b"k", Some(b"two"));
    let mut b = e.batch();
    b.put("a", b"k".to_vec(), b"three");
    e.write(b, false).unwrap();
    late.put("a", b"k".to_vec(), b"four");
    e.write(late, false).unwrap();
    assert_eq!(running(&e), walked(&e));
}
