//! TLS for the listeners (rustls, ring): server certificates for the public and ops listeners
//! (`[idnode] tls_cert`, `tls_key`), and mutual TLS on the peer listener (`[cluster]
//! peer_tls_cert`, `peer_tls_key`, `peer_tls_ca`), where a caller must present a certificate
//! from the cluster's CA that names one of the current members' hosts.
//!
//! Handshakes run in their own tasks with a deadline, so a client that connects and says
//! nothing holds a socket for a few seconds, never the accept loop.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// How long a client may take to complete its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections handshaken and waiting for the server to pick them up.
const READY_QUEUE: usize = 256;

/// Decides whether a peer that passed the CA check may talk to this node (its certificate
/// must name a member); the error says why not, for the log.
pub type Admit = Arc<dyn Fn(&CertificateDer<'_>) -> Result<(), String> + Send + Sync>;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Every certificate of a PEM file (a chain: leaf first).
pub fn load_certs(path: &Path, what: &str) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("{what}: reading {}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{what}: {} is not a PEM certificate file", path.display()))?;
    if certs.is_empty() {
        bail!("{what}: {} holds no certificate", path.display());
    }
    Ok(certs)
}

fn load_key(path: &Path, what: &str) -> anyhow::Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(path)
        .with_context(|| format!("{what}: {} holds no PEM private key (PKCS#8, PKCS#1 or SEC1)", path.display()))
}

/// A server configuration presenting `cert` (chain) with `key`; with `client_ca`, callers must
/// present a certificate that CA signed.
pub fn server_config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
    what: &str,
) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let chain = load_certs(cert, what)?;
    let key_path = key;
    let key = load_key(key_path, what)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in load_certs(ca, what)? {
                roots.add(c).with_context(|| format!("{what}: {} is not a usable CA certificate", ca.display()))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .with_context(|| format!("{what}: client verification with {}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key).with_context(|| {
        format!("{what}: {} and {} do not form a usable certificate", cert.display(), key_path.display())
    })?;
    // The listeners speak HTTP/1.1 (axum is built without HTTP/2).
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Admits a peer whose certificate names one of `hosts()` (a DNS name or an IP address in its
/// subject alternative names). A node that knows no members yet (it waits to be added) admits
/// any certificate of the cluster's CA: the leader adding it is not a member it knows of.
pub fn member_check(hosts: impl Fn() -> Vec<String> + Send + Sync + 'static) -> Admit {
    Arc::new(move |cert: &CertificateDer<'_>| {
        let hosts = hosts();
        if hosts.is_empty() {
            return Ok(());
        }
        let parsed = rustls::server::ParsedCertificate::try_from(cert).map_err(|e| format!("bad certificate: {e}"))?;
        let names_member = hosts.iter().any(|h| {
            ServerName::try_from(h.as_str())
                .map(|name| rustls::client::verify_server_name(&parsed, &name).is_ok())
                .unwrap_or(false)
        });
        if names_member {
            Ok(())
        } else {
            Err(format!("its certificate names none of the members' hosts {hosts:?}"))
        }
    })
}

/// A TLS listener for `axum::serve`: accepts TCP, hands each handshake to its own task, and
/// yields the connections that completed it (and passed `admit`, when given).
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    accept_loop: tokio::task::JoinHandle<()>,
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

impl TlsListener {
    pub fn new(tcp: TcpListener, config: Arc<rustls::ServerConfig>, admit: Option<Admit>, what: &'static str) -> Self {
        let local = tcp.local_addr().unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let (tx, ready) = mpsc::channel(READY_QUEUE);
        let acceptor = TlsAcceptor::from(config);
        let accept_loop = tokio::spawn(async move {
            loop {
                let (stream, addr) = match tcp.accept().await {
                    Ok(c) => c,
                    Err(e) => {
                        // Out of descriptors and the like: back off instead of spinning.
                        tracing::warn!("{what} listener: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let (acceptor, tx, admit) = (acceptor.clone(), tx.clone(), admit.clone());
                tokio::spawn(async move {
                    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => tls,
                        Ok(Err(e)) => {
                            tracing::warn!(peer = %addr, "{what} listener: TLS handshake refused: {e}");
                            return;
                        }
                        Err(_) => {
                            tracing::warn!(peer = %addr, "{what} listener: TLS handshake timed out");
                            return;
                        }
                    };
                    if let Some(admit) = admit {
                        let verdict = match tls.get_ref().1.peer_certificates().and_then(|c| c.first()) {
                            Some(cert) => admit(cert),
                            None => Err("it presented no certificate".to_string()),
                        };
                        if let Err(why) = verdict {
                            tracing::warn!(peer = %addr, "{what} listener: connection refused: {why}");
                            return;
                        }
                    }
                    let _ = tx.send((tls, addr)).await;
                });
            }
        });
        TlsListener { ready, local, accept_loop }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // The accept loop ended (it only does when aborted): serve nothing more.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

/// The listeners' TLS configurations, loaded (and so checked) before the node opens its data.
pub struct ServerTls {
    /// The public and ops listeners (`[idnode] tls_cert`, `tls_key`).
    pub api: Option<Arc<rustls::ServerConfig>>,
    /// The peer listener (`[cluster] peer_tls_*`), requiring a client certificate.
    pub peer: Option<Arc<rustls::ServerConfig>>,
}

impl ServerTls {
    /// `api`: certificate and key files; `peer`: certificate, key and the CA that signs members.
    pub fn load(api: Option<(&Path, &Path)>, peer: Option<(&Path, &Path, &Path)>) -> anyhow::Result<Self> {
        let api = match api {
            Some((cert, key)) => Some(server_config(cert, key, None, "[idnode] tls_cert, tls_key")?),
            None => None,
        };
        let peer = match peer {
            Some((cert, key, ca)) => {
                Some(server_config(cert, key, Some(ca), "[cluster] peer_tls_cert, peer_tls_key, peer_tls_ca")?)
            }
            None => None,
        };
        Ok(ServerTls { api, peer })
    }
}
