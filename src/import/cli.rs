//! `idnode import keystone`: reads the source where the command runs, then sends it to one
//! node's ops listener in batches, each a replicated `Command::Import` (or, `--dry-run`, judged
//! without writing), and prints what became of every kind.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use serde::de::DeserializeOwned;

use super::keystone::{self, CredentialKeys, Db};
use super::report::Report;
use super::routes::{BatchAnswer, ImportBatchRef, PATH_BATCH, PATH_BOOTSTRAP};
use crate::cli::KeystoneImportArgs;
use crate::rotation::routes::PATH_KEYSTONE_FERNET;
use crate::state::apply::IMPORT_RECORDS_PER_COMMAND;
use crate::state::command::Bootstrap;
use crate::state::import::ImportRecord;
use idnode_keys::keystone_fernet::KeystoneFernetKeys;

/// A signed call to one node's ops listener.
struct Ops {
    http: reqwest::Client,
    endpoint: String,
    secret: String,
    member: u64,
}

impl Ops {
    async fn call(&self, method: reqwest::Method, path: &str, body: Vec<u8>, json: bool) -> anyhow::Result<Vec<u8>> {
        let url = format!("{}{path}", self.endpoint.trim_end_matches('/'));
        let (name, value) = idnode_raft::sign_request(&self.secret, self.member, method.as_str(), path, &body);
        let content_type = if json { "application/json" } else { "application/octet-stream" };
        let resp = self
            .http
            .request(method, &url)
            .header(name, value)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .with_context(|| format!("calling {url}"))?;
        let status = resp.status();
        let bytes = resp.bytes().await.with_context(|| format!("reading {url}'s answer"))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes);
            let message = serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|v| v["error"].as_str().map(str::to_string))
                .unwrap_or_else(|| text.to_string());
            bail!("{url} answered {status}: {message}");
        }
        Ok(bytes.to_vec())
    }

    async fn json<T: DeserializeOwned>(&self, path: &str, body: &impl serde::Serialize) -> anyhow::Result<T> {
        let bytes = self.call(reqwest::Method::POST, path, serde_json::to_vec(body)?, true).await?;
        Ok(serde_json::from_slice(&bytes)?)
    }
}

pub async fn keystone(args: &KeystoneImportArgs) -> anyhow::Result<()> {
    if args.batch == 0 || args.batch > IMPORT_RECORDS_PER_COMMAND {
        bail!("--batch must be between 1 and {IMPORT_RECORDS_PER_COMMAND}");
    }
    let secret = std::env::var("IDNODE_CLUSTER_SECRET")
        .ok()
        .filter(|s| !s.is_empty())
        .context("set IDNODE_CLUSTER_SECRET to the cluster's secret")?;
    // Everything is read and checked before anything is written.
    let fernet = match &args.fernet_keys {
        Some(dir) => {
            let keys = KeystoneFernetKeys::read_repository(dir)?;
            KeystoneFernetKeys::new(&keys).with_context(|| format!("{}", dir.display()))?;
            Some(keys)
        }
        None => None,
    };
    let credential_keys = match &args.credential_keys {
        Some(dir) => {
            let shown = dir.display().to_string();
            Some(CredentialKeys::new(&KeystoneFernetKeys::read_repository(dir)?, &shown)?)
        }
        None => None,
    };
    let started = Instant::now();
    let db = Db::open(&args.database).await?;
    let source = keystone::read(&db, credential_keys.as_ref()).await?;
    db.close().await;
    eprintln!(
        "read {} records from {} in {:.1} s",
        source.records.len(),
        args.database,
        started.elapsed().as_secs_f64()
    );

    let http = args.tls.apply(reqwest::Client::builder().timeout(Duration::from_secs(300)))?.build()?;
    let (endpoint, member) = crate::ops_client::first_answering(&http, &args.endpoints.list(None)).await?;
    let ops = Ops { http, endpoint, secret, member };

    let mut report = Report { dry_run: args.dry_run, ..Report::default() };
    for s in &source.skipped {
        report.skip(s.kind, s.label.clone(), s.reason.clone());
    }
    // Where the source has an administrator to bootstrap with: a real run bootstraps a cluster
    // started with `bootstrap = import` first; a dry run shows what that would do.
    let boot = match keystone::bootstrap_of(&source, &args.admin_user, &args.admin_project) {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!("not bootstrapping from the source: {e:#}");
            None
        }
    };
    if let (Some(b), false) = (&boot, args.dry_run) {
        bootstrap(&ops, b).await?;
    }
    let run = args.dry_run.then(|| format!("dry-run-{}", idnode_keys::random_token(8)));
    let bar = progress(source.records.len() as u64);
    let sent = Instant::now();
    for chunk in batches(&source.records, args.batch)? {
        bar.set_message(chunk[0].kind());
        let bootstrap = if run.is_some() { boot.as_ref() } else { None };
        let body = postcard::to_allocvec(&ImportBatchRef { dry_run: run.as_deref(), bootstrap, records: chunk })?;
        let answer: BatchAnswer = batch_call(&ops, body).await?;
        if answer.outcomes.len() != chunk.len() {
            bail!("the node answered {} outcomes for {} records", answer.outcomes.len(), chunk.len());
        }
        for (record, outcome) in chunk.iter().zip(answer.outcomes) {
            report.count(record.kind(), || record.label(), outcome);
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    report.seconds = sent.elapsed().as_secs_f64();
    if let (Some(keys), false) = (fernet, args.dry_run) {
        let body = serde_json::to_vec(&serde_json::json!({"keys": keys, "auth_methods": args.auth_methods}))?;
        ops.call(reqwest::Method::PUT, PATH_KEYSTONE_FERNET, body, true).await?;
        eprintln!("Keystone's fernet keys imported: its tokens validate until they expire");
    }
    print!("{}", report.render());
    if let Some(path) = &args.report {
        std::fs::write(path, serde_json::to_vec_pretty(&report)?).with_context(|| format!("{}", path.display()))?;
    }
    Ok(())
}

/// Encoded bytes of one batch at most: a raft entry must reach the followers within a
/// heartbeat interval, or its replication is retried without end.
const MAX_BATCH_BYTES: usize = 128 * 1024;

/// The records in order, in runs of at most `max` records and [`MAX_BATCH_BYTES`] encoded.
fn batches(records: &[ImportRecord], max: usize) -> anyhow::Result<Vec<&[ImportRecord]>> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, r) in records.iter().enumerate() {
        let size = postcard::to_allocvec(r)?.len();
        if i > start && (i - start == max || bytes + size > MAX_BATCH_BYTES) {
            out.push(&records[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < records.len() {
        out.push(&records[start..]);
    }
    Ok(out)
}

/// A batch, retried while the cluster is not bootstrapped yet (a `bootstrap = auto` cluster
/// just started) or has no leader for a moment.
async fn batch_call(ops: &Ops, body: Vec<u8>) -> anyhow::Result<BatchAnswer> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match ops.call(reqwest::Method::POST, PATH_BATCH, body.clone(), false).await {
            Ok(bytes) => return Ok(serde_json::from_slice(&bytes)?),
            Err(e) if Instant::now() < deadline && retryable(&e) => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

fn retryable(e: &anyhow::Error) -> bool {
    let text = format!("{e:#}");
    text.contains("not bootstrapped yet") || text.contains("503")
}

/// Bootstraps a cluster started with `bootstrap = import` from the source's administrator; a
/// cluster that bootstrapped itself is left as it is (its own admin and roles then conflict
/// with the source's, and the report says so). Retried while the cluster elects a leader.
async fn bootstrap(ops: &Ops, b: &Bootstrap) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match ops.json::<serde_json::Value>(PATH_BOOTSTRAP, b).await {
            Ok(v) if v["bootstrapped"] == true => {
                eprintln!("cluster bootstrapped with Keystone's admin {} and its roles", b.user.id);
                return Ok(());
            }
            Ok(_) => return Ok(()),
            // A cluster that bootstraps itself.
            Err(e) if format!("{e:#}").contains("409") => return Ok(()),
            Err(e) if Instant::now() < deadline && retryable(&e) => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

fn progress(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template("{msg:>24} [{bar:30}] {pos}/{len} {per_sec} {eta}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::model::Revocation;

    fn revocation(id: usize, pad: usize) -> ImportRecord {
        let audit_id = format!("{id}-{}", "x".repeat(pad));
        ImportRecord::Revocation { audit_id, revocation: Revocation { expires_at: 1, revoked_at: 1 } }
    }

    #[test]
    fn batches_keep_order_and_stay_within_their_bounds() {
        let small: Vec<_> = (0..10).map(|i| revocation(i, 0)).collect();
        let runs = batches(&small, 4).unwrap();
        assert_eq!(runs.iter().map(|r| r.len()).collect::<Vec<_>>(), vec![4, 4, 2]);
        assert_eq!(runs.concat(), small);
        // Records of 40 KiB: three fit in 128 KiB, a fourth would not.
        let big: Vec<_> = (0..7).map(|i| revocation(i, 40 * 1024)).collect();
        let runs = batches(&big, 1000).unwrap();
        assert_eq!(runs.iter().map(|r| r.len()).collect::<Vec<_>>(), vec![3, 3, 1]);
        // A record larger than the bound still travels, alone.
        let huge = vec![revocation(0, 200 * 1024), revocation(1, 0)];
        assert_eq!(batches(&huge, 1000).unwrap().iter().map(|r| r.len()).collect::<Vec<_>>(), vec![1, 1]);
        assert!(batches(&[], 10).unwrap().is_empty());
    }
}
