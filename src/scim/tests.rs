//! SCIM realm administration through the real router, and the mapping rule it adds.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::state::keys::ns;
use crate::state::Reader;
use crate::testkit::TestNode;

const PW: &str = "realm manager pw 1";

#[tokio::test]
async fn realms_resolve_their_identity_provider_and_a_manager_runs_its_own_domain() {
    let t = TestNode::start().await;
    let d = t.create("/v3/domains", "domain", json!({"name": "corp"})).await;
    let other = t.create("/v3/domains", "domain", json!({"name": "other"})).await;
    let own_idp = t.identity_provider(Some(&d), "okta").await;
    let foreign_idp = t.identity_provider(Some(&other), "okta").await;
    let global_idp = t.identity_provider(None, "global").await;
    let u = t.create("/v3/users", "user", json!({"name": "rm", "domain_id": d, "password": PW})).await;
    let manager = t.node.engine.read().id_by_name(ns::ROLE_NAME, "", "manager").unwrap().unwrap();
    t.admin(Method::PUT, &format!("/v3/domains/{d}/users/{u}/roles/{manager}"), None).await;
    let tok = t.token_for_id(&u, PW, json!({"domain": {"id": d}})).await;
    let create = |idp: &str, provider: &str| json!({"scim_realm": {"domain_id": d, "provider_id": provider, "idp_id": idp, "display_name": "Okta SCIM"}});

    let r = t.call(Method::POST, "/v4/scim-realms", Some(&tok), Some(create(&own_idp, "okta-scim"))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["scim_realm"]["enabled"], json!(true));
    assert!(r.body["scim_realm"]["created_at"].is_i64());
    let r = t.call(Method::POST, "/v4/scim-realms", Some(&tok), Some(create(&own_idp, "okta-scim"))).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "one realm per coordinate");
    for bad in ["no-such-idp", foreign_idp.as_str()] {
        let r = t.call(Method::POST, "/v4/scim-realms", Some(&tok), Some(create(bad, "x"))).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{bad}: {}", r.body);
    }
    let r = t.call(Method::POST, "/v4/scim-realms", Some(&tok), Some(create(&global_idp, "global-scim"))).await;
    assert_eq!(r.status, StatusCode::CREATED, "a global provider may serve a domain's realm");

    let list = t.call(Method::GET, &format!("/v4/scim-realms?domain_id={d}"), Some(&tok), None).await;
    assert_eq!(list.body["scim_realms"].as_array().unwrap().len(), 2, "{}", list.body);
    let r = t.call(Method::GET, &format!("/v4/scim-realms?domain_id={other}"), Some(&tok), None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let path = format!("/v4/scim-realms/{d}/okta-scim");
    let r = t.call(Method::PATCH, &path, Some(&tok), Some(json!({"scim_realm": {"enabled": false}}))).await;
    assert_eq!((r.status, r.body["scim_realm"]["enabled"].clone()), (StatusCode::OK, json!(false)));
    let r = t.call(Method::PATCH, &path, Some(&tok), Some(json!({"scim_realm": {"idp_id": "no-such-idp"}}))).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = t.call(Method::GET, &path, Some(&tok), None).await;
    assert_eq!(r.body["scim_realm"]["idp_id"], json!(own_idp), "a refused PATCH changed nothing");
    let r = t.call(Method::GET, &format!("/v4/scim-realms/{d}/nope"), Some(&tok), None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_provider_with_an_active_realm_maps_to_no_project() {
    let t = TestNode::start().await;
    let d = t.create("/v3/domains", "domain", json!({"name": "corp"})).await;
    let p = t.create("/v3/projects", "project", json!({"name": "p", "domain_id": d})).await;
    let idp_id = t.identity_provider(Some(&d), "okta").await;
    let reader = t.node.engine.read().id_by_name(ns::ROLE_NAME, "", "reader").unwrap().unwrap();
    let ruleset = |auth: Value| {
        json!({"mapping": {"domain_id": d, "provider_id": "okta-scim", "source": {"type": "federation", "idp_id": idp_id},
            "rules": [{"name": "scim", "match": {"all_of": [{"type": "equals", "claim": "provider_id", "value": "okta-scim"}]},
                       "identity": {"user_name": "scim"}, "authorizations": [auth]}]}})
    };
    let project = json!({"type": "project", "project_id": p, "project_domain_id": d, "roles": [{"id": reader}]});
    let domain = json!({"type": "domain", "domain_id": d, "roles": [{"id": reader}]});
    // Before the realm exists a project grant is fine.
    assert_eq!(t.admin(Method::POST, "/v4/mappings", Some(ruleset(project.clone()))).await.status, StatusCode::CREATED);
    let realm =
        json!({"scim_realm": {"domain_id": d, "provider_id": "okta-scim", "idp_id": idp_id, "display_name": "x"}});
    assert_eq!(t.admin(Method::POST, "/v4/scim-realms", Some(realm)).await.status, StatusCode::CREATED);
    let r = t.admin(Method::POST, "/v4/mappings", Some(ruleset(project.clone()))).await;
    assert_eq!(
        (r.status, r.body["detail"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("scim_realm_project_authorization"))
    );
    assert_eq!(t.admin(Method::POST, "/v4/mappings", Some(ruleset(domain))).await.status, StatusCode::CREATED);
    // A disabled realm no longer restricts.
    let path = format!("/v4/scim-realms/{d}/okta-scim");
    t.admin(Method::PATCH, &path, Some(json!({"scim_realm": {"enabled": false}}))).await;
    assert_eq!(t.admin(Method::POST, "/v4/mappings", Some(ruleset(project))).await.status, StatusCode::CREATED);
}
