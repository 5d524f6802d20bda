//! Request ids and the log, as an SRE reads them: a client's `X-OpenStack-Request-Id` comes
//! back on the answer and names the request's access line on the member that took it and the
//! leader's lines about the write it forwarded; JSON logs are one object per line; no line
//! holds the password or token the test used.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{random_hex, Cluster};

const OUR_ID: &str = "req-0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0";

fn is_keystone_id(v: &str) -> bool {
    v.strip_prefix("req-").is_some_and(|u| u.len() == 36 && uuid::Uuid::parse_str(u).is_ok())
}

/// The node's log lines as JSON (the harness's own marker lines skipped); panics on a line
/// that is not one JSON object.
fn json_lines(c: &Cluster, i: usize) -> Vec<Value> {
    let text = std::fs::read_to_string(&c.nodes[i].log_path).expect("read the node's log");
    text.lines()
        .filter(|l| !l.starts_with("===== harness") && !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .inspect(|v| assert!(v.is_object(), "not an object: {v}"))
        .collect()
}

/// Whether one of the line's spans has `name` and a `request_id` holding `id`.
fn in_span(line: &Value, name: &str, id: &str) -> bool {
    line["spans"].as_array().is_some_and(|spans| {
        spans
            .iter()
            .any(|s| s["name"] == name && s["request_id"].as_str().is_some_and(|r| r.split(',').any(|x| x == id)))
    })
}

/// Polls node `i`'s log (it is written by a thread of its own) until `found` holds.
async fn wait_line(c: &Cluster, i: usize, what: &str, found: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(line) = json_lines(c, i).into_iter().find(|l| found(l)) {
            return line;
        }
        assert!(Instant::now() < deadline, "node {} logged no {what} within 10 s", c.nodes[i].id);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_ids_name_every_line_of_a_request_across_members() {
    let env = [("IDNODE_LOG_FORMAT", "json"), ("IDNODE_LOG", "info,openraft=warn,idnode_raft::peer_api=debug")];
    let c = Cluster::start_with_env(3, &env).await;
    let leader = c.wait_leader(Duration::from_secs(20)).await;
    let f = (leader + 1) % 3;
    let token = c.admin_token(f).await;
    let me = c.http.validate_token(&c.api(f), &token, &token).await.unwrap();
    let (user_id, project_id) = (me.json["token"]["user"]["id"].clone(), me.json["token"]["project"]["id"].clone());

    // A write through a follower with the client's id: echoed, and named on both members.
    let project = json!({"project": {"name": format!("logged-{}", random_hex(6)), "domain_id": "default"}});
    let created = c
        .http
        .request(
            Method::POST,
            &format!("{}/v3/projects", c.api(f)),
            Some(&token),
            &[("X-OpenStack-Request-Id", OUR_ID)],
            Some(&project),
        )
        .await
        .unwrap();
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.headers["x-openstack-request-id"], OUR_ID);
    let access = wait_line(&c, f, "access line for the create", |l| {
        l["target"] == "idnode::access" && in_span(l, "request", OUR_ID)
    })
    .await;
    assert_eq!(access["method"], "POST");
    assert_eq!(access["route"], "/v3/projects");
    assert_eq!(access["status"], 201);
    assert_eq!(access["user_id"], user_id);
    assert_eq!(access["project_id"], project_id);
    assert_eq!(access["level"], "INFO");
    assert!(access["client"].as_str().is_some_and(|a| a.starts_with("127.")), "{access}");
    assert!(access["duration_ms"].as_f64().is_some_and(|d| d > 0.0), "{access}");
    assert!(access["bytes"].as_u64().is_some_and(|b| b > 0), "{access}");
    assert!(access["timestamp"].is_string(), "{access}");
    let forwarded = wait_line(&c, leader, "line about the forwarded create", |l| in_span(l, "forwarded", OUR_ID)).await;
    assert_eq!(forwarded["level"], "DEBUG", "{forwarded}");

    // Without an id, or with a malformed one, the node makes one in Keystone's form.
    for headers in [vec![], vec![("X-OpenStack-Request-Id", "not-a-request-id")], vec![("X-Request-Id", "x")]] {
        let r = c
            .http
            .request(Method::GET, &format!("{}/v3/projects", c.api(f)), Some(&token), &headers, None)
            .await
            .unwrap();
        let id = r.headers["x-openstack-request-id"].to_str().unwrap();
        assert!(is_keystone_id(id), "{headers:?} gave {id}");
    }
    // A load balancer's UUID is kept; unknown routes, refusals and unauthenticated calls are named too.
    let lb = uuid::Uuid::new_v4().to_string();
    let r = c
        .http
        .request(Method::GET, &format!("{}/v3/nowhere", c.api(f)), None, &[("X-Request-Id", &lb)], None)
        .await
        .unwrap();
    assert_eq!(r.status, 404);
    assert_eq!(r.headers["x-openstack-request-id"], lb.as_str());
    let r = c.http.get(&format!("{}/v3/projects", c.api(f)), Some("not-a-token")).await.unwrap();
    assert_eq!(r.status, 401);
    let refused = r.headers["x-openstack-request-id"].to_str().unwrap().to_string();
    let line = wait_line(&c, f, "access line for the refusal", |l| {
        l["target"] == "idnode::access" && in_span(l, "request", &refused)
    })
    .await;
    assert_eq!(line["status"], 401);
    assert!(line.get("user_id").is_none(), "{line}");
    let unmatched = wait_line(&c, f, "access line for the unknown route", |l| {
        l["target"] == "idnode::access" && in_span(l, "request", &lb)
    })
    .await;
    assert_eq!(unmatched["route"], "unmatched");

    // No line of any member holds the password or a token.
    for i in 0..3 {
        let text = std::fs::read_to_string(&c.nodes[i].log_path).unwrap();
        assert!(!text.contains(&c.admin_password), "node {} logged the admin password", c.nodes[i].id);
        assert!(!text.contains(&token), "node {} logged a token", c.nodes[i].id);
        json_lines(&c, i);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_logs_name_the_request_and_the_access_log_can_be_turned_off() {
    let c = Cluster::start(1).await;
    let token = c.admin_token(0).await;
    let r = c
        .http
        .request(
            Method::GET,
            &format!("{}/v3/users", c.api(0)),
            Some(&token),
            &[("X-OpenStack-Request-Id", OUR_ID)],
            None,
        )
        .await
        .unwrap();
    assert_eq!(r.headers["x-openstack-request-id"], OUR_ID);
    let deadline = Instant::now() + Duration::from_secs(10);
    let line = loop {
        let text = std::fs::read_to_string(&c.nodes[0].log_path).unwrap();
        if let Some(l) = text.lines().find(|l| l.contains("idnode::access") && l.contains(OUR_ID)) {
            break l.to_string();
        }
        assert!(Instant::now() < deadline, "no access line naming {OUR_ID}:\n{text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for part in [format!("request_id={OUR_ID}"), "method=GET".into(), "route=/v3/users".into(), "status=200".into()] {
        assert!(line.contains(&part), "{part} missing from {line}");
    }

    let quiet = Cluster::start_with_env(1, &[("IDNODE_LOG_ACCESS", "false")]).await;
    let token = quiet.admin_token(0).await;
    let r = quiet.http.get(&format!("{}/v3/users", quiet.api(0)), Some(&token)).await.unwrap();
    let id = r.headers["x-openstack-request-id"].to_str().unwrap().to_string();
    assert!(is_keystone_id(&id));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let text = std::fs::read_to_string(&quiet.nodes[0].log_path).unwrap();
    assert!(!text.contains("idnode::access"), "an access line with [log] access off:\n{text}");
}
