//! The SCIM workloads (idnode only: the reference Keystone has no SCIM), through the API-key
//! path of a realm (key → realm → ruleset grant → policy):
//!   scim_create  POST /SCIM/v2/{domain}/Users, a unique user per request (raft write);
//!   scim_filter  GET /SCIM/v2/{domain}/Users?filter=userName eq "…" on a realm of at least
//!                10,000 users (the creates' users, topped up first).
//! The write quota (`[keystone] scim_realm_write_rate_limit`) is off for the benchmark nodes
//! (`cluster.rs`): it measures the SCIM path, not the limiter.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};
use reqwest::{Client, Method};
use serde_json::{json, Value};

use crate::api::call_retry;
use crate::wrk::{Wrk, WrkResult};

const USER_URN: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
/// Users the filtered list runs against (at least).
const REALM_USERS: usize = 10_000;

async fn create(http: &Client, url: &str, admin: &str, body: &Value, what: &str) -> Result<Value> {
    let r = call_retry(http, Method::POST, url, Some(admin), Some(body)).await?;
    if !r.status.is_success() {
        bail!("create {what}: {} {}", r.status, r.text);
    }
    Ok(r.json)
}

fn id(v: &Value, kind: &str) -> Result<String> {
    v[kind]["id"].as_str().map(str::to_owned).ok_or_else(|| anyhow!("no {kind} id in {v}"))
}

/// A domain with a realm, its ruleset (manager on the domain) and a key; answers (domain, key).
async fn realm(http: &Client, base: &str, admin: &str) -> Result<(String, String)> {
    let d = id(
        &create(http, &format!("{base}/v3/domains"), admin, &json!({"domain": {"name": "bench-scim"}}), "domain")
            .await?,
        "domain",
    )?;
    let idp = create(
        http,
        &format!("{base}/v4/federation/identity_providers"),
        admin,
        &json!({"identity_provider": {"domain_id": d, "provider_id": "bench-okta", "issuer": "https://okta.bench.test",
                                      "client_id": "idnode", "jwks_uri": "https://okta.bench.test/jwks"}}),
        "identity provider",
    )
    .await?;
    let idp = id(&idp, "identity_provider")?;
    let realm =
        json!({"scim_realm": {"domain_id": d, "provider_id": "bench-scim", "idp_id": idp, "display_name": "bench"}});
    create(http, &format!("{base}/v4/scim-realms"), admin, &realm, "realm").await?;
    let roles = call_retry(http, Method::GET, &format!("{base}/v3/roles?name=manager"), Some(admin), None).await?;
    let manager = roles.json["roles"][0]["id"].as_str().ok_or_else(|| anyhow!("no manager role"))?.to_owned();
    let rule = json!({"name": "provisioning",
        "match": {"all_of": [{"type": "equals", "claim": "provider_id", "value": "bench-scim"}]},
        "identity": {"user_name": "scim-${claims.client_id}"},
        "authorizations": [{"type": "domain", "domain_id": d, "roles": [{"id": manager}]}]});
    let mapping = json!({"mapping": {"domain_id": d, "provider_id": "bench-scim",
                                     "source": {"type": "federation", "idp_id": idp}, "rules": [rule]}});
    create(http, &format!("{base}/v4/mappings"), admin, &mapping, "mapping").await?;
    let key = json!({"api_key": {"domain_id": d, "provider_id": "bench-scim", "expires_at": "2099-01-01T00:00:00Z"}});
    let key = create(http, &format!("{base}/v4/api-keys"), admin, &key, "API key").await?;
    let token = key["token"].as_str().ok_or_else(|| anyhow!("no key token"))?.to_owned();
    Ok((d, token))
}

async fn count_users(http: &Client, users: &str, bearer: &str) -> Result<usize> {
    let r = http.get(format!("{users}?count=0")).header("Authorization", bearer).send().await?;
    let v: Value = r.json().await?;
    v["totalResults"].as_u64().map(|n| n as usize).ok_or_else(|| anyhow!("no totalResults: {v}"))
}

/// Creates users `fill-{i}` until the realm holds `want` (at least one), 32 in flight;
/// answers the realm's size and the last user made.
async fn top_up(http: &Client, users: &str, bearer: &str, want: usize) -> Result<(usize, usize)> {
    let have = count_users(http, users, bearer).await?;
    let last = want.max(have + 1) - 1;
    let mut tasks = tokio::task::JoinSet::new();
    for i in have..=last {
        if tasks.len() >= 32 {
            if let Some(done) = tasks.join_next().await {
                done??;
            }
        }
        let body = json!({"schemas": [USER_URN], "externalId": format!("fill-{i}"),
                          "userName": format!("fill-{i}@bench.example"), "active": true});
        let req = http
            .post(users)
            .header("Authorization", bearer)
            .header("Content-Type", "application/scim+json")
            .body(body.to_string());
        tasks.spawn(async move {
            let r = req.send().await?;
            if r.status().as_u16() != 201 {
                bail!("topping the realm up: {} {}", r.status(), r.text().await.unwrap_or_default());
            }
            Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok((count_users(http, users, bearer).await?, last))
}

pub async fn run(
    w: &Wrk,
    http: &Client,
    base: &str,
    admin: &str,
    pids: &[u32],
    notes: &mut Vec<String>,
) -> Result<BTreeMap<&'static str, WrkResult>> {
    let mut cases = BTreeMap::new();
    if !w.wants("scim_create") && !w.wants("scim_filter") {
        return Ok(cases);
    }
    let (d, key) = realm(http, base, admin).await?;
    let bearer = format!("Bearer {key}");
    let users = format!("{base}/SCIM/v2/{d}/Users");
    let vars = [("MODE", "scim_user".to_owned()), ("BEARER", bearer.clone())];
    w.add(&mut cases, "scim_create", &users, &vars, pids).await?;
    if w.wants("scim_filter") {
        let (total, last) = top_up(http, &users, &bearer, REALM_USERS).await?;
        let filter = format!("userName%20eq%20%22fill-{last}%40bench.example%22");
        let url = format!("{users}?filter={filter}");
        let r = http.get(&url).header("Authorization", &bearer).send().await?;
        let v: Value = r.json().await?;
        if v["totalResults"] != json!(1) {
            bail!("the filtered list found {} users, not 1", v["totalResults"]);
        }
        let vars = [("MODE", "bearer_get".to_owned()), ("BEARER", bearer.clone())];
        w.add(&mut cases, "scim_filter", &url, &vars, pids).await?;
        notes.push(format!(
            "SCIM (idnode only): creates of a unique user each through a realm's API key (key, realm, ruleset \
             grant, policy, one raft write); filtered lists `userName eq` on a realm of {total} users"
        ));
    }
    Ok(cases)
}
