use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use idnode_keys::DataKeys;
use idnode_storage::{digest_view, Batch, Engine};

use super::*;
use crate::schema::{KEY_LEGACY_SNAPSHOT, KEY_PURGED};
use crate::state_machine::{SmLinks, StateMachine};
use crate::StateApp;

const APP: &[&str] = &["app"];

struct App;

impl StateApp for App {
    fn column_families(&self) -> &'static [&'static str] {
        APP
    }

    fn apply(&self, _: &Engine, _: &mut Batch, _: u64, _: &[u8]) -> Result<Vec<u8>, String> {
        Ok(Vec::new())
    }
}

fn engine(dir: &Path, keys: &Arc<DataKeys>) -> Arc<Engine> {
    let mut cfs: Vec<&'static str> = crate::COLUMN_FAMILIES.to_vec();
    cfs.push("app");
    Arc::new(Engine::open(dir, &cfs, keys.clone()).unwrap())
}

fn log_id(term: u64, index: u64) -> LogId {
    LogId::new(openraft::CommittedLeaderId::new(term, 1), index)
}

fn state_machine(e: &Arc<Engine>, secret: &str) -> StateMachine {
    StateMachine::new(e.clone(), Arc::new(App), SmLinks::new(Some(secret))).unwrap()
}

fn fill(e: &Engine, prefix: &str, n: u32, applied: Option<LogId>) {
    let mut b = e.batch();
    for i in 0..n {
        b.put("app", format!("{prefix}{i:05}").into_bytes(), format!("value-{i}-{prefix}").as_bytes());
    }
    b.put_t(CF_META, KEY_APPLIED, &applied).unwrap();
    e.write(b, false).unwrap();
}

fn app_digest(e: &Engine) -> String {
    digest_view(&e.snapshot(), APP).unwrap().hex()
}

fn stored(e: &Engine, key: &[u8]) -> Option<SnapshotRecord> {
    e.read().get_t(CF_META, key).unwrap()
}

/// A leader's snapshot of 2000 pairs at index 100, and a target holding other, older pairs
/// with the snapshot's file in place (as if received).
fn source_and_target(root: &Path) -> (Arc<Engine>, SnapshotRecord, Arc<Engine>, Arc<DataKeys>) {
    let source = engine(&root.join("s"), &Arc::new(DataKeys::ephemeral()));
    fill(&source, "new-", 2000, Some(log_id(3, 100)));
    let sm = state_machine(&source, "secret");
    let record = build(&sm.shared(), ()).unwrap();
    let target_keys = Arc::new(DataKeys::ephemeral());
    let target = engine(&root.join("t"), &target_keys);
    fill(&target, "old-", 500, Some(log_id(2, 40)));
    let dir = snapshot_dir(&target);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(snapshot_dir(&source).join(&record.file), dir.join(&record.file)).unwrap();
    (source, record, target, target_keys)
}

#[test]
fn snapshot_files_open_only_with_the_cluster_secret_and_their_own_id() {
    let meta = |id: &str| SnapshotMeta {
        last_log_id: None,
        last_membership: Membership::default(),
        snapshot_id: id.to_string(),
    };
    let seal = |key: &SnapshotKey, m: &SnapshotMeta, data: &[u8]| {
        let mut w = key.sealer(m, Vec::new()).unwrap();
        w.write_all(data).unwrap();
        w.finish().unwrap()
    };
    let open = |key: &SnapshotKey, m: &SnapshotMeta, sealed: &[u8]| -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        key.opener(m, sealed).read_to_end(&mut out)?;
        Ok(out)
    };
    let key = SnapshotKey::from_secret(Some("s3cret"));
    let data = b"users/alice-distinctive-value".repeat(100);
    let sealed = seal(&key, &meta("1-10-x"), &data);
    assert!(!sealed.windows(16).any(|w| w == &data[..16]), "plaintext on disk");
    assert_eq!(open(&SnapshotKey::from_secret(Some("s3cret")), &meta("1-10-x"), &sealed).unwrap(), data);
    assert!(open(&SnapshotKey::from_secret(Some("other")), &meta("1-10-x"), &sealed).is_err());
    assert!(open(&key, &meta("1-11-y"), &sealed).is_err(), "bound to the snapshot id");
    assert!(open(&SnapshotKey::from_secret(None), &meta("1-10-x"), &sealed).is_err());
    assert_eq!(key.check(), SnapshotKey::from_secret(Some("s3cret")).check());
    assert_ne!(key.check(), SnapshotKey::from_secret(Some("other")).check());
}

#[test]
fn a_snapshot_is_a_sealed_file_and_the_metadata_only_names_it() {
    let root = tempfile::tempdir().unwrap();
    let (source, record, _, _) = source_and_target(root.path());
    let bytes = std::fs::read(snapshot_dir(&source).join(&record.file)).unwrap();
    assert_eq!(bytes.len() as u64, record.size);
    assert!(record.size > 2000 * 10, "{}", record.size);
    assert!(!bytes.windows(10).any(|w| w == b"value-1999"), "plaintext in the file");
    assert_eq!(record.meta.last_log_id, Some(log_id(3, 100)));
}

#[test]
fn an_install_replaces_the_state_and_a_damaged_file_writes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let (source, record, target, _) = source_and_target(root.path());
    let path = snapshot_dir(&target).join(&record.file);
    let good = std::fs::read(&path).unwrap();
    // (Startup removes a file no record names: the received file is put back after it.)
    let sm = state_machine(&target, "secret");
    let before = app_digest(&target);

    // One flipped byte in the middle of the file: refused, nothing written.
    let mut bad = good.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 1;
    std::fs::write(&path, &bad).unwrap();
    assert!(install_file(&sm.shared(), &record).is_err());
    assert_eq!(app_digest(&target), before);
    assert!(stored(&target, KEY_INSTALLING).is_none());
    // Cut short: refused too.
    std::fs::write(&path, &good[..good.len() - 100]).unwrap();
    assert!(install_file(&sm.shared(), &record).is_err());
    assert_eq!(app_digest(&target), before);

    std::fs::write(&path, &good).unwrap();
    assert_eq!(install_file(&sm.shared(), &record).unwrap(), 2000);
    assert_eq!(app_digest(&target), app_digest(&source));
    assert_eq!(target.read().get("app", b"old-00001").unwrap(), None);
    let applied: Option<LogId> = target.read().get_t(CF_META, KEY_APPLIED).unwrap().unwrap();
    assert_eq!(applied, Some(log_id(3, 100)));
    assert_eq!(stored(&target, KEY_SNAPSHOT).unwrap().file, record.file);
    assert!(stored(&target, KEY_INSTALLING).is_none());
}

#[test]
fn an_install_cut_short_is_finished_at_startup() {
    let root = tempfile::tempdir().unwrap();
    let (source, record, target, keys) = source_and_target(root.path());
    // The marker was stored and the families half replaced when the process died.
    let mut b = target.batch();
    b.put_t(CF_META, KEY_INSTALLING, &record).unwrap();
    b.delete("app", b"old-00000".to_vec());
    b.put("app", b"new-00007".to_vec(), b"value-7-new-");
    target.write(b, true).unwrap();
    let dir = target.path().to_path_buf();
    drop(target);

    let target = engine(&dir, &keys);
    let _sm = state_machine(&target, "secret");
    assert_eq!(app_digest(&target), app_digest(&source));
    assert!(stored(&target, KEY_INSTALLING).is_none());
    assert_eq!(stored(&target, KEY_SNAPSHOT).unwrap().file, record.file);
}

#[test]
fn startup_replaces_a_snapshot_no_peer_could_open_and_removes_stray_files() {
    let root = tempfile::tempdir().unwrap();
    let keys = Arc::new(DataKeys::ephemeral());
    let e = engine(&root.path().join("n"), &keys);
    fill(&e, "k-", 100, Some(log_id(1, 50)));
    let first = build(&state_machine(&e, "old-secret").shared(), ()).unwrap();
    let mut b = e.batch();
    b.put_t(CF_META, KEY_SNAPSHOT, &first).unwrap();
    b.put_t(CF_META, KEY_PURGED, &log_id(1, 50)).unwrap();
    b.put(CF_META, KEY_LEGACY_SNAPSHOT.to_vec(), b"an older binary's snapshot");
    e.write(b, true).unwrap();
    std::fs::write(snapshot_dir(&e).join("incoming-0000000000000001.part"), b"half received").unwrap();

    // The cluster secret changed: the old file would be refused by every peer.
    let _sm = state_machine(&e, "new-secret");
    let now = stored(&e, KEY_SNAPSHOT).unwrap();
    assert_ne!(now.file, first.file);
    assert_eq!(now.key_check, SnapshotKey::from_secret(Some("new-secret")).check());
    assert_eq!(now.meta.last_log_id, Some(log_id(1, 50)));
    let files: Vec<String> = std::fs::read_dir(snapshot_dir(&e))
        .unwrap()
        .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, vec![now.file.clone()], "only the current snapshot's file is kept");
    assert!(e.read().get(CF_META, KEY_LEGACY_SNAPSHOT).unwrap().is_none());

    // With the same secret, a restart keeps the snapshot as it is.
    drop(_sm);
    let _sm = state_machine(&e, "new-secret");
    assert_eq!(stored(&e, KEY_SNAPSHOT).unwrap().file, now.file);
}

/// A member that built a snapshot at 30, then applied up to `applied` with its log purged to
/// `purged` and the old snapshot still recorded, started again.
fn restarted_with(root: &Path, applied: LogId, purged: LogId) -> (Arc<Engine>, StateMachine) {
    let keys = Arc::new(DataKeys::ephemeral());
    let e = engine(&root.join("n"), &keys);
    fill(&e, "k-", 100, Some(log_id(1, 30)));
    let old = build(&state_machine(&e, "secret").shared(), ()).unwrap();
    fill(&e, "m-", 10, Some(applied));
    let mut b = e.batch();
    b.put_t(CF_META, KEY_SNAPSHOT, &old).unwrap();
    b.put_t(CF_META, KEY_PURGED, &purged).unwrap();
    e.write(b, true).unwrap();
    let sm = state_machine(&e, "secret");
    (e, sm)
}

#[test]
fn a_log_purged_beyond_the_applied_state_comes_back_to_it_with_a_snapshot_that_covers_it() {
    let root = tempfile::tempdir().unwrap();
    // Applied up to 40, then a received snapshot at 60 purged the log before it was installed
    // (openraft 0.9 does not wait for the install) and the process died.
    let (e, _sm) = restarted_with(root.path(), log_id(1, 40), log_id(1, 60));
    let purged: Option<LogId> = e.read().get_t(CF_META, KEY_PURGED).unwrap();
    assert_eq!(purged, Some(log_id(1, 40)), "the purge mark is what this member applied");
    let now = stored(&e, KEY_SNAPSHOT).unwrap();
    assert_eq!(now.meta.last_log_id, Some(log_id(1, 40)), "a snapshot covers the purged log");
}

#[test]
fn a_snapshot_behind_an_installed_one_is_rebuilt_at_the_applied_position() {
    let root = tempfile::tempdir().unwrap();
    // A received snapshot at 60 was installed, but the record names an older build of our
    // own, and the log (purged to 20) ends before the applied position.
    let (e, _sm) = restarted_with(root.path(), log_id(1, 60), log_id(1, 20));
    assert_eq!(stored(&e, KEY_SNAPSHOT).unwrap().meta.last_log_id, Some(log_id(1, 60)));
    let purged: Option<LogId> = e.read().get_t(CF_META, KEY_PURGED).unwrap();
    assert_eq!(purged, Some(log_id(1, 20)), "a purge behind the applied state stays");
}
