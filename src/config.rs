//! Configuration: a Keystone-style INI file, then `IDNODE_*` environment variables, then
//! command-line flags (each later source wins). Environment names: `IDNODE_<SECTION>_<KEY>`
//! for any key (e.g. `IDNODE_TOKEN_EXPIRATION`, `IDNODE_API_KEYS_TOMBSTONE_RETENTION_DAYS`),
//! and `IDNODE_<KEY>` for keys of `[idnode]` (e.g. `IDNODE_DATA_DIR`, `IDNODE_LISTEN`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context};

pub mod key_schedule;
pub mod log;
pub mod settings;

pub use settings::Settings;

/// The resolved configuration of a node.
#[derive(Debug, Clone)]
pub struct Config {
    pub node_id: u64,
    pub data_dir: PathBuf,
    pub listen: String,
    pub ops_listen: String,
    pub peer_listen: String,
    /// node id -> peer address; empty means a one-node cluster of this node.
    pub initial_cluster: BTreeMap<u64, String>,
    /// False for `initial_cluster_state = existing`: the node joins and never initializes.
    pub form_cluster: bool,
    pub public_url: Option<String>,
    pub cluster_secret: Option<String>,
    pub kek: Option<String>,
    pub kek_file: PathBuf,
    pub admin_password: Option<String>,
    /// `bootstrap = import`: the cluster waits for `idnode import keystone` to bootstrap it
    /// from Keystone's own admin, domain and roles (ids unchanged) instead of making its own
    /// (`bootstrap = auto`, the default).
    pub bootstrap_by_import: bool,
    pub region: String,
    pub token_expiration_s: i64,
    pub allow_expired_window_s: i64,
    /// Token keys kept by a rotation (`[token] max_active_keys`, Keystone's fernet setting,
    /// default 3: staged, primary and one secondary). A rotation drops the oldest secondary
    /// beyond it, and tokens it signed stop validating.
    pub token_max_active_keys: u32,
    /// Values re-sealed per second at most after a data-key rotation (`[keys] reseal_rate`,
    /// default 20,000; 0: no limit).
    pub keys_reseal_rate: u64,
    pub password: idnode_keys::PasswordParams,
    pub keystone_compat_status: bool,
    /// Seconds a public API request may take, waiting for a slot included (then 503).
    pub api_request_timeout_s: u64,
    /// Public API requests handled at once; more wait for a slot.
    pub api_max_concurrent_requests: usize,
    pub admin_project_name: String,
    pub raft_heartbeat_ms: u64,
    pub raft_election_min_ms: u64,
    pub raft_election_max_ms: u64,
    pub raft_snapshot_logs: u64,
    /// Log bytes since the last snapshot, as a share of that snapshot's size, before the next
    /// (raft/src/snapshot_policy.rs): snapshot work per write stays flat as the state grows.
    pub raft_snapshot_log_ratio: f64,
    /// Log entries kept behind a snapshot, so a lagging follower catches up from the log and a
    /// member receiving a snapshot still finds the entries after it when the install ends (a
    /// newer snapshot built meanwhile would otherwise purge them and send it a second one).
    pub raft_snapshot_catchup: u64,
    /// Seconds between the leader's consistency checks; 0 turns them off.
    pub raft_consistency_check_interval_s: u64,
    /// RocksDB's memory budget in MiB: its block cache and memtables together.
    pub raft_storage_memory_mb: usize,
    /// Operator policy files (`*.rego`) replacing or extending the bundled ones.
    pub policy_directory: Option<PathBuf>,
    /// Who counts as a cloud administrator (`[policy] admin_scope`: `any` or `system`).
    pub policy_admin_scope: crate::policy::admin_scope::AdminScope,
    /// `[unified_limit] enforcement_model`: `flat` or `strict_two_level` (Keystone's).
    pub unified_limit_model: crate::state::limits::Model,
    /// Token issue (and password change, signed-request token) requests per second and
    /// source IP, each class its own bucket; 0 disables the limits.
    pub auth_rate_limit_per_second: u32,
    pub auth_rate_limit_burst: u32,
    /// Proxies whose `X-Forwarded-For` names the source of a request (`[api] trusted_proxies`).
    pub api_trusted_proxies: Vec<crate::http::client_ip::Cidr>,
    /// `[security_compliance]`: lockout, password history, age, expiry, pattern.
    pub security: crate::identity::compliance::Compliance,
    /// `[oauth1]`: seconds an OAuth1 request / access token stays usable; 0 means no expiry.
    pub oauth1_request_token_duration_s: i64,
    pub oauth1_access_token_duration_s: i64,
    /// `[totp] included_previous_windows` (Keystone's, default 1): 30-second steps before the
    /// current one whose passcodes the `totp` method still accepts (0 to 10).
    pub totp_included_previous_windows: u32,
    /// `[receipt] expiration` (Keystone's, default 300): seconds an auth receipt lets a user
    /// complete multi-factor authentication.
    pub receipt_expiration_s: i64,
    /// `[oauth2]`: the OAuth2 / OpenID Connect provider (see `OAuth2Settings`).
    pub oauth2: OAuth2Settings,
    /// `[audit]`: the audit pipeline (see `AuditSettings`).
    pub audit: AuditSettings,
    /// `[keystone]` `shadow_registry_*`: the virtual users' lifecycle jobs.
    pub shadow_registry: ShadowRegistrySettings,
    /// SCIM provisioning (see `ScimSettings`).
    pub scim: ScimSettings,
    /// `[otlp]`: pushing the metrics to an OpenTelemetry collector.
    pub otlp: OtlpSettings,
    /// `[idnode] tls_cert`, `tls_key`: HTTPS on the public and ops listeners.
    pub tls: Option<TlsFiles>,
    /// `[cluster] peer_tls_cert`, `peer_tls_key`, `peer_tls_ca`: mutual TLS between members.
    pub peer_tls: Option<PeerTlsFiles>,
    /// `[passkey]`: the WebAuthn relying party (see `passkey::settings`).
    pub passkey: crate::passkey::settings::PasskeySettings,
    /// `[federation]`: what the node may reach when it calls registered providers.
    pub federation: FederationSettings,
    /// `[assignment] driver` and `[openfga]`: where role assignments live.
    pub assignment: crate::openfga::settings::AssignmentDriver,
    /// `[log]`: the log's format and the access log.
    pub log: log::LogSettings,
    /// `[token] rotate_every`, `[oauth2] rotate_every`: scheduled key rotation (off unless set).
    pub key_schedule: key_schedule::KeySchedule,
    /// Environment variables read as settings of nothing, to log once the log is up (the log's
    /// own shape is a setting, so it starts after the configuration is read).
    pub warnings: Vec<String>,
}

/// `[federation]`: the requests the node makes to registered identity providers, Kubernetes
/// API servers and their discovery documents (`providers::outbound`).
#[derive(Debug, Clone, PartialEq)]
pub struct FederationSettings {
    /// Whether provider URLs may name loopback, private, link-local or other non-public
    /// addresses (`allow_private_networks`, default false). Off, such URLs are refused when a
    /// provider is written and every name is resolved to public addresses only when called,
    /// so a domain manager cannot make the node reach its own network. Tests that run an
    /// identity provider on loopback turn it on; so does a deployment whose IdP or cluster is
    /// on a private network.
    pub allow_private_networks: bool,
    /// Requests per minute this node makes to one provider host (`outbound_rate_limit`,
    /// default 600); beyond, logins needing a fetch get 503. 0: no limit.
    pub outbound_rate_limit: u32,
    /// Minutes the group memberships of a `local` mapped login last when its ruleset names
    /// no `authorization_ttl` (`default_authorization_ttl`, Keystone's option; default 0:
    /// such memberships are synced for good).
    pub default_authorization_ttl: u32,
}

impl FederationSettings {
    fn from_settings(s: &Settings) -> anyhow::Result<Self> {
        let f = "federation";
        Ok(FederationSettings {
            allow_private_networks: s.flag(f, "allow_private_networks", false)?,
            outbound_rate_limit: s.parse(f, "outbound_rate_limit", 600)?,
            default_authorization_ttl: s.parse(f, "default_authorization_ttl", 0)?,
        })
    }
}

/// A listener's certificate (chain, PEM) and private key (PEM).
#[derive(Debug, Clone, PartialEq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// What a member presents to and expects from the others (`docs/operations.md`, "TLS").
#[derive(Debug, Clone, PartialEq)]
pub struct PeerTlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// The CA every member's certificate comes from.
    pub ca: PathBuf,
}

impl TlsFiles {
    fn from_settings(s: &Settings) -> anyhow::Result<Option<Self>> {
        match (path_setting(s, "idnode", "tls_cert"), path_setting(s, "idnode", "tls_key")) {
            (None, None) => Ok(None),
            (Some(cert), Some(key)) => Ok(Some(TlsFiles { cert, key })),
            _ => bail!("[idnode] tls_cert and tls_key go together: set both (HTTPS) or neither (HTTP)"),
        }
    }
}

impl PeerTlsFiles {
    fn from_settings(s: &Settings) -> anyhow::Result<Option<Self>> {
        let c = "cluster";
        let parts = [
            path_setting(s, c, "peer_tls_cert"),
            path_setting(s, c, "peer_tls_key"),
            path_setting(s, c, "peer_tls_ca"),
        ];
        match parts {
            [None, None, None] => Ok(None),
            [Some(cert), Some(key), Some(ca)] => Ok(Some(PeerTlsFiles { cert, key, ca })),
            _ => bail!(
                "[cluster] peer_tls_cert, peer_tls_key and peer_tls_ca go together: set all three (mutual TLS between \
                 members) or none"
            ),
        }
    }

    /// What this member's peer client trusts and presents.
    pub fn client(&self) -> anyhow::Result<idnode_raft::ClientTls> {
        idnode_raft::ClientTls::from_files(&self.ca, Some((&self.cert, &self.key)))
            .context("[cluster] peer_tls_cert, peer_tls_key, peer_tls_ca")
    }
}

/// A path setting; an empty value counts as unset.
fn path_setting(s: &Settings, section: &str, key: &str) -> Option<PathBuf> {
    s.get(section, key).map(str::trim).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// `[otlp]`: where and how often the metrics are pushed over OTLP/HTTP (`otlp`).
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpSettings {
    /// The collector's OTLP/HTTP endpoint (`endpoint`, e.g. `http://otel-collector:4318`;
    /// `/v1/metrics` is added unless present). None: nothing is pushed.
    pub endpoint: Option<String>,
    /// Seconds between exports (`interval`, default 30).
    pub interval_s: u64,
    /// Spans sent to the endpoint's `/v1/traces` too (`traces`, default off).
    pub traces: bool,
    /// The share of new traces kept (`trace_sample_ratio`, 0 to 1, default 1); a caller's
    /// `traceparent` decides for the traces it started.
    pub trace_sample_ratio: f64,
}

impl OtlpSettings {
    fn from_settings(s: &Settings) -> anyhow::Result<Self> {
        let endpoint = s.get("otlp", "endpoint").map(str::trim).filter(|e| !e.is_empty()).map(str::to_string);
        if let Some(e) = &endpoint {
            let url = url::Url::parse(e).map_err(|err| anyhow!("[otlp] endpoint {e:?}: {err}"))?;
            if !matches!(url.scheme(), "http" | "https") {
                bail!("[otlp] endpoint {e:?}: only http and https are supported");
            }
        }
        let out = OtlpSettings {
            endpoint,
            interval_s: s.parse("otlp", "interval", 30)?,
            traces: s.flag("otlp", "traces", false)?,
            trace_sample_ratio: s.parse("otlp", "trace_sample_ratio", 1.0)?,
        };
        if out.interval_s == 0 {
            bail!("[otlp] interval must be positive");
        }
        if !(0.0..=1.0).contains(&out.trace_sample_ratio) {
            bail!("[otlp] trace_sample_ratio = {} is not valid: a share from 0 to 1", out.trace_sample_ratio);
        }
        if out.traces && out.endpoint.is_none() {
            bail!("[otlp] traces = on needs [otlp] endpoint (the collector's OTLP/HTTP address)");
        }
        Ok(out)
    }
}

/// SCIM provisioning (spec "Limits" and "States and transitions"): the per-provider write
/// rate in `[keystone]` where the spec names it, the janitor's retention in `[scim_resource]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScimSettings {
    /// SCIM writes a realm's provider may make per minute, across the cluster
    /// (`[keystone] scim_realm_write_rate_limit`, default 500); more get 429. 0: no limit.
    pub write_rate_limit: u32,
    /// Days a deprovisioned resource is kept before the janitor hard-deletes it
    /// (`[scim_resource] janitor_deprovisioned_retention_days`, default 365).
    pub retention_days: i64,
    /// Seconds between janitor passes (`[scim_resource] janitor_interval`, default 3600);
    /// the API keys' reclamation runs as often.
    pub janitor_interval_s: u64,
    /// Days a revoked API key's tombstone is kept before the record is deleted
    /// (`[api_keys] tombstone_retention_days`, default 30).
    pub api_key_tombstone_retention_days: i64,
}

impl ScimSettings {
    fn from_settings(s: &Settings) -> anyhow::Result<Self> {
        let out = ScimSettings {
            write_rate_limit: s.parse("keystone", "scim_realm_write_rate_limit", 500)?,
            retention_days: s.parse("scim_resource", "janitor_deprovisioned_retention_days", 365)?,
            janitor_interval_s: s.parse("scim_resource", "janitor_interval", 3600)?,
            api_key_tombstone_retention_days: s.parse("api_keys", "tombstone_retention_days", 30)?,
        };
        if out.retention_days < 0 || out.janitor_interval_s == 0 || out.api_key_tombstone_retention_days < 0 {
            bail!(
                "[scim_resource] janitor_deprovisioned_retention_days and [api_keys] tombstone_retention_days must \
                 not be negative, and [scim_resource] janitor_interval must be positive"
            );
        }
        Ok(out)
    }
}

/// The shadow registry's lifecycle (spec, "States and transitions" and "Limits"), in the
/// section the spec names for its archive keys, `[keystone]`; the inactivity keys sit beside
/// them under the same prefix so one section holds the whole lifecycle.
#[derive(Debug, Clone, PartialEq)]
pub struct ShadowRegistrySettings {
    /// Days without authentication after which a virtual user is disabled
    /// (`shadow_registry_inactivity_days`, default 90).
    pub inactivity_days: i64,
    /// Seconds between deactivation passes (`shadow_registry_deactivation_check_interval`,
    /// default 86400: nightly).
    pub deactivation_check_interval_s: u64,
    /// Days a disabled virtual user is kept before deletion
    /// (`shadow_registry_archive_retention_days`, default 365).
    pub archive_retention_days: i64,
    /// Seconds between archive cleanups (`shadow_registry_archive_cleanup_interval`, default
    /// 604800: weekly).
    pub archive_cleanup_interval_s: u64,
    /// Virtual users a provider may create per minute (`shadow_registry_creation_rate_limit`,
    /// default 50); more get 429. 0 turns the limit off.
    pub creation_rate_limit: u32,
    /// Authentications through a provider per minute (`shadow_registry_auth_rate_limit`,
    /// default 500); more get 429. 0 turns the limit off.
    pub auth_rate_limit: u32,
    /// Milliseconds one `matches_regex` match may take before it counts as no match
    /// (`mapping_regex_timeout_ms`, default 2000; fractions allowed, so a test can make
    /// every match outlive it).
    pub regex_timeout_ms: f64,
    /// The audience a SPIFFE JWT-SVID must name to log in here (`spiffe_jwt_audience`,
    /// default `idnode`): the same on every node, so a workload's SVID works on any of them.
    pub spiffe_audience: String,
}

impl ShadowRegistrySettings {
    fn from_settings(s: &Settings) -> anyhow::Result<Self> {
        let k = "keystone";
        let out = ShadowRegistrySettings {
            inactivity_days: s.parse(k, "shadow_registry_inactivity_days", 90)?,
            deactivation_check_interval_s: s.parse(k, "shadow_registry_deactivation_check_interval", 86_400)?,
            archive_retention_days: s.parse(k, "shadow_registry_archive_retention_days", 365)?,
            archive_cleanup_interval_s: s.parse(k, "shadow_registry_archive_cleanup_interval", 604_800)?,
            creation_rate_limit: s.parse(k, "shadow_registry_creation_rate_limit", 50)?,
            auth_rate_limit: s.parse(k, "shadow_registry_auth_rate_limit", 500)?,
            regex_timeout_ms: s.parse(
                k,
                "mapping_regex_timeout_ms",
                crate::mapping::regex_cache::DEFAULT_DEADLINE.as_secs_f64() * 1000.0,
            )?,
            spiffe_audience: s.parse(k, "spiffe_jwt_audience", "idnode".to_string())?,
        };
        if out.inactivity_days <= 0
            || out.archive_retention_days <= 0
            || out.deactivation_check_interval_s == 0
            || out.archive_cleanup_interval_s == 0
            || !(out.regex_timeout_ms > 0.0 && out.regex_timeout_ms.is_finite())
            || out.spiffe_audience.is_empty()
        {
            bail!(
                "[keystone] shadow_registry_* days and intervals and mapping_regex_timeout_ms must be positive, \
                 spiffe_jwt_audience not empty"
            );
        }
        Ok(out)
    }
}

/// `[audit]` settings: where audit events go and how much the node buffers when that place is
/// slow or failing (`docs/audit.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditSettings {
    /// The append-only JSON-lines sink (`file`, default `DATA_DIR/audit/audit.jsonl`, so a fresh
    /// deployment keeps the trail the spec asks for). None (`file = off`): the pipeline is off
    /// and every event is counted as dropped (`reason="disabled"`).
    pub file: Option<PathBuf>,
    /// Bytes the file may reach before a new one is started (`max_file_bytes`, default 64 MiB;
    /// 0: never, for an operator who rotates with copy-and-truncate).
    pub max_file_bytes: u64,
    /// Rotated files kept beside it (`retain_files`, default 10): with the default size, the
    /// trail on a node stays under 704 MiB.
    pub retain_files: u32,
    /// Events held in memory between `emit` and the writer (`queue_capacity`, default 10,000).
    pub queue_capacity: usize,
    /// Where events overflow when the sink is slow or failing (`spool_dir`, default
    /// `DATA_DIR/audit-spool`); sealed with the node's data key like the rest of the data dir.
    pub spool_dir: PathBuf,
    /// Bytes the spool may hold on disk (`spool_max_bytes`, default 256 MiB); beyond, events
    /// are dropped (`reason="spool_full"`).
    pub spool_max_bytes: u64,
    /// Longest time a line written to the sink waits for fdatasync (`flush_interval_ms`,
    /// default 1000): bounds what a machine crash can lose from the page cache.
    pub flush_interval_ms: u64,
}

impl AuditSettings {
    fn from_settings(s: &Settings, data_dir: &Path) -> anyhow::Result<Self> {
        let a = "audit";
        let out = AuditSettings {
            file: match s.get(a, "file").map(str::trim).filter(|f| !f.is_empty()) {
                None => Some(data_dir.join("audit").join("audit.jsonl")),
                Some(off) if off.eq_ignore_ascii_case("off") => None,
                Some(f) => Some(PathBuf::from(f)),
            },
            max_file_bytes: s.parse(a, "max_file_bytes", 64 << 20)?,
            retain_files: s.parse(a, "retain_files", 10)?,
            queue_capacity: s.parse(a, "queue_capacity", 10_000)?,
            spool_dir: s
                .get(a, "spool_dir")
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| data_dir.join("audit-spool")),
            spool_max_bytes: s.parse(a, "spool_max_bytes", 256 << 20)?,
            flush_interval_ms: s.parse(a, "flush_interval_ms", 1000)?,
        };
        // Two slots at least: the writer spools once the queue is more than half full.
        if out.queue_capacity < 2 || out.spool_max_bytes == 0 || out.flush_interval_ms == 0 || out.retain_files == 0 {
            bail!(
                "[audit] queue_capacity must be at least 2, spool_max_bytes, flush_interval_ms and retain_files \
                 positive"
            );
        }
        Ok(out)
    }
}

/// `[oauth2]` settings.
#[derive(Debug, Clone)]
pub struct OAuth2Settings {
    /// Seconds an access or id token lives (`access_token_lifetime`, default 900).
    pub access_token_lifetime_s: i64,
    /// Days a refresh family lives at most, however often it rotates (default 90).
    pub refresh_token_absolute_lifetime_days: i64,
    /// Seconds a device code stays usable (`device_code_lifetime`, default 600).
    pub device_code_lifetime_s: i64,
    /// Seconds a device client waits between polls at first (`device_poll_interval`, 5).
    pub device_poll_interval_s: i64,
    /// Seconds a staged signing key must have been published before a rotation promotes it
    /// (`key_publish_delay`, default 300: the `/jwks` cache lifetime).
    pub key_publish_delay_s: i64,
    /// Requests per second and source IP on token, device_authorization, revoke, introspect
    /// and userinfo (and per client on introspect); 0 disables (`rate_limit_per_second`,
    /// `rate_limit_burst`).
    pub rate_limit_per_second: u32,
    pub rate_limit_burst: u32,
}

impl OAuth2Settings {
    fn from_settings(s: &Settings) -> anyhow::Result<Self> {
        let o = "oauth2";
        let out = OAuth2Settings {
            access_token_lifetime_s: s.parse(o, "access_token_lifetime", 900)?,
            refresh_token_absolute_lifetime_days: s.parse(o, "refresh_token_absolute_lifetime_days", 90)?,
            device_code_lifetime_s: s.parse(o, "device_code_lifetime", 600)?,
            device_poll_interval_s: s.parse(o, "device_poll_interval", 5)?,
            key_publish_delay_s: s.parse(o, "key_publish_delay", 300)?,
            rate_limit_per_second: s.parse(o, "rate_limit_per_second", 5000)?,
            rate_limit_burst: s.parse(o, "rate_limit_burst", 10000)?,
        };
        if out.access_token_lifetime_s <= 0
            || out.refresh_token_absolute_lifetime_days <= 0
            || out.device_code_lifetime_s <= 0
            || out.device_poll_interval_s <= 0
            || out.key_publish_delay_s < 0
        {
            bail!("[oauth2] lifetimes and intervals must be positive");
        }
        Ok(out)
    }
}

impl Config {
    pub fn from_settings(s: &Settings) -> anyhow::Result<Self> {
        let i = "idnode";
        let data_dir = PathBuf::from(s.get(i, "data_dir").unwrap_or("./idnode-data"));
        let initial_cluster = parse_initial_cluster(s.get(i, "initial_cluster").unwrap_or(""))?;
        let cluster_secret = match (s.get(i, "cluster_secret"), s.get(i, "cluster_secret_file")) {
            (Some(v), _) if !v.trim().is_empty() => Some(v.trim().to_string()),
            (_, Some(f)) if !f.trim().is_empty() => Some(
                std::fs::read_to_string(f.trim())
                    .with_context(|| format!("reading cluster_secret_file {f}"))?
                    .trim()
                    .to_string(),
            ),
            _ => None,
        };
        let audit = AuditSettings::from_settings(s, &data_dir)?;
        let mut cfg = Config {
            node_id: s.parse(i, "node_id", 1)?,
            kek_file: s.get(i, "kek_file").map(PathBuf::from).unwrap_or_else(|| data_dir.join("kek.key")),
            data_dir,
            listen: s.get(i, "listen").unwrap_or("0.0.0.0:5000").to_string(),
            ops_listen: s.get(i, "ops_listen").unwrap_or("0.0.0.0:8099").to_string(),
            peer_listen: s.get(i, "peer_listen").unwrap_or("127.0.0.1:5099").to_string(),
            initial_cluster,
            form_cluster: match s.get(i, "initial_cluster_state").unwrap_or("new") {
                "new" => true,
                "existing" => false,
                other => bail!("initial_cluster_state must be new or existing, not {other:?}"),
            },
            public_url: s.get(i, "public_url").map(|u| u.trim_end_matches('/').to_string()),
            cluster_secret,
            kek: s.get(i, "kek").map(str::to_string),
            admin_password: s.get(i, "admin_password").map(str::to_string),
            bootstrap_by_import: match s.get(i, "bootstrap").unwrap_or("auto") {
                "auto" => false,
                "import" => true,
                other => bail!("bootstrap must be auto or import, not {other:?}"),
            },
            region: s.get(i, "region").unwrap_or("RegionOne").to_string(),
            token_expiration_s: s.parse("token", "expiration", 3600)?,
            allow_expired_window_s: s.parse("token", "allow_expired_window", 172800)?,
            token_max_active_keys: s.parse("token", "max_active_keys", 3)?,
            keys_reseal_rate: s.parse("keys", "reseal_rate", 20_000)?,
            password: idnode_keys::PasswordParams {
                memory_kib: s.parse("identity", "password_hash_memory_kib", 19 * 1024)?,
                iterations: s.parse("identity", "password_hash_iterations", 2)?,
                parallelism: s.parse("identity", "password_hash_parallelism", 1)?,
            },
            keystone_compat_status: s.flag("api", "keystone_compat_status", false)?,
            api_request_timeout_s: s.parse("api", "request_timeout_s", 30)?,
            api_max_concurrent_requests: s.parse("api", "max_concurrent_requests", 1024)?,
            admin_project_name: s.get("resource", "admin_project_name").unwrap_or("admin").to_string(),
            raft_heartbeat_ms: s.parse("raft", "heartbeat_ms", 100)?,
            raft_election_min_ms: s.parse("raft", "election_timeout_min_ms", 500)?,
            raft_election_max_ms: s.parse("raft", "election_timeout_max_ms", 1000)?,
            raft_snapshot_logs: s.parse("raft", "snapshot_logs_since_last", 10000)?,
            raft_snapshot_log_ratio: s.parse("raft", "snapshot_log_ratio", 0.5)?,
            raft_snapshot_catchup: s.parse("raft", "snapshot_catchup_entries", 50_000)?,
            raft_consistency_check_interval_s: s.parse("raft", "consistency_check_interval", 300)?,
            raft_storage_memory_mb: s.parse("raft", "storage_memory_mb", idnode_storage::MEMORY_BUDGET_BYTES >> 20)?,
            policy_directory: s.get("policy", "directory").map(str::trim).filter(|d| !d.is_empty()).map(PathBuf::from),
            policy_admin_scope: s
                .get("policy", "admin_scope")
                .map(|v| v.parse().map_err(|e| anyhow!("[policy] admin_scope: {e}")))
                .transpose()?
                .unwrap_or_default(),
            unified_limit_model: s
                .get("unified_limit", "enforcement_model")
                .map(|v| v.parse().map_err(|e| anyhow!("[unified_limit] enforcement_model: {e}")))
                .transpose()?
                .unwrap_or_default(),
            auth_rate_limit_per_second: s.parse("auth", "rate_limit_per_second", 50)?,
            auth_rate_limit_burst: s.parse("auth", "rate_limit_burst", 100)?,
            api_trusted_proxies: crate::http::client_ip::parse_list(s.get("api", "trusted_proxies").unwrap_or(""))
                .map_err(|e| anyhow!("[api] trusted_proxies: {e}"))?,
            security: crate::identity::compliance::Compliance::from_settings(s)?,
            oauth1_request_token_duration_s: s.parse("oauth1", "request_token_duration", 28800)?,
            oauth1_access_token_duration_s: s.parse("oauth1", "access_token_duration", 86400)?,
            totp_included_previous_windows: s.parse("totp", "included_previous_windows", 1)?,
            receipt_expiration_s: s.parse("receipt", "expiration", 300)?,
            oauth2: OAuth2Settings::from_settings(s)?,
            audit,
            shadow_registry: ShadowRegistrySettings::from_settings(s)?,
            scim: ScimSettings::from_settings(s)?,
            otlp: OtlpSettings::from_settings(s)?,
            tls: TlsFiles::from_settings(s)?,
            peer_tls: PeerTlsFiles::from_settings(s)?,
            passkey: Default::default(),
            federation: FederationSettings::from_settings(s)?,
            assignment: crate::openfga::settings::AssignmentDriver::from_sections(
                |k| s.get("assignment", k),
                |k| s.get("openfga", k),
                s.has_section("openfga"),
                |f| std::fs::read_to_string(f),
            )?,
            log: log::LogSettings::from_settings(s)?,
            key_schedule: key_schedule::KeySchedule::from_settings(s)?,
            warnings: Vec::new(),
        };
        cfg.passkey =
            crate::passkey::settings::PasskeySettings::from_section(|k| s.get("passkey", k), &cfg.public_base())?;
        cfg.validate()?;
        cfg.warnings = s.refuse_unknown()?;
        Ok(cfg)
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.token_expiration_s <= 0 {
            bail!("[token] expiration must be positive");
        }
        if self.totp_included_previous_windows > 10 {
            bail!("[totp] included_previous_windows must be from 0 to 10");
        }
        if self.receipt_expiration_s <= 0 {
            bail!("[receipt] expiration must be positive");
        }
        if self.token_max_active_keys < 2 {
            bail!("[token] max_active_keys must be at least 2 (a staged and a primary key)");
        }
        self.key_schedule.check_token(
            self.token_expiration_s,
            self.allow_expired_window_s,
            self.token_max_active_keys,
        )?;
        self.key_schedule.check_oidc(self.oauth2.key_publish_delay_s)?;
        if !(self.raft_snapshot_log_ratio.is_finite() && (0.0..=100.0).contains(&self.raft_snapshot_log_ratio)) {
            bail!("[raft] snapshot_log_ratio must be a number from 0 to 100");
        }
        if self.api_request_timeout_s == 0 || self.api_max_concurrent_requests == 0 {
            bail!("[api] request_timeout_s and max_concurrent_requests must be positive");
        }
        if !self.initial_cluster.is_empty() && !self.initial_cluster.contains_key(&self.node_id) {
            bail!("--initial-cluster does not name this node (--node-id {})", self.node_id);
        }
        if self.multi_node() && self.cluster_secret.is_none() {
            bail!(
                "--initial-cluster names other nodes, so a cluster secret is required: set IDNODE_CLUSTER_SECRET or cluster_secret_file"
            );
        }
        Ok(())
    }

    /// True when the node has (or will have) other members: `initial_cluster` names them, or
    /// it joins a running cluster.
    pub fn multi_node(&self) -> bool {
        self.initial_cluster.keys().any(|id| *id != self.node_id) || !self.form_cluster
    }

    /// The address other nodes dial for this node's peer listener.
    pub fn advertise_peer(&self) -> String {
        self.initial_cluster.get(&self.node_id).cloned().unwrap_or_else(|| self.peer_listen.clone())
    }

    /// The members to form the cluster with on first start.
    pub fn members(&self) -> BTreeMap<u64, String> {
        if self.initial_cluster.is_empty() {
            BTreeMap::from([(self.node_id, self.advertise_peer())])
        } else {
            self.initial_cluster.clone()
        }
    }

    /// The base URL clients reach this node at (for the catalog and links).
    pub fn public_base(&self) -> String {
        match &self.public_url {
            Some(u) => u.trim_end_matches("/v3").to_string(),
            None => {
                let scheme = if self.tls.is_some() { "https" } else { "http" };
                format!("{scheme}://{}", self.listen.replace("0.0.0.0", "127.0.0.1"))
            }
        }
    }
}

/// `1=host:port,2=host:port`
pub fn parse_initial_cluster(text: &str) -> anyhow::Result<BTreeMap<u64, String>> {
    let mut out = BTreeMap::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) =
            part.split_once('=').ok_or_else(|| anyhow!("initial cluster entry {part:?} is not ID=HOST:PORT"))?;
        let id: u64 =
            id.trim().parse().map_err(|_| anyhow!("initial cluster entry {part:?}: node id must be a number"))?;
        let addr = addr.trim();
        if !addr.contains(':') {
            bail!("initial cluster entry {part:?}: address must be HOST:PORT");
        }
        if out.insert(id, addr.to_string()).is_some() {
            bail!("initial cluster names node {id} twice");
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_overrides_and_sections() {
        let mut s = Settings::default();
        s.set("token", "expiration", "100");
        s.apply_env(
            vec![
                ("IDNODE_TOKEN_EXPIRATION".to_string(), "200".to_string()),
                ("IDNODE_DATA_DIR".to_string(), "/tmp/x".to_string()),
                ("IDNODE_API_KEYSTONE_COMPAT_STATUS".to_string(), "true".to_string()),
                ("OTHER".to_string(), "1".to_string()),
            ]
            .into_iter(),
        );
        let c = Config::from_settings(&s).unwrap();
        assert_eq!(c.token_expiration_s, 200);
        assert_eq!(c.data_dir, PathBuf::from("/tmp/x"));
        assert!(c.keystone_compat_status);
        assert_eq!(c.listen, "0.0.0.0:5000");
        assert_eq!((c.auth_rate_limit_per_second, c.auth_rate_limit_burst), (50, 100));
        assert_eq!(c.policy_directory, None);
        assert_eq!((c.api_request_timeout_s, c.api_max_concurrent_requests), (30, 1024));
        s.apply_env([("IDNODE_API_REQUEST_TIMEOUT_S".to_string(), "0".to_string())].into_iter());
        assert!(Config::from_settings(&s).is_err(), "a zero timeout would refuse every request");
    }

    #[test]
    fn the_snapshot_log_ratio_is_a_share_of_the_state() {
        let mut s = Settings::default();
        assert_eq!(Config::from_settings(&s).unwrap().raft_snapshot_log_ratio, 0.5);
        for (value, ok) in [("0", true), ("2.5", true), ("-1", false), ("NaN", false), ("inf", false), ("x", false)] {
            s.set("raft", "snapshot_log_ratio", value);
            assert_eq!(Config::from_settings(&s).is_ok(), ok, "{value}");
        }
    }

    #[test]
    fn policy_and_auth_sections_from_env() {
        let mut s = Settings::default();
        s.apply_env(
            vec![
                ("IDNODE_POLICY_DIRECTORY".to_string(), "/etc/idnode/policy.d".to_string()),
                ("IDNODE_AUTH_RATE_LIMIT_PER_SECOND".to_string(), "0".to_string()),
                ("IDNODE_AUTH_RATE_LIMIT_BURST".to_string(), "7".to_string()),
            ]
            .into_iter(),
        );
        let c = Config::from_settings(&s).unwrap();
        assert_eq!(c.policy_directory, Some(PathBuf::from("/etc/idnode/policy.d")));
        assert_eq!((c.auth_rate_limit_per_second, c.auth_rate_limit_burst), (0, 7));
        assert!(c.api_trusted_proxies.is_empty());
        s.apply_env([("IDNODE_API_TRUSTED_PROXIES".to_string(), "10.0.0.0/8,192.0.2.7".to_string())].into_iter());
        let c = Config::from_settings(&s).unwrap();
        assert_eq!(c.api_trusted_proxies, crate::http::client_ip::parse_list("10.0.0.0/8 192.0.2.7").unwrap());
        s.set("api", "trusted_proxies", "10.0.0.0/40");
        let err = Config::from_settings(&s).unwrap_err().to_string();
        assert!(err.contains("trusted_proxies"), "{err}");
        s.set("api", "trusted_proxies", "");
        s.set("auth", "rate_limit_burst", "-1");
        assert!(Config::from_settings(&s).is_err());
    }

    #[test]
    fn private_networks_for_providers_are_off_unless_set_in_the_file_or_the_environment() {
        let mut s = Settings::default();
        let c = Config::from_settings(&s).unwrap();
        assert!(!c.federation.allow_private_networks, "off by default");
        assert_eq!(c.federation.outbound_rate_limit, 600);
        s.apply_env(
            [
                ("IDNODE_FEDERATION_ALLOW_PRIVATE_NETWORKS".to_string(), "true".to_string()),
                ("IDNODE_FEDERATION_OUTBOUND_RATE_LIMIT".to_string(), "0".to_string()),
            ]
            .into_iter(),
        );
        let c = Config::from_settings(&s).unwrap();
        assert!(c.federation.allow_private_networks);
        assert_eq!(c.federation.outbound_rate_limit, 0);
        s.set("federation", "allow_private_networks", "maybe");
        assert!(Config::from_settings(&s).is_err());
    }

    #[test]
    fn tls_settings_go_together_and_cluster_variables_find_their_section() {
        let mut s = Settings::default();
        s.apply_env(
            vec![
                ("IDNODE_CLUSTER_SECRET".to_string(), "s3cret".to_string()),
                ("IDNODE_CLUSTER_PEER_TLS_CERT".to_string(), "/etc/idnode/peer.crt".to_string()),
                ("IDNODE_CLUSTER_PEER_TLS_KEY".to_string(), "/etc/idnode/peer.key".to_string()),
                ("IDNODE_CACERT".to_string(), "/tmp/ca.pem".to_string()),
            ]
            .into_iter(),
        );
        let err = Config::from_settings(&s).unwrap_err().to_string();
        assert!(err.contains("peer_tls_ca"), "two of three peer TLS files: {err}");
        s.set("cluster", "peer_tls_ca", "/etc/idnode/ca.crt");
        let c = Config::from_settings(&s).unwrap();
        assert_eq!(c.cluster_secret.as_deref(), Some("s3cret"), "IDNODE_CLUSTER_SECRET stays [idnode] cluster_secret");
        let files = c.peer_tls.clone().unwrap();
        assert_eq!(
            (files.cert.to_str(), files.ca.to_str()),
            (Some("/etc/idnode/peer.crt"), Some("/etc/idnode/ca.crt"))
        );
        assert_eq!((c.tls.clone(), c.public_base()), (None, "http://127.0.0.1:5000".to_string()));
        s.set("idnode", "tls_cert", "/etc/idnode/api.crt");
        assert!(Config::from_settings(&s).unwrap_err().to_string().contains("tls_key"));
        s.set("idnode", "tls_key", "/etc/idnode/api.key");
        assert_eq!(Config::from_settings(&s).unwrap().public_base(), "https://127.0.0.1:5000");
        s.set("cluster", "peer_tls_crt", "typo");
        let err = Config::from_settings(&s).unwrap_err().to_string();
        assert!(err.contains("[cluster] peer_tls_crt") && err.contains("did you mean peer_tls_c"), "{err}");
    }

    #[test]
    fn audit_section() {
        let mut s = Settings::default();
        s.set("idnode", "data_dir", "/var/lib/idnode");
        let c = Config::from_settings(&s).unwrap();
        assert_eq!(c.audit.file, Some(PathBuf::from("/var/lib/idnode/audit/audit.jsonl")), "a trail by default");
        assert_eq!((c.audit.max_file_bytes, c.audit.retain_files), (64 << 20, 10));
        assert_eq!(c.audit.spool_dir, PathBuf::from("/var/lib/idnode/audit-spool"));
        assert_eq!(
            (c.audit.queue_capacity, c.audit.spool_max_bytes, c.audit.flush_interval_ms),
            (10_000, 256 << 20, 1000)
        );
        s.apply_env(
            vec![
                ("IDNODE_AUDIT_FILE".to_string(), "/var/log/idnode/audit.jsonl".to_string()),
                ("IDNODE_AUDIT_QUEUE_CAPACITY".to_string(), "64".to_string()),
                ("IDNODE_AUDIT_SPOOL_DIR".to_string(), "/spool".to_string()),
            ]
            .into_iter(),
        );
        let c = Config::from_settings(&s).unwrap();
        assert_eq!(c.audit.file, Some(PathBuf::from("/var/log/idnode/audit.jsonl")));
        assert_eq!((c.audit.queue_capacity, c.audit.spool_dir.as_path()), (64, Path::new("/spool")));
        s.set("audit", "queue_capacity", "1");
        assert!(Config::from_settings(&s).is_err());
        s.set("audit", "queue_capacity", "64");
        s.set("audit", "retain_files", "0");
        assert!(Config::from_settings(&s).unwrap_err().to_string().contains("retain_files"));
        s.set("audit", "retain_files", "3");
        s.set("audit", "max_file_bytes", "0");
        s.set("audit", "file", "OFF");
        let c = Config::from_settings(&s).unwrap();
        assert_eq!((c.audit.file, c.audit.max_file_bytes, c.audit.retain_files), (None, 0, 3), "off only when said");
    }

    #[test]
    fn shadow_registry_in_the_keystone_section() {
        let mut s = Settings::default();
        let c = Config::from_settings(&s).unwrap();
        assert_eq!(
            c.shadow_registry,
            ShadowRegistrySettings {
                inactivity_days: 90,
                deactivation_check_interval_s: 86_400,
                archive_retention_days: 365,
                archive_cleanup_interval_s: 604_800,
                creation_rate_limit: 50,
                auth_rate_limit: 500,
                regex_timeout_ms: 2000.0,
                spiffe_audience: "idnode".into(),
            }
        );
        s.apply_env(
            vec![
                ("IDNODE_KEYSTONE_SHADOW_REGISTRY_ARCHIVE_RETENTION_DAYS".to_string(), "30".to_string()),
                ("IDNODE_KEYSTONE_SHADOW_REGISTRY_INACTIVITY_DAYS".to_string(), "7".to_string()),
            ]
            .into_iter(),
        );
        let c = Config::from_settings(&s).unwrap();
        assert_eq!((c.shadow_registry.archive_retention_days, c.shadow_registry.inactivity_days), (30, 7));
        s.set("keystone", "shadow_registry_archive_cleanup_interval", "0");
        assert!(Config::from_settings(&s).is_err());
    }

    #[test]
    fn initial_cluster_rules() {
        assert_eq!(parse_initial_cluster("1=a:1, 2=b:2").unwrap().len(), 2);
        assert!(parse_initial_cluster("x=a:1").is_err());
        assert!(parse_initial_cluster("1=a").is_err());
        assert!(parse_initial_cluster("1=a:1,1=b:2").is_err());
        let mut s = Settings::default();
        s.set("idnode", "initial_cluster", "1=a:1,2=b:2");
        let err = Config::from_settings(&s).unwrap_err().to_string();
        assert!(err.contains("cluster secret"), "{err}");
        s.set("idnode", "cluster_secret", "s3cret");
        assert!(Config::from_settings(&s).is_ok());
        s.set("idnode", "node_id", "9");
        assert!(Config::from_settings(&s).is_err());
    }

    #[test]
    fn unknown_keys_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("idnode.conf");
        std::fs::write(&p, "[token]\nexpiraton = 60\n[raft]\nheartbeat_ms = 50\n").unwrap();
        let err = Config::from_settings(&Settings::from_ini_file(&p).unwrap()).unwrap_err().to_string();
        assert!(err.contains("[token] expiraton") && err.contains("did you mean expiration?"), "{err}");
        assert!(err.contains(&p.display().to_string()) && !err.contains("heartbeat_ms"), "{err}");

        // A variable that names a section is as strict (src/config/settings.rs), named the
        // same way; one that names none is a warning.
        let mut s = Settings::default();
        let vars = [("IDNODE_RAFT_HEARTBEAT_MSS", "5"), ("IDNODE_LOG", "debug"), ("IDNODE_CONFIG", "/x")];
        s.apply_env(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let err = Config::from_settings(&s).unwrap_err().to_string();
        assert!(
            err.contains("[raft] heartbeat_mss (from IDNODE_RAFT_HEARTBEAT_MSS, did you mean heartbeat_ms?)"),
            "{err}"
        );
        assert!(!err.contains("IDNODE_LOG") && !err.contains("IDNODE_CONFIG"), "{err}");

        let mut s = Settings::default();
        s.apply_env([("IDNODE_DATADIR".to_string(), "/x".to_string())].into_iter());
        s.set("nosuch", "key", "1");
        s.set("nosuch", "other", "1");
        let err = Config::from_settings(&s).unwrap_err().to_string();
        assert!(err.starts_with("unknown configuration keys:"), "{err}");
        assert!(err.contains("[nosuch] key (from a flag)"), "{err}");
        assert!(!err.contains("IDNODE_DATADIR"), "{err}");
    }

    #[test]
    fn ini_file_sections() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("idnode.conf");
        std::fs::write(&p, "[idnode]\nlisten = 127.0.0.1:6000\n[token]\nexpiration = 60\n").unwrap();
        let c = Config::from_settings(&Settings::from_ini_file(&p).unwrap()).unwrap();
        assert_eq!(c.listen, "127.0.0.1:6000");
        assert_eq!(c.token_expiration_s, 60);
    }
}
