//! `idnode backup` (online, through a node's ops listener) and `idnode restore` (offline, into
//! a new member's data directory). The formats and the seeding are in `idnode_raft::backup`;
//! this is the operator's side: files, progress and messages. docs/operations.md has the
//! disaster-recovery runbook.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use sha2::{Digest, Sha256};

use crate::config::Config;
use crate::ops_client::{first_answering, path_of};
use crate::output::Format;
use crate::serve::engine::{open_engine, RESTORING};
use crate::state::cf::STATE_CFS;

/// Longest the server may go quiet in the middle of a backup.
const STALL: Duration = Duration::from_secs(60);

fn secret() -> anyhow::Result<String> {
    std::env::var("IDNODE_CLUSTER_SECRET")
        .ok()
        .filter(|s| !s.is_empty())
        .context("set IDNODE_CLUSTER_SECRET to the cluster's secret: it proves the call and seals the backup")
}

fn bar(total: Option<u64>, what: &str) -> ProgressBar {
    let (bar, template) = match total {
        Some(n) => (ProgressBar::new(n), "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}"),
        None => (ProgressBar::new_spinner(), "{spinner} {msg} {bytes} ({bytes_per_sec}, {elapsed})"),
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_string());
    bar
}

/// The summary a backup or restore prints: one JSON line (what scripts parse), or a table.
fn print(format: Option<Format>, summary: &serde_json::Value) -> anyhow::Result<()> {
    match format.unwrap_or(Format::Json) {
        Format::Json => println!("{summary}"),
        Format::Table => crate::output::print(Format::Table, summary)?,
    }
    Ok(())
}

fn mb_per_s(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / (1 << 20) as f64 / elapsed.as_secs_f64().max(1e-6)
}

/// `idnode backup --endpoints URL[,…] --out FILE` (from the first node that answers).
pub async fn backup(
    endpoints: &[String],
    out: &Path,
    tls: &crate::cli::ClientTlsArgs,
    format: Option<Format>,
) -> anyhow::Result<()> {
    let secret = secret()?;
    if out.exists() {
        bail!("{} exists: choose a new file name (a backup never overwrites one)", out.display());
    }
    let partial = PathBuf::from(format!("{}.partial", out.display()));
    let started = Instant::now();
    let http = tls.apply(reqwest::Client::builder().connect_timeout(Duration::from_secs(5)))?.build()?;
    let (endpoint, to) = first_answering(&http, endpoints).await?;
    let url = format!("{}{}", endpoint.trim_end_matches('/'), idnode_raft::PATH_BACKUP);
    let (name, value) = idnode_raft::sign_request(&secret, to, "GET", &path_of(&url)?, b"");
    let mut resp = http.get(&url).header(name, value).send().await.with_context(|| format!("calling {url}"))?;
    if !resp.status().is_success() {
        let status = resp.status();
        return Err(crate::exit::refused(format!(
            "{url} answered {status}: {}",
            resp.text().await.unwrap_or_default()
        )));
    }
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(&partial).with_context(|| format!("creating {}", partial.display()))?,
    );
    // Everything but the trailer is hashed as it arrives; the trailer is held back and compared.
    let mut hash = Sha256::new();
    let mut held: Vec<u8> = Vec::new();
    let mut total = 0u64;
    let progress = bar(None, "backup");
    loop {
        let chunk = match tokio::time::timeout(STALL, resp.chunk()).await {
            Ok(Ok(Some(c))) => c,
            Ok(Ok(None)) => break,
            Ok(Err(e)) => {
                let _ = std::fs::remove_file(&partial);
                bail!("the backup stream broke after {total} bytes: {e}");
            }
            Err(_) => {
                let _ = std::fs::remove_file(&partial);
                bail!("the node sent nothing for {} s after {total} bytes", STALL.as_secs());
            }
        };
        total += chunk.len() as u64;
        progress.set_position(total);
        held.extend_from_slice(&chunk);
        if held.len() > idnode_raft::TRAILER_LEN {
            let n = held.len() - idnode_raft::TRAILER_LEN;
            hash.update(&held[..n]);
            file.write_all(&held[..n])?;
            held.drain(..n);
        }
    }
    progress.finish_and_clear();
    let digest = hash.finalize();
    let trailer_ok = held.len() == idnode_raft::TRAILER_LEN && held[8..] == digest[..];
    file.write_all(&held)?;
    file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    if !trailer_ok {
        let _ = std::fs::remove_file(&partial);
        bail!("the backup arrived incomplete or damaged ({total} bytes): nothing was kept");
    }
    let (header, _) = idnode_raft::read_header(&mut std::fs::File::open(&partial)?)?;
    std::fs::rename(&partial, out)?;
    let elapsed = started.elapsed();
    print(
        format,
        &serde_json::json!({
            "file": out.display().to_string(),
            "bytes": total,
            "seconds": elapsed.as_secs_f64(),
            "mb_per_s": mb_per_s(total, elapsed),
            "backup_id": header.backup_id,
            "applied_index": header.applied.index,
            "taken_on": header.taken_on,
            "cluster_id": header.cluster_id,
        }),
    )
}

/// `idnode restore --from FILE --data-dir DIR --node-id N --initial-cluster …`.
pub fn restore(from: &Path, cfg: &Config, format: Option<Format>) -> anyhow::Result<()> {
    let secret = cfg.cluster_secret.clone().map(Ok).unwrap_or_else(secret)?;
    let size = std::fs::metadata(from).with_context(|| format!("reading {}", from.display()))?.len();
    let db = cfg.data_dir.join("db");
    if db.exists() {
        bail!(
            "{} already holds a database: a restore seeds a new member, so give it an empty data directory",
            cfg.data_dir.display()
        );
    }
    std::fs::create_dir_all(&cfg.data_dir).with_context(|| format!("creating {}", cfg.data_dir.display()))?;
    let marker = cfg.data_dir.join(RESTORING);
    std::fs::write(&marker, b"a restore into this directory has not finished\n")?;
    let (engine, _) = open_engine(cfg)?;
    let started = Instant::now();
    let verify = bar(Some(size), "verify ");
    let load = bar(Some(size), "restore");
    let header = idnode_raft::restore_file(
        from,
        &engine,
        STATE_CFS,
        &idnode_raft::BackupKey::from_secret(&secret),
        cfg.node_id,
        &cfg.members(),
        |phase, n| match phase {
            "verify" => verify.set_position(n),
            _ => load.set_position(n),
        },
    )
    .with_context(|| format!("restoring {} (delete {} before trying again)", from.display(), cfg.data_dir.display()))?;
    verify.finish_and_clear();
    load.finish_and_clear();
    engine.flush()?;
    drop(engine);
    std::fs::remove_file(&marker)?;
    let elapsed = started.elapsed();
    print(
        format,
        &serde_json::json!({
            "data_dir": cfg.data_dir.display().to_string(),
            "node_id": cfg.node_id,
            "members": cfg.members(),
            "backup_id": header.backup_id,
            "applied_index": header.applied.index,
            "bytes": size,
            "seconds": elapsed.as_secs_f64(),
            "mb_per_s": mb_per_s(size, elapsed),
        }),
    )
}
