//! idnode: one binary, `idnode serve` runs a node.

mod account;
mod api_keys;
mod appcred;
mod assignment;
mod audit;
mod auth;
mod backup_cli;
mod backup_inspect;
mod build_info;
mod catalog;
mod cli;
mod clock;
mod cluster_cli;
mod cluster_members;
#[cfg(test)]
mod cluster_tests;
mod config;
mod context;
mod credential;
mod exit;
mod federation;
mod http;
mod identity;
mod import;
#[cfg(test)]
mod import_graph_tests;
mod jobs;
mod kek;
mod limits;
mod mapped_auth;
mod mapping;
mod oauth1;
mod oauth2;
mod openfga;
mod ops_client;
mod otlp;
mod output;
mod passkey;
mod policy;
mod providers;
mod reads;
mod resource;
mod restrictions;
mod rotation;
mod scim;
mod serve;
mod state;
#[cfg(test)]
mod testkit;
mod token;
mod trust;
mod web;

use std::path::PathBuf;

use clap::Parser;

use crate::cli::{Cli, Cmd, NodeArgs};
use crate::config::{Config, Settings};

fn load_config(cli_path: Option<PathBuf>, args: &NodeArgs) -> anyhow::Result<Config> {
    let path = cli_path
        .or_else(|| std::env::var_os("IDNODE_CONFIG").map(PathBuf::from))
        .or_else(|| Some(PathBuf::from("/etc/idnode/idnode.conf")).filter(|p| p.exists()));
    let mut settings = match path {
        Some(p) => Settings::from_ini_file(&p)?,
        None => Settings::default(),
    };
    settings.apply_env(std::env::vars());
    args.apply(&mut settings);
    Config::from_settings(&settings)
}

/// The configuration read before the log started (every command that needs one has one).
fn configured(config: Option<Config>) -> anyhow::Result<Config> {
    config.ok_or_else(|| anyhow::anyhow!("no configuration was read"))
}

fn main() -> std::process::ExitCode {
    serve::allocator::tune();
    idnode_keys::install_jwt_backend();
    let cli = Cli::parse();
    let command = cli.command.unwrap_or(Cmd::Serve(NodeArgs::default()));
    // A node's settings choose its log's shape, so they are read before the log starts.
    let config = match &command {
        Cmd::Serve(args) | Cmd::Bootstrap(args) | Cmd::Restore { node: args, .. } => {
            match load_config(cli.config.clone(), args) {
                Ok(c) => Some(c),
                Err(e) => {
                    eprintln!("idnode: {e:#}");
                    return std::process::ExitCode::FAILURE;
                }
            }
        }
        _ => None,
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("idnode: no async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // Traces only from a serving node (the other commands are short-lived tools).
    let traces = match (&command, &config) {
        (Cmd::Serve(_), Some(c)) => {
            Some(serve::logging::TraceTarget { otlp: &c.otlp, node_id: c.node_id, runtime: rt.handle().clone() })
        }
        _ => None,
    };
    let log = match serve::logging::init(config.as_ref().map(|c| c.log.format).unwrap_or_default(), traces) {
        Ok(log) => log,
        Err(e) => {
            eprintln!("idnode: the log could not start: {e:#}");
            return std::process::ExitCode::FAILURE;
        }
    };
    for warning in config.iter().flat_map(|c| &c.warnings) {
        tracing::warn!("{warning}");
    }
    let result = rt.block_on(async move {
        match command {
            Cmd::Serve(_) => serve::startup::serve(configured(config)?).await,
            Cmd::Bootstrap(_) => serve::startup::bootstrap_only(configured(config)?).await,
            Cmd::Cluster { action, endpoints, tls } => {
                let list = endpoints.list(Some("IDNODE_PEER_ENDPOINT"));
                cluster_cli::run(action, &list, &tls, cli.write_out).await
            }
            Cmd::Keys { action: cli::KeysCmd::RotateOidc { domain }, url, tls, .. } => {
                oauth2::rotate_cli::run(&domain, &url, &tls, cli.write_out.unwrap_or(output::Format::Json)).await
            }
            Cmd::Keys { action, endpoints, tls, .. } => {
                rotation::cli::run(action, &endpoints.list(None), &tls, cli.write_out).await
            }
            Cmd::Import { source: cli::ImportCmd::Keystone(args) } => import::cli::keystone(&args).await,
            Cmd::Backup { action: Some(cli::BackupCmd::Inspect { file }), .. } => {
                backup_inspect::run(&file, cli.write_out.unwrap_or(output::Format::Json))
            }
            Cmd::Backup { endpoints, out: Some(out), tls, .. } => {
                backup_cli::backup(&endpoints.list(None), &out, &tls, cli.write_out).await
            }
            Cmd::Backup { out: None, .. } => Err(anyhow::anyhow!("idnode backup needs --out FILE")),
            Cmd::Mapping { action: cli::MappingCmd::Test(args) } => {
                mapping::cli::test(&args, cli.write_out.unwrap_or(output::Format::Json))
            }
            Cmd::Restore { from, .. } => backup_cli::restore(&from, &configured(config)?, cli.write_out),
        }
    });
    // Written out before the error line, so that line is the last the process prints.
    drop(log);
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("idnode: {e:#}");
            std::process::ExitCode::from(exit::code_of(&e))
        }
    }
}
