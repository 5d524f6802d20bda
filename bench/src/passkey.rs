//! `--passkey`: passkey logins (issue 12), with webauthn-authenticator-rs's software
//! authenticator standing in for the user's device, on one node and on three (there the
//! ceremony starts on one node and finishes on another).
//!   start latency for a user with a passkey, a user without one and an unknown user id, taken
//!   in turns: a decoy challenge must cost what a real one costs, or timing tells who exists;
//!   full logins (start, sign, finish): latency and sequential logins per second.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use reqwest::{Client, Method};
use serde_json::{json, Value};
use url::Url;
use webauthn_authenticator_rs::softtoken::SoftToken;
use webauthn_authenticator_rs::WebauthnAuthenticator;
use webauthn_rs_proto::{CreationChallengeResponse, RequestChallengeResponse};

use crate::api::{call, call_retry};
use crate::cluster::IdCluster;
use crate::ops::percentile;
use crate::util::{progress, random_hex};

fn ms(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (percentile(&v, 50.0) * 1000.0, percentile(&v, 99.0) * 1000.0)
}

async fn created(http: &Client, url: &str, admin: &str, body: Value) -> Result<Value> {
    let r = call_retry(http, Method::POST, url, Some(admin), Some(&body)).await?;
    if r.status.as_u16() != 201 {
        bail!("POST {url}: {} {}", r.status, r.text);
    }
    Ok(r.json)
}

/// One start; seconds taken, and the challenge.
async fn start(http: &Client, api: &str, user_id: &str) -> Result<(f64, Value)> {
    let t = Instant::now();
    let r = call(
        http,
        Method::POST,
        &format!("{api}/v4/auth/passkey/start"),
        None,
        Some(&json!({"passkey": {"user_id": user_id}})),
    )
    .await?;
    let took = t.elapsed().as_secs_f64();
    if r.status.as_u16() != 201 {
        bail!("passkey start: {} {}", r.status, r.text);
    }
    Ok((took, r.json))
}

/// The figures of one cluster size: Markdown table rows.
async fn measure(bin: &Path, dir: &Path, n: u32, rounds: usize) -> Result<String> {
    let mut c = IdCluster::new(bin, dir, n)?;
    // One origin for every node, as behind a load balancer.
    let port = Url::parse(&c.nodes[0].api)?.port().context("api port")?;
    let origin = Url::parse(&format!("http://localhost:{port}"))?;
    c.env.push(("IDNODE_PASSKEY_RP_ORIGIN".to_owned(), origin.as_str().trim_end_matches('/').to_owned()));
    c.start_all().await?;
    let result = async {
        let (http, api) = (c.http.clone(), c.nodes[0].api.clone());
        let finish_api = c.nodes[(n as usize).min(2) - 1].api.clone();
        let body = crate::api::password_body("admin", &c.admin_password, "admin");
        let admin = call_retry(&http, Method::POST, &format!("{api}/v3/auth/tokens"), None, Some(&body))
            .await?
            .subject_token
            .context("admin token")?;
        let mut users = Vec::new();
        for name in ["with", "without"] {
            let u = json!({"user": {"name": format!("pk-{name}-{}", random_hex(4)?), "domain_id": "default"}});
            let v = created(&http, &format!("{api}/v3/users"), &admin, u).await?;
            users.push(v["user"]["id"].as_str().context("user id")?.to_owned());
        }
        let (user, without) = (users[0].clone(), users[1].clone());
        let mut device = SoftToken::new(true).map_err(|e| anyhow::anyhow!("soft token: {e:?}"))?.0;
        let reg = created(&http, &format!("{api}/v4/users/{user}/passkeys/register_start"), &admin, json!({})).await?;
        let ccr: CreationChallengeResponse = serde_json::from_value(json!({"publicKey": reg["publicKey"]}))?;
        let cred = device.do_registration(origin.clone(), ccr).map_err(|e| anyhow::anyhow!("register: {e:?}"))?;
        created(
            &http,
            &format!("{finish_api}/v4/users/{user}/passkeys/register_finish"),
            &admin,
            serde_json::to_value(&cred)?,
        )
        .await?;

        let unknown = random_hex(16)?;
        let (mut real, mut none, mut missing) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            // Taken in turns, in a rotating order, so drift and warm-up fall on all three.
            for k in 0..3 {
                match (round + k) % 3 {
                    0 => real.push(start(&http, &api, &user).await?.0),
                    1 => none.push(start(&http, &api, &without).await?.0),
                    _ => missing.push(start(&http, &api, &unknown).await?.0),
                }
            }
        }
        let mut logins = Vec::new();
        let began = Instant::now();
        for _ in 0..rounds {
            let t = Instant::now();
            let (_, ch) = start(&http, &api, &user).await?;
            let rcr: RequestChallengeResponse = serde_json::from_value(json!({"publicKey": ch["publicKey"]}))?;
            let answer = device.do_authentication(origin.clone(), rcr).map_err(|e| anyhow::anyhow!("sign: {e:?}"))?;
            let r = call(
                &http,
                Method::POST,
                &format!("{finish_api}/v4/auth/passkey/finish"),
                None,
                Some(&serde_json::to_value(&answer)?),
            )
            .await?;
            if r.status.as_u16() != 201 || r.subject_token.is_none() {
                bail!("passkey finish: {} {}", r.status, r.text);
            }
            logins.push(t.elapsed().as_secs_f64());
        }
        let rate = rounds as f64 / began.elapsed().as_secs_f64();
        let (r, o, m, l) = (ms(real), ms(none), ms(missing), ms(logins));
        let nodes = if n == 1 { "1 node".to_owned() } else { format!("{n} nodes, finished on another node") };
        progress(format!("  {nodes}: start {:.2}/{:.2}/{:.2} ms, login {:.2} ms, {rate:.0}/s", r.0, o.0, m.0, l.0));
        Ok::<_, anyhow::Error>(format!(
            "| start, user with a passkey ({nodes}) | p50 {:.2} ms, p99 {:.2} ms |\n\
             | start, user without passkeys (decoy) | p50 {:.2} ms, p99 {:.2} ms |\n\
             | start, unknown user id (decoy) | p50 {:.2} ms, p99 {:.2} ms |\n\
             | full login: start, sign, finish | p50 {:.2} ms, p99 {:.2} ms; {rate:.0} logins/s sequential |\n",
            r.0, r.1, o.0, o.1, m.0, m.1, l.0, l.1
        ))
    }
    .await;
    c.kill_all().await;
    result
}

/// The `--passkey` run: a Markdown section with the figures.
pub async fn bench_passkey(bin: &Path, out: &Path, rounds: usize) -> Result<String> {
    let mut rows = String::new();
    for n in [1, 3] {
        let dir = out.join(format!("passkey-{n}"));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("rm -r {}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir)?;
        progress(format!("== passkeys ({n} node{}, {rounds} rounds)", if n == 1 { "" } else { "s" }));
        rows.push_str(&measure(bin, &dir, n, rounds).await?);
    }
    Ok(format!("## Passkeys\n\n| figure | value |\n|---|---|\n{rows}"))
}
