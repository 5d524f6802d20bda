//! `idnode keys rotate --dek|--token`, `idnode keys rekey --kek-file FILE`, `idnode keys status`,
//! `idnode keys keystone-fernet --repository DIR|--remove`:
//! calls to nodes' ops listeners with the cluster credential. Prints each node's answer as JSON
//! (or one table row each with `-w table`); fails when any node refused (exit 4) or did not
//! answer (exit 3).

use std::time::Duration;

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::routes::{PATH_KEYS, PATH_KEYSTONE_FERNET, PATH_REKEY, PATH_ROTATE_DATA, PATH_ROTATE_TOKEN};
use crate::cli::{ClientTlsArgs, KeysCmd};
use crate::output::Format;
use idnode_keys::keystone_fernet::KeystoneFernetKeys;

pub async fn run(
    action: KeysCmd,
    endpoints: &[String],
    tls: &ClientTlsArgs,
    format: Option<Format>,
) -> anyhow::Result<()> {
    let format = format.unwrap_or(Format::Json);
    let secret = std::env::var("IDNODE_CLUSTER_SECRET")
        .ok()
        .filter(|s| !s.is_empty())
        .context("set IDNODE_CLUSTER_SECRET to the cluster's secret")?;
    let http = tls.apply(reqwest::Client::builder().timeout(Duration::from_secs(30)))?.build()?;
    let (method, path, body) = match &action {
        KeysCmd::Rotate { token: true, .. } => (reqwest::Method::POST, PATH_ROTATE_TOKEN, None),
        KeysCmd::Rotate { .. } => (reqwest::Method::POST, PATH_ROTATE_DATA, None),
        KeysCmd::Rekey { kek_file } => (reqwest::Method::POST, PATH_REKEY, Some(json!({"kek_file": kek_file}))),
        KeysCmd::Status => (reqwest::Method::GET, PATH_KEYS, None),
        KeysCmd::RotateOidc { .. } => bail!("rotate-oidc goes through the public API"),
        KeysCmd::KeystoneFernet { repository: Some(dir), .. } => {
            // Read here, where the repository is; each key is checked before it travels.
            let keys = KeystoneFernetKeys::read_repository(dir)?;
            KeystoneFernetKeys::new(&keys).with_context(|| format!("{}", dir.display()))?;
            (reqwest::Method::PUT, PATH_KEYSTONE_FERNET, Some(json!({"keys": keys})))
        }
        KeysCmd::KeystoneFernet { .. } => (reqwest::Method::DELETE, PATH_KEYSTONE_FERNET, None),
    };
    // The token rings are replicated: one node (the first that answers) changes them for the
    // whole cluster.
    let replicated = matches!(&action, KeysCmd::Rotate { token: true, .. } | KeysCmd::KeystoneFernet { .. });
    let mut failed = Vec::new();
    let mut unreachable = false;
    let mut answers = Vec::new();
    for endpoint in endpoints {
        let url = format!("{}{path}", endpoint.trim_end_matches('/'));
        // Each request is signed over its own method, path and body (and a fresh nonce).
        let bytes = match &body {
            Some(b) => serde_json::to_vec(b)?,
            None => Vec::new(),
        };
        let path = crate::ops_client::path_of(&url)?;
        // … and for the one member that answers at this endpoint.
        let to = match crate::ops_client::member_id(&http, endpoint).await {
            Ok(to) => to,
            Err(e) => {
                failed.push(format!("{endpoint}: {e:#}"));
                unreachable |= crate::exit::code_of(&e) == crate::exit::UNREACHABLE;
                if replicated {
                    eprintln!("{endpoint}: {e:#}; trying the next endpoint");
                } else {
                    answers.push(shown(format, json!({"endpoint": endpoint, "error": format!("{e:#}")}))?);
                }
                continue;
            }
        };
        let (name, value) = idnode_raft::sign_request(&secret, to, method.as_str(), &path, &bytes);
        let mut req = http.request(method.clone(), &url).header(name, value);
        if body.is_some() {
            req = req.header("content-type", "application/json").body(bytes);
        }
        let answer = match req.send().await {
            Ok(resp) => {
                let status = resp.status();
                let text = resp.text().await.unwrap_or_default();
                let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
                if replicated {
                    // Answered: the nodes skipped before it do not count as failures.
                    failed.clear();
                    unreachable = false;
                }
                if !status.is_success() {
                    failed.push(format!("{endpoint}: HTTP {status}"));
                }
                let answer = json!({"endpoint": endpoint, "status": status.as_u16(), "answer": body});
                if replicated {
                    answers.push(shown(format, answer)?);
                    break;
                }
                answer
            }
            Err(e) => {
                failed.push(format!("{endpoint}: {e}"));
                unreachable |= e.is_connect() || e.is_timeout();
                json!({"endpoint": endpoint, "error": e.to_string()})
            }
        };
        answers.push(shown(format, answer)?);
    }
    if format == Format::Table {
        crate::output::print(Format::Table, &Value::Array(answers))?;
    }
    match (failed.is_empty(), unreachable) {
        (true, _) => Ok(()),
        (false, true) => Err(crate::exit::unreachable(format!("unreachable: {}", failed.join("; ")))),
        (false, false) => Err(crate::exit::refused(format!("refused: {}", failed.join("; ")))),
    }
}

/// Prints a node's answer at once as JSON (as before `-w`); a table is printed at the end.
fn shown(format: Format, answer: Value) -> anyhow::Result<Value> {
    if format == Format::Json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    }
    Ok(answer)
}
