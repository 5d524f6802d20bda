//! The OS-OAUTH1 delegation flow through the real router, signed exactly as tempest's
//! `oauth_token_client` signs (its own small HMAC-SHA1 signer, independent of the server's).

use std::collections::HashMap;

use axum::http::{Method, StatusCode};
use base64::Engine;
use hmac::{Hmac, Mac};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{json, Value};
use sha1::Sha1;

use crate::state::Reader;
use crate::testkit::{send_with_headers, Reply, TestNode};

const HOST: &str = "127.0.0.1:5000";
const SAFE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

fn esc(s: &str) -> String {
    utf8_percent_encode(s, SAFE).to_string()
}

/// tempest's `_generate_params_with_signature` + `_generate_oauth_header`.
pub(crate) fn oauth_header(
    uri: &str,
    consumer: (&str, &str),
    token: Option<(&str, &str)>,
    callback: Option<&str>,
    verifier: Option<&str>,
) -> String {
    let ts = chrono::Utc::now().timestamp().to_string();
    let nonce = format!("{}{ts}", rand::random::<u64>());
    let mut params: Vec<(String, String)> = vec![
        ("oauth_nonce".into(), nonce),
        ("oauth_timestamp".into(), ts),
        ("oauth_version".into(), "1.0".into()),
        ("oauth_signature_method".into(), "HMAC-SHA1".into()),
        ("oauth_consumer_key".into(), consumer.0.into()),
    ];
    if let Some((key, _)) = token {
        params.push(("oauth_token".into(), key.into()));
    }
    if let Some(c) = callback {
        params.push(("oauth_callback".into(), c.into()));
    }
    if let Some(v) = verifier {
        params.push(("oauth_verifier".into(), v.into()));
    }
    let mut kv: Vec<(String, String)> = params.iter().map(|(k, v)| (esc(k), esc(v))).collect();
    kv.sort();
    let normalized = kv.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&");
    let base = format!("POST&{}&{}", esc(uri), esc(&normalized));
    let key = format!("{}&{}", esc(consumer.1), esc(token.map(|t| t.1).unwrap_or("")));
    let mut mac = <Hmac<Sha1> as Mac>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(base.as_bytes());
    let sig = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    params.push(("oauth_signature".into(), sig));
    let parts: Vec<String> = params.iter().map(|(k, v)| format!("{}=\"{}\"", esc(k), esc(v))).collect();
    format!("OAuth {}", parts.join(", "))
}

pub(crate) fn form(r: &Reply) -> HashMap<String, String> {
    r.text.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

struct Flow {
    t: TestNode,
    user_id: String,
    project_id: String,
    consumer: (String, String),
}

impl Flow {
    async fn start() -> Flow {
        let t = TestNode::start().await;
        let me = t.admin(Method::GET, &format!("/v3/auth/tokens#{}", t.admin), None).await;
        let user_id = me.body["token"]["user"]["id"].as_str().unwrap().to_string();
        let project_id = me.body["token"]["project"]["id"].as_str().unwrap().to_string();
        let mut f = Flow { t, user_id, project_id, consumer: (String::new(), String::new()) };
        f.consumer = f.new_consumer().await;
        f
    }

    async fn new_consumer(&self) -> (String, String) {
        let r = self.t.admin(Method::POST, "/v3/OS-OAUTH1/consumers", Some(json!({"consumer": {}}))).await;
        let c = &r.body["consumer"];
        (c["id"].as_str().unwrap().to_string(), c["secret"].as_str().unwrap().to_string())
    }

    async fn post(&self, path: &str, host: &str, auth: &str, project: Option<&str>) -> Reply {
        let mut headers = vec![("host", host), ("authorization", auth)];
        if let Some(p) = project {
            headers.push(("requested-project-id", p));
        }
        send_with_headers(&self.t.router, Method::POST, path, &headers, None).await
    }

    async fn request_token(&self, consumer: (&str, &str), signed_host: &str, project: Option<&str>) -> Reply {
        let uri = format!("http://{signed_host}/v3/OS-OAUTH1/request_token");
        let auth = oauth_header(&uri, consumer, None, Some("oob"), None);
        self.post("/v3/OS-OAUTH1/request_token", HOST, &auth, project).await
    }

    async fn authorize(&self, request_token: &str, role_ids: &[String]) -> Reply {
        let roles: Vec<Value> = role_ids.iter().map(|r| json!({"id": r})).collect();
        let path = format!("/v3/OS-OAUTH1/authorize/{request_token}");
        self.t.admin(Method::PUT, &path, Some(json!({ "roles": roles }))).await
    }

    async fn access_token(&self, consumer: (&str, &str), request: (&str, &str), verifier: &str) -> Reply {
        let uri = format!("http://{HOST}/v3/OS-OAUTH1/access_token");
        let auth = oauth_header(&uri, consumer, Some(request), None, Some(verifier));
        self.post("/v3/OS-OAUTH1/access_token", HOST, &auth, None).await
    }

    async fn my_role_ids(&self) -> Vec<String> {
        let path = format!("/v3/projects/{}/users/{}/roles", self.project_id, self.user_id);
        let r = self.t.admin(Method::GET, &path, None).await;
        r.body["roles"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
    }

    /// Request, authorize and exchange: the access token's form fields.
    async fn delegate(&self, consumer: (&str, &str)) -> HashMap<String, String> {
        let r = self.request_token(consumer, HOST, Some(&self.project_id)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let req = form(&r);
        let v = self.authorize(&req["oauth_token"], &self.my_role_ids().await).await;
        assert_eq!(v.status, StatusCode::OK, "{}", v.body);
        let verifier = v.body["token"]["oauth_verifier"].as_str().unwrap();
        let r = self.access_token(consumer, (&req["oauth_token"], &req["oauth_token_secret"]), verifier).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        form(&r)
    }

    fn consumer(&self) -> (&str, &str) {
        (&self.consumer.0, &self.consumer.1)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_token_checks_signature_consumer_and_project() {
    let f = Flow::start().await;
    let r = f.request_token(f.consumer(), HOST, Some(&f.project_id)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.headers["content-type"], "application/x-www-form-urlencoded");
    let got = form(&r);
    assert_eq!(got["oauth_token"].len(), 32);
    assert_eq!(got["oauth_token_secret"].len(), 32);
    assert!(got["oauth_expires_at"].ends_with(".000000Z"), "{}", r.text);

    let wrong_secret = f.request_token((f.consumer.0.as_str(), "not-the-secret"), HOST, Some(&f.project_id)).await;
    assert_eq!(wrong_secret.status, StatusCode::UNAUTHORIZED);
    let wrong_host = f.request_token(f.consumer(), "localhost:5000", Some(&f.project_id)).await;
    assert_eq!(wrong_host.status, StatusCode::UNAUTHORIZED, "the signed URL names another host");
    let unknown = f.request_token(("0123456789abcdef0123456789abcdef", "s"), HOST, Some(&f.project_id)).await;
    assert_eq!(
        (unknown.status, unknown.body["error"]["message"].as_str()),
        (StatusCode::NOT_FOUND, Some("Consumer not found"))
    );
    let no_project = f.request_token(f.consumer(), HOST, None).await;
    assert_eq!(no_project.status, StatusCode::BAD_REQUEST);
    assert!(no_project.body["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("Expecting to find Requested-Project-Id"));
    let bad_project = f.request_token(f.consumer(), HOST, Some("nope")).await;
    assert_eq!(bad_project.status, StatusCode::NOT_FOUND);
    let unsigned = f.post("/v3/OS-OAUTH1/request_token", HOST, "", Some(&f.project_id)).await;
    assert_eq!(unsigned.status, StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegation_flow_end_to_end() {
    let f = Flow::start().await;
    let roles = f.my_role_ids().await;
    let r = f.request_token(f.consumer(), HOST, Some(&f.project_id)).await;
    let req = form(&r);
    let (rt, rs) = (req["oauth_token"].as_str(), req["oauth_token_secret"].as_str());

    // Only roles the user holds on the project can be delegated.
    let other = f.t.create("/v3/roles", "role", json!({"name": "not-mine"})).await;
    assert_eq!(f.authorize(rt, &[other]).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(f.authorize(&"0".repeat(32), &roles).await.status, StatusCode::NOT_FOUND);
    let v = f.authorize(rt, &roles).await;
    assert_eq!(v.status, StatusCode::OK, "{}", v.body);
    let verifier = v.body["token"]["oauth_verifier"].as_str().unwrap().to_string();
    assert_eq!(verifier.len(), 8);

    let wrong: String = verifier.chars().rev().collect();
    assert_eq!(f.access_token(f.consumer(), (rt, rs), &wrong).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(f.access_token(f.consumer(), (rt, "bad secret"), &verifier).await.status, StatusCode::UNAUTHORIZED);
    let other_consumer = f.new_consumer().await;
    let r = f.access_token((&other_consumer.0, &other_consumer.1), (rt, rs), &verifier).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "the request token is another consumer's");
    let r = f.access_token(f.consumer(), (rt, rs), &verifier).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let at = form(&r);
    let again = f.access_token(f.consumer(), (rt, rs), &verifier).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "a request token is used once");

    let base = format!("/v3/users/{}/OS-OAUTH1/access_tokens", f.user_id);
    let got = f.t.admin(Method::GET, &format!("{base}/{}", at["oauth_token"]), None).await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    let token = &got.body["access_token"];
    assert_eq!(token["id"], json!(at["oauth_token"]));
    assert_eq!(token["consumer_id"], json!(f.consumer.0));
    assert_eq!(token["expires_at"], json!(at["oauth_expires_at"]));
    assert_eq!(token["project_id"], json!(f.project_id));
    assert_eq!(token["authorizing_user_id"], json!(f.user_id));
    assert!(token.get("access_secret").is_none() && token.get("role_ids").is_none());

    let list = f.t.admin(Method::GET, &base, None).await;
    let ids: Vec<&str> =
        list.body["access_tokens"].as_array().unwrap().iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(ids, vec![at["oauth_token"].as_str()]);

    let rl = f.t.admin(Method::GET, &format!("{base}/{}/roles", at["oauth_token"]), None).await;
    let mut got_roles: Vec<String> =
        rl.body["roles"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect();
    got_roles.sort();
    let mut want = roles.clone();
    want.sort();
    assert_eq!(got_roles, want);
    assert!(rl.body["roles"][0].get("description").is_none());
    let one = f.t.admin(Method::GET, &format!("{base}/{}/roles/{}", at["oauth_token"], roles[0]), None).await;
    assert_eq!((one.status, &one.body["role"]["id"]), (StatusCode::OK, &json!(roles[0])));
    let missing = f.t.admin(Method::GET, &format!("{base}/{}/roles/nope", at["oauth_token"]), None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);

    let del = f.t.admin(Method::DELETE, &format!("{base}/{}", at["oauth_token"]), None).await;
    assert_eq!(del.status, StatusCode::NO_CONTENT);
    let gone = f.t.admin(Method::GET, &format!("{base}/{}", at["oauth_token"]), None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_consumer_deletes_its_tokens() {
    let f = Flow::start().await;
    let at = f.delegate(f.consumer()).await;
    let pending = form(&f.request_token(f.consumer(), HOST, Some(&f.project_id)).await);
    let base = format!("/v3/users/{}/OS-OAUTH1/access_tokens", f.user_id);
    assert_eq!(f.t.admin(Method::GET, &format!("{base}/{}", at["oauth_token"]), None).await.status, StatusCode::OK);
    let del = f.t.admin(Method::DELETE, &format!("/v3/OS-OAUTH1/consumers/{}", f.consumer.0), None).await;
    assert_eq!(del.status, StatusCode::NO_CONTENT);
    assert_eq!(
        f.t.admin(Method::GET, &format!("{base}/{}", at["oauth_token"]), None).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(f.t.admin(Method::GET, &base, None).await.body["access_tokens"], json!([]));
    let roles = f.my_role_ids().await;
    assert_eq!(f.authorize(&pending["oauth_token"], &roles).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_admins_manage_access_tokens() {
    let f = Flow::start().await;
    let at = f.delegate(f.consumer()).await;
    let uid = f.t.create("/v3/users", "user", json!({"name": "plain", "password": "plain password"})).await;
    let member = f.t.create("/v3/roles", "role", json!({"name": "member2"})).await;
    let grant = format!("/v3/projects/{}/users/{uid}/roles/{member}", f.project_id);
    assert_eq!(f.t.admin(Method::PUT, &grant, None).await.status, StatusCode::NO_CONTENT);
    let plain = f.t.token("plain", "plain password", json!({"project": {"id": f.project_id}})).await;
    let base = format!("/v3/users/{}/OS-OAUTH1/access_tokens", f.user_id);
    for (method, path) in [
        (Method::GET, base.clone()),
        (Method::GET, format!("{base}/{}", at["oauth_token"])),
        (Method::DELETE, format!("{base}/{}", at["oauth_token"])),
        (Method::PUT, format!("/v3/OS-OAUTH1/authorize/{}", "0".repeat(32))),
    ] {
        let r = f.t.call(method.clone(), &path, Some(&plain), Some(json!({"roles": []}))).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{method} {path}");
    }
    // Another user's token is not found under this user.
    let other = format!("/v3/users/{uid}/OS-OAUTH1/access_tokens/{}", at["oauth_token"]);
    assert_eq!(f.t.admin(Method::GET, &other, None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(f.t.admin(Method::DELETE, &other, None).await.status, StatusCode::UNAUTHORIZED);
}

impl Flow {
    /// `POST /v3/auth/tokens` by the `oauth1` method, signed for `HOST` with the consumer's
    /// and the access token's secrets.
    async fn oauth1_login(&self, consumer: (&str, &str), access: (&str, &str)) -> Reply {
        let uri = format!("http://{HOST}/v3/auth/tokens");
        let auth = oauth_header(&uri, consumer, Some(access), None, None);
        let body = json!({"auth": {"identity": {"methods": ["oauth1"], "oauth1": {}}}});
        let headers = [("host", HOST), ("authorization", auth.as_str())];
        send_with_headers(&self.t.router, Method::POST, "/v3/auth/tokens", &headers, Some(body)).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_access_token_buys_a_delegated_project_token_until_it_is_deleted() {
    let f = Flow::start().await;
    // Delegate only `reader` of the admin's roles.
    let reader = f.t.node.engine.read().id_by_name(crate::state::keys::ns::ROLE_NAME, "", "reader").unwrap().unwrap();
    let r = f.request_token(f.consumer(), HOST, Some(&f.project_id)).await;
    let req = form(&r);
    let v = f.authorize(&req["oauth_token"], std::slice::from_ref(&reader)).await;
    assert_eq!(v.status, StatusCode::OK, "{}", v.body);
    let verifier = v.body["token"]["oauth_verifier"].as_str().unwrap().to_string();
    let at = form(&f.access_token(f.consumer(), (&req["oauth_token"], &req["oauth_token_secret"]), &verifier).await);
    let access = (at["oauth_token"].as_str(), at["oauth_token_secret"].as_str());

    let r = f.oauth1_login(f.consumer(), access).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let t = &r.body["token"];
    assert_eq!(t["methods"], json!(["oauth1"]));
    assert_eq!((&t["user"]["id"], &t["project"]["id"]), (&json!(f.user_id), &json!(f.project_id)));
    assert_eq!(t["roles"], json!([{"id": reader, "name": "reader"}]), "only the delegated role");
    assert_eq!(t["OS-OAUTH1"], json!({"access_token_id": access.0, "consumer_id": f.consumer.0}));
    let token = r.headers["x-subject-token"].to_str().unwrap().to_string();

    // Wrong secrets or another consumer's key: 401. Unsigned: 400.
    assert_eq!(f.oauth1_login(f.consumer(), (access.0, "wrong")).await.status, StatusCode::UNAUTHORIZED);
    let other = f.new_consumer().await;
    assert_eq!(f.oauth1_login((&other.0, &other.1), access).await.status, StatusCode::UNAUTHORIZED);
    let body = json!({"auth": {"identity": {"methods": ["oauth1"], "oauth1": {}}}});
    let unsigned = f.t.call(Method::POST, "/v3/auth/tokens", None, Some(body)).await;
    assert_eq!(unsigned.status, StatusCode::BAD_REQUEST, "{}", unsigned.body);

    // The token is delegated: it buys no other token and manages no trust.
    let rescope = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": token}}}});
    assert_eq!(f.t.call(Method::POST, "/v3/auth/tokens", None, Some(rescope)).await.status, StatusCode::FORBIDDEN);
    let trust = json!({"trust": {"trustor_user_id": f.user_id, "trustee_user_id": f.user_id, "impersonation": false,
                                 "project_id": f.project_id, "roles": [{"id": reader}]}});
    assert_eq!(
        f.t.call(Method::POST, "/v3/OS-TRUST/trusts", Some(&token), Some(trust)).await.status,
        StatusCode::FORBIDDEN
    );

    // Deleting the access token ends the token and the method's use of it.
    let base = format!("/v3/users/{}/OS-OAUTH1/access_tokens/{}", f.user_id, access.0);
    assert_eq!(f.t.admin(Method::DELETE, &base, None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(f.t.admin(Method::GET, &format!("/v3/auth/tokens#{token}"), None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(f.oauth1_login(f.consumer(), access).await.status, StatusCode::UNAUTHORIZED);
}
