//! `idnode backup inspect FILE`: what a backup file is, read without the cluster secret (as
//! `etcdutl snapshot status` does): the header it carries in the clear, its size and whether
//! its checksum holds. The sealed state inside needs the secret; `restore` checks that part.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use anyhow::{bail, Context};
use serde::Serialize;

/// The report `backup inspect` prints (JSON).
#[derive(Debug, Serialize)]
pub struct BackupReport {
    pub file: String,
    pub format: u32,
    pub backup_id: String,
    /// Unix seconds, and the same as RFC 3339 (UTC).
    pub created_at: u64,
    pub created: String,
    /// The member it was taken from.
    pub taken_on: u64,
    /// The cluster it came from (a fingerprint of its secret; `idnode keys status` shows the
    /// running cluster's). None for backups written before the header named it.
    pub cluster_id: Option<String>,
    /// The members (id -> peer address) as of the backup's entry; None as above.
    pub members: Option<BTreeMap<u64, String>>,
    /// The last log entry the state includes.
    pub applied_index: u64,
    pub applied_term: u64,
    /// The idnode that wrote it.
    pub binary_version: String,
    pub column_families: Vec<String>,
    pub size_bytes: u64,
    /// The trailer is there and the checksum over every byte before it holds.
    pub complete: bool,
    /// Why it is not complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Reads `path`'s header and checks its checksum. A file that is not a backup, or is cut
/// inside its header, is an error; a readable header with a bad checksum is a report that
/// says so (`complete: false`).
pub fn inspect(path: &Path) -> anyhow::Result<BackupReport> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let size_bytes = file.metadata().with_context(|| format!("reading {}", path.display()))?.len();
    let (header, _) = idnode_raft::read_header(&mut BufReader::new(file))
        .with_context(|| format!("{} is not a readable idnode backup", path.display()))?;
    let problem = idnode_raft::verify_file(path, |_| {}).err().map(|e| e.to_string());
    let created = i64::try_from(header.created_at)
        .ok()
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map(|t| t.to_rfc3339())
        .unwrap_or_default();
    Ok(BackupReport {
        file: path.display().to_string(),
        format: header.format,
        backup_id: header.backup_id,
        created_at: header.created_at,
        created,
        taken_on: header.taken_on,
        cluster_id: header.cluster_id,
        members: header.members,
        applied_index: header.applied.index,
        applied_term: header.applied.leader_id.term,
        binary_version: header.binary_version,
        column_families: header.column_families,
        size_bytes,
        complete: problem.is_none(),
        problem,
    })
}

/// Prints the report; exits non-zero when the file is not a complete backup.
pub fn run(path: &Path, format: crate::output::Format) -> anyhow::Result<()> {
    let report = inspect(path)?;
    crate::output::print(format, &serde_json::to_value(&report)?)?;
    match &report.problem {
        None => Ok(()),
        Some(why) => bail!("{} is not a complete backup: {why}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::TestNode;

    /// A backup of a running node, streamed by the real writer (`RaftNode::start_backup`).
    async fn backup_of(t: &TestNode, path: &Path) {
        let mut rx = t.node.raft.start_backup().await.unwrap();
        let mut bytes = Vec::new();
        while let Some(chunk) = rx.recv().await {
            bytes.extend_from_slice(&chunk.unwrap());
        }
        std::fs::write(path, bytes).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_backup_says_what_it_is_without_the_secret_and_a_damaged_one_says_why() {
        let t = TestNode::start_with(&[("idnode", "cluster_secret", "inspect-secret")]).await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b");
        backup_of(&t, &path).await;
        let r = inspect(&path).unwrap();
        assert!(r.complete && r.problem.is_none(), "{r:?}");
        assert_eq!(r.format, 1);
        assert_eq!(r.taken_on, 1);
        let cluster = idnode_raft::BackupKey::from_secret("inspect-secret").cluster_id();
        assert_eq!(r.cluster_id.as_deref(), Some(cluster.as_str()));
        assert_eq!(r.members, Some(t.node.cfg.members()));
        assert!(r.applied_index > 0 && r.applied_index <= t.node.raft.applied_index(), "{r:?}");
        assert!(r.applied_term >= 1);
        assert_eq!(r.size_bytes, std::fs::metadata(&path).unwrap().len());
        assert!(r.created.starts_with("20"), "{}", r.created);
        assert!(run(&path, crate::output::Format::Table).is_ok());
        let json = serde_json::to_string(&r).unwrap();
        assert!(!json.contains("inspect-secret"), "{json}");

        let bytes = std::fs::read(&path).unwrap();
        let cut = dir.path().join("cut");
        std::fs::write(&cut, &bytes[..bytes.len() - 10]).unwrap();
        let r = inspect(&cut).unwrap();
        assert!(!r.complete, "{r:?}");
        let err = format!("{:#}", run(&cut, crate::output::Format::Json).unwrap_err());
        assert!(err.contains("not a complete backup"), "{err}");

        std::fs::write(&cut, &bytes[..30]).unwrap();
        let err = format!("{:#}", inspect(&cut).unwrap_err());
        assert!(err.contains("truncated"), "{err}");
        std::fs::write(&cut, b"PK\x03\x04 a zip file, not a backup").unwrap();
        let err = format!("{:#}", inspect(&cut).unwrap_err());
        assert!(err.contains("not an idnode backup"), "{err}");
        assert!(inspect(&dir.path().join("absent")).is_err());
    }
}
