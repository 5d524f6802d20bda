//! Online backups and offline restores, as etcd's `snapshot save` and `etcdutl snapshot
//! restore` do them.
//!
//! A backup is the state machine as of one applied entry (every column family a raft snapshot
//! carries), taken from any member after a read barrier, so it holds every write acknowledged
//! anywhere before the backup began. It is streamed: records go through a sealed stream into
//! the response as they are read, so neither side holds the state in memory.
//!
//! File format (`FORMAT` 1):
//! `MAGIC` · `u32 BE` header length · header (JSON, readable with `head -c`) · a sealed stream
//! (`idnode_keys::SealWriter`) of the storage export, under a key derived from the cluster
//! secret and bound to the header · `TRAILER` · SHA-256 of every byte before the trailer.
//! Without the cluster secret the file is useless; the checksum catches a damaged copy before
//! a restore writes anything, and the stream's authentication catches a forged one.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{middleware, Router};
use bytes::Bytes;
use idnode_keys::{derive_key, OpenReader, SealWriter, KEY_LEN};
use idnode_storage::Engine;
use openraft::{BasicNode, Membership as RaftMembership, StoredMembership};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::OwnedMutexGuard;
use zeroize::Zeroizing;

use crate::auth;
use crate::schema::{CF_META, KEY_APPLIED, KEY_COMMITTED, KEY_MEMBERSHIP, KEY_PURGED, KEY_VOTE};
use crate::snapshot::unix_now;
use crate::types::{LogId, Vote};
use crate::RaftNode;

/// Where the ops listener serves backups (behind the cluster credential).
pub const PATH_BACKUP: &str = "/backup";
pub const FORMAT: u32 = 1;
const MAGIC: &[u8; 8] = b"IDNBKUP1";
const TRAILER: &[u8; 8] = b"IDNSUM01";
/// Bytes after the sealed stream: the trailer's magic and the SHA-256.
pub const TRAILER_LEN: usize = TRAILER.len() + 32;
const KEY_PURPOSE: &str = "idnode backup v1";
/// Largest header a reader accepts.
const MAX_HEADER: usize = 64 << 10;
/// Bytes handed to the HTTP response at a time.
const CHUNK: usize = 256 << 10;
/// Chunks in flight between the exporting thread and the response (bounds the memory used).
const CHUNKS_IN_FLIGHT: usize = 8;

/// What a backup says about itself, in the clear (nothing secret: positions and names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupHeader {
    pub format: u32,
    pub backup_id: String,
    /// Unix seconds.
    pub created_at: u64,
    /// The member the backup was taken from.
    pub taken_on: u64,
    /// The last entry the state includes.
    pub applied: LogId,
    /// The binary that wrote it (`CARGO_PKG_VERSION` of the server).
    pub binary_version: String,
    pub column_families: Vec<String>,
    /// The cluster it came from: a one-way fingerprint of the cluster secret
    /// ([`BackupKey::cluster_id`]), the same in every backup of one cluster. Added after
    /// format 1 shipped, so optional: older backups lack it, and older binaries ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// The members (id -> peer address) as of the backup's entry; optional like `cluster_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<BTreeMap<u64, String>>,
}

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("storage: {0}")]
    Storage(#[from] idnode_storage::StorageError),
    #[error("{0}")]
    Invalid(String),
}

fn invalid(msg: impl Into<String>) -> BackupError {
    BackupError::Invalid(msg.into())
}

/// The key backups are sealed with: every member derives the same one from the cluster secret.
pub struct BackupKey(Zeroizing<[u8; KEY_LEN]>);

impl BackupKey {
    pub fn from_secret(secret: &str) -> Self {
        BackupKey(derive_key(secret.as_bytes(), KEY_PURPOSE))
    }

    /// A name for the cluster that holds this secret, safe to show: 16 hex digits of a hash
    /// of the derived key, so it tells clusters apart and reveals nothing a backup's sealed
    /// stream does not already let one test a guessed secret against.
    pub fn cluster_id(&self) -> String {
        let digest = Sha256::new().chain_update(b"idnode cluster id\0").chain_update(&self.0[..]).finalize();
        hex::encode(&digest[..8])
    }
}

fn stream_context(header_json: &[u8]) -> Vec<u8> {
    let mut c = b"idnode-backup\0".to_vec();
    c.extend_from_slice(header_json);
    c
}

/// Hashes everything written through it.
struct Hashing<W: Write> {
    inner: W,
    hash: Sha256,
    written: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes a backup of `engine`'s `cfs` to `out`. The caller holds the apply lock (`guard`)
/// so the position read here matches the exported data; it is released once the view is
/// taken, and applies go on during the copy. Returns the header and the bytes written.
pub(crate) fn write_backup<G>(
    engine: &Engine,
    guard: G,
    cfs: &[&'static str],
    key: &BackupKey,
    taken_on: u64,
    out: impl Write,
) -> Result<(BackupHeader, u64), BackupError> {
    let view = engine.snapshot();
    drop(guard);
    let applied: LogId = view
        .get_t::<Option<LogId>>(CF_META, KEY_APPLIED)?
        .flatten()
        .ok_or_else(|| invalid("nothing to back up: this member has applied no entry"))?;
    let membership: Option<StoredMembership<u64, BasicNode>> = view.get_t(CF_META, KEY_MEMBERSHIP)?;
    let members = membership.map(|m| m.membership().nodes().map(|(id, n)| (*id, n.addr.clone())).collect());
    let header = BackupHeader {
        format: FORMAT,
        backup_id: format!("{}-{}-{:016x}", applied.index, unix_now(), rand::random::<u64>()),
        created_at: unix_now(),
        taken_on,
        applied,
        binary_version: env!("CARGO_PKG_VERSION").to_string(),
        column_families: cfs.iter().map(|c| c.to_string()).collect(),
        cluster_id: Some(key.cluster_id()),
        members,
    };
    let header_json = serde_json::to_vec(&header).map_err(|e| invalid(e.to_string()))?;
    let mut out = Hashing { inner: out, hash: Sha256::new(), written: 0 };
    out.write_all(MAGIC)?;
    out.write_all(&(header_json.len() as u32).to_be_bytes())?;
    out.write_all(&header_json)?;
    let sealed = SealWriter::new(&key.0, &stream_context(&header_json), out)?;
    let mut buffered = BufWriter::with_capacity(64 << 10, sealed);
    Engine::export_view(&view, cfs, &mut buffered)?;
    let sealed = buffered.into_inner().map_err(|e| e.into_error())?;
    let Hashing { mut inner, hash, written } = sealed.finish()?;
    inner.write_all(TRAILER)?;
    inner.write_all(&hash.finalize())?;
    inner.flush()?;
    Ok((header, written + TRAILER_LEN as u64))
}

/// Reads the magic and header at the start of a backup; returns the header and its raw bytes
/// (the sealed stream is bound to them).
pub fn read_header(input: &mut impl Read) -> Result<(BackupHeader, Vec<u8>), BackupError> {
    let mut magic = [0u8; 8];
    input.read_exact(&mut magic).map_err(|_| invalid("not an idnode backup (too short)"))?;
    if &magic != MAGIC {
        return Err(invalid("not an idnode backup"));
    }
    let cut = |e: io::Error| match e.kind() {
        io::ErrorKind::UnexpectedEof => invalid("the backup ends inside its header: the file is truncated"),
        _ => e.into(),
    };
    let mut len = [0u8; 4];
    input.read_exact(&mut len).map_err(cut)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_HEADER {
        return Err(invalid("backup header too large"));
    }
    let mut raw = vec![0u8; len];
    input.read_exact(&mut raw).map_err(cut)?;
    let header: BackupHeader = serde_json::from_slice(&raw).map_err(|e| invalid(format!("backup header: {e}")))?;
    if header.format != FORMAT {
        return Err(invalid(format!("backup format {} is not one this binary reads ({FORMAT})", header.format)));
    }
    Ok((header, raw))
}

/// Checks a backup file's checksum (reading it once, calling `progress` with the bytes read).
pub fn verify_file(path: &Path, mut progress: impl FnMut(u64)) -> Result<BackupHeader, BackupError> {
    let mut file = File::open(path)?;
    let size = file.metadata()?.len();
    if size < (MAGIC.len() + 4 + TRAILER_LEN) as u64 {
        return Err(invalid("not an idnode backup (too short)"));
    }
    let body = size - TRAILER_LEN as u64;
    let mut hash = Sha256::new();
    let mut reader = BufReader::with_capacity(1 << 20, (&mut file).take(body));
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
        done += n as u64;
        progress(done);
    }
    let mut trailer = [0u8; TRAILER_LEN];
    file.read_exact(&mut trailer)?;
    if &trailer[..TRAILER.len()] != TRAILER {
        return Err(invalid("the backup has no trailer: the file is incomplete"));
    }
    if !idnode_keys::constant_time_eq(&trailer[TRAILER.len()..], &hash.finalize()) {
        return Err(invalid("the backup's checksum does not match: the file is damaged"));
    }
    let (header, _) = read_header(&mut File::open(path)?)?;
    Ok(header)
}

/// Counts the bytes read through it.
struct Counting<R: Read, F: FnMut(u64)> {
    inner: R,
    read: u64,
    progress: F,
}

impl<R: Read, F: FnMut(u64)> Read for Counting<R, F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        (self.progress)(self.read);
        Ok(n)
    }
}

/// Seeds a new member's empty engine from a backup, as the member `node_id` of a new cluster
/// of `members` (id -> peer address): the state and dedup table as of the backup's entry,
/// the log compacted up to it, the new membership, and a vote of the backup's term, so the
/// first election of the new cluster moves past every term the old log used. Every member
/// restored from the same file with the same members starts from identical state.
/// The file's checksum is verified before anything is written.
pub fn restore_file(
    path: &Path,
    engine: &Engine,
    app_cfs: &[&'static str],
    key: &BackupKey,
    node_id: u64,
    members: &BTreeMap<u64, String>,
    mut progress: impl FnMut(&'static str, u64),
) -> Result<BackupHeader, BackupError> {
    if !members.contains_key(&node_id) {
        return Err(invalid(format!("the initial cluster does not name this node ({node_id})")));
    }
    let header = verify_file(path, |n| progress("verify", n))?;
    let cfs = &crate::state_machine::snapshot_cfs(app_cfs)[..];
    let wanted: BTreeSet<&str> = cfs.iter().copied().collect();
    let held: BTreeSet<&str> = header.column_families.iter().map(String::as_str).collect();
    if wanted != held {
        return Err(invalid(format!(
            "the backup holds column families {held:?}, this binary needs {wanted:?}: restore it with the binary that \
             wrote it ({})",
            header.binary_version
        )));
    }
    let size = std::fs::metadata(path)?.len();
    let file = File::open(path)?;
    let counted = Counting { inner: file, read: 0, progress: |n| progress("restore", n) };
    let mut input = BufReader::with_capacity(1 << 20, counted.take(size - TRAILER_LEN as u64));
    let (_, raw) = read_header(&mut input)?;
    let mut sealed = OpenReader::new(&key.0, &stream_context(&raw), input);
    let applied = header.applied;
    let nodes: BTreeMap<u64, BasicNode> =
        members.iter().map(|(id, addr)| (*id, BasicNode { addr: addr.clone() })).collect();
    let voters: BTreeSet<u64> = members.keys().copied().collect();
    let membership = StoredMembership::new(Some(applied), RaftMembership::new(vec![voters], nodes));
    let vote = Vote::new(applied.leader_id.term, node_id);
    let mut extras = engine.batch();
    extras.put_t(CF_META, KEY_APPLIED, &Some(applied))?;
    extras.put_t(CF_META, KEY_MEMBERSHIP, &membership)?;
    // The log store keeps the purged id bare (not an Option).
    extras.put_t(CF_META, KEY_PURGED, &applied)?;
    extras.put_t(CF_META, KEY_COMMITTED, &Some(applied))?;
    extras.put_t(CF_META, KEY_VOTE, &vote)?;
    let staging = crate::snapshot::staging_dir(engine);
    engine.import_fresh(cfs, &mut sealed, extras, &staging).map_err(|e| match e {
        idnode_storage::StorageError::Io(io) if io.kind() == io::ErrorKind::InvalidData => {
            invalid(format!("the backup does not open with this cluster secret (or was altered): {io}"))
        }
        other => other.into(),
    })?;
    if !sealed.finished() {
        return Err(invalid("the backup's state ends before its sealed stream does"));
    }
    Ok(header)
}

/// A `Write` that hands chunks to the HTTP response; blocks while the client is slow, so the
/// exporting thread never runs ahead by more than `CHUNKS_IN_FLIGHT` chunks.
struct ToResponse {
    tx: tokio::sync::mpsc::Sender<io::Result<Bytes>>,
    buf: Vec<u8>,
}

impl ToResponse {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.tx.blocking_send(Ok(chunk)).map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "client went away"))
    }
}

impl Write for ToResponse {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

impl RaftNode {
    /// The ops listener's backup route, behind the cluster credential.
    pub fn backup_router(self: &Arc<Self>) -> Router {
        self.operator_only(Router::new().route(PATH_BACKUP, get(backup)).with_state(self.clone()))
    }

    /// `router` behind the cluster credential: for operator calls on the ops listener.
    pub fn operator_only(&self, router: Router) -> Router {
        router.layer(middleware::from_fn_with_state(self.gate.clone(), auth::require))
    }

    /// Starts a backup: a read barrier first (so every write acknowledged anywhere before this
    /// call is in it), then the export on a blocking thread into `out`. Returns a receiver of
    /// the backup's bytes.
    pub async fn start_backup(
        self: &Arc<Self>,
    ) -> Result<tokio::sync::mpsc::Receiver<io::Result<Bytes>>, crate::ProposeError> {
        let secret = self.opts.cluster_secret.clone().ok_or_else(|| {
            crate::ProposeError::Rejected("backups need a cluster secret (IDNODE_CLUSTER_SECRET)".into())
        })?;
        self.linearizable_barrier().await?;
        let guard: OwnedMutexGuard<()> = self.sm.apply_lock.clone().lock_owned().await;
        let (tx, rx) = tokio::sync::mpsc::channel(CHUNKS_IN_FLIGHT);
        let node = self.clone();
        tokio::task::spawn_blocking(move || {
            let key = BackupKey::from_secret(&secret);
            let started = std::time::Instant::now();
            let mut out = ToResponse { tx: tx.clone(), buf: Vec::with_capacity(CHUNK) };
            match write_backup(&node.engine, guard, &node.sm.snapshot_cfs, &key, node.id, &mut out) {
                Ok((header, bytes)) => tracing::info!(
                    backup = %header.backup_id,
                    applied = header.applied.index,
                    bytes,
                    "backup streamed in {:?}",
                    started.elapsed()
                ),
                Err(e) => {
                    tracing::warn!(error = %e, "backup failed");
                    let _ = tx.blocking_send(Err(io::Error::other(e.to_string())));
                }
            }
        });
        Ok(rx)
    }
}

async fn backup(State(node): State<Arc<RaftNode>>) -> Response {
    match node.start_backup().await {
        Ok(rx) => {
            let stream = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) });
            (
                [
                    (header::CONTENT_TYPE, "application/octet-stream"),
                    (header::CONTENT_DISPOSITION, "attachment; filename=\"idnode.backup\""),
                ],
                Body::from_stream(stream),
            )
                .into_response()
        }
        Err(crate::ProposeError::Rejected(why)) => (StatusCode::CONFLICT, why).into_response(),
        Err(e) => {
            (StatusCode::SERVICE_UNAVAILABLE, format!("cannot take a consistent backup now: {e}")).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFS: &[&str] = &["app", crate::schema::CF_DEDUP];
    const APP: &[&str] = &["app"];

    fn engine(dir: &Path) -> Engine {
        let mut cfs: Vec<&'static str> = crate::COLUMN_FAMILIES.to_vec();
        cfs.push("app");
        Engine::open(dir, &cfs, Arc::new(idnode_keys::DataKeys::ephemeral())).unwrap()
    }

    fn applied(term: u64, index: u64) -> LogId {
        LogId::new(openraft::CommittedLeaderId::new(term, 1), index)
    }

    fn source(dir: &Path) -> Engine {
        let e = engine(dir);
        let mut b = e.batch();
        for i in 0..3000u32 {
            b.put("app", i.to_be_bytes().to_vec(), format!("value-{i}-distinctive").as_bytes());
        }
        b.put_t(CF_META, KEY_APPLIED, &Some(applied(7, 4242))).unwrap();
        e.write(b, false).unwrap();
        e
    }

    fn take(e: &Engine, key: &BackupKey) -> Vec<u8> {
        let mut out = Vec::new();
        write_backup(e, (), CFS, key, 1, &mut out).unwrap();
        out
    }

    #[test]
    fn a_backup_restores_into_a_new_member_with_the_new_membership() {
        let (d1, d2, files) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let key = BackupKey::from_secret("s3cret");
        let bytes = take(&source(d1.path()), &key);
        assert!(!bytes.windows(11).any(|w| w == b"distinctive"), "the state is sealed");
        let path = files.path().join("b");
        std::fs::write(&path, &bytes).unwrap();
        let members = BTreeMap::from([(1, "a:1".to_string()), (2, "b:2".to_string()), (3, "c:3".to_string())]);
        let target = engine(d2.path());
        let header = restore_file(&path, &target, APP, &key, 2, &members, |_, _| {}).unwrap();
        assert_eq!(header.applied, applied(7, 4242));
        let view = target.read();
        assert_eq!(view.scan_prefix("app", b"", 10_000).unwrap().len(), 3000);
        assert_eq!(
            view.get_t::<LogId>(CF_META, KEY_PURGED).unwrap(),
            Some(applied(7, 4242)),
            "as the log store reads it"
        );
        assert_eq!(view.get_t::<Vote>(CF_META, KEY_VOTE).unwrap(), Some(Vote::new(7, 2)));
        let m: StoredMembership<u64, BasicNode> = view.get_t(CF_META, KEY_MEMBERSHIP).unwrap().unwrap();
        assert_eq!(m.membership().voter_ids().collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn the_header_names_the_cluster_in_the_clear_and_first_release_headers_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let e = source(dir.path());
        let nodes = BTreeMap::from([(1, BasicNode { addr: "a:1".into() }), (2, BasicNode { addr: "b:2".into() })]);
        let m = StoredMembership::new(Some(applied(7, 4000)), RaftMembership::new(vec![BTreeSet::from([1, 2])], nodes));
        let mut b = e.batch();
        b.put_t(CF_META, KEY_MEMBERSHIP, &m).unwrap();
        e.write(b, false).unwrap();
        let key = BackupKey::from_secret("s3cret");
        let bytes = take(&e, &key);
        let (header, raw) = read_header(&mut &bytes[..]).unwrap();
        assert_eq!(header.cluster_id.as_deref(), Some(key.cluster_id().as_str()));
        assert_eq!(key.cluster_id().len(), 16);
        assert_eq!(key.cluster_id(), BackupKey::from_secret("s3cret").cluster_id(), "stable for one secret");
        assert_ne!(key.cluster_id(), BackupKey::from_secret("other").cluster_id());
        assert!(!String::from_utf8_lossy(&raw).contains("s3cret"));
        assert_eq!(header.members, Some(BTreeMap::from([(1, "a:1".to_string()), (2, "b:2".to_string())])));

        // A header as the first release wrote it (no cluster identity) still reads.
        let mut first: serde_json::Value = serde_json::from_slice(&raw).unwrap();
        let fields = first.as_object_mut().unwrap();
        fields.remove("cluster_id");
        fields.remove("members");
        let json = serde_json::to_vec(&first).unwrap();
        let mut old = MAGIC.to_vec();
        old.extend_from_slice(&(json.len() as u32).to_be_bytes());
        old.extend_from_slice(&json);
        let (header, _) = read_header(&mut &old[..]).unwrap();
        assert_eq!((header.cluster_id, header.members, header.applied), (None, None, applied(7, 4242)));

        let err = read_header(&mut &bytes[..20]).unwrap_err().to_string();
        assert!(err.contains("truncated"), "{err}");
    }

    #[test]
    fn a_damaged_forged_or_foreign_backup_writes_nothing() {
        let (d1, files) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let key = BackupKey::from_secret("s3cret");
        let bytes = take(&source(d1.path()), &key);
        let members = BTreeMap::from([(1, "a:1".to_string())]);
        let try_restore = |name: &str, data: &[u8], key: &BackupKey| {
            let path = files.path().join(name);
            std::fs::write(&path, data).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let target = engine(dir.path());
            let err = restore_file(&path, &target, APP, key, 1, &members, |_, _| {}).unwrap_err().to_string();
            let empty = target.read().scan_prefix("app", b"", 1).unwrap().is_empty()
                && target.read().get(CF_META, KEY_APPLIED).unwrap().is_none();
            (err, empty)
        };
        let mut flipped = bytes.clone();
        let mid = flipped.len() / 2;
        flipped[mid] ^= 1;
        let (err, empty) = try_restore("flipped", &flipped, &key);
        assert!(err.contains("checksum") && empty, "{err}");
        let (err, empty) = try_restore("cut", &bytes[..bytes.len() - 100], &key);
        assert!((err.contains("trailer") || err.contains("checksum")) && empty, "{err}");
        let (err, _) = try_restore("other-secret", &bytes, &BackupKey::from_secret("other"));
        assert!(err.contains("does not open"), "{err}");
        // A forger who recomputes the checksum still cannot get past the sealed stream.
        let body = flipped.len() - TRAILER_LEN;
        let mut forged = flipped[..body].to_vec();
        forged.extend_from_slice(TRAILER);
        forged.extend_from_slice(&Sha256::digest(&flipped[..body]));
        let (err, _) = try_restore("forged", &forged, &key);
        assert!(err.contains("does not open"), "{err}");
        let (err, empty) = try_restore("junk", b"definitely not a backup file at all, no", &key);
        assert!(err.contains("not an idnode backup") || err.contains("trailer"), "{err}");
        assert!(empty);
    }
}
