//! Command-line options.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

/// Where the load of the validate and create workloads goes on a cluster.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Members {
    /// The leader, and a follower in cases of their own (`validate_follower`, ...).
    #[default]
    Leader,
    /// Also spread over every member round robin, as a load balancer would (`validate_members`,
    /// `create_members`), with each member's share of the answers.
    All,
}

#[derive(Parser, Debug, Clone)]
#[command(name = "idnode-bench", about = "Benchmark idnode (1 and 3 nodes) against the reference Keystone with wrk")]
pub struct Args {
    /// Path of the idnode binary (default: $IDNODE_BIN, then $CARGO_TARGET_DIR/debug/idnode).
    pub idnode: Option<PathBuf>,
    /// Also run the workloads against the reference Python Keystone (memcached variant).
    #[arg(long)]
    pub reference: bool,
    /// `all`: also run validate and create spread over every member of a cluster (each
    /// member's share reported).
    #[arg(long, value_enum, default_value_t = Members::Leader)]
    pub members: Members,
    /// Measured seconds per workload.
    #[arg(long, default_value_t = 10)]
    pub duration: u64,
    /// Warm-up seconds per workload (not measured).
    #[arg(long, default_value_t = 3)]
    pub warmup: u64,
    /// wrk threads.
    #[arg(long, default_value_t = 2)]
    pub threads: u32,
    /// wrk connections.
    #[arg(long, default_value_t = 16)]
    pub conns: u32,
    /// Cluster sizes to measure, comma separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 3])]
    pub sizes: Vec<u32>,
    /// Directory of the shared keystone-reference scripts (lua/keystone.lua, setup.sh, run.sh, ...).
    #[arg(long)]
    pub keystone_reference: Option<PathBuf>,
    /// Where raw wrk output and node logs go (default: a new directory under the temp dir).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Measure only the reference Keystone (with --reference), no idnode cluster.
    #[arg(long)]
    pub skip_idnode: bool,
    /// Extra fixture users and projects (the reference fixture's N_EXTRA).
    #[arg(long, default_value_t = 10)]
    pub n_extra: u32,
    /// Run only these workloads, comma separated: a workload runs when its name equals or
    /// starts with one of them (`--only oauth2`, `--only validate,create`). Default: all.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Run the operator benchmarks instead (failover, backup, restore; see `ops.rs`).
    #[arg(long)]
    pub ops: bool,
    /// Leader kills of the failover benchmark.
    #[arg(long, default_value_t = 20)]
    pub ops_kills: u32,
    /// Run the passkey benchmarks instead (see `passkey.rs`).
    #[arg(long)]
    pub passkey: bool,
    /// Starts of each kind, and logins, per cluster size of the passkey benchmark.
    #[arg(long, default_value_t = 300)]
    pub passkey_rounds: usize,
    /// Run the Keystone import benchmark instead (see `keystone_import.rs`).
    #[arg(long)]
    pub keystone_import: bool,
    /// Users, projects and role assignments of the generated Keystone database.
    #[arg(long, value_delimiter = ',', default_values_t = [100_000u32, 10_000, 1_000_000])]
    pub keystone_import_size: Vec<u32>,
    /// Run the OpenFGA assignment driver benchmark instead (see `fga.rs`).
    #[arg(long)]
    pub fga: bool,
    /// Requests of each kind per driver in the OpenFGA benchmark.
    #[arg(long, default_value_t = 200)]
    pub fga_rounds: usize,
    /// Run the growing-state benchmark instead: the create rate from an empty state to
    /// `--fill-projects` (see `fill.rs`).
    #[arg(long)]
    pub fill: bool,
    /// Projects the growing-state benchmark ends with.
    #[arg(long, default_value_t = 1_000_000)]
    pub fill_projects: u32,
    /// Creates per measured window of the growing-state benchmark.
    #[arg(long, default_value_t = 50_000)]
    pub fill_window: u32,
    /// Projects in the state the backup and restore figures move.
    #[arg(long, default_value_t = 100_000)]
    pub ops_projects: u32,
}
