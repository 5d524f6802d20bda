//! At-rest audit: after a user (distinctive name and password, a TOTP credential), a project (distinctive name
//! and description) and an OAuth2 client (distinctive name, its secret used for a grant) are
//! created, an external identity provider (handle, client secret) and a Kubernetes cluster
//! issuer (reviewer JWT) registered, all applied on all three nodes, and the nodes stopped, no
//! file under any data dir contains those strings, the admin password, the cluster secret or a
//! node's key-encryption key, in any byte position; the audit trail (`DATA_DIR/audit/`, plaintext
//! by design for the operator's shipper) may name identities but holds none of the secrets.

use std::time::Duration;

use crate::support::{files_under, find_bytes, random_hex, Cluster};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_or_identity_string_is_stored_in_plaintext() {
    let mut cluster = Cluster::start(3).await;
    cluster.wait_leader(Duration::from_secs(30)).await;
    let token = cluster.admin_token(0).await;

    let tag = random_hex(8);
    let user_name = format!("zqxaudituser{tag}");
    let user_password = format!("Zq-audit-password-{tag}!");
    let user_email = format!("zqxauditmail{tag}@example.org");
    let project_name = format!("zqxauditproject{tag}");
    let project_description = format!("zqxauditdescription{tag}");
    let timeout = Duration::from_secs(30);

    // project through node 2, user through node 3 (both followers or leader: does not matter)
    let project = cluster
        .post_retry(
            1,
            "/v3/projects",
            &token,
            &json!({"project": {"name": project_name, "domain_id": "default",
                                "description": project_description}}),
            timeout,
        )
        .await;
    let project_id = project.json["project"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no project.id in {}", project.text))
        .to_owned();
    let user = cluster
        .post_retry(
            2,
            "/v3/users",
            &token,
            &json!({"user": {"name": user_name, "domain_id": "default",
                             "password": user_password, "email": user_email,
                             "default_project_id": project_id}}),
            timeout,
        )
        .await;
    let user_id = user.json["user"]["id"].as_str().unwrap_or_else(|| panic!("no user.id in {}", user.text)).to_owned();
    assert!(!user.text.contains(&user_password), "the create-user answer echoes the password: {}", user.text);

    // the user can authenticate (an unscoped token: no role on the project), i.e. the password
    // was stored in some form
    let unscoped = json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user_name, "domain": {"id": "default"}, "password": user_password}}}}});
    let r = cluster
        .http
        .post(&format!("{}/v3/auth/tokens", cluster.api(0)), None, &unscoped)
        .await
        .expect("authenticate the audit user");
    assert!(r.status.is_success(), "the audit user cannot authenticate: {} {}", r.status, r.text);

    // a TOTP credential of the user: its blob is the base32 secret its passcodes come from
    let totp_seed = format!("ZQXAUDITTOTPSEED{}", tag.to_uppercase());
    let cred = cluster
        .post_retry(
            1,
            "/v3/credentials",
            &token,
            &json!({"credential": {"type": "totp", "user_id": user_id, "blob": totp_seed}}),
            timeout,
        )
        .await;
    assert!(cred.json["credential"]["id"].is_string(), "no credential.id in {}", cred.text);

    // an OAuth2 client whose secret (shown once, stored as a keyed hash) is used for a grant
    let client_name = format!("zqxauditclient{tag}");
    let client = cluster
        .post_retry(
            0,
            "/v4/oauth2/default/clients",
            &token,
            &json!({"oauth2_client": {"name": client_name, "confidential": true,
                                      "grant_types": ["client_credentials"], "allowed_scopes": ["platform:api"]}}),
            timeout,
        )
        .await;
    let client_id = client.json["oauth2_client"]["client_id"].as_str().expect("client_id").to_owned();
    let client_secret = client.json["client_secret"].as_str().expect("client_secret").to_owned();
    let grant = reqwest::Client::new()
        .post(format!("{}/v4/oauth2/default/token", cluster.api(1)))
        .basic_auth(&client_id, Some(&client_secret))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("grant_type=client_credentials&scope=platform%3Aapi")
        .send()
        .await
        .expect("client_credentials grant");
    assert_eq!(grant.status(), StatusCode::OK, "the audit client's secret works");

    // an external identity provider (handle and client secret) and a Kubernetes cluster issuer
    // (reviewer JWT): secrets the service keeps to present, sealed like every value
    let idp_handle = format!("zqxauditidp{tag}");
    let idp_secret = format!("zqxauditidpsecret{tag}");
    let reviewer_jwt = format!("zqxauditreviewerjwt{tag}");
    let idp = cluster
        .post_retry(
            1,
            "/v4/federation/identity_providers",
            &token,
            &json!({"identity_provider": {"domain_id": "default", "provider_id": idp_handle,
                "issuer": "https://idp.example", "client_id": "idnode", "client_secret": idp_secret,
                "jwks_uri": "https://idp.example/jwks"}}),
            timeout,
        )
        .await;
    assert!(!idp.text.contains(&idp_secret), "the IdP answer echoes its secret: {}", idp.text);
    let k8s = cluster
        .post_retry(
            2,
            "/v4/k8s_auth/instances",
            &token,
            &json!({"instance": {"domain_id": "default", "provider_id": format!("k8s{tag}"),
                "kubernetes_host": "https://k8s.example", "token_reviewer_jwt": reviewer_jwt}}),
            timeout,
        )
        .await;
    assert!(!k8s.text.contains(&reviewer_jwt), "the instance answer echoes its JWT: {}", k8s.text);

    // applied on every node
    for node in 0..3 {
        cluster.wait_get_status(node, &format!("/v3/projects/{project_id}"), &token, StatusCode::OK, timeout).await;
        cluster.wait_get_status(node, &format!("/v3/users/{user_id}"), &token, StatusCode::OK, timeout).await;
    }
    cluster.wait_applied_converged(&[0, 1, 2], timeout).await;

    // Stop: node 1 by SIGKILL (only what was written synchronously is on disk: WAL, raft log),
    // nodes 2 and 3 gracefully with SIGTERM (memtables flushed to table files on the way out).
    cluster.kill(0);
    let mut graceful = Vec::new();
    for node in [1usize, 2] {
        let status = cluster.terminate(node, Duration::from_secs(15)).await;
        graceful.push((node + 1, status));
    }
    eprintln!("SIGTERM outcome (node, exit status or None = had to SIGKILL): {graceful:?}");

    // (what, bytes, whether it is a secret): the audit trail (DATA_DIR/audit/, the one
    // plaintext part of a data dir, written for the operator's shipper) may name users and
    // projects, never a secret.
    let mut needles: Vec<(String, Vec<u8>, bool)> = vec![
        ("user name".into(), user_name.clone().into_bytes(), false),
        ("user password".into(), user_password.clone().into_bytes(), true),
        ("user email".into(), user_email.clone().into_bytes(), false),
        ("totp credential secret".into(), totp_seed.clone().into_bytes(), true),
        ("project name".into(), project_name.clone().into_bytes(), false),
        ("project description".into(), project_description.clone().into_bytes(), false),
        ("admin password".into(), cluster.admin_password.clone().into_bytes(), true),
        ("cluster secret".into(), cluster.secret.clone().into_bytes(), true),
        ("oauth2 client name".into(), client_name.clone().into_bytes(), false),
        ("oauth2 client secret".into(), client_secret.clone().into_bytes(), true),
        ("identity provider handle".into(), idp_handle.clone().into_bytes(), false),
        ("identity provider client secret".into(), idp_secret.clone().into_bytes(), true),
        ("k8s token reviewer JWT".into(), reviewer_jwt.clone().into_bytes(), true),
    ];
    for n in &cluster.nodes {
        needles.push((format!("node {} KEK (raw)", n.id), n.kek.clone(), true));
        needles.push((format!("node {} KEK (base64)", n.id), n.kek_b64.clone().into_bytes(), true));
    }

    let mut scanned = 0usize;
    let mut bytes = 0usize;
    let mut hits = Vec::new();
    // Positive control: ids are random and kept in clear in storage keys (names never are), so
    // the project's id must show up on every node: proof the scan reads where the data lives.
    // Its second half is searched for: table files store each key after the prefix it shares
    // with the key before it, so a key's tail is always written out, its head not always.
    let id_tail = &project_id.as_bytes()[project_id.len() / 2..];
    let mut control = Vec::new();
    for n in &cluster.nodes {
        let mut id_seen = false;
        let files = files_under(&n.data_dir);
        assert!(!files.is_empty(), "node {}: data dir {} is empty", n.id, n.data_dir.display());
        let trail = n.data_dir.join("audit");
        assert!(trail.join("audit.jsonl").is_file(), "node {}: no audit trail by default", n.id);
        for f in files {
            let content = std::fs::read(&f).unwrap_or_else(|e| panic!("read {}: {e}", f.display()));
            scanned += 1;
            bytes += content.len();
            let in_trail = f.starts_with(&trail);
            for (what, needle, _) in needles.iter().filter(|(_, _, secret)| *secret || !in_trail) {
                if let Some(at) = find_bytes(&content, needle) {
                    hits.push(format!("{what} in {} at byte {at}", f.display()));
                }
            }
            id_seen |= find_bytes(&content, id_tail).is_some();
        }
        control.push((n.id, id_seen));
    }
    eprintln!("scanned {scanned} files, {bytes} bytes under 3 data dirs");
    assert!(bytes > 0, "the data dirs hold no bytes at all");
    assert!(
        control.iter().all(|(_, seen)| *seen),
        "positive control failed: project id {project_id} not found in the data dirs of nodes \
         {control:?}; either the scan misses where the data is stored, or ids are no longer kept \
         in clear (then choose another control)"
    );
    assert!(hits.is_empty(), "plaintext found at rest:\n{}", hits.join("\n"));
}
