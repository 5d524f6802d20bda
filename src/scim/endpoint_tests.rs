//! `/SCIM/v2/{domain_id}` through the real router: a realm with its ruleset and API key, each
//! row of the spec's SCIM error table, the filter rules, PATCH, ETags, deprovisioning, the
//! purge path and the janitor, and the audit event of every write.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::scim::discovery::FILTER_GRAMMAR_URN;
use crate::scim::wire::{ERROR_URN, GROUP_URN, PATCH_URN, USER_URN};
use crate::state::keys::ns;
use crate::state::scim::{derived_user_id, keys, DerivedBy, Kind, ScimResourceIndex};
use crate::state::{cf, Reader};
use crate::testkit::scim_setup as setup;
use crate::testkit::{send_content, send_with_headers, Reply, TestNode};

pub struct World {
    pub t: TestNode,
    pub d: String,
    pub idp: String,
    /// The bearer token of the `okta-scim` realm's key.
    pub key: String,
}

fn later() -> String {
    crate::token::render::iso_seconds(crate::clock::now_secs() + 86_400)
}

pub fn user(ext: &str, name: &str) -> Value {
    json!({"schemas": [USER_URN], "externalId": ext, "userName": name,
           "name": {"givenName": "Barbara", "familyName": "Jensen"}, "displayName": "Babs",
           "emails": [{"value": format!("{name}@example.org"), "type": "work", "primary": true}], "active": true})
}

pub fn group(name: &str, members: &[&str]) -> Value {
    let members: Vec<Value> = members.iter().map(|m| json!({"value": m})).collect();
    json!({"schemas": [GROUP_URN], "displayName": name, "externalId": format!("ext-{name}"), "members": members})
}

pub fn patch_op(ops: Value) -> Value {
    json!({"schemas": [PATCH_URN], "Operations": ops})
}

/// A PatchOp of one `replace` of `path` with `value`.
pub fn replace_op(path: &str, value: Value) -> Value {
    patch_op(json!([{"op": "replace", "path": path, "value": value}]))
}

impl World {
    pub async fn new() -> World {
        Self::with(&[]).await
    }

    pub async fn with(settings: &[(&str, &str, &str)]) -> World {
        let t = TestNode::start_with(settings).await;
        let d = t.create("/v3/domains", "domain", json!({"name": "corp"})).await;
        let idp = t.create("/v4/federation/identity_providers", "identity_provider", setup::idp(&d, "c")).await;
        let mut w = World { t, d, idp, key: String::new() };
        w.key = w.realm("okta-scim", "manager", "domain").await;
        w
    }

    /// A realm for `provider` with a ruleset granting `role` (on the domain, or on a project
    /// when `target` is "project") to its keys, and one key; answers the key's token.
    pub async fn realm(&self, provider: &str, role: &str, target: &str) -> String {
        let realm = json!({"scim_realm": setup::realm(&self.d, provider, &self.idp, provider)});
        let r = self.t.admin(Method::POST, "/v4/scim-realms", Some(realm)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        let role_id = match self.t.node.engine.read().id_by_name(ns::ROLE_NAME, "", role).unwrap() {
            Some(id) => id,
            None => self.t.create("/v3/roles", "role", json!({"name": role})).await,
        };
        let authorization = if target == "project" {
            let p = self
                .t
                .create("/v3/projects", "project", json!({"name": format!("p-{provider}"), "domain_id": self.d}))
                .await;
            json!({"type": "project", "project_id": p, "project_domain_id": self.d, "roles": [{"id": role_id}]})
        } else {
            setup::on_domain(&self.d, &role_id)
        };
        // A project authorization is refused for a provider with an active realm: that
        // ruleset is made while the realm is disabled (how an operator would get a
        // project-scoped key).
        let project = target == "project";
        if project {
            self.set_realm_enabled(provider, false).await;
        }
        let body = json!({"mapping": setup::ruleset(&self.d, provider, &self.idp, "keys", authorization)});
        let r = self.t.admin(Method::POST, "/v4/mappings", Some(body)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        if project {
            self.set_realm_enabled(provider, true).await;
        }
        let key = json!({"api_key": setup::key(&self.d, provider, &later())});
        let r = self.t.admin(Method::POST, "/v4/api-keys", Some(key)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        r.body["token"].as_str().unwrap().to_string()
    }

    pub async fn set_realm_enabled(&self, provider: &str, enabled: bool) {
        let r = self
            .t
            .admin(
                Method::PATCH,
                &format!("/v4/scim-realms/{}/{provider}", self.d),
                Some(json!({"scim_realm": {"enabled": enabled}})),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }

    /// A SCIM request with `key` (`path` below `/SCIM/v2/{domain_id}`).
    pub async fn as_key(&self, key: &str, method: Method, path: &str, body: Option<Value>) -> Reply {
        let auth = format!("Bearer {key}");
        send_with_headers(
            &self.t.router,
            method,
            &format!("/SCIM/v2/{}{path}", self.d),
            &[("authorization", &auth)],
            body,
        )
        .await
    }

    pub async fn scim(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        self.as_key(&self.key, method, path, body).await
    }

    pub async fn create_user(&self, ext: &str, name: &str) -> String {
        let r = self.scim(Method::POST, "/Users", Some(user(ext, name))).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        r.body["id"].as_str().unwrap().to_string()
    }

    /// A request with a raw body and content type.
    async fn raw(&self, method: Method, path: &str, content_type: &str, body: &str) -> Reply {
        let path = format!("/SCIM/v2/{}{path}", self.d);
        let auth = format!("Bearer {}", self.key);
        let content = Some((content_type, body.to_string()));
        send_content(&self.t.router, method, &path, &[("authorization", &auth)], content).await
    }

    fn index(&self, kind: Kind, id: &str) -> Option<ScimResourceIndex> {
        self.t.node.engine.read().get_t(cf::SCIM, &keys::index(kind, id)).unwrap()
    }
}

/// A SCIM error: the envelope, the status, the `scimType`.
#[track_caller]
pub fn assert_scim_error(r: &Reply, status: StatusCode, scim_type: Option<&str>) {
    assert_eq!(r.status, status, "{}", r.text);
    assert_eq!(r.headers["content-type"], "application/scim+json");
    assert_eq!(r.body["schemas"], json!([ERROR_URN]), "{}", r.text);
    assert_eq!(r.body["status"], json!(status.as_u16().to_string()));
    assert_eq!(r.body["scimType"].as_str(), scim_type, "{}", r.text);
    assert!(r.body["detail"].is_string());
}

#[tokio::test]
async fn users_round_trip_with_derived_ids_etags_and_the_attribute_mapping() {
    let w = World::new().await;
    let r = w.scim(Method::POST, "/Users", Some(user("00u1", "bjensen"))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = derived_user_id(DerivedBy::Scim, &w.d, "okta-scim", "00u1");
    assert_eq!(r.body["id"], json!(id));
    assert_eq!(id.len(), 64);
    assert_eq!(r.headers["content-type"], "application/scim+json");
    assert_eq!(r.headers["etag"], "W/\"1\"");
    let location = format!("http://127.0.0.1:5000/SCIM/v2/{}/Users/{id}", w.d);
    assert_eq!(r.headers["location"], location.as_str());
    assert_eq!(r.body["meta"]["location"], json!(location));
    assert_eq!(r.body["meta"]["resourceType"], "User");
    assert_eq!(r.body["emails"], json!([{"value": "bjensen@example.org", "primary": true}]));
    assert_eq!(r.body["name"], json!({"givenName": "Barbara", "familyName": "Jensen"}));

    // Stored as the spec's mapping says: a non-local user of the domain, attributes in extra.
    let u = w.t.node.engine.read().user(&id).unwrap().unwrap();
    assert_eq!(
        (u.name.as_str(), u.domain_id.as_str(), u.enabled, u.password_hash.is_none()),
        ("bjensen", w.d.as_str(), true, true)
    );
    let extra: Value = serde_json::from_str(&u.extra).unwrap();
    assert_eq!(extra["scim_given_name"], "Barbara");
    assert_eq!(extra["scim_primary_email"], "bjensen@example.org");
    assert_eq!(extra["scim_display_name"], "Babs");
    let v3 = w.t.admin(Method::GET, &format!("/v3/users/{id}"), None).await;
    assert_eq!(v3.body["user"]["name"], "bjensen");

    let g = w.scim(Method::GET, &format!("/Users/{id}"), None).await;
    assert_eq!(g.status, StatusCode::OK);
    assert_eq!(g.body, r.body);

    // PUT replaces: absent optional attributes go; the version moves on.
    let mut put = user("00u1", "bjensen2");
    put.as_object_mut().unwrap().remove("name");
    let p = w.scim(Method::PUT, &format!("/Users/{id}"), Some(put)).await;
    assert_eq!(p.status, StatusCode::OK, "{}", p.body);
    assert_eq!(p.headers["etag"], "W/\"2\"");
    assert!(p.body.get("name").is_none());
    assert_eq!(p.body["userName"], "bjensen2");
}

#[tokio::test]
async fn lists_page_filter_and_answer_from_the_indexes() {
    let w = World::new().await;
    let mut ids = Vec::new();
    for i in 0..25 {
        ids.push(w.create_user(&format!("ext-{i:02}"), &format!("user{i:02}@corp.example")).await);
    }
    ids.sort();
    let r = w.scim(Method::GET, "/Users", None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["schemas"], json!(["urn:ietf:params:scim:api:messages:2.0:ListResponse"]));
    assert_eq!(
        (r.body["totalResults"].clone(), r.body["itemsPerPage"].clone()),
        (json!(25), json!(20)),
        "count defaults to 20"
    );
    let r = w.scim(Method::GET, "/Users?startIndex=21&count=10", None).await;
    assert_eq!(r.body["startIndex"], json!(21));
    let page: Vec<&str> = r.body["Resources"].as_array().unwrap().iter().map(|u| u["id"].as_str().unwrap()).collect();
    assert_eq!(page, ids[20..].iter().map(String::as_str).collect::<Vec<_>>());
    let r = w.scim(Method::GET, "/Users?count=500", None).await;
    assert_eq!(r.body["itemsPerPage"], json!(25), "count above 200 is the maximum");
    let r = w.scim(Method::GET, "/Users?count=0", None).await;
    assert_eq!((r.body["totalResults"].clone(), r.body["Resources"].clone()), (json!(25), json!([])));

    let total = |f: &str| {
        let f = f.to_string();
        let w = &w;
        async move {
            let q: String = url::form_urlencoded::byte_serialize(f.as_bytes()).collect();
            let r = w.scim(Method::GET, &format!("/Users?filter={q}"), None).await;
            assert_eq!(r.status, StatusCode::OK, "{f}: {}", r.body);
            r.body["totalResults"].as_u64().unwrap()
        }
    };
    // userName is case-insensitive (RFC 7643), externalId and id exact.
    assert_eq!(total("userName eq \"USER03@corp.example\"").await, 1);
    assert_eq!(total("userName ne \"user03@corp.example\"").await, 24);
    assert_eq!(total("userName co \"R1\"").await, 10);
    assert_eq!(total("userName sw \"user2\"").await, 5);
    assert_eq!(total("userName pr").await, 25);
    assert_eq!(total("externalId eq \"ext-07\"").await, 1);
    assert_eq!(total("externalId ne \"ext-07\"").await, 24);
    assert_eq!(total(&format!("id eq \"{}\"", ids[3])).await, 1);
    assert_eq!(total("active eq true").await, 25);
    assert_eq!(total("active eq false").await, 0);
    assert_eq!(
        total("userName eq \"user01@corp.example\" or externalId eq \"ext-02\" or userName eq \"nobody\"").await,
        2
    );
    assert_eq!(total("userName sw \"user0\" and externalId ne \"ext-01\"").await, 9);
    assert_eq!(total("userName eq \"user01@corp.example\" and active eq false").await, 0);
}

#[tokio::test]
async fn every_filter_rule_is_a_400_invalid_filter() {
    let w = World::new().await;
    for (f, rule) in [
        ("emails eq \"a@b\"", "attributes"),  // attribute outside the table
        ("externalId co \"x\"", "operators"), // operator the attribute does not allow
        ("id ne \"x\"", "operators"),
        ("active co \"t\"", "operators"),
        ("userName gt \"a\"", "operators"), // operator outside the grammar
        ("userName eq \"a\" and userName eq \"b\" or userName eq \"c\"", "noMixedLogic"),
        ("(userName eq \"a\")", "noGrouping"),     // nested expression
        ("not (userName eq \"a\")", "noGrouping"), // the first rule broken is named
        ("not userName eq \"a\"", "noNot"),
        ("emails[type eq \"work\"]", "noGrouping"), // complex attribute filter
        (&format!("userName eq \"{}\"", "a".repeat(512)), "maxLength"),
        (&["userName eq \"a\""; 9].join(" or "), "maxTerms"),
        ("active eq \"yes\"", "values"),
        ("userName eq", "syntax"),
    ] {
        let q: String = url::form_urlencoded::byte_serialize(f.as_bytes()).collect();
        let r = w.scim(Method::GET, &format!("/Users?filter={q}"), None).await;
        assert_scim_error(&r, StatusCode::BAD_REQUEST, Some("invalidFilter"));
        let detail = r.body["detail"].as_str().unwrap();
        assert!(detail.starts_with(&format!("Filter rule {rule} broken: ")), "{f}: {detail}");
    }
    let q: String = url::form_urlencoded::byte_serialize(b"userName eq \"x\"").collect();
    let r = w.scim(Method::GET, &format!("/Groups?filter={q}"), None).await;
    assert_scim_error(&r, StatusCode::BAD_REQUEST, Some("invalidFilter"));
}

#[tokio::test]
async fn error_row_a_realm_not_registered_or_disabled_is_403() {
    let w = World::new().await;
    // Realm not registered or disabled: 403, no scimType.
    w.set_realm_enabled("okta-scim", false).await;
    assert_scim_error(&w.scim(Method::GET, "/Users", None).await, StatusCode::FORBIDDEN, None);
    w.set_realm_enabled("okta-scim", true).await;
    let r = send_with_headers(
        &w.t.router,
        Method::GET,
        "/SCIM/v2/no-such-domain/Users",
        &[("authorization", &format!("Bearer {}", w.key))],
        None,
    )
    .await;
    assert_scim_error(&r, StatusCode::FORBIDDEN, None);
}

#[tokio::test]
async fn error_row_another_realms_or_a_deprovisioned_resource_is_404() {
    let w = World::new().await;
    let id = w.create_user("00u1", "bjensen").await;
    // Another realm's resource, and a deprovisioned one: 404.
    let azure = w.realm("azure-scim", "manager", "domain").await;
    assert_scim_error(&w.as_key(&azure, Method::GET, &format!("/Users/{id}"), None).await, StatusCode::NOT_FOUND, None);
    let r = w.as_key(&azure, Method::PATCH, &format!("/Users/{id}"), Some(replace_op("active", json!(false)))).await;
    assert_scim_error(&r, StatusCode::NOT_FOUND, None);
    assert_scim_error(
        &w.as_key(&azure, Method::DELETE, &format!("/Users/{id}"), None).await,
        StatusCode::NOT_FOUND,
        None,
    );
    let gone = w.create_user("00u9", "gone").await;
    assert_eq!(w.scim(Method::DELETE, &format!("/Users/{gone}"), None).await.status, StatusCode::NO_CONTENT);
    for m in [Method::GET, Method::DELETE] {
        assert_scim_error(&w.scim(m, &format!("/Users/{gone}"), None).await, StatusCode::NOT_FOUND, None);
    }
    assert_scim_error(
        &w.scim(Method::PUT, &format!("/Users/{gone}"), Some(user("00u9", "gone"))).await,
        StatusCode::NOT_FOUND,
        None,
    );
}

#[tokio::test]
async fn error_row_uniqueness_is_409_domain_wide_and_case_insensitive() {
    let w = World::new().await;
    w.create_user("00u1", "bjensen").await;
    let azure = w.realm("azure-scim", "manager", "domain").await;
    // Uniqueness, domain-wide and case-insensitive, across realms too; the derived id taken.
    let r = w.scim(Method::POST, "/Users", Some(user("00u2", "BJensen"))).await;
    assert_scim_error(&r, StatusCode::CONFLICT, Some("uniqueness"));
    let r = w.as_key(&azure, Method::POST, "/Users", Some(user("00u1", "someone-else"))).await;
    assert_scim_error(&r, StatusCode::CONFLICT, Some("uniqueness"));
    let admin_made = w.t.create("/v3/users", "user", json!({"name": "taken", "domain_id": w.d})).await;
    assert!(!admin_made.is_empty());
    assert_scim_error(
        &w.scim(Method::POST, "/Users", Some(user("00u3", "TAKEN"))).await,
        StatusCode::CONFLICT,
        Some("uniqueness"),
    );
    let other = w.create_user("00u4", "other").await;
    let r = w.scim(Method::PATCH, &format!("/Users/{other}"), Some(replace_op("externalId", json!("00U1")))).await;
    assert_scim_error(&r, StatusCode::CONFLICT, Some("uniqueness"));
    let g = w.scim(Method::POST, "/Groups", Some(group("Ops", &[]))).await;
    assert_eq!(g.status, StatusCode::CREATED, "{}", g.body);
    assert_scim_error(
        &w.scim(Method::POST, "/Groups", Some(group("OPS", &[]))).await,
        StatusCode::CONFLICT,
        Some("uniqueness"),
    );
}

#[tokio::test]
async fn error_row_a_disallowed_patch_path_is_400_invalid_path() {
    let w = World::new().await;
    let id = w.create_user("00u1", "bjensen").await;
    // Disallowed PATCH path: 400 invalidPath (mutability for id and meta).
    for path in ["emails", "phoneNumbers", "emails[type eq \"work\"].value", "password"] {
        let r = w.scim(Method::PATCH, &format!("/Users/{id}"), Some(replace_op(path, json!("x")))).await;
        assert_scim_error(&r, StatusCode::BAD_REQUEST, Some("invalidPath"));
    }
    let r = w.scim(Method::PATCH, &format!("/Users/{id}"), Some(replace_op("id", json!("x")))).await;
    assert_scim_error(&r, StatusCode::BAD_REQUEST, Some("mutability"));
}

#[tokio::test]
async fn error_row_a_member_outside_the_realm_is_400_invalid_value() {
    let w = World::new().await;
    let id = w.create_user("00u1", "bjensen").await;
    let azure = w.realm("azure-scim", "manager", "domain").await;
    let admin_made = w.t.create("/v3/users", "user", json!({"name": "taken", "domain_id": w.d})).await;
    let gone = w.create_user("00u9", "gone").await;
    assert_eq!(w.scim(Method::DELETE, &format!("/Users/{gone}"), None).await.status, StatusCode::NO_CONTENT);
    // A member that is not a user of the realm: 400 invalidValue.
    let azure_user = w.as_key(&azure, Method::POST, "/Users", Some(user("az1", "azure-user"))).await;
    let azure_user = azure_user.body["id"].as_str().unwrap().to_string();
    for member in [azure_user.as_str(), admin_made.as_str(), gone.as_str(), "no-such-user"] {
        let r = w.scim(Method::POST, "/Groups", Some(group("Mixed", &[&id, member]))).await;
        assert_scim_error(&r, StatusCode::BAD_REQUEST, Some("invalidValue"));
    }
}

#[tokio::test]
async fn error_row_external_id_absent_or_empty_on_user_create_is_400() {
    let w = World::new().await;
    // externalId empty or absent on user create: 400.
    let mut no_ext = user("x", "noext");
    no_ext.as_object_mut().unwrap().remove("externalId");
    assert_scim_error(
        &w.scim(Method::POST, "/Users", Some(no_ext)).await,
        StatusCode::BAD_REQUEST,
        Some("invalidValue"),
    );
    assert_scim_error(
        &w.scim(Method::POST, "/Users", Some(user("", "emptyext"))).await,
        StatusCode::BAD_REQUEST,
        Some("invalidValue"),
    );
}

#[tokio::test]
async fn error_row_if_match_naming_another_version_is_412() {
    let w = World::new().await;
    let id = w.create_user("00u1", "bjensen").await;
    // If-Match: another version 412 (nothing written), a malformed one 400, the current one passes.
    let body = replace_op("displayName", json!("B"));
    let send = |etag: &'static str| {
        let (w, body, id) = (&w, body.clone(), id.clone());
        async move {
            let auth = format!("Bearer {}", w.key);
            send_with_headers(
                &w.t.router,
                Method::PATCH,
                &format!("/SCIM/v2/{}/Users/{id}", w.d),
                &[("authorization", &auth), ("if-match", etag)],
                Some(body),
            )
            .await
        }
    };
    assert_scim_error(&send("W/\"7\"").await, StatusCode::PRECONDITION_FAILED, None);
    assert_eq!(w.index(Kind::User, &id).unwrap().version, 1);
    assert_scim_error(&send("W/\"x\"").await, StatusCode::BAD_REQUEST, Some("invalidValue"));
    let ok = send("W/\"1\"").await;
    assert_eq!((ok.status, ok.headers["etag"].to_str().unwrap()), (StatusCode::OK, "W/\"2\""));
    assert_eq!(send("\"2\"").await.status, StatusCode::OK, "the quoted form");
}

#[tokio::test]
async fn transport_errors_415_invalid_syntax_405_501_and_401() {
    let w = World::new().await;
    let id = w.create_user("00u1", "bjensen").await;
    // Transport: 415, 400 invalidSyntax, 405, 501, 401.
    let r = w.raw(Method::POST, "/Users", "text/plain", &user("t1", "t1").to_string()).await;
    assert_scim_error(&r, StatusCode::UNSUPPORTED_MEDIA_TYPE, None);
    let r = w.raw(Method::POST, "/Users", "application/scim+json; charset=utf-8", "{not json").await;
    assert_scim_error(&r, StatusCode::BAD_REQUEST, Some("invalidSyntax"));
    let r = w.raw(Method::POST, "/Users", "application/scim+json", &user("t2", "t2").to_string()).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_scim_error(
        &w.scim(Method::POST, &format!("/Users/{id}"), Some(user("z", "z"))).await,
        StatusCode::METHOD_NOT_ALLOWED,
        None,
    );
    assert_scim_error(&w.scim(Method::POST, "/Bulk", Some(json!({}))).await, StatusCode::NOT_IMPLEMENTED, None);
    assert_scim_error(&w.scim(Method::GET, "/Me", None).await, StatusCode::NOT_IMPLEMENTED, None);
    assert_scim_error(&w.as_key("kscim_nope", Method::GET, "/Users", None).await, StatusCode::UNAUTHORIZED, None);
    assert_scim_error(
        &w.t.call(Method::GET, &format!("/SCIM/v2/{}/Users", w.d), None, None).await,
        StatusCode::UNAUTHORIZED,
        None,
    );
}

#[tokio::test]
async fn keys_need_a_domain_grant_with_a_provisioning_role() {
    let w = World::new().await;
    let reader = w.realm("reader-scim", "reader", "domain").await;
    assert_scim_error(&w.as_key(&reader, Method::GET, "/Users", None).await, StatusCode::FORBIDDEN, None);
    assert_scim_error(
        &w.as_key(&reader, Method::POST, "/Users", Some(user("r1", "r1"))).await,
        StatusCode::FORBIDDEN,
        None,
    );
    let provisioner = w.realm("prov-scim", "scim_provisioner", "domain").await;
    assert_eq!(
        w.as_key(&provisioner, Method::POST, "/Users", Some(user("p1", "p1"))).await.status,
        StatusCode::CREATED
    );
    let project = w.realm("proj-scim", "manager", "project").await;
    assert_scim_error(&w.as_key(&project, Method::GET, "/Users", None).await, StatusCode::FORBIDDEN, None);
}

#[tokio::test]
async fn patch_users_by_path_and_by_value_object() {
    let w = World::new().await;
    let id = w.create_user("00u1", "bjensen").await;
    let r = w
        .scim(
            Method::PATCH,
            &format!("/Users/{id}"),
            Some(patch_op(json!([
                {"op": "Replace", "path": "name.givenName", "value": "Barb"},
                {"op": "remove", "path": "name.familyName"},
                {"op": "add", "value": {"displayName": "B. Jensen", "active": "False", "name": {"familyName": "J"}}},
                {"op": "replace", "path": "userName", "value": "barbara"},
            ]))),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["name"], json!({"givenName": "Barb", "familyName": "J"}));
    assert_eq!(
        (r.body["displayName"].clone(), r.body["active"].clone(), r.body["userName"].clone()),
        (json!("B. Jensen"), json!(false), json!("barbara"))
    );
    assert!(!w.t.node.engine.read().user(&id).unwrap().unwrap().enabled);
    let r = w
        .scim(Method::PATCH, &format!("/Users/{id}"), Some(patch_op(json!([{"op": "remove", "path": "userName"}]))))
        .await;
    assert_scim_error(&r, StatusCode::BAD_REQUEST, Some("invalidValue"));
    let r = w.scim(Method::PATCH, &format!("/Users/{id}"), Some(patch_op(json!([])))).await;
    assert_scim_error(&r, StatusCode::BAD_REQUEST, Some("invalidPath"));
}

#[tokio::test]
async fn groups_members_put_resync_patch_and_deprovisioning_clears_assignments() {
    let w = World::new().await;
    let a = w.create_user("a", "alice").await;
    let b = w.create_user("b", "bob").await;
    let c = w.create_user("c", "carol").await;
    let r = w.scim(Method::POST, "/Groups", Some(group("Eng", &[&a, &b]))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let gid = r.body["id"].as_str().unwrap().to_string();
    let members = |r: &Reply| {
        let mut m: Vec<String> =
            r.body["members"].as_array().unwrap().iter().map(|m| m["value"].as_str().unwrap().to_string()).collect();
        m.sort();
        m
    };
    let mut ab = vec![a.clone(), b.clone()];
    ab.sort();
    assert_eq!(members(&r), ab);
    assert_eq!(r.body["externalId"], "ext-Eng");
    // An administrator's own member (outside the realm) is neither shown nor removed by SCIM.
    let outsider = w.t.create("/v3/users", "user", json!({"name": "outsider", "domain_id": w.d})).await;
    assert_eq!(
        w.t.admin(Method::PUT, &format!("/v3/groups/{gid}/users/{outsider}"), None).await.status,
        StatusCode::NO_CONTENT
    );

    let r = w
        .scim(
            Method::PATCH,
            &format!("/Groups/{gid}"),
            Some(patch_op(json!([
        {"op": "add", "path": "members", "value": [{"value": c}]},
        {"op": "remove", "path": "members", "value": [{"value": a}]},
        {"op": "replace", "path": "displayName", "value": "Engineering"}]))),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let mut bc = vec![b.clone(), c.clone()];
    bc.sort();
    assert_eq!((members(&r), r.body["displayName"].clone()), (bc, json!("Engineering")));
    let r = w.scim(Method::PATCH, &format!("/Groups/{gid}"), Some(replace_op("members", json!([{"value": a}])))).await;
    assert_scim_error(&r, StatusCode::BAD_REQUEST, Some("invalidPath"));

    let r = w.scim(Method::PUT, &format!("/Groups/{gid}"), Some(group("Engineering", &[&a]))).await;
    assert_eq!((r.status, members(&r)), (StatusCode::OK, vec![a.clone()]));
    let v3: Vec<String> = {
        let view = w.t.node.engine.read();
        let mut m = view.member_user_ids(&gid).unwrap();
        m.sort();
        m
    };
    let mut expected = vec![a.clone(), outsider.clone()];
    expected.sort();
    assert_eq!(v3, expected);

    let too_many: Vec<Value> = (0..1001).map(|i| json!({"value": format!("u{i}")})).collect();
    let mut big = group("Big", &[]);
    big["members"] = json!(too_many);
    assert_scim_error(&w.scim(Method::POST, "/Groups", Some(big)).await, StatusCode::BAD_REQUEST, Some("invalidValue"));

    // DELETE: role assignments cleared at once, membership kept as a snapshot, hidden.
    let reader = w.t.node.engine.read().id_by_name(ns::ROLE_NAME, "", "reader").unwrap().unwrap();
    assert_eq!(
        w.t.admin(Method::PUT, &format!("/v3/domains/{}/groups/{gid}/roles/{reader}", w.d), None).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(w.scim(Method::DELETE, &format!("/Groups/{gid}"), None).await.status, StatusCode::NO_CONTENT);
    let r = w.t.admin(Method::GET, &format!("/v3/role_assignments?group.id={gid}"), None).await;
    assert_eq!(r.body["role_assignments"], json!([]), "{}", r.body);
    assert_eq!(w.t.node.engine.read().member_user_ids(&gid).unwrap().len(), 2);
    assert_scim_error(&w.scim(Method::GET, &format!("/Groups/{gid}"), None).await, StatusCode::NOT_FOUND, None);
    assert_eq!(w.scim(Method::GET, "/Groups", None).await.body["totalResults"], json!(0));
}

#[tokio::test]
async fn deprovisioned_users_lose_their_tokens_and_are_purged_on_demand_or_by_the_janitor() {
    let w = World::new().await;
    let id = w.create_user("00u1", "bjensen").await;
    // Give the SCIM user a password through the v3 API to hold a live token.
    let r =
        w.t.admin(Method::PATCH, &format!("/v3/users/{id}"), Some(json!({"user": {"password": "pw-of-bjensen-1"}})))
            .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let token = w.t.token_for_id(&id, "pw-of-bjensen-1", Value::Null).await;
    let check = |t: String| {
        let w = &w;
        async move {
            let headers = [("x-auth-token", w.t.admin.as_str()), ("x-subject-token", t.as_str())];
            send_with_headers(&w.t.router, Method::GET, "/v3/auth/tokens", &headers, None).await.status
                == StatusCode::OK
        }
    };
    assert!(check(token.clone()).await);

    // The purge path refuses a live resource (409), then DELETE deprovisions.
    let purge = format!("/v4/scim-realms/{}/okta-scim/purge/user/{id}", w.d);
    assert_eq!(w.t.admin(Method::DELETE, &purge, None).await.status, StatusCode::CONFLICT);
    assert_eq!(w.scim(Method::DELETE, &format!("/Users/{id}"), None).await.status, StatusCode::NO_CONTENT);
    assert!(!check(token).await, "the deprovisioned user's token is refused");
    let idx = w.index(Kind::User, &id).unwrap();
    assert!(idx.deprovisioned_at.is_some());
    assert!(!w.t.node.engine.read().user(&id).unwrap().unwrap().enabled);
    // Re-provisioning the same externalId is refused while the record stands.
    assert_scim_error(
        &w.scim(Method::POST, "/Users", Some(user("00u1", "again"))).await,
        StatusCode::CONFLICT,
        Some("uniqueness"),
    );

    assert_eq!(
        w.t.admin(Method::DELETE, &format!("/v4/scim-realms/{}/okta-scim/purge/widget/{id}", w.d), None).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        w.t.admin(Method::DELETE, &format!("/v4/scim-realms/{}/nope/purge/user/{id}", w.d), None).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(w.t.admin(Method::DELETE, &purge, None).await.status, StatusCode::NO_CONTENT);
    assert!(w.t.node.engine.read().user(&id).unwrap().is_none());
    assert!(w.index(Kind::User, &id).is_none());
    assert_eq!(w.t.admin(Method::DELETE, &purge, None).await.status, StatusCode::NOT_FOUND);
    // Its externalId and name are free again.
    assert_eq!(w.create_user("00u1", "bjensen").await, id);

    // The janitor purges only what is older than the retention, and only on the leader.
    let g = w.scim(Method::POST, "/Groups", Some(group("Old", &[&id]))).await.body["id"].as_str().unwrap().to_string();
    assert_eq!(w.scim(Method::DELETE, &format!("/Users/{id}"), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(w.scim(Method::DELETE, &format!("/Groups/{g}"), None).await.status, StatusCode::NO_CONTENT);
    let now = crate::clock::now_secs();
    let purged =
        crate::jobs::tick(&w.t.node, crate::jobs::Job::ScimJanitor, now + 364 * 86_400).await.unwrap().unwrap();
    assert_eq!(purged, 0);
    assert!(w.index(Kind::User, &id).is_some());
    let purged =
        crate::jobs::tick(&w.t.node, crate::jobs::Job::ScimJanitor, now + 366 * 86_400).await.unwrap().unwrap();
    assert_eq!(purged, 2);
    assert!(w.index(Kind::User, &id).is_none() && w.index(Kind::Group, &g).is_none());
    assert!(w.t.node.engine.read().group(&g).unwrap().is_none());
    assert!(w.t.node.engine.read().scan_raw(cf::SCIM, keys::DEPROVISIONED_PREFIX).unwrap().is_empty());
}

#[tokio::test]
async fn writes_are_rate_limited_per_provider() {
    let w = World::with(&[("keystone", "scim_realm_write_rate_limit", "3")]).await;
    for i in 0..3 {
        w.create_user(&format!("e{i}"), &format!("u{i}")).await;
    }
    let r = w.scim(Method::POST, "/Users", Some(user("e9", "u9"))).await;
    assert_scim_error(&r, StatusCode::TOO_MANY_REQUESTS, None);
    assert!(r.headers.contains_key("retry-after"));
    assert_eq!(w.scim(Method::GET, "/Users", None).await.status, StatusCode::OK, "reads are not limited");
}

/// Nobody configured `[audit]`: the trail still exists, in the data directory, and nothing is
/// dropped as "disabled".
#[tokio::test]
async fn a_node_keeps_an_audit_trail_without_being_told_where() {
    let w = World::new().await;
    let u = w.create_user("ext-1", "babs").await;
    assert!(w.t.node.audit.flush(std::time::Duration::from_secs(5)).await);
    let file = w.t.node.cfg.data_dir.join("audit").join("audit.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(
        events.iter().any(|e| e["action"] == "create" && e["target"]["id"] == u.as_str()),
        "the SCIM create is in {}: {text}",
        file.display()
    );
    assert_eq!(w.t.node.audit.metrics().dropped_count("disabled"), 0);
}

#[tokio::test]
async fn discovery_is_unauthenticated_and_advertises_what_is_supported() {
    let w = World::new().await;
    let get = |p: &str| {
        let path = format!("/SCIM/v2/{}{p}", w.d);
        let w = &w;
        async move { w.t.call(Method::GET, &path, None, None).await }
    };
    let spc = get("/ServiceProviderConfig").await;
    assert_eq!(spc.status, StatusCode::OK);
    assert_eq!(spc.headers["content-type"], "application/scim+json");
    assert_eq!(spc.body["bulk"]["supported"], json!(false));
    assert_eq!(spc.body["sort"]["supported"], json!(false));
    assert_eq!(spc.body["patch"]["supported"], json!(true));
    assert_eq!(spc.body["etag"]["supported"], json!(true));
    assert_eq!(spc.body["filter"], json!({"supported": true, "maxResults": 200}));
    // The restricted grammar, in our extension, on request (a strict client refuses unknown
    // schemas in the default document): its bounds and the spec's operator table.
    assert_eq!(spc.body["schemas"], json!([crate::scim::discovery::SPC_URN]));
    let asked = get(&format!("/ServiceProviderConfig?attributes={}", FILTER_GRAMMAR_URN.to_uppercase())).await;
    assert_eq!(asked.status, StatusCode::OK);
    assert_eq!(asked.body["schemas"], json!([crate::scim::discovery::SPC_URN, FILTER_GRAMMAR_URN]));
    let grammar = &asked.body[FILTER_GRAMMAR_URN];
    assert_eq!((grammar["maxLength"].as_u64(), grammar["maxTerms"].as_u64()), (Some(512), Some(8)));
    assert_eq!(grammar["mixedLogicalOperators"], json!(false));
    assert!(grammar["attributes"]
        .as_array()
        .unwrap()
        .contains(&json!({"resourceType": "User", "attribute": "externalId", "operators": ["eq", "ne", "pr"]})));
    let schemas = get("/Schemas").await;
    let ids: Vec<&str> =
        schemas.body["Resources"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![USER_URN, GROUP_URN, FILTER_GRAMMAR_URN]);
    let described = get(&format!("/Schemas/{FILTER_GRAMMAR_URN}")).await;
    let names: Vec<&str> =
        described.body["attributes"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
    for key in grammar.as_object().unwrap().keys() {
        assert!(names.contains(&key.as_str()), "{key} is described by the extension's schema");
    }
    let types = get("/ResourceTypes").await;
    assert_eq!(types.body["Resources"][0]["endpoint"], "/Users");
    assert_eq!(types.body["Resources"][1]["schema"], GROUP_URN);
    assert_eq!(get("/ResourceTypes/Group").await.body["id"], "Group");
    assert_eq!(get(&format!("/Schemas/{USER_URN}")).await.body["name"], "User");
    assert_scim_error(&get("/Schemas/urn:nope").await, StatusCode::NOT_FOUND, None);
}

/// On the OpenFGA driver the store follows SCIM's lifecycle: deprovisioning a group clears its
/// grants there at once (its memberships stay, a snapshot), and the purge takes the rest; a
/// user's grants stay until its purge, so a user re-provisioned under its deterministic id
/// finds none waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_store_driver_the_store_follows_deprovisioning_and_purge() {
    let fga = crate::testkit::openfga::FgaServer::start(&[]);
    let w = World::with(&fga.settings(&[])).await;
    let u = w.create_user("ext-1", "babs").await;
    let r = w.scim(Method::POST, "/Groups", Some(group("eng", &[&u]))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let g = r.body["id"].as_str().unwrap().to_string();
    let roles = w.t.admin(Method::GET, "/v3/roles?name=member", None).await;
    let member = roles.body["roles"][0]["id"].as_str().unwrap().to_string();
    for path in [
        format!("/v3/domains/{}/groups/{g}/roles/{member}", w.d),
        format!("/v3/domains/{}/users/{u}/roles/{member}", w.d),
    ] {
        assert_eq!(w.t.admin(Method::PUT, &path, None).await.status, StatusCode::NO_CONTENT, "{path}");
    }
    let (user, group_set, group_obj) = (format!("user:{u}"), format!("group:{g}#member"), format!("group:{g}"));
    fga.seed(&[(&user, "member", &group_obj)]).await;
    let held = |tuples: &[(String, String, String)], who: &str| tuples.iter().filter(|t| t.0 == who).count();

    assert_eq!(w.scim(Method::DELETE, &format!("/Groups/{g}"), None).await.status, StatusCode::NO_CONTENT);
    let left = fga.tuples().await;
    assert_eq!(held(&left, &group_set), 0, "the group's grants cleared at once: {left:?}");
    assert!(left.contains(&(user.clone(), "member".into(), group_obj.clone())), "membership kept: {left:?}");
    let purge = |kind: &str, id: &str| format!("/v4/scim-realms/{}/okta-scim/purge/{kind}/{id}", w.d);
    assert_eq!(w.t.admin(Method::DELETE, &purge("group", &g), None).await.status, StatusCode::NO_CONTENT);
    assert!(!fga.tuples().await.iter().any(|t| t.2 == group_obj), "purged: memberships gone too");

    // A live user cannot be purged, and its grants stay through deprovisioning.
    assert_eq!(w.t.admin(Method::DELETE, &purge("user", &u), None).await.status, StatusCode::CONFLICT);
    assert_eq!(w.scim(Method::DELETE, &format!("/Users/{u}"), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(held(&fga.tuples().await, &user), 1, "kept until the purge");
    assert_eq!(w.t.admin(Method::DELETE, &purge("user", &u), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(held(&fga.tuples().await, &user), 0, "purged with the user");
}
