//! The mapped-login workload (idnode only: the reference Keystone has no mapping engine):
//!   mapped_jwt  POST /v4/federation/identity_providers/{idp}/jwt, `Authorization: Bearer` an
//!               ES256 JWT of an IdP served on loopback, project scope asked; the provider's
//!               ruleset holds 20 rules and only the last matches (regex and equality
//!               conditions), so every request evaluates the whole ruleset.
//! The virtual user is created by a first login outside the measured run: repeated logins of
//! one workload then write nothing (see `mapped_auth::principal`). The per-provider rate
//! limits are off for the benchmark nodes (`cluster.rs`): it measures the login path, not the
//! limiter.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::{Client, Method};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::api::call_retry;
use crate::wrk::{Wrk, WrkResult};

const ISSUER: &str = "https://idp.bench.test";
const AUDIENCE: &str = "idnode-bench";
const RULES: usize = 20;

fn openssl(dir: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new("openssl").current_dir(dir).args(args).output().context("run openssl")?;
    if !out.status.success() {
        bail!("openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// A fresh P-256 key: the signer and its public JWK.
fn es256_key(dir: &Path) -> Result<(EncodingKey, Value)> {
    openssl(dir, &["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "idp.pem"])?;
    openssl(dir, &["pkcs8", "-topk8", "-nocrypt", "-in", "idp.pem", "-outform", "DER", "-out", "idp.der"])?;
    let der = std::fs::read(dir.join("idp.der")).context("read idp.der")?;
    let enc = EncodingKey::from_ec_der(&der);
    let mut jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&enc, Algorithm::ES256)?;
    jwk.common.key_id = Some("bench-1".into());
    Ok((enc, serde_json::to_value(jwk)?))
}

/// Serves `body` as the JWKS on loopback until the process ends; answers its URL.
async fn serve_jwks(body: String) -> Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
            });
        }
    });
    Ok(format!("http://{addr}/jwks"))
}

/// Rules 1–19 want another team; rule 20 wants team `bench` and a matching e-mail.
fn ruleset(idp: &str, project: &str, member: &str) -> Value {
    let mut rules: Vec<Value> = (1..RULES)
        .map(|i| {
            json!({"name": format!("team{i}"),
                   "match": {"all_of": [{"type": "equals", "claim": "team", "value": format!("team-{i}")},
                                        {"type": "matches_regex", "claim": "email", "regex": format!("^[a-z]+@team{i}\\.example$")}]},
                   "identity": {"identity_mode": "ephemeral", "user_name": "${claims.sub}"},
                   "authorizations": [{"type": "project", "project_id": project, "project_domain_id": "default",
                                       "roles": [{"id": member}]}]})
        })
        .collect();
    rules.push(json!({"name": "bench",
        "match": {"all_of": [{"type": "equals", "claim": "team", "value": "bench"},
                             {"type": "matches_regex", "claim": "email", "regex": "^[a-z-]+@bench\\.example$"}]},
        "identity": {"identity_mode": "ephemeral", "user_name": "${claims.sub}"},
        "authorizations": [{"type": "project", "project_id": project, "project_domain_id": "default",
                            "roles": [{"id": member}]}]}));
    json!({"mapping": {"mapping_id": "bench-mapped", "domain_id": "default", "provider_id": "bench-idp",
                       "source": {"type": "federation", "idp_id": idp}, "rules": rules}})
}

async fn create(http: &Client, url: &str, admin: &str, body: &Value, what: &str) -> Result<Value> {
    let r = call_retry(http, Method::POST, url, Some(admin), Some(body)).await?;
    if !r.status.is_success() {
        bail!("create {what}: {} {}", r.status, r.text);
    }
    Ok(r.json)
}

/// Sets up the IdP, the ruleset and the workload, then runs `mapped_jwt` on `base`.
pub async fn run(
    w: &Wrk,
    http: &Client,
    base: &str,
    admin: &str,
    pids: &[u32],
    notes: &mut Vec<String>,
) -> Result<BTreeMap<&'static str, WrkResult>> {
    let mut cases = BTreeMap::new();
    if !w.wants("mapped_jwt") {
        return Ok(cases);
    }
    let (key, jwk) = es256_key(&w.out)?;
    let jwks_uri = serve_jwks(json!({"keys": [jwk]}).to_string()).await?;
    let idp = create(
        http,
        &format!("{base}/v4/federation/identity_providers"),
        admin,
        &json!({"identity_provider": {"domain_id": "default", "provider_id": "bench-idp", "issuer": ISSUER,
                                      "client_id": AUDIENCE, "jwks_uri": jwks_uri}}),
        "identity provider",
    )
    .await?;
    let idp = idp["identity_provider"]["id"].as_str().ok_or_else(|| anyhow!("no idp id"))?.to_owned();
    let project = create(
        http,
        &format!("{base}/v3/projects"),
        admin,
        &json!({"project": {"name": "bench-mapped", "domain_id": "default"}}),
        "project",
    )
    .await?;
    let project = project["project"]["id"].as_str().ok_or_else(|| anyhow!("no project id"))?.to_owned();
    let roles = call_retry(http, Method::GET, &format!("{base}/v3/roles?name=member"), Some(admin), None).await?;
    let member = roles.json["roles"][0]["id"].as_str().ok_or_else(|| anyhow!("no member role"))?.to_owned();
    create(http, &format!("{base}/v4/mappings"), admin, &ruleset(&idp, &project, &member), "mapping").await?;

    let now = chrono::Utc::now().timestamp();
    let claims = json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "bench-workload", "team": "bench",
                        "email": "bench-workload@bench.example", "iat": now, "exp": now + 3 * 3600});
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("bench-1".into());
    let jwt = jsonwebtoken::encode(&header, &claims, &key)?;
    let bearer = format!("Bearer {jwt}");
    let body = json!({"auth": {"scope": {"project": {"id": project}}}}).to_string();
    let url = format!("{base}/v4/federation/identity_providers/{idp}/jwt");
    // The first login creates the virtual user (a replicated write) outside the measured run.
    let r = http.post(&url).header("Authorization", &bearer).body(body.clone()).send().await?;
    let status = r.status();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    let granted = v["token"]["roles"].as_array().is_some_and(|a| a.iter().any(|r| r["name"] == "member"));
    if !status.is_success() || !granted {
        bail!("the first mapped login: {status} {v}");
    }
    let vars = [("MODE", "bearer".to_owned()), ("BEARER", bearer), ("BEARER_BODY", body)];
    w.add(&mut cases, "mapped_jwt", &url, &vars, pids).await?;
    notes.push(format!(
        "mapped JWT logins (idnode only): an ES256 JWT ({} B) of a loopback IdP, a {RULES}-rule ruleset whose last \
         rule matches, an ephemeral principal, project scope; the first login (outside the run) answered {status} \
         with the mapped role",
        jwt.len()
    ));
    Ok(cases)
}
