//! Command line: `idnode serve | bootstrap | cluster …`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::Settings;

#[derive(Parser, Debug)]
#[command(name = "idnode", version = crate::build_info::LONG_VERSION, about = "Replicated identity service speaking the Keystone v3 API", after_help = crate::exit::HELP)]
pub struct Cli {
    /// INI configuration file (default: $IDNODE_CONFIG, else /etc/idnode/idnode.conf if present).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// How commands that print show what they got (as etcdctl's -w): `json` (the default of
    /// the commands scripts already parse) or `table` (the default of `cluster status --all`
    /// and `cluster move-leader`).
    #[arg(short = 'w', long = "write-out", global = true, value_enum)]
    pub write_out: Option<crate::output::Format>,
    #[command(subcommand)]
    pub command: Option<Cmd>,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Run a node (with no options: a one-node cluster in ./idnode-data).
    Serve(NodeArgs),
    /// Bootstrap the cluster (Default domain, admin project/user/roles, identity endpoint) and
    /// exit. `serve` also does this on first start; running it twice changes nothing.
    Bootstrap(NodeArgs),
    /// Cluster membership and status, through nodes' ops listeners with the cluster secret
    /// (IDNODE_CLUSTER_SECRET). A bare `HOST:PORT` endpoint is a peer listener (the old form).
    Cluster {
        #[command(subcommand)]
        action: ClusterCmd,
        #[command(flatten)]
        endpoints: EndpointArgs,
        /// With peer TLS: `--cacert` the cluster's CA, `--cert`/`--key` a member's certificate.
        #[command(flatten)]
        tls: ClientTlsArgs,
    },
    /// Online backup of the cluster's state through any node's ops listener (the cluster
    /// secret in IDNODE_CLUSTER_SECRET proves the call and seals the file). The backup holds
    /// every write acknowledged before it began. `backup inspect FILE` reads a backup offline.
    #[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
    Backup {
        #[command(subcommand)]
        action: Option<BackupCmd>,
        #[command(flatten)]
        endpoints: EndpointArgs,
        /// The file to write (never overwritten).
        #[arg(long, required = true)]
        out: Option<PathBuf>,
        #[command(flatten)]
        tls: ClientTlsArgs,
    },
    /// Seed a new member's empty data directory from a backup (like `etcdutl snapshot
    /// restore`): run it for every member of the new cluster with the same
    /// --initial-cluster, then start them all with `serve`.
    Restore {
        /// The backup file.
        #[arg(long)]
        from: PathBuf,
        #[command(flatten)]
        node: NodeArgs,
    },
    /// Move another identity service's records, ids unchanged, into the cluster through a
    /// node's ops listener (the cluster secret in IDNODE_CLUSTER_SECRET proves the calls).
    /// Idempotent; never overwrites (conflicts are reported and skipped).
    Import {
        #[command(subcommand)]
        source: ImportCmd,
    },
    /// Key rotation. `rotate` and `rekey` go through nodes' ops listeners with the cluster
    /// secret (IDNODE_CLUSTER_SECRET); `rotate-oidc` through the public API as a cloud
    /// administrator: the token in `OS_TOKEN`, or a password login from `OS_USERNAME` (default
    /// admin), `OS_PASSWORD`, `OS_PROJECT_NAME` (default admin), `OS_USER_DOMAIN_ID` /
    /// `OS_PROJECT_DOMAIN_ID` (default).
    Keys {
        #[command(subcommand)]
        action: KeysCmd,
        /// The node's public API base URL (`rotate-oidc`).
        #[arg(long, global = true, default_value = "http://127.0.0.1:5000", env = "OS_AUTH_URL")]
        url: String,
        /// The nodes to act on (`rotate --dek`, `rekey`, `status`: each listed node; the
        /// others: the first that answers).
        #[command(flatten)]
        endpoints: EndpointArgs,
        #[command(flatten)]
        tls: ClientTlsArgs,
    },
    /// Mapping rulesets offline (`mapping test`).
    Mapping {
        #[command(subcommand)]
        action: MappingCmd,
    },
}

/// `idnode backup …` offline.
#[derive(Subcommand, Debug)]
pub enum BackupCmd {
    /// What a backup file is, without the cluster secret: format, id, when and on which member
    /// it was taken, the cluster and log position it holds, its size and whether its checksum
    /// holds (JSON; exits non-zero for a file that is not a complete backup).
    Inspect { file: PathBuf },
}

/// `idnode mapping …`: mapping rulesets, offline.
#[derive(Subcommand, Debug)]
pub enum MappingCmd {
    /// Evaluate a ruleset against claims with no node (as `keystone-manage mapping_engine`):
    /// prints the user, groups and authorizations it gives (JSON); exits non-zero when the
    /// ruleset is invalid or no rule matches.
    Test(crate::mapping::cli::TestArgs),
}

/// What `idnode import` reads.
#[derive(Subcommand, Debug)]
pub enum ImportCmd {
    /// A Keystone deployment (2023.1 or later): its database, read directly, and its fernet
    /// key repository; ids, password hashes and tokens keep working (docs/operations.md,
    /// "Moving from Keystone").
    Keystone(KeystoneImportArgs),
}

#[derive(Args, Debug)]
pub struct KeystoneImportArgs {
    /// Keystone's database: a SQLite file, or `mysql://user:password@host/keystone` (MariaDB
    /// too), as in its `[database] connection` without the driver suffix.
    #[arg(long)]
    pub database: String,
    /// Keystone's fernet key repository (`[fernet_tokens] key_repository`): its tokens keep
    /// validating until they expire.
    #[arg(long)]
    pub fernet_keys: Option<PathBuf>,
    /// Keystone's credential key repository (`[credential] key_repository`), with which its
    /// credentials (EC2 ones too) are opened; needed when it holds any.
    #[arg(long)]
    pub credential_keys: Option<PathBuf>,
    /// Keystone's `[auth] methods`, comma separated, when they are not its defaults: their
    /// order numbers the methods inside its tokens.
    #[arg(long, value_delimiter = ',')]
    pub auth_methods: Option<Vec<String>>,
    /// Print what would move and what would be skipped, per kind, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Records per replicated batch.
    #[arg(long, default_value_t = 2000)]
    pub batch: usize,
    /// The administrator a cluster started with `bootstrap = import` is bootstrapped with.
    #[arg(long, default_value = "admin")]
    pub admin_user: String,
    /// The administrator's project (in the default domain).
    #[arg(long, default_value = "admin")]
    pub admin_project: String,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
    /// Also write the final report as JSON to this file.
    #[arg(long)]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub tls: ClientTlsArgs,
}

/// Where an operator command finds the cluster (`--endpoints`, as etcdctl's).
#[derive(Args, Debug, Default, Clone)]
pub struct EndpointArgs {
    /// Ops listeners of the nodes, comma separated (`http[s]://HOST:PORT`; default
    /// http://127.0.0.1:8099, or $IDNODE_ENDPOINT). A command that needs one node tries them
    /// in order until one answers.
    #[arg(long = "endpoints", alias = "endpoint", global = true, env = "IDNODE_ENDPOINTS", value_delimiter = ',')]
    endpoints: Option<Vec<String>>,
}

impl EndpointArgs {
    /// The list given, else `$IDNODE_ENDPOINT` (the older variable), else `fallback_env` (the
    /// cluster commands' old `$IDNODE_PEER_ENDPOINT`), else the local node's ops listener.
    pub fn list(&self, fallback_env: Option<&str>) -> Vec<String> {
        let from_env = |name: &str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .map(|v| v.split(',').map(str::to_string).collect())
        };
        let given = self.endpoints.clone().filter(|l| !l.is_empty());
        given
            .or_else(|| from_env("IDNODE_ENDPOINT"))
            .or_else(|| fallback_env.and_then(from_env))
            .unwrap_or_else(|| vec!["http://127.0.0.1:8099".to_string()])
            .into_iter()
            .map(|e| e.trim().to_string())
            .filter(|e| !e.is_empty())
            .collect()
    }
}

/// TLS of an operator command's calls: the CA that signed an `https://` endpoint's
/// certificate (`[idnode] tls_cert`), or with peer TLS the cluster's CA plus a member's
/// certificate and key (like etcdctl's `--cacert`, `--cert`, `--key`).
#[derive(Args, Debug, Default, Clone)]
pub struct ClientTlsArgs {
    /// CA certificate (PEM) to trust instead of the system's roots.
    #[arg(long, global = true, env = "IDNODE_CACERT")]
    pub cacert: Option<PathBuf>,
    /// Client certificate (PEM) to present (a peer listener with mutual TLS asks for one).
    #[arg(long, global = true, env = "IDNODE_CLIENT_CERT", requires_all = ["key", "cacert"])]
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, global = true, env = "IDNODE_CLIENT_KEY", requires = "cert")]
    pub key: Option<PathBuf>,
}

impl ClientTlsArgs {
    /// None without `--cacert` (plain HTTP, or HTTPS trusting the system's roots).
    pub fn load(&self) -> anyhow::Result<Option<idnode_raft::ClientTls>> {
        let Some(ca) = &self.cacert else { return Ok(None) };
        let cert_key = self.cert.as_deref().zip(self.key.as_deref());
        idnode_raft::ClientTls::from_files(ca, cert_key).map(Some)
    }

    /// A client builder trusting `--cacert` (and presenting `--cert`) when given.
    pub fn apply(&self, builder: reqwest::ClientBuilder) -> anyhow::Result<reqwest::ClientBuilder> {
        match self.load()? {
            Some(tls) => tls.apply(builder),
            None => Ok(builder),
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum KeysCmd {
    /// Rotate a domain's OAuth2/OIDC signing keys: the staged key (published in /jwks since it
    /// was made) starts signing, the old one stays published until its tokens expire, and a new
    /// key is staged.
    RotateOidc {
        #[arg(long)]
        domain: String,
    },
    /// `--token`: rotate the cluster's token keys (staged → primary → secondary, through raft;
    /// one endpoint is enough). `--dek`: give each named node a new data key; it re-seals its
    /// stored data in the background (`idnode_keys_reseal_*` metrics) and then forgets the old one.
    Rotate {
        #[arg(long, conflicts_with = "token", required_unless_present = "token")]
        dek: bool,
        #[arg(long)]
        token: bool,
    },
    /// Re-wrap each named node's key ring under the key-encryption key in FILE (a path on that
    /// node; the key never travels). Start the node with that KEK from then on.
    Rekey {
        #[arg(long)]
        kek_file: PathBuf,
    },
    /// Data-key epochs, re-sealing progress and token key states of each named node.
    Status,
    /// Import a Keystone fernet key repository (the directory `keystone-manage fernet_setup`
    /// writes), so tokens Keystone issued before the move keep validating until they expire;
    /// `--remove` forgets it. Replicated: one endpoint is enough.
    KeystoneFernet {
        #[arg(long, conflicts_with = "remove", required_unless_present = "remove")]
        repository: Option<PathBuf>,
        #[arg(long)]
        remove: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum ClusterCmd {
    /// Leader, term, members and replication progress as one node sees them; with `--all`,
    /// every member asked at the listed endpoints, one row each (as `etcdctl endpoint status
    /// --cluster`): exits 3 when one did not answer.
    Status {
        #[arg(long)]
        all: bool,
    },
    /// Add a node as a non-voting learner (it receives the log, then can be promoted).
    AddLearner { id: u64, peer_addr: String },
    /// Make a learner a voter.
    Promote { id: u64 },
    /// Remove a voter or learner.
    Remove { id: u64 },
    /// Compare every member's state digest at one log index (like etcd's hash check). Prints
    /// the report; exits 4 unless every member answered with the same digest.
    Check {
        /// Seconds each member may take to apply the checkpoint and digest its state.
        #[arg(long, default_value_t = 30)]
        wait_secs: u64,
    },
    /// Move leadership to voter ID (it campaigns until it leads). Prints the new leader;
    /// exits 4 when ID is not a voter or did not win within the timeout.
    MoveLeader {
        id: u64,
        /// Seconds the move may take (at most 30).
        #[arg(long, default_value_t = 10)]
        timeout_secs: u64,
    },
}

#[derive(Args, Debug, Default, Clone)]
pub struct NodeArgs {
    #[arg(long)]
    pub node_id: Option<u64>,
    /// `1=HOST:PEERPORT,2=HOST:PEERPORT,…` (like etcd's --initial-cluster).
    #[arg(long)]
    pub initial_cluster: Option<String>,
    /// `new` forms the cluster from --initial-cluster; `existing` joins one (wait to be added).
    #[arg(long, value_parser = ["new", "existing"])]
    pub initial_cluster_state: Option<String>,
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Public API listener (default 0.0.0.0:5000).
    #[arg(long)]
    pub listen: Option<String>,
    /// /health, /ready, /metrics listener (default 0.0.0.0:8099).
    #[arg(long)]
    pub ops_listen: Option<String>,
    /// Raft peer listener (default 127.0.0.1:5099).
    #[arg(long)]
    pub peer_listen: Option<String>,
    /// Base URL of the identity endpoint in the catalog (default: from --listen).
    #[arg(long)]
    pub public_url: Option<String>,
}

impl NodeArgs {
    /// Flags win over the file and the environment.
    pub fn apply(&self, s: &mut Settings) {
        let i = "idnode";
        let pairs = [
            ("node_id", self.node_id.map(|v| v.to_string())),
            ("initial_cluster", self.initial_cluster.clone()),
            ("initial_cluster_state", self.initial_cluster_state.clone()),
            ("data_dir", self.data_dir.as_ref().map(|p| p.display().to_string())),
            ("listen", self.listen.clone()),
            ("ops_listen", self.ops_listen.clone()),
            ("peer_listen", self.peer_listen.clone()),
            ("public_url", self.public_url.clone()),
        ];
        for (k, v) in pairs {
            if let Some(v) = v {
                s.set(i, k, &v);
            }
        }
    }
}
