//! Tokens across a 3-node cluster: a token issued on node 1 validates on nodes 2 and 3; once
//! node 2 has answered 204 to its revocation, nodes 1 and 3 answer 404 for it at once (no wait
//! between the revocation and the validations).

use std::time::Duration;

use crate::support::Cluster;
use reqwest::StatusCode;

/// Rounds of issue / validate / revoke, to give a lagging follower several chances to show.
const ROUNDS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_issued_on_one_node_validates_everywhere_and_revocation_is_immediate() {
    let cluster = Cluster::start(3).await;
    cluster.wait_leader(Duration::from_secs(30)).await;
    let http = &cluster.http;
    let pw = cluster.admin_password.clone();

    // the caller's own token (X-Auth-Token), issued on node 3
    let (auth, _) = cluster.issue_token(2, "admin", &pw, "admin", Duration::from_secs(30)).await;

    for round in 0..ROUNDS {
        // subject token, issued on node 1
        let (subject, issued) = cluster.issue_token(0, "admin", &pw, "admin", Duration::from_secs(30)).await;
        assert_ne!(subject, auth, "two issues returned the same token");
        let user_id = issued.json["token"]["user"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("issue answer without token.user.id: {}", issued.text))
            .to_owned();
        assert_eq!(issued.json["token"]["user"]["name"].as_str(), Some("admin"), "issue answer: {}", issued.text);

        for node in [1usize, 2] {
            let r = http
                .validate_token(&cluster.api(node), &auth, &subject)
                .await
                .unwrap_or_else(|e| panic!("validate on node {}: {e}", node + 1));
            assert_eq!(
                r.status,
                StatusCode::OK,
                "round {round}: token issued on node 1 does not validate on node {}: {}",
                node + 1,
                r.text
            );
            assert_eq!(
                r.json["token"]["user"]["id"].as_str(),
                Some(user_id.as_str()),
                "round {round}: node {} validated the token for another user: {}",
                node + 1,
                r.text
            );
            assert_eq!(
                r.header("X-Subject-Token").as_deref(),
                Some(subject.as_str()),
                "round {round}: node {} validation answer lacks the X-Subject-Token header",
                node + 1
            );
        }

        // revoke on node 2 ...
        let r = http.revoke_token(&cluster.api(1), &auth, &subject).await.expect("revoke on node 2");
        assert_eq!(r.status, StatusCode::NO_CONTENT, "round {round}: revocation on node 2: {}", r.text);
        // ... and, with no pause, it is gone on the other two nodes (and on node 2 itself)
        for node in [0usize, 2, 1] {
            let r = http
                .validate_token(&cluster.api(node), &auth, &subject)
                .await
                .unwrap_or_else(|e| panic!("validate on node {}: {e}", node + 1));
            assert_eq!(
                r.status,
                StatusCode::NOT_FOUND,
                "round {round}: node {} still accepts a token node 2 revoked (answered 204): {}",
                node + 1,
                r.text
            );
        }

        // revoking one token leaves the caller's own token valid everywhere
        for node in 0..3 {
            let r = http
                .validate_token(&cluster.api(node), &auth, &auth)
                .await
                .unwrap_or_else(|e| panic!("validate on node {}: {e}", node + 1));
            assert_eq!(
                r.status,
                StatusCode::OK,
                "round {round}: node {}: the caller's token stopped validating: {}",
                node + 1,
                r.text
            );
        }
    }
}
