//! Tokens in Keystone's fernet format (as `idnode_keys::keystone_fernet`'s tests show
//! Keystone 30 writes them), sealed with a key this test imports, validate on idnode like its
//! own: same user, scope, methods, audit id and times; roles as granted now; refused once
//! revoked, once the user's password changed, once the keys are forgotten, and for kinds or
//! methods not read.

use axum::http::{Method, StatusCode};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rmpv::Value as Mp;
use serde_json::json;

use crate::clock::now_secs;
use crate::state::command::Command;
use crate::state::read::TokenReads;
use crate::state::Reader;
use crate::testkit::{Reply, TestNode};

/// Seals a Keystone payload `[version, fields...]` as Keystone's formatter does (no padding).
fn keystone_token(key: &str, version: u64, fields: Vec<Mp>) -> String {
    let mut list = vec![Mp::from(version)];
    list.extend(fields);
    let mut buf = Vec::new();
    rmpv::encode::write_value(&mut buf, &Mp::Array(list)).unwrap();
    fernet::Fernet::new(key).unwrap().encrypt(&buf).trim_end_matches('=').to_string()
}

fn uuid_id(hex_id: &str) -> Mp {
    Mp::Array(vec![Mp::Boolean(true), Mp::Binary(hex::decode(hex_id).unwrap())])
}

struct World {
    t: TestNode,
    key: String,
    user: String,
    project: String,
}

impl World {
    async fn new() -> World {
        let t = TestNode::start().await;
        let key = fernet::Fernet::generate_key();
        t.node.propose(Command::SetKeystoneFernetKeys { keys: vec![key.clone()] }).await.unwrap();
        let user = t.create("/v3/users", "user", json!({"name": "moved", "password": "moved-pw-1"})).await;
        let project = t.create("/v3/projects", "project", json!({"name": "moved-p", "domain_id": "default"})).await;
        let member = t.node.engine.read().id_by_name(crate::state::keys::ns::ROLE_NAME, "", "member").unwrap().unwrap();
        let grant = format!("/v3/projects/{project}/users/{user}/roles/{member}");
        assert_eq!(t.admin(Method::PUT, &grant, None).await.status, StatusCode::NO_CONTENT);
        World { t, key, user, project }
    }

    /// A project-scoped password token of the user, with audit id `audit`.
    fn project_token(&self, audit: [u8; 16]) -> String {
        let expires = (now_secs() + 3600) as f64;
        let fields = vec![
            uuid_id(&self.user),
            Mp::from(2u64),
            uuid_id(&self.project),
            Mp::F64(expires),
            Mp::Array(vec![Mp::Binary(audit.to_vec())]),
        ];
        keystone_token(&self.key, 2, fields)
    }

    /// An unscoped token of the user by the methods of Keystone's `mask`.
    fn unscoped_token(&self, mask: u64, audit: [u8; 16]) -> String {
        let expires = Mp::F64((now_secs() + 600) as f64);
        let fields = vec![uuid_id(&self.user), Mp::from(mask), expires, Mp::Array(vec![Mp::Binary(audit.to_vec())])];
        keystone_token(&self.key, 0, fields)
    }

    async fn validate(&self, token: &str) -> Reply {
        self.t.admin(Method::GET, &format!("/v3/auth/tokens#{token}"), None).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keystone_token_validates_as_keystone_issued_it_until_revoked() {
    let w = World::new().await;
    let before = now_secs();
    let token = w.project_token([7; 16]);
    let r = w.validate(&token).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let t = &r.body["token"];
    assert_eq!(t["user"]["id"], json!(w.user));
    assert_eq!(t["project"]["id"], json!(w.project));
    assert_eq!(t["methods"], json!(["password"]));
    assert_eq!(t["audit_ids"], json!([URL_SAFE_NO_PAD.encode([7u8; 16])]));
    let roles: Vec<&str> = t["roles"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    assert!(roles.contains(&"member"), "{roles:?}");
    let issued = chrono::DateTime::parse_from_rfc3339(t["issued_at"].as_str().unwrap()).unwrap().timestamp();
    assert!((before..=now_secs()).contains(&issued), "the fernet timestamp: {}", t["issued_at"]);
    let expires = chrono::DateTime::parse_from_rfc3339(t["expires_at"].as_str().unwrap()).unwrap().timestamp();
    assert!((before + 3600..=now_secs() + 3600).contains(&expires), "{}", t["expires_at"]);
    // The caller's own token too.
    let me = w.t.call(Method::GET, "/v3/auth/projects", Some(&token), None).await;
    assert_eq!(me.status, StatusCode::OK, "{}", me.body);
    assert_eq!(me.body["projects"][0]["id"], json!(w.project));

    // Revoked on idnode: refused from then on.
    let revoke = w.t.admin(Method::DELETE, &format!("/v3/auth/tokens#{token}"), None).await;
    assert_eq!(revoke.status, StatusCode::NO_CONTENT, "{}", revoke.body);
    assert_eq!(w.validate(&token).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_change_ends_it_and_unread_kinds_methods_or_keys_do_not_validate() {
    let w = World::new().await;
    let token = w.project_token([1; 16]);
    assert_eq!(w.validate(&token).await.status, StatusCode::OK);
    // An unscoped one; one of the trust kind (not read yet); one by `external` (not idnode's).
    let unscoped = w.unscoped_token(2, [2; 16]);
    let r = w.validate(&unscoped).await;
    assert_eq!((r.status, &r.body["token"]["user"]["id"]), (StatusCode::OK, &json!(w.user)), "{}", r.body);
    let trust = keystone_token(&w.key, 3, vec![uuid_id(&w.user), Mp::from(2u64)]);
    assert_eq!(w.validate(&trust).await.status, StatusCode::NOT_FOUND);
    let external = w.unscoped_token(1, [3; 16]);
    assert_eq!(w.validate(&external).await.status, StatusCode::NOT_FOUND);
    // Sealed with another key: not Keystone's.
    let stranger = World { key: fernet::Fernet::generate_key(), ..w };
    assert_eq!(stranger.validate(&stranger.project_token([4; 16])).await.status, StatusCode::NOT_FOUND);
    let w = stranger;

    // The password changes: every token issued before ends, Keystone's too.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let r =
        w.t.admin(Method::PATCH, &format!("/v3/users/{}", w.user), Some(json!({"user": {"password": "moved-pw-2"}})))
            .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(w.validate(&token).await.status, StatusCode::NOT_FOUND);

    // Forgotten keys validate nothing; bad keys are refused and change nothing.
    let bad = w.t.node.propose(Command::SetKeystoneFernetKeys { keys: vec!["not-a-key".into()] }).await;
    assert!(bad.is_err());
    assert!(w.t.node.engine.read().keystone_fernet_keys().unwrap().is_some());
    w.t.node.propose(Command::SetKeystoneFernetKeys { keys: vec![] }).await.unwrap();
    assert!(w.t.node.engine.read().keystone_fernet_keys().unwrap().is_none());
}

/// Keystone's `[auth] methods` of the federated tests: the protocol `saml2` is method 6.
const FEDERATED_METHODS: [&str; 7] =
    ["external", "password", "token", "oauth1", "mapped", "application_credential", "saml2"];

impl World {
    /// A project (`Some`) or unscoped (`None`) federated token of the user from `acme`'s
    /// `saml2` login, in `groups`.
    fn federated_token(&self, project: Option<&str>, groups: &[&str], audit: [u8; 16]) -> String {
        let mut fields = vec![uuid_id(&self.user), Mp::from(1u64 << 6)];
        fields.extend(project.map(uuid_id));
        fields.push(Mp::Array(groups.iter().map(|g| uuid_id(g)).collect()));
        fields.push(Mp::Array(vec![Mp::Boolean(false), Mp::Binary(b"acme".to_vec())]));
        fields.push(Mp::Binary(b"saml2".to_vec()));
        fields.push(Mp::F64((now_secs() + 600) as f64));
        fields.push(Mp::Array(vec![Mp::Binary(audit.to_vec())]));
        keystone_token(&self.key, if project.is_some() { 5 } else { 4 }, fields)
    }

    async fn role_id(&self, name: &str) -> String {
        self.t.node.engine.read().id_by_name(crate::state::keys::ns::ROLE_NAME, "", name).unwrap().unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_federated_token_holds_its_login_groups_roles_and_rescopes_with_them() {
    let w = World::new().await;
    let methods = FEDERATED_METHODS.iter().map(|m| m.to_string()).collect();
    w.t.node.propose(Command::SetKeystoneAuthMethods { methods }).await.unwrap();
    let r =
        w.t.admin(
            Method::PUT,
            "/v3/OS-FEDERATION/identity_providers/acme",
            Some(json!({"identity_provider": {"enabled": true}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    // A project only the login's group holds a role on: the user is no member of the group.
    let group = w.t.create("/v3/groups", "group", json!({"name": "fed-devs"})).await;
    let other = w.t.create("/v3/projects", "project", json!({"name": "fed-p", "domain_id": "default"})).await;
    let reader = w.role_id("reader").await;
    let grant = format!("/v3/projects/{other}/groups/{group}/roles/{reader}");
    assert_eq!(w.t.admin(Method::PUT, &grant, None).await.status, StatusCode::NO_CONTENT);

    let scoped = w.federated_token(Some(&other), &[&group], [5; 16]);
    let r = w.validate(&scoped).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let t = &r.body["token"];
    assert_eq!(t["methods"], json!(["saml2"]));
    assert_eq!(
        t["user"]["OS-FEDERATION"],
        json!({"groups": [{"id": group}], "identity_provider": {"id": "acme"}, "protocol": {"id": "saml2"}})
    );
    assert!(t["user"].get("password_expires_at").is_none(), "{t}");
    let roles = t["roles"].as_array().unwrap();
    assert_eq!(roles.iter().map(|r| r["name"].as_str().unwrap()).collect::<Vec<_>>(), vec!["reader"]);
    assert_eq!(roles[0]["domain_id"], json!(null), "federated tokens list the roles themselves: {roles:?}");
    // Without the group, the login holds nothing there.
    assert_eq!(w.validate(&w.federated_token(Some(&other), &[], [6; 16])).await.status, StatusCode::NOT_FOUND);

    // The unscoped login re-scopes on idnode, keeping its groups and its chain.
    let unscoped = w.federated_token(None, &[&group], [7; 16]);
    let r = w.validate(&unscoped).await;
    assert_eq!((r.status, r.body["token"].get("roles")), (StatusCode::OK, None), "{}", r.body);
    let body = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": unscoped}},
                      "scope": {"project": {"id": other}}}});
    let r = w.t.call(Method::POST, "/v3/auth/tokens", None, Some(body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let t = &r.body["token"];
    assert_eq!(t["methods"], json!(["token", "saml2"]));
    assert_eq!(t["user"]["OS-FEDERATION"]["groups"], json!([{"id": group}]));
    assert_eq!(t["roles"][0]["name"], json!("reader"));
    assert_eq!(t["audit_ids"][1], json!(URL_SAFE_NO_PAD.encode([7u8; 16])));

    // Disabling the provider ends its logins.
    let r =
        w.t.admin(
            Method::PATCH,
            "/v3/OS-FEDERATION/identity_providers/acme",
            Some(json!({"identity_provider": {"enabled": false}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(w.validate(&scoped).await.status, StatusCode::NOT_FOUND);
    assert_eq!(w.validate(&unscoped).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oauth1_token_holds_its_access_token_roles_while_the_access_token_stands() {
    let w = World::new().await;
    let (member, reader) = (w.role_id("member").await, w.role_id("reader").await);
    let r = w.t.admin(Method::POST, "/v3/OS-OAUTH1/consumers", Some(json!({"consumer": {"description": "c"}}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let consumer = r.body["consumer"]["id"].as_str().unwrap().to_string();
    let access = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
    let record = crate::reads::oauth1::AccessToken {
        id: access.into(),
        consumer_id: consumer.clone(),
        project_id: w.project.clone(),
        authorizing_user_id: w.user.clone(),
        expires_at: None,
        role_ids: vec![reader.clone()],
    };
    let doc = crate::oauth1::tokens::record(
        crate::state::model::DocKind::OAuthAccessToken,
        &consumer,
        access,
        &record,
        json!({"secret": "s"}),
    )
    .unwrap();
    w.t.node.propose(Command::PutDoc { doc, create: true, requires: Vec::new() }).await.unwrap();
    // Keystone's kind 7: user, methods (oauth1 is method 3), project, access token, expiry,
    // audit ids.
    let token = keystone_token(
        &w.key,
        7,
        vec![
            uuid_id(&w.user),
            Mp::from(1u64 << 3),
            uuid_id(&w.project),
            uuid_id(access),
            Mp::F64((now_secs() + 600) as f64),
            Mp::Array(vec![Mp::Binary(vec![9; 16])]),
        ],
    );
    let r = w.validate(&token).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let t = &r.body["token"];
    assert_eq!(t["methods"], json!(["oauth1"]));
    assert_eq!(t["OS-OAUTH1"], json!({"access_token_id": access, "consumer_id": consumer}));
    // The user holds member (which implies reader); the access token delegates reader only.
    assert_eq!(t["roles"], json!([{"id": reader, "name": "reader"}]));
    assert_ne!(member, reader);
    // It cannot buy another token.
    let body = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": token}}}});
    let r = w.t.call(Method::POST, "/v3/auth/tokens", None, Some(body)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    // Once the access token is gone (its user or the consumer revoked it), the token ends.
    let gone =
        Command::DeleteDoc { kind: crate::state::model::DocKind::OAuthAccessToken, id: format!("{consumer}/{access}") };
    w.t.node.propose(gone).await.unwrap();
    assert_eq!(w.validate(&token).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_keys_rotate_out_like_an_old_secondary() {
    let w = World::new().await;
    let token = w.project_token([3; 16]);
    w.t.node.raft.version_gate(crate::state::apply::KEYSTONE_KEYS_ROTATE_VERSION).await.unwrap();
    let rotate =
        |max_secondary| Command::RotateTokenKeys { new_staged: [max_secondary as u8; 32], now: 1, max_secondary };
    // Room for two secondaries: the first rotation leaves one of ours, so Keystone's stay.
    w.t.node.propose(rotate(2)).await.unwrap();
    assert!(w.t.node.engine.read().keystone_fernet_keys().unwrap().is_some());
    assert_eq!(w.validate(&token).await.status, StatusCode::OK);
    // The second fills both places with ours: Keystone's, the oldest, go, and its tokens too.
    w.t.node.propose(rotate(2)).await.unwrap();
    assert!(w.t.node.engine.read().keystone_fernet_keys().unwrap().is_none());
    assert_eq!(w.validate(&token).await.status, StatusCode::NOT_FOUND);
}
