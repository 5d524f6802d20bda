//! `idnode-bench`: measures idnode (a 1-node and a 3-node cluster of real processes on loopback)
//! with `wrk` and the shared Keystone wrk script, and optionally the reference Python Keystone
//! with the same script in the same run. Prints a Markdown table on stdout (progress on stderr).
//!
//! It builds nothing: it runs an existing `idnode` binary (argument, `IDNODE_BIN`, or
//! `$CARGO_TARGET_DIR/debug/idnode`; the dev profile builds dependencies optimised).
//!
//! Workloads (each: a warm-up run, then a measured run, `wrk -t2 -c16` by default):
//!   validate  GET  /v3/auth/tokens   X-Auth-Token=admin, X-Subject-Token=bench-user token
//!   issue     POST /v3/auth/tokens   password, project-scoped (bench-user on bench-project)
//!   create    POST /v3/projects      unique names (lua MODE=project)
//!   oauth2_client_credentials  POST /v4/oauth2/default/token, client_credentials, HTTP Basic
//!   oauth2_introspect          POST /v4/oauth2/default/introspect, a fixed access token
//!   oauth2_introspect_unseen   the same over a pool of 20,000 tokens (each one not yet verified)
//!                              (idnode only: the reference Keystone has no OAuth2 provider;
//!                              form posts through bench/lua/form.lua, MODE=form)
//!   mapped_jwt  POST /v4/federation/identity_providers/{idp}/jwt, an ES256 IdP JWT through a
//!               20-rule ruleset whose last rule matches (idnode only; see `mapped.rs`)
//!   scim_create SCIM user creates through a realm's API key; scim_filter  `userName eq`
//!               lists on a 10,000-user realm (idnode only; see `scim.rs`)
//! On the 3-node cluster validate, create and the OAuth2 workloads also run against a follower.
//! `--ops` runs the operator benchmarks instead: failover time, backup and restore MB/s.
//! `--fga` measures what the OpenFGA assignment driver itself costs (see `fga.rs`).
//! `--passkey` runs the passkey benchmarks instead: start latency with and without a real
//! user behind it, full logins.
//! `--only oauth2` (name prefixes, comma separated) runs a subset.
//! Besides: idle RSS (VmRSS of the node processes, summed), RSS after load, cold start (spawn to
//! first `/ready` 200; for Keystone: run.sh's `cold_start_s`, start to first `GET /v3` 200).

mod api;
mod args;
mod cluster;
mod fga;
mod fill;
mod fixture;
mod idnode;
mod keystone_import;
mod mapped;
mod oauth2;
mod ops;
mod passkey;
mod probe;
mod reference;
mod report;
mod scim;
mod targets;
mod util;
mod workloads;
mod wrk;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use clap::Parser;

use crate::args::Args;
use crate::idnode::bench_idnode;
use crate::reference::bench_reference;
use crate::report::report;
use crate::util::progress;
use crate::wrk::{ensure_wrk, Wrk};

/// The form-post wrk script (the shared script plus `MODE=form`), written next to the output.
const FORM_LUA: &str = include_str!("../lua/form.lua");
const MEMBERS_LUA: &str = include_str!("../lua/members.lua");

fn find_idnode(arg: Option<&PathBuf>) -> Result<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(p) = arg {
        candidates.push(p.clone());
    } else {
        if let Some(p) = std::env::var_os("IDNODE_BIN") {
            candidates.push(PathBuf::from(p));
        }
        if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
            candidates.push(PathBuf::from(t).join("debug").join("idnode"));
        }
        candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/idnode"));
    }
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| anyhow!("no idnode binary at {candidates:?}: build it first (cargo build -p idnode)"))
}

fn find_reference(arg: Option<&PathBuf>) -> Result<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(p) = arg {
        candidates.push(p.clone());
    } else {
        candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tools/keystone-reference"));
        candidates.push(PathBuf::from("../shared/tools/keystone-reference"));
        candidates.push(PathBuf::from("/work/shared/tools/keystone-reference"));
    }
    candidates
        .iter()
        .find(|p| p.join("lua/keystone.lua").is_file())
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .ok_or_else(|| anyhow!("keystone-reference scripts not found at {candidates:?} (use --keystone-reference)"))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let args = Args::parse();
    // The benchmarks that replace the wrk run: each gets the binary and its output directory
    // and prints its own table.
    let special = if args.ops {
        Some("ops")
    } else if args.fill {
        Some("fill")
    } else if args.fga {
        Some("fga")
    } else if args.passkey {
        Some("passkey")
    } else if args.keystone_import {
        Some("keystone-import")
    } else {
        None
    };
    if let Some(name) = special {
        let bin = find_idnode(args.idnode.as_ref())?;
        let out = args.out.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("idnode-bench-{name}")));
        std::fs::create_dir_all(&out).with_context(|| format!("mkdir {}", out.display()))?;
        let table = match name {
            "ops" => ops::bench_ops(&bin, &out, args.ops_kills, args.ops_projects).await?,
            "fga" => fga::bench_fga(&bin, &out, args.fga_rounds).await?,
            "fill" => fill::bench_fill(&bin, &out, args.fill_projects, args.fill_window).await?,
            "keystone-import" => {
                let size = |i: usize| args.keystone_import_size.get(i).copied().unwrap_or(0);
                keystone_import::bench_keystone_import(&bin, &out, (size(0), size(1), size(2))).await?
            }
            _ => passkey::bench_passkey(&bin, &out, args.passkey_rounds).await?,
        };
        std::io::stdout().write_all(table.as_bytes()).context("write stdout")?;
        return Ok(());
    }
    let bin = if args.skip_idnode { PathBuf::new() } else { find_idnode(args.idnode.as_ref())? };
    let refdir = find_reference(args.keystone_reference.as_ref())?;
    ensure_wrk()?;
    let out = match &args.out {
        Some(o) => o.clone(),
        None => std::env::temp_dir().join(format!("idnode-bench-{}", chrono::Utc::now().format("%Y%m%dT%H%M%SZ"))),
    };
    std::fs::create_dir_all(&out).with_context(|| format!("mkdir {}", out.display()))?;
    progress(format!("idnode binary {}, output in {}", bin.display(), out.display()));
    let form_lua = out.join("form.lua");
    std::fs::write(&form_lua, FORM_LUA).with_context(|| format!("write {}", form_lua.display()))?;
    let members_lua = out.join("members.lua");
    std::fs::write(&members_lua, MEMBERS_LUA).with_context(|| format!("write {}", members_lua.display()))?;
    let wrk = Wrk {
        lua: refdir.join("lua/keystone.lua"),
        form_lua,
        members_lua,
        only: args.only.clone(),
        out: out.clone(),
        threads: args.threads,
        conns: args.conns,
        duration: args.duration,
        warmup: args.warmup,
    };
    let mut systems = Vec::new();
    let mut failures = Vec::new();
    let sizes: &[u32] = if args.skip_idnode { &[] } else { &args.sizes };
    for &n in sizes {
        match bench_idnode(&args, &bin, &wrk, n, &out).await {
            Ok(r) => systems.push(r),
            Err(e) => {
                progress(format!("idnode {n}-node run failed: {e:#}"));
                failures.push(format!("idnode {n} node(s): {e:#}"));
            }
        }
    }
    let reference = if args.reference {
        // same users in the same workloads: if idnode had to fall back to admin, so does Keystone
        let force_admin = systems.iter().any(|s| s.as_admin);
        match bench_reference(&args, &refdir, &wrk, &out, force_admin).await {
            Ok(r) => Some(r),
            Err(e) => {
                progress(format!("reference run failed: {e:#}"));
                failures.push(format!("reference Keystone: {e:#}"));
                None
            }
        }
    } else {
        None
    };
    let mut table = report(&args, &systems, reference.as_ref(), &out);
    if !failures.is_empty() {
        table.push_str("\nFailed runs:\n");
        for f in &failures {
            table.push_str(&format!("- {f}\n"));
        }
    }
    let mut stdout = std::io::stdout();
    stdout.write_all(table.as_bytes()).context("write stdout")?;
    std::fs::write(out.join("report.md"), &table).context("write report.md")?;
    if !failures.is_empty() {
        bail!("{} run(s) failed", failures.len());
    }
    Ok(())
}
