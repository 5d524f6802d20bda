//! The routes the public router actually serves and the operations of its OpenAPI description
//! are the same set. Served paths come from the router itself (axum's route table, read from
//! its `Debug` output), served methods from sending every method to every path through the
//! real router: a method is served unless the router's method-not-allowed fallback answers.

use std::collections::{BTreeMap, BTreeSet};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

use crate::testkit::TestNode;

const METHODS: [Method; 8] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::OPTIONS,
    Method::TRACE,
];

/// Swagger UI's page and assets: served by the router, but not API operations.
fn is_swagger_ui(path: &str) -> bool {
    path == "/swagger-ui" || path.starts_with("/swagger-ui/")
}

/// Every path template in axum's route table (`RouteId(n): "/path"` entries), without axum's
/// internal fallback routes.
fn served_paths(router: &axum::Router) -> BTreeSet<String> {
    let dump = format!("{router:?}");
    let mut out = BTreeSet::new();
    let mut rest = dump.as_str();
    while let Some(i) = rest.find("RouteId(") {
        rest = &rest[i + "RouteId(".len()..];
        let Some(after) = rest.split_once("): \"").map(|(_, a)| a) else { continue };
        let Some((path, _)) = after.split_once('"') else { continue };
        if path.starts_with('/') && !path.contains("__private__axum") {
            out.insert(path.to_string());
        }
    }
    out
}

/// `{id}` and friends replaced by a concrete segment.
fn concrete(template: &str) -> String {
    template.split('/').map(|seg| if seg.starts_with('{') { "probe" } else { seg }).collect::<Vec<_>>().join("/")
}

fn documented(doc: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let paths = doc["paths"].as_object().expect("paths object");
    paths
        .iter()
        .map(|(path, item)| {
            let methods = item
                .as_object()
                .expect("path item")
                .keys()
                .filter(|k| METHODS.iter().any(|m| m.as_str().eq_ignore_ascii_case(k)))
                .map(|k| k.to_uppercase())
                .collect();
            (path.clone(), methods)
        })
        .collect()
}

#[tokio::test]
async fn every_served_route_is_documented_and_every_documented_route_is_served() {
    let t = TestNode::start().await;
    let reply = t.call(Method::GET, "/api-docs/openapi.json", None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    let doc = documented(&reply.body);

    let served = served_paths(&t.router);
    assert!(served.contains("/v3/auth/tokens") && served.len() > 50, "route table not readable: {served:?}");
    let served: BTreeSet<String> = served.into_iter().filter(|p| !is_swagger_ui(p)).collect();
    let described: BTreeSet<String> = doc.keys().cloned().collect();
    assert_eq!(
        served.difference(&described).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "served but not in the OpenAPI description"
    );
    assert_eq!(
        described.difference(&served).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "described but not served (phantom paths)"
    );

    let mut mismatches = Vec::new();
    for (path, methods) in &doc {
        let mut answered = BTreeSet::new();
        for m in &METHODS {
            let req = Request::builder().method(m.clone()).uri(concrete(path)).body(Body::empty()).expect("request");
            let resp = t.router.clone().oneshot(req).await.expect("infallible");
            // No handler answers 405 itself: only the method-not-allowed fallback does.
            if resp.status() != StatusCode::METHOD_NOT_ALLOWED {
                answered.insert(m.as_str().to_string());
            }
        }
        // axum answers HEAD with the GET handler (body dropped) where no HEAD handler exists;
        // that is GET's semantics, not a separate operation.
        let mut expected = methods.clone();
        if methods.contains("GET") {
            expected.insert("HEAD".into());
        }
        if answered != expected {
            mismatches.push(format!("{path}: served {answered:?}, described {methods:?}"));
        }
    }
    assert!(mismatches.is_empty(), "method mismatches:\n{}", mismatches.join("\n"));
}

#[tokio::test]
async fn description_declares_versions_security_and_error_body() {
    let t = TestNode::start().await;
    let r = t.call(Method::GET, "/api-docs/openapi.json", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers.get("content-type").and_then(|v| v.to_str().ok()), Some("application/json"));
    let doc = r.body;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "4.0.1");
    for name in ["x-auth", "X-Auth-Token"] {
        let s = &doc["components"]["securitySchemes"][name];
        assert_eq!((&s["type"], &s["in"], &s["name"]), (&"apiKey".into(), &"header".into(), &"X-Auth-Token".into()));
    }
    let err = &doc["components"]["schemas"]["ErrorDetail"]["properties"];
    assert!(err["code"].is_object() && err["title"].is_object() && err["message"].is_object(), "{err}");

    // Every operation has a unique id, at least one success and one error response (except
    // discovery and this description, which cannot fail), and every error answers the error body.
    let mut ids = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("item") {
            let id = op["operationId"].as_str().expect("operationId");
            assert!(ids.insert(id.to_string()), "duplicate operationId {id}");
            let responses = op["responses"].as_object().expect("responses");
            // A form post of the OAuth2 pages and the account page succeeds with a redirect
            // (303) to the next step;
            // SCIM's /Bulk, /Me and /.search exist only to say they are not implemented (501).
            let scim = path.starts_with("/SCIM/v2/");
            let unimplemented = scim && responses.keys().eq(["501"].iter());
            let pages = path.starts_with("/v4/oauth2/") || path.starts_with("/v4/account/");
            let success = |s: &String| s.starts_with('2') || (pages && s == "303");
            assert!(unimplemented || responses.keys().any(success), "{method} {path}: no success response");
            // SCIM's discovery documents are static.
            let static_doc =
                scim && ["/ServiceProviderConfig", "/Schemas", "/ResourceTypes"].iter().any(|d| path.ends_with(d));
            let never_fails =
                static_doc || ["/", "/v3", "/v3/", "/v4", "/v4/", "/api-docs/openapi.json"].contains(&path.as_str());
            let some_error = responses.keys().any(|s| s.starts_with('4'));
            assert!(never_fails || unimplemented || some_error, "{method} {path}: no error response");
            for (status, resp) in responses.iter().filter(|(s, _)| s.starts_with('4') || s.starts_with('5')) {
                let schema = &resp["content"]["application/json"]["schema"]["$ref"];
                // The OAuth2 protocol endpoints answer RFC 6749 bodies, their pages (and the
                // account page) HTML.
                let oauth = (path.starts_with("/v4/oauth2/") || path.starts_with("/v4/account/"))
                    && (schema == "#/components/schemas/OAuthErrorBody" || resp["content"]["text/html"].is_object());
                // SCIM answers RFC 7644 error envelopes.
                let scim_error = scim
                    && resp["content"]["application/scim+json"]["schema"]["$ref"] == "#/components/schemas/ScimError";
                // Token issue's 401 documents the multi-factor receipt body (other refusals
                // answer the error body, as its description says).
                let receipt = path.ends_with("/auth/tokens")
                    && method == "post"
                    && status == "401"
                    && schema == "#/components/schemas/ReceiptEnvelope";
                assert!(
                    oauth || scim_error || receipt || schema == "#/components/schemas/ErrorBody",
                    "{method} {path} {status}: {resp}"
                );
            }
        }
    }

    // The token header parameters and scheme where the spec uses them.
    let validate = &doc["paths"]["/v3/auth/tokens"]["get"];
    let params = validate["parameters"].as_array().expect("parameters");
    assert!(params.iter().any(|p| p["name"] == "X-Subject-Token" && p["in"] == "header" && p["required"] == true));
    assert!(params.iter().any(|p| p["name"] == "nocatalog" && p["in"] == "query"));
    let issue = &doc["paths"]["/v3/auth/tokens"]["post"];
    assert!(issue["responses"]["200"]["headers"]["X-Subject-Token"].is_object());
    assert!(issue["responses"]["429"].is_object());
    assert_eq!(issue["security"], serde_json::json!([{}]), "issuing a token needs no token");
    assert_eq!(doc["security"], serde_json::json!([{"x-auth": []}, {"X-Auth-Token": []}]));
    let grant = &doc["paths"]["/v3/projects/{id}/users/{actor_id}/roles/{role_id}"]["put"];
    let names: Vec<&str> =
        grant["parameters"].as_array().expect("params").iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, ["id", "actor_id", "role_id"]);
}
