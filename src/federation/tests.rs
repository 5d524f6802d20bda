//! HTTP-level tests of the OS-FEDERATION registries against an in-process node: Keystone's
//! defaults, the domain an identity provider gets, cascades, and refusals that write nothing.

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::testkit::TestNode;

fn rules() -> serde_json::Value {
    json!([{"local": [{"user": {"name": "{0}"}}, {"group_ids": "{1}"}],
            "remote": [{"type": "openstack_username"}, {"type": "group_ids", "whitelist": ["abc", "123"]}]}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_provider_gets_a_domain_that_outlives_it() {
    let t = TestNode::start().await;
    let idp = "/v3/OS-FEDERATION/identity_providers/idp1";
    let r = t.admin(Method::PUT, idp, Some(json!({"identity_provider": {"description": "d"}}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let b = &r.body["identity_provider"];
    assert_eq!((&b["enabled"], &b["remote_ids"], &b["id"]), (&json!(false), &json!([]), &json!("idp1")));
    let domain = b["domain_id"].as_str().unwrap().to_string();
    let d = t.admin(Method::GET, &format!("/v3/domains/{domain}"), None).await;
    assert_eq!(d.status, StatusCode::OK);
    assert_eq!(d.body["domain"]["description"], json!("Auto generated federated domain for Identity Provider: idp1"));

    // A taken remote id: 409, and neither the provider nor a domain for it is written.
    let r = t.admin(Method::PATCH, idp, Some(json!({"identity_provider": {"remote_ids": ["r1", "r2"]}}))).await;
    assert_eq!((r.status, &r.body["identity_provider"]["remote_ids"]), (StatusCode::OK, &json!(["r1", "r2"])));
    let domains_before = t.admin(Method::GET, "/v3/domains", None).await.body["domains"].as_array().unwrap().len();
    let r = t
        .admin(
            Method::PUT,
            "/v3/OS-FEDERATION/identity_providers/idp2",
            Some(json!({"identity_provider": {"remote_ids": ["r2"]}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    let domains_after = t.admin(Method::GET, "/v3/domains", None).await.body["domains"].as_array().unwrap().len();
    assert_eq!(domains_before, domains_after, "the refused create left no domain behind");
    let gone = t.admin(Method::GET, "/v3/OS-FEDERATION/identity_providers/idp2", None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);

    // Protocols: an unknown mapping is 400; deleting the provider deletes them.
    let m = t.admin(Method::PUT, "/v3/OS-FEDERATION/mappings/m1", Some(json!({"mapping": {"rules": rules()}}))).await;
    assert_eq!((m.status, &m.body["mapping"]["schema_version"]), (StatusCode::CREATED, &json!("1.0")), "{}", m.body);
    let proto = format!("{idp}/protocols/saml2");
    let bad = t.admin(Method::PUT, &proto, Some(json!({"protocol": {"mapping_id": "nope"}}))).await;
    assert_eq!(
        (bad.status, bad.body["error"]["message"].as_str()),
        (StatusCode::BAD_REQUEST, Some("Invalid mapping id: nope"))
    );
    let r = t.admin(Method::PUT, &proto, Some(json!({"protocol": {"mapping_id": "m1"}}))).await;
    assert_eq!((r.status, &r.body["protocol"]["mapping_id"]), (StatusCode::CREATED, &json!("m1")), "{}", r.body);
    let dup = t.admin(Method::PUT, &proto, Some(json!({"protocol": {"mapping_id": "m1"}}))).await;
    assert_eq!(dup.status, StatusCode::CONFLICT);
    let bad = t.admin(Method::PATCH, &proto, Some(json!({"protocol": {"mapping_id": "nope"}}))).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let list = t.admin(Method::GET, &format!("{idp}/protocols"), None).await;
    assert_eq!(list.body["protocols"][0]["id"], json!("saml2"));
    assert_eq!(t.admin(Method::DELETE, idp, None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(Method::GET, &proto, None).await.status, StatusCode::NOT_FOUND);
    let d = t.admin(Method::GET, &format!("/v3/domains/{domain}"), None).await;
    assert_eq!(d.status, StatusCode::OK, "the provider's domain stays");
    // Its remote ids are free again.
    let r = t
        .admin(
            Method::PUT,
            "/v3/OS-FEDERATION/identity_providers/idp3",
            Some(json!({"identity_provider": {"remote_ids": ["r2"], "domain_id": domain}})),
        )
        .await;
    assert_eq!((r.status, &r.body["identity_provider"]["domain_id"]), (StatusCode::CREATED, &json!(domain)));
    let r = t
        .admin(
            Method::PUT,
            "/v3/OS-FEDERATION/identity_providers/idp4",
            Some(json!({"identity_provider": {"domain_id": "missing"}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mappings_and_service_providers_check_their_bodies() {
    let t = TestNode::start().await;
    let m = "/v3/OS-FEDERATION/mappings/m1";
    for bad in
        [json!({"mapping": {}}), json!({"mapping": {"rules": []}}), json!({"mapping": {"rules": [{"local": []}]}})]
    {
        let r = t.admin(Method::PUT, m, Some(bad.clone())).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}: {}", r.body);
    }
    assert_eq!(t.admin(Method::GET, m, None).await.status, StatusCode::NOT_FOUND, "nothing was stored");
    assert_eq!(t.admin(Method::PUT, m, Some(json!({"mapping": {"rules": rules()}}))).await.status, StatusCode::CREATED);
    let new_rules = json!([{"local": [{"group": {"id": "g"}}], "remote": [{"type": "x"}]}]);
    let r = t.admin(Method::PATCH, m, Some(json!({"mapping": {"rules": new_rules}}))).await;
    assert_eq!((r.status, &r.body["mapping"]["rules"]), (StatusCode::OK, &new_rules));
    let bad = t.admin(Method::PATCH, m, Some(json!({"mapping": {"rules": []}}))).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        t.admin(Method::GET, m, None).await.body["mapping"]["rules"],
        new_rules,
        "a refused PATCH changes nothing"
    );

    let sp = |id: &str| format!("/v3/OS-FEDERATION/service_providers/{id}");
    let body = json!({"service_provider": {"auth_url": "https://a.example/v3", "sp_url": "https://a.example/sp"}});
    let r = t.admin(Method::PUT, &sp("off"), Some(body.clone())).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(
        (&r.body["service_provider"]["enabled"], &r.body["service_provider"]["relay_state_prefix"]),
        (&json!(false), &json!("ss:mem:"))
    );
    let mut on = body.clone();
    on["service_provider"]["enabled"] = json!(true);
    assert_eq!(t.admin(Method::PUT, &sp("on"), Some(on)).await.status, StatusCode::CREATED);
    for bad in
        [json!({"service_provider": {}}), json!({"service_provider": {"auth_url": "abc", "sp_url": "https://x"}})]
    {
        assert_eq!(t.admin(Method::PUT, &sp("bad"), Some(bad)).await.status, StatusCode::BAD_REQUEST);
    }
    let r = t.admin(Method::PATCH, &sp("off"), Some(json!({"service_provider": {"sp_url": "nope"}}))).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    // Enabled service providers are listed in tokens.
    let token = t.token("admin", "secret", json!({"project": {"name": "admin", "domain": {"id": "default"}}})).await;
    let v = t.call(Method::GET, &format!("/v3/auth/tokens#{token}"), Some(&token), None).await;
    assert_eq!(
        v.body["token"]["service_providers"],
        json!([{"auth_url": "https://a.example/v3", "id": "on", "sp_url": "https://a.example/sp"}])
    );
    let list = t.admin(Method::GET, "/v3/OS-FEDERATION/service_providers?enabled=false", None).await;
    let ids: Vec<&str> =
        list.body["service_providers"].as_array().unwrap().iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(ids, ["off"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_bodies_keep_keystone_schema_messages() {
    let t = TestNode::start().await;
    let idp = "/v3/OS-FEDERATION/identity_providers/idp2";
    let cases = [
        (Method::PUT, json!([1]), "'identity_provider' is a required property"),
        (Method::PUT, json!({"other": 1, "identity_provider": 5}), "Additional properties are not allowed ('other' was unexpected)"),
        (
            Method::PUT,
            json!({"identity_provider": null}),
            "Invalid input for field/attribute identity_provider. Value: null. null is not of type 'object'",
        ),
        (
            Method::PUT,
            json!({"identity_provider": ["x"]}),
            "Invalid input for field/attribute identity_provider. Value: [\"x\"]. [\"x\"] is not of type 'object'",
        ),
        (
            Method::PUT,
            json!({"identity_provider": {"foo": 1, "enabled": "maybe"}}),
            "Invalid input for field/attribute identity_provider. Value: {\"enabled\":\"maybe\",\"foo\":1}. \
             Additional properties are not allowed ('foo' was unexpected)",
        ),
        (
            Method::PUT,
            json!({"identity_provider": {"enabled": "maybe"}}),
            "Invalid input for field/attribute enabled. Value: maybe. 'maybe' is not a valid boolean",
        ),
        (
            Method::PUT,
            json!({"identity_provider": {"remote_ids": ["a", "a", 5]}}),
            "Invalid input for field/attribute remote_ids. Value: [\"a\",\"a\",5]. [\"a\",\"a\",5] has non-unique elements",
        ),
        (
            Method::PUT,
            json!({"identity_provider": {"domain_id": "a b"}}),
            "Invalid input for field/attribute domain_id. Value: a b. 'a b' does not match '^[a-zA-Z0-9-]+$'",
        ),
        (
            Method::PATCH,
            json!({"identity_provider": {}}),
            "Invalid input for field/attribute identity_provider. Value: {}. {} should be non-empty",
        ),
        (
            Method::PATCH,
            json!({"identity_provider": {"domain_id": "d"}}),
            "Invalid input for field/attribute identity_provider. Value: {\"domain_id\":\"d\"}. \
             Additional properties are not allowed ('domain_id' was unexpected)",
        ),
    ];
    for (method, body, want) in cases {
        let r = t.admin(method.clone(), idp, Some(body.clone())).await;
        assert_eq!(
            (r.status, r.body["error"]["message"].as_str()),
            (StatusCode::BAD_REQUEST, Some(want)),
            "{method} {body}"
        );
    }
    assert_eq!(t.admin(Method::PUT, idp, None).await.status, StatusCode::CREATED, "the body may be absent");

    let protocol = format!("{idp}/protocols/p1");
    let r = t.admin(Method::PUT, &protocol, Some(json!({"protocol": {"remote_id_attribute": "x"}}))).await;
    assert_eq!(
        r.body["error"]["message"].as_str(),
        Some("Invalid input for field/attribute protocol. Value: {\"remote_id_attribute\":\"x\"}. 'mapping_id' is a required property")
    );
    let sp = "/v3/OS-FEDERATION/service_providers/sp1";
    let r = t.admin(Method::PUT, sp, Some(json!({"service_provider": {"auth_url": "https://a"}}))).await;
    assert_eq!(
        r.body["error"]["message"].as_str(),
        Some("Invalid input for field/attribute service_provider. Value: {\"auth_url\":\"https://a\"}. 'sp_url' is a required property")
    );
    let r = t.admin(Method::PUT, "/v3/OS-FEDERATION/mappings/m2", Some(json!({"mapping": 5}))).await;
    assert_eq!(r.body["error"]["message"].as_str(), Some("5 is not of type 'object'\n"));
}
