//! Tokens Keystone issued before the move, on a 3-node cluster: the operator imports
//! Keystone's fernet key repository through one node's ops listener (`idnode keys
//! keystone-fernet --repository DIR`), and a token in Keystone's format (its formatter's
//! msgpack payload in a fernet envelope, as `idnode_keys::keystone_fernet`'s tests show
//! Keystone 30 writes them) validates on every node; `--remove` ends that everywhere.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use rmpv::Value as Mp;
use serde_json::{json, Value};

use crate::support::Cluster;

/// An unscoped password token of `user` (a uuid hex id), as Keystone's formatter seals it.
fn keystone_unscoped(key: &str, user: &str) -> String {
    let expires = (chrono::Utc::now().timestamp() + 600) as f64;
    let payload = Mp::Array(vec![
        Mp::from(0u64),
        Mp::Array(vec![Mp::Boolean(true), Mp::Binary(hex::decode(user).unwrap())]),
        Mp::from(2u64),
        Mp::F64(expires),
        Mp::Array(vec![Mp::Binary(vec![9; 16])]),
    ]);
    let mut buf = Vec::new();
    rmpv::encode::write_value(&mut buf, &payload).unwrap();
    fernet::Fernet::new(key).unwrap().encrypt(&buf).trim_end_matches('=').to_string()
}

/// Waits until node `i` answers `want` for the token (replication takes a moment).
async fn validates(c: &Cluster, i: usize, admin: &str, token: &str, want: StatusCode) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = c.http.validate_token(&c.api(i), admin, token).await.unwrap();
        if r.status == want {
            return r.json;
        }
        assert!(Instant::now() < deadline, "node {}: {} {}", i + 1, r.status, r.text);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keystone_tokens_validate_on_every_node_once_its_keys_are_imported() {
    let c = Cluster::start(3).await;
    let admin = c.admin_token(0).await;
    let body = json!({"user": {"name": "moved", "password": "moved-pw-1", "domain_id": "default"}});
    let r = c.http.post(&format!("{}/v3/users", c.api(0)), Some(&admin), &body).await.unwrap();
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let user = r.json["user"]["id"].as_str().unwrap().to_string();

    // Keystone's repository: `0` the staged key, `1` the primary that issued the token.
    let repo = tempfile::tempdir().unwrap();
    let (staged, primary) = (fernet::Fernet::generate_key(), fernet::Fernet::generate_key());
    std::fs::write(repo.path().join("0"), format!("{staged}\n")).unwrap();
    std::fs::write(repo.path().join("1"), format!("{primary}\n")).unwrap();
    let token = keystone_unscoped(&primary, &user);
    validates(&c, 0, &admin, &token, StatusCode::NOT_FOUND).await;

    let dir = repo.path().to_str().unwrap();
    let out = c.keys_cli(&[1], &["keystone-fernet", "--repository", dir]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("\"keystone_fernet_keys\": 2"), "{printed}");
    assert!(!printed.contains(&primary) && !printed.contains(&staged), "no key material printed");
    for i in 0..3 {
        let v = validates(&c, i, &admin, &token, StatusCode::OK).await;
        assert_eq!(v["token"]["user"]["id"], json!(user), "node {}", i + 1);
        assert_eq!(v["token"]["methods"], json!(["password"]));
    }
    // A repository that is not one is refused before anything travels.
    let empty = tempfile::tempdir().unwrap();
    let out = c.keys_cli(&[0], &["keystone-fernet", "--repository", empty.path().to_str().unwrap()]).await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("holds no key file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    validates(&c, 2, &admin, &token, StatusCode::OK).await;

    let out = c.keys_cli(&[2], &["keystone-fernet", "--remove"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for i in 0..3 {
        validates(&c, i, &admin, &token, StatusCode::NOT_FOUND).await;
    }

    // Imported again, they rotate out with idnode's own keys: with the default three keys,
    // the first token key rotation drops them on every member.
    let out = c.keys_cli(&[0], &["keystone-fernet", "--repository", dir]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    validates(&c, 1, &admin, &token, StatusCode::OK).await;
    crate::token_cluster::wait_cluster_version(&c, 12.0).await;
    let out = c.keys_cli(&[1], &["rotate", "--token"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for i in 0..3 {
        validates(&c, i, &admin, &token, StatusCode::NOT_FOUND).await;
    }
}
