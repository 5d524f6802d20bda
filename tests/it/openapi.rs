//! The API description and reference, from a real node over HTTP: the served
//! `/api-docs/openapi.json` validates as OpenAPI 3.1 (openapi-spec-validator, installed by
//! `scripts/install-openapi-validator`), and `/swagger-ui/` is a page whose assets are all
//! served by the node itself (it works with no network).

use std::process::Command;

use crate::support::Cluster;
use reqwest::StatusCode;

/// The validator: `IDNODE_OPENAPI_VALIDATOR`, or the venv that the install script creates.
fn validator() -> Option<String> {
    let path = std::env::var("IDNODE_OPENAPI_VALIDATOR")
        .unwrap_or_else(|_| "/opt/anchors/openapi-venv/bin/openapi-spec-validator".into());
    let ok = Command::new(&path).arg("--help").output().is_ok_and(|o| o.status.success());
    ok.then_some(path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn served_description_is_valid_openapi_3_1() {
    let Some(validator) = validator() else {
        let msg = "openapi-spec-validator is missing: run scripts/install-openapi-validator \
                   (or set IDNODE_OPENAPI_VALIDATOR)";
        assert!(std::env::var_os("CI").is_none(), "{msg}");
        eprintln!("SKIPPED served_description_is_valid_openapi_3_1: {msg}");
        return;
    };
    let cluster = Cluster::start(1).await;
    let r = cluster.http.get(&format!("{}/api-docs/openapi.json", cluster.api(0)), None).await.expect("GET");
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json["openapi"], "3.1.0");
    assert_eq!(r.json["info"]["version"], "4.0.1");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, &r.text).expect("write description");
    let out = Command::new(&validator).args(["--schema", "3.1"]).arg(&file).output().expect("run validator");
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the description does not validate as OpenAPI 3.1:\n{report}");
    assert!(report.contains("OK"), "unexpected validator output: {report}");

    // A broken document fails the same check, so a pass above means something.
    let mut broken = r.json.clone();
    broken["paths"]["/v3/users/{id}"]["get"]["parameters"][0]["in"] = "nowhere".into();
    std::fs::write(&file, broken.to_string()).expect("write broken description");
    let out = Command::new(&validator).args(["--schema", "3.1"]).arg(&file).output().expect("run validator");
    assert!(!out.status.success(), "the validator accepted a broken document");
}

/// `src="..."` and `href="..."` values of an HTML page.
fn references(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["src=\"", "href=\""] {
        let mut rest = html;
        while let Some(i) = rest.find(attr) {
            rest = &rest[i + attr.len()..];
            if let Some(end) = rest.find('"') {
                out.push(rest[..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swagger_ui_is_served_from_local_assets() {
    let cluster = Cluster::start(1).await;
    let base = cluster.api(0);
    let http = &cluster.http;

    let page = http.get(&format!("{base}/swagger-ui/"), None).await.expect("GET /swagger-ui/");
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.header("content-type").is_some_and(|c| c.starts_with("text/html")), "{:?}", page.headers);
    assert!(page.text.contains("swagger-ui"), "not the Swagger UI page: {}", page.text);
    let refs = references(&page.text);
    assert!(refs.len() >= 3, "too few assets referenced: {refs:?}");
    for r in &refs {
        assert!(!r.contains("://") && !r.starts_with("//"), "the page references another host: {r}");
    }
    // The initializer points Swagger UI at this node's description, and at no validator host.
    let init = http.get(&format!("{base}/swagger-ui/swagger-initializer.js"), None).await.expect("initializer");
    assert_eq!(init.status, StatusCode::OK);
    assert!(init.text.contains("/api-docs/openapi.json"), "{}", init.text);
    assert!(!init.text.contains("http://") && !init.text.contains("https://"), "{}", init.text);
    for r in refs.iter().chain([&"swagger-initializer.js".to_string()]) {
        let url = format!("{base}/swagger-ui/{}", r.trim_start_matches("./"));
        let asset = http.get(&url, None).await.expect("GET asset");
        assert_eq!(asset.status, StatusCode::OK, "{url}");
        assert!(!asset.text.is_empty(), "{url} is empty");
    }
    // The bare path redirects to the page.
    let r = http.get(&format!("{base}/swagger-ui"), None).await.expect("GET /swagger-ui");
    assert_eq!(r.status, StatusCode::OK, "redirect followed to the page");
}
