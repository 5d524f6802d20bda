//! What this binary is: the workspace's version and the commit it was built from (`build.rs`),
//! shown by `idnode --version`, `/v3` and `/v4` discovery and the `idnode_build_info` metric, so
//! an operator can tell which build every member of a rolling upgrade runs.

use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

/// The workspace version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git commit, or `unknown`.
pub const COMMIT: &str = env!("IDNODE_GIT_COMMIT");
/// `--version`'s line.
pub const LONG_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("IDNODE_GIT_COMMIT"), ")");

/// Registers `idnode_build_info{version, commit} 1`.
pub fn register(registry: &mut Registry) {
    let info =
        Info::new(vec![("version".to_string(), VERSION.to_string()), ("commit".to_string(), COMMIT.to_string())]);
    registry.register("idnode_build", "The idnode build this member runs", info);
}
