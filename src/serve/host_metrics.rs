//! What a node tells its monitoring about the host it runs on, so alerts fire before an outage
//! rather than after: the room left on the data directory's filesystem (RocksDB stops writing
//! when it is full, and raft with it) and when the certificates the node serves expire.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use x509_cert::der::Decode;

use crate::config::Config;

#[derive(Debug)]
struct HostCollector {
    data_dir: PathBuf,
    /// (listener, the served leaf certificate's notAfter in Unix seconds), read at startup.
    certificates: Vec<(&'static str, i64)>,
}

/// Registers `idnode_storage_filesystem_{avail,size}_bytes` and
/// `idnode_tls_certificate_expiry_timestamp_seconds{listener}`.
pub fn register(registry: &mut Registry, cfg: &Config) {
    let mut certificates = Vec::new();
    if let Some(t) = &cfg.tls {
        certificates.extend(not_after(&t.cert).map(|at| ("api", at)));
    }
    if let Some(t) = &cfg.peer_tls {
        certificates.extend(not_after(&t.cert).map(|at| ("peer", at)));
    }
    registry.register_collector(Box::new(HostCollector { data_dir: cfg.data_dir.clone(), certificates }));
}

/// The leaf certificate's expiry (the first of the chain, the one clients check first).
fn not_after(chain: &Path) -> Option<i64> {
    let certs = crate::http::tls::load_certs(chain, "certificate").ok()?;
    let leaf = x509_cert::Certificate::from_der(certs.first()?.as_ref()).ok()?;
    i64::try_from(leaf.tbs_certificate.validity.not_after.to_unix_duration().as_secs()).ok()
}

/// (bytes available to the node, bytes in all) on the filesystem holding `path`.
fn filesystem(path: &Path) -> Option<(u64, u64)> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain old data; all-zero is a valid value for the call to fill.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `s` a statvfs the call writes into.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    let block = s.f_frsize as u64;
    Some((s.f_bavail as u64 * block, s.f_blocks as u64 * block))
}

impl Collector for HostCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if let Some((avail, size)) = filesystem(&self.data_dir) {
            for (name, help, v) in [
                (
                    "idnode_storage_filesystem_avail_bytes",
                    "Bytes the node may still write on its data directory's filesystem",
                    avail,
                ),
                ("idnode_storage_filesystem_size_bytes", "Size of the data directory's filesystem", size),
            ] {
                let g = ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX));
                g.encode(enc.encode_descriptor(name, help, None, g.metric_type())?)?;
            }
        }
        if !self.certificates.is_empty() {
            let g = ConstGauge::new(0i64);
            let mut family = enc.encode_descriptor(
                "idnode_tls_certificate_expiry_timestamp_seconds",
                "When the certificate a listener serves expires (Unix seconds; read at startup)",
                None,
                g.metric_type(),
            )?;
            for (listener, at) in &self.certificates {
                let labels = [("listener".to_string(), listener.to_string())];
                ConstGauge::new(*at).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filesystem_of_a_directory_has_room_and_a_size() {
        let dir = tempfile::tempdir().unwrap();
        let (avail, size) = filesystem(dir.path()).unwrap();
        assert!(size > 0 && avail <= size, "{avail} of {size}");
        assert_eq!(filesystem(&dir.path().join("missing")), None);
    }
}
