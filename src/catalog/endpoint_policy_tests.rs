//! OS-ENDPOINT-POLICY against an in-process node: the resolution order (endpoint, then
//! service in the region or a region above it, then service), replacement per target, and
//! associations going with what they name.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::state::model::DocKind;
use crate::state::Reader;
use crate::testkit::TestNode;

async fn policy(t: &TestNode, name: &str) -> String {
    t.create("/v3/policies", "policy", json!({"blob": "{}", "type": name})).await
}

async fn status(t: &TestNode, method: Method, path: &str) -> StatusCode {
    t.admin(method, path, None).await.status
}

/// The policy the endpoint resolves to, or None on 404.
async fn resolved(t: &TestNode, endpoint: &str) -> Option<String> {
    let r = t.admin(Method::GET, &format!("/v3/endpoints/{endpoint}/OS-ENDPOINT-POLICY/policy"), None).await;
    match r.status {
        StatusCode::NOT_FOUND => None,
        StatusCode::OK => r.body["policy"]["id"].as_str().map(str::to_string),
        other => panic!("{other}: {}", r.body),
    }
}

async fn listed(t: &TestNode, policy: &str) -> Vec<String> {
    let r = t.admin(Method::GET, &format!("/v3/policies/{policy}/OS-ENDPOINT-POLICY/endpoints"), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let mut ids: Vec<String> =
        r.body["endpoints"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_string()).collect();
    ids.sort();
    ids
}

fn association_count(t: &TestNode) -> usize {
    t.node.engine.read().docs(DocKind::PolicyAssociation).unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoint_beats_region_beats_service() {
    let t = TestNode::start().await;
    let (p_ep, p_region, p_svc) = (policy(&t, "ep").await, policy(&t, "region").await, policy(&t, "svc").await);
    let svc = t.create("/v3/services", "service", json!({"type": "compute"})).await;
    t.create("/v3/regions", "region", json!({"id": "top"})).await;
    t.create("/v3/regions", "region", json!({"id": "mid", "parent_region_id": "top"})).await;
    t.create("/v3/regions", "region", json!({"id": "leaf", "parent_region_id": "mid"})).await;
    let ep_fields =
        |region: &str| json!({"service_id": svc, "interface": "public", "url": "http://n", "region_id": region});
    let ep = t.create("/v3/endpoints", "endpoint", ep_fields("leaf")).await;
    let other = t.create("/v3/endpoints", "endpoint", ep_fields("top")).await;

    assert_eq!(resolved(&t, &ep).await, None);
    let r = t.admin(Method::GET, &format!("/v3/endpoints/{ep}/OS-ENDPOINT-POLICY/policy"), None).await;
    assert_eq!(r.body["error"]["message"], json!(format!("No policy is associated with endpoint {ep}.")));

    let svc_path = format!("/v3/policies/{p_svc}/OS-ENDPOINT-POLICY/services/{svc}");
    assert_eq!(status(&t, Method::PUT, &svc_path).await, StatusCode::NO_CONTENT);
    assert_eq!(resolved(&t, &ep).await.as_deref(), Some(p_svc.as_str()));
    assert_eq!(listed(&t, &p_svc).await.len(), 2, "a service's association reaches all its endpoints");

    // The service in a region above the endpoint's: found by walking up.
    let region_path = format!("/v3/policies/{p_region}/OS-ENDPOINT-POLICY/services/{svc}/regions/mid");
    assert_eq!(status(&t, Method::PUT, &region_path).await, StatusCode::NO_CONTENT);
    assert_eq!(status(&t, Method::HEAD, &region_path).await, StatusCode::NO_CONTENT);
    assert_eq!(resolved(&t, &ep).await.as_deref(), Some(p_region.as_str()));
    assert_eq!(resolved(&t, &other).await.as_deref(), Some(p_svc.as_str()), "top is above mid, not below");
    assert_eq!(listed(&t, &p_region).await, vec![ep.clone()], "mid reaches its child regions' endpoints");

    let ep_path = format!("/v3/policies/{p_ep}/OS-ENDPOINT-POLICY/endpoints/{ep}");
    assert_eq!(status(&t, Method::GET, &ep_path).await, StatusCode::NOT_FOUND);
    assert_eq!(status(&t, Method::PUT, &ep_path).await, StatusCode::NO_CONTENT);
    assert_eq!(status(&t, Method::PUT, &ep_path).await, StatusCode::NO_CONTENT, "tying again changes nothing");
    assert_eq!(status(&t, Method::GET, &ep_path).await, StatusCode::NO_CONTENT);
    assert_eq!(resolved(&t, &ep).await.as_deref(), Some(p_ep.as_str()));

    // One policy per target: tying another replaces it.
    let ep_path_2 = format!("/v3/policies/{p_svc}/OS-ENDPOINT-POLICY/endpoints/{ep}");
    assert_eq!(status(&t, Method::PUT, &ep_path_2).await, StatusCode::NO_CONTENT);
    assert_eq!(status(&t, Method::GET, &ep_path).await, StatusCode::NOT_FOUND);
    assert_eq!(resolved(&t, &ep).await.as_deref(), Some(p_svc.as_str()));
    // Untying a policy the target does not hold is a no-op.
    assert_eq!(status(&t, Method::DELETE, &ep_path).await, StatusCode::NO_CONTENT);
    assert_eq!(resolved(&t, &ep).await.as_deref(), Some(p_svc.as_str()));
    assert_eq!(status(&t, Method::DELETE, &ep_path_2).await, StatusCode::NO_CONTENT);
    assert_eq!(resolved(&t, &ep).await.as_deref(), Some(p_region.as_str()));

    // Missing records: the policy first, then the endpoint, service and region.
    let missing = [
        format!("/v3/policies/nope/OS-ENDPOINT-POLICY/endpoints/{ep}"),
        format!("/v3/policies/{p_ep}/OS-ENDPOINT-POLICY/endpoints/nope"),
        format!("/v3/policies/{p_ep}/OS-ENDPOINT-POLICY/services/nope"),
        format!("/v3/policies/{p_ep}/OS-ENDPOINT-POLICY/services/{svc}/regions/nope"),
    ];
    for path in &missing {
        for method in [Method::PUT, Method::GET, Method::DELETE] {
            assert_eq!(status(&t, method.clone(), path).await, StatusCode::NOT_FOUND, "{method} {path}");
        }
    }
    let r = t.admin(Method::PUT, &missing[3], None).await;
    assert_eq!(r.body["error"]["message"], json!("Could not find region: nope."));
    assert_eq!(status(&t, Method::GET, "/v3/policies/nope/OS-ENDPOINT-POLICY/endpoints").await, StatusCode::NOT_FOUND);
    assert_eq!(status(&t, Method::GET, "/v3/endpoints/nope/OS-ENDPOINT-POLICY/policy").await, StatusCode::NOT_FOUND);

    // A caller the policy refuses hears 403, whether or not the records exist.
    let user = t.create("/v3/users", "user", json!({"name": "m", "password": "pw"})).await;
    let token = t.token_for_id(&user, "pw", Value::Null).await;
    for path in [ep_path.as_str(), missing[0].as_str()] {
        let r = t.call(Method::GET, path, Some(&token), None).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn associations_go_with_what_they_name() {
    let t = TestNode::start().await;
    let (p1, p2) = (policy(&t, "one").await, policy(&t, "two").await);
    let svc = t.create("/v3/services", "service", json!({"type": "compute"})).await;
    let kept = t.create("/v3/services", "service", json!({"type": "image"})).await;
    t.create("/v3/regions", "region", json!({"id": "r1"})).await;
    t.create("/v3/regions", "region", json!({"id": "r1-child", "parent_region_id": "r1"})).await;
    let ep_fields = |s: &str| json!({"service_id": s, "interface": "public", "url": "http://n"});
    let ep = t.create("/v3/endpoints", "endpoint", ep_fields(&svc)).await;
    let kept_ep = t.create("/v3/endpoints", "endpoint", ep_fields(&kept)).await;
    let t = &t;
    let put = |path: String| async move { assert_eq!(status(t, Method::PUT, &path).await, StatusCode::NO_CONTENT) };

    // An endpoint's association goes with the endpoint.
    put(format!("/v3/policies/{p1}/OS-ENDPOINT-POLICY/endpoints/{kept_ep}")).await;
    put(format!("/v3/policies/{p1}/OS-ENDPOINT-POLICY/endpoints/{ep}")).await;
    assert_eq!(association_count(t), 2);
    assert_eq!(status(t, Method::DELETE, &format!("/v3/endpoints/{kept_ep}")).await, StatusCode::NO_CONTENT);
    assert_eq!(association_count(t), 1);

    // A region's (and its child regions') associations go with it.
    put(format!("/v3/policies/{p2}/OS-ENDPOINT-POLICY/services/{kept}/regions/r1-child")).await;
    put(format!("/v3/policies/{p2}/OS-ENDPOINT-POLICY/services/{kept}")).await;
    assert_eq!(association_count(t), 3);
    assert_eq!(status(t, Method::DELETE, "/v3/regions/r1").await, StatusCode::NO_CONTENT);
    assert_eq!(association_count(t), 2);

    // A policy's associations go with the policy.
    assert_eq!(status(t, Method::DELETE, &format!("/v3/policies/{p2}")).await, StatusCode::NO_CONTENT);
    assert_eq!(association_count(t), 1);

    // A service's, in any region, and those of the endpoints it takes along.
    t.create("/v3/regions", "region", json!({"id": "r2"})).await;
    put(format!("/v3/policies/{p1}/OS-ENDPOINT-POLICY/services/{svc}")).await;
    put(format!("/v3/policies/{p1}/OS-ENDPOINT-POLICY/services/{svc}/regions/r2")).await;
    assert_eq!(association_count(t), 3);
    assert_eq!(status(t, Method::DELETE, &format!("/v3/services/{svc}")).await, StatusCode::NO_CONTENT);
    assert_eq!(association_count(t), 0);
    assert_eq!(listed(t, &p1).await, Vec::<String>::new());
}
