//! The clients: project creates (a set), token issue + revoke + validate, and password
//! changes with logins, sent through every member (the isolated ones too) while the nemesis
//! works. Every operation goes into the history; what can be judged at once (a listing that
//! lost a project it showed before) is judged at once.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::history::{History, Op, Outcome};
use crate::support::{Http, Resp};

/// What every client shares.
#[derive(Clone)]
pub struct Ctx {
    pub apis: Arc<Vec<String>>,
    pub http: Http,
    pub admin: String,
    pub history: Arc<History>,
    pub stop: Arc<AtomicBool>,
    pub run: String,
    /// This cycle's tag, so names stay unique from one cycle to the next.
    pub cycle: String,
    /// The domain this cycle's projects go to: one per cycle, so a listing costs the same in
    /// the hundredth cycle as in the first.
    pub domain_id: String,
    /// Listings that lost a project they had shown (member, the project): must stay empty.
    pub regressions: Arc<Mutex<Vec<(usize, String)>>>,
}

impl Ctx {
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    async fn send(
        &self,
        member: usize,
        method: Method,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Result<Resp, String> {
        let url = format!("{}{path}", self.apis[member]);
        self.http.request(method, &url, token, headers, body).await.map_err(|e| e.to_string())
    }

    /// Records an operation by `client` on `member` (`who`) that completes now.
    fn record(
        &self,
        (client, member): (usize, usize),
        f: &'static str,
        key: &str,
        arg: Option<String>,
        invoke_us: u64,
        outcome: Outcome,
    ) -> Outcome {
        let complete_us = self.history.now();
        self.history.push(Op {
            client,
            member,
            f,
            key: key.to_string(),
            arg,
            invoke_us,
            complete_us,
            outcome: outcome.clone(),
        });
        outcome
    }
}

/// A write's outcome from its answer: 2xx happened, 4xx did not, anything else is unknown.
fn write_outcome(r: &Result<Resp, String>) -> Outcome {
    match r {
        Ok(r) if r.status.is_success() => Outcome::Ok(None),
        Ok(r) if r.status.is_client_error() => {
            Outcome::Fail(format!("{} {}", r.status, r.text.chars().take(120).collect::<String>()))
        }
        Ok(r) => Outcome::Info(format!("{}", r.status)),
        Err(e) => Outcome::Info(e.clone()),
    }
}

/// Creates projects `jp-<run>-<cycle>-<client>-<n>` through `member` (one creator per member, so a
/// member that cannot answer holds up only its own creator).
pub async fn creator(ctx: Ctx, client: usize, member: usize) {
    let mut n = 0u64;
    while !ctx.stopped() {
        let name = format!("jp-{}-{}-{client}-{n}", ctx.run, ctx.cycle);
        let body = json!({"project": {"name": name, "domain_id": ctx.domain_id}});
        let at = ctx.history.now();
        let r = ctx.send(member, Method::POST, "/v3/projects", Some(&ctx.admin), &[], Some(&body)).await;
        ctx.record((client, member), "create", &name, None, at, write_outcome(&r));
        n += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Lists the run's projects on every member in turn; a project a member listed before and
/// no longer lists is a regression (a write visible, then gone).
pub async fn lister(ctx: Ctx, client: usize) {
    let mut seen: HashMap<usize, BTreeSet<String>> = HashMap::new();
    let prefix = format!("jp-{}-", ctx.run);
    let mut k = 0usize;
    while !ctx.stopped() {
        let member = k % ctx.apis.len();
        k += 1;
        let at = ctx.history.now();
        let url = format!("/v3/projects?domain_id={}", ctx.domain_id);
        let r = ctx.send(member, Method::GET, &url, Some(&ctx.admin), &[], None).await;
        let outcome = match &r {
            Ok(r) if r.status == StatusCode::OK => {
                let names: BTreeSet<String> = r.json["projects"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|p| p["name"].as_str())
                            .filter(|n| n.starts_with(&prefix))
                            .map(String::from)
                            .collect()
                    })
                    .unwrap_or_default();
                let before = seen.entry(member).or_default();
                for gone in before.difference(&names) {
                    ctx.regressions.lock().unwrap().push((member, gone.clone()));
                }
                let count = names.len();
                *before = names;
                Outcome::Ok(Some(count.to_string()))
            }
            other => write_outcome(other),
        };
        ctx.record((client, member), "list", "", None, at, outcome);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn password_login(user_id: &str, password: &str) -> Value {
    json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {"id": user_id, "password": password}}}}})
}

/// Issues a token for `user`, revokes it through another member, and validates it on every
/// member before and after: `validate` ops answer `valid` or `invalid`, per token key.
pub async fn tokens(ctx: Ctx, client: usize, user_id: String, password: String) {
    let mut n = 0usize;
    while !ctx.stopped() {
        let members = ctx.apis.len();
        let (a, b) = (n % members, (n + 1) % members);
        let key = format!("t{client}-{}-{n}", ctx.cycle);
        n += 1;
        let at = ctx.history.now();
        let r =
            ctx.send(a, Method::POST, "/v3/auth/tokens", None, &[], Some(&password_login(&user_id, &password))).await;
        let token = match &r {
            Ok(r) if r.status == StatusCode::CREATED => r.header("X-Subject-Token"),
            _ => None,
        };
        ctx.record(
            (client, a),
            "issue",
            &key,
            None,
            at,
            if token.is_some() { Outcome::Ok(None) } else { write_outcome(&r) },
        );
        let Some(token) = token else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        for m in 0..members {
            validate(&ctx, client, m, &key, &token).await;
        }
        let at = ctx.history.now();
        let r = ctx
            .send(b, Method::DELETE, "/v3/auth/tokens", Some(&ctx.admin), &[("X-Subject-Token", &token)], None)
            .await;
        ctx.record((client, b), "revoke", &key, None, at, write_outcome(&r));
        for _ in 0..2 {
            for m in 0..members {
                validate(&ctx, client, m, &key, &token).await;
            }
        }
    }
}

async fn validate(ctx: &Ctx, client: usize, member: usize, key: &str, token: &str) {
    validate_as(ctx, (client, member), "validate", key, None, token).await;
}

/// Validates `token` on `member`, recorded as an `f` operation: `valid` or `invalid`.
async fn validate_as(
    ctx: &Ctx,
    (client, member): (usize, usize),
    f: &'static str,
    key: &str,
    arg: Option<String>,
    token: &str,
) {
    let at = ctx.history.now();
    let r =
        ctx.send(member, Method::GET, "/v3/auth/tokens", Some(&ctx.admin), &[("X-Subject-Token", token)], None).await;
    let outcome = match &r {
        Ok(r) if r.status == StatusCode::OK => Outcome::Ok(Some("valid".into())),
        Ok(r) if r.status == StatusCode::NOT_FOUND => Outcome::Ok(Some("invalid".into())),
        Ok(r) => Outcome::Info(r.status.to_string()),
        Err(e) => Outcome::Info(e.clone()),
    };
    ctx.record((client, member), f, key, arg, at, outcome);
}

/// Changes `user`'s password again and again through each member in turn, and tries the
/// old and new passwords on every member after each change (`login` ops: `yes` or `no`).
pub async fn passwords(ctx: Ctx, client: usize, user_id: String, first: String) {
    // Passwords that may be the current one (more than one after a change of unknown outcome).
    let mut candidates = vec![first];
    // Tokens from the last round's logins (the member that issued each): every one of them
    // was issued before the next change was sent, so a change that returns ends them all.
    let mut sessions: Vec<(String, usize)> = Vec::new();
    let mut n = 0usize;
    let mut recorded = 0usize;
    while !ctx.stopped() {
        let members = ctx.apis.len();
        let member = n % members;
        let new = format!("Pw-{}-{client}-{n}-x", ctx.run);
        n += 1;
        let mut outcome = Outcome::Fail("no candidate".into());
        let mut tried = None;
        for original in candidates.clone() {
            let body = json!({"user": {"original_password": original, "password": new}});
            let at = ctx.history.now();
            let r = ctx
                .send(
                    member,
                    Method::POST,
                    &format!("/v3/users/{user_id}/password"),
                    Some(&ctx.admin),
                    &[],
                    Some(&body),
                )
                .await;
            outcome = ctx.record((client, member), "set_password", &user_id, Some(new.clone()), at, write_outcome(&r));
            recorded += 1;
            tried = Some(original);
            if !matches!(&r, Ok(r) if r.status == StatusCode::UNAUTHORIZED) {
                break;
            }
        }
        let changed = matches!(outcome, Outcome::Ok(_));
        match outcome {
            Outcome::Ok(_) => candidates = vec![new.clone()],
            Outcome::Info(_) => candidates.insert(0, new.clone()),
            Outcome::Fail(_) => {}
        }
        for (token, issuer) in std::mem::take(&mut sessions).into_iter().filter(|_| changed) {
            for m in 0..members {
                let issued = Some(format!("issued by member {issuer}"));
                validate_as(&ctx, (client, m), "session", &user_id, issued, &token).await;
                recorded += 1;
            }
        }
        let mut probes: Vec<String> = candidates.clone();
        if let Some(old) = tried {
            if !probes.contains(&old) {
                probes.push(old);
            }
        }
        for m in 0..members {
            for pw in &probes {
                let at = ctx.history.now();
                let r =
                    ctx.send(m, Method::POST, "/v3/auth/tokens", None, &[], Some(&password_login(&user_id, pw))).await;
                if let Some(token) =
                    r.as_ref().ok().filter(|r| r.status.is_success()).and_then(|r| r.header("X-Subject-Token"))
                {
                    sessions.push((token, m));
                }
                let outcome = match &r {
                    Ok(r) if r.status.is_success() => Outcome::Ok(Some("yes".into())),
                    Ok(r) if r.status == StatusCode::UNAUTHORIZED => Outcome::Ok(Some("no".into())),
                    Ok(r) => Outcome::Info(r.status.to_string()),
                    Err(e) => Outcome::Info(e.clone()),
                };
                ctx.record((client, m), "login", &user_id, Some(pw.clone()), at, outcome);
                recorded += 1;
            }
        }
        if recorded > 100 {
            // Long enough for the search (at most 128 operations a key): idle until the cycle
            // ends; the next cycle brings another user.
            while !ctx.stopped() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// A confidential browser client of the default domain's provider, and a client that does not
/// follow redirects (the code flow's pages).
pub struct OAuth {
    pub web: reqwest::Client,
    pub client_id: String,
    pub secret: String,
}

/// Rotates one refresh-token family through each member in turn (`rotate` ops, the token
/// presented as the argument) and introspects the rotated-away token on every member
/// (`introspect` ops: `active` or `inactive`). A rotation that did not surely happen ends the
/// family for this cycle (presenting its token again would be a reuse, which revokes it).
pub async fn refreshes(ctx: Ctx, client: usize, oauth: Arc<OAuth>, family: String, first: String) {
    let mut current = first;
    let mut n = 0usize;
    while !ctx.stopped() {
        let members = ctx.apis.len();
        let member = n % members;
        n += 1;
        let fields = [
            ("client_id", oauth.client_id.as_str()),
            ("client_secret", oauth.secret.as_str()),
            ("grant_type", "refresh_token"),
            ("refresh_token", current.as_str()),
        ];
        let at = ctx.history.now();
        let r = oauth_post(&oauth, &ctx.apis[member], "token", &fields).await;
        let outcome = match &r {
            Ok((StatusCode::OK, v)) => Outcome::Ok(v["refresh_token"].as_str().map(String::from)),
            Ok((s, v)) if s.is_client_error() => Outcome::Fail(format!("{s} {v}")),
            Ok((s, _)) => Outcome::Info(s.to_string()),
            Err(e) => Outcome::Info(e.clone()),
        };
        ctx.record((client, member), "rotate", &family, Some(current.clone()), at, outcome.clone());
        let Outcome::Ok(Some(next)) = outcome else {
            while !ctx.stopped() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            return;
        };
        let old = std::mem::replace(&mut current, next);
        for m in 0..members {
            let fields = [
                ("client_id", oauth.client_id.as_str()),
                ("client_secret", oauth.secret.as_str()),
                ("token", old.as_str()),
                ("token_type_hint", "refresh_token"),
            ];
            let at = ctx.history.now();
            let outcome = match oauth_post(&oauth, &ctx.apis[m], "introspect", &fields).await {
                Ok((StatusCode::OK, v)) if v["active"] == json!(true) => Outcome::Ok(Some("active".into())),
                Ok((StatusCode::OK, _)) => Outcome::Ok(Some("inactive".into())),
                Ok((s, _)) => Outcome::Info(s.to_string()),
                Err(e) => Outcome::Info(e),
            };
            ctx.record((client, m), "introspect", &family, Some(old.clone()), at, outcome);
        }
    }
}

async fn oauth_post(
    oauth: &OAuth,
    api: &str,
    what: &str,
    fields: &[(&str, &str)],
) -> Result<(StatusCode, Value), String> {
    let url = format!("{api}/v4/oauth2/default/{what}");
    let r = oauth.web.post(&url).form(fields).send().await.map_err(|e| e.to_string())?;
    let status = r.status();
    let text = r.text().await.map_err(|e| e.to_string())?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}
