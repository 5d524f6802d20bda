//! The relationship-store driver against OpenFGA's own engine behind the test server
//! (`tests/openfga/server.py`): the assignment API, tokens, every row of the listing table and
//! rules (1)–(9), retries, the page bound and the streamed listing past 1000 objects.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::testkit::openfga::FgaServer;
use crate::testkit::TestNode;

const GET: Method = Method::GET;
const PUT: Method = Method::PUT;
const DELETE: Method = Method::DELETE;
const HEAD: Method = Method::HEAD;

/// A node on the store, a user `alice` (password `pw`) and a project `p1` in Default.
struct World {
    fga: FgaServer,
    t: TestNode,
    alice: String,
    project: String,
}

impl World {
    async fn new(extra: &[(&str, &str)]) -> World {
        World::on(FgaServer::start(&[]), extra).await
    }

    async fn on(fga: FgaServer, extra: &[(&str, &str)]) -> World {
        let t = TestNode::start_with(&fga.settings(extra)).await;
        let alice =
            t.create("/v3/users", "user", json!({"name": "alice", "password": "pw", "domain_id": "default"})).await;
        let project = t.create("/v3/projects", "project", json!({"name": "p1", "domain_id": "default"})).await;
        World { fga, t, alice, project }
    }

    async fn role(&self, name: &str) -> String {
        let r = self.t.admin(GET, &format!("/v3/roles?name={name}"), None).await;
        r.body["roles"][0]["id"].as_str().unwrap_or_else(|| panic!("role {name}: {}", r.body)).to_string()
    }

    fn grant_path(&self, role: &str) -> String {
        format!("/v3/projects/{}/users/{}/roles/{role}", self.project, self.alice)
    }

    async fn project_token(&self) -> crate::testkit::Reply {
        self.t.try_token("alice", "pw", json!({"project": {"id": self.project}})).await
    }

    async fn listing(&self, query: &str) -> crate::testkit::Reply {
        self.t.admin(GET, &format!("/v3/role_assignments?{query}"), None).await
    }
}

/// (actor id, scope id, role id) of each listed assignment, sorted.
fn rows(body: &Value) -> Vec<(String, String, String)> {
    let list = body["role_assignments"].as_array().unwrap_or_else(|| panic!("{body}"));
    let mut out: Vec<(String, String, String)> = list
        .iter()
        .map(|a| {
            let actor = a["user"]["id"].as_str().or(a["group"]["id"].as_str()).unwrap_or_default();
            let scope = a["scope"]["project"]["id"]
                .as_str()
                .or(a["scope"]["domain"]["id"].as_str())
                .unwrap_or(if a["scope"]["system"].is_null() { "" } else { "system" });
            (actor.to_string(), scope.to_string(), a["role"]["id"].as_str().unwrap_or_default().to_string())
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_lives_in_the_store_and_tokens_carry_exactly_its_roles() {
    let w = World::new(&[]).await;
    // The bootstrap administrator's grants were written to the store (its token works).
    let admin_id = crate::state::Reader::bootstrap_info(&w.t.node.engine.read()).unwrap().unwrap().admin_user_id;
    assert!(w.fga.tuples().await.contains(&(format!("user:{admin_id}"), "admin".into(), "system:all".into())));

    assert_eq!(w.project_token().await.status, StatusCode::UNAUTHORIZED, "no role yet");
    let member = w.role("member").await;
    let writes = w.fga.calls("write").await;
    assert_eq!(w.t.admin(PUT, &w.grant_path(&member), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(w.fga.calls("write").await, writes + 1);
    let tuple = (format!("user:{}", w.alice), "member".to_string(), format!("project:{}", w.project));
    assert!(w.fga.tuples().await.contains(&tuple), "the canonical tuple is stored");
    assert!(
        crate::state::read::AssignmentReads::assignments_of_actor_on(
            &w.t.node.engine.read(),
            crate::state::model::ActorKind::User,
            &w.alice,
            &crate::state::model::Target::Project(w.project.clone())
        )
        .unwrap()
        .is_empty(),
        "nothing in raft"
    );
    // Granting again is no error (the store's on_duplicate).
    assert_eq!(w.t.admin(PUT, &w.grant_path(&member), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(w.t.admin(HEAD, &w.grant_path(&member), None).await.status, StatusCode::NO_CONTENT);
    let listed = w.t.admin(GET, &format!("/v3/projects/{}/users/{}/roles", w.project, w.alice), None).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    let names: Vec<&str> = listed.body["roles"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["member"]);

    let r = w.project_token().await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let roles: Vec<&str> =
        r.body["token"]["roles"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(roles, ["member"], "exactly the store's roles: no implied reader");
    let token = r.headers["x-subject-token"].to_str().unwrap().to_string();

    // Revoked in the store by someone else: the next validation sees it (nothing cached).
    assert_eq!(w.t.admin(GET, &format!("/v3/auth/tokens#{token}"), None).await.status, StatusCode::OK);
    let key = json!({"user": tuple.0, "relation": tuple.1, "object": tuple.2});
    w.fga.api("write", json!({"deletes": {"tuple_keys": [key]}})).await;
    let v = w.t.admin(GET, &format!("/v3/auth/tokens#{token}"), None).await;
    assert_eq!(v.status, StatusCode::NOT_FOUND, "{}", v.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoke_is_idempotent_and_inherited_grants_are_refused() {
    let w = World::new(&[]).await;
    let member = w.role("member").await;
    assert_eq!(w.t.admin(PUT, &w.grant_path(&member), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(w.t.admin(DELETE, &w.grant_path(&member), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(w.t.admin(HEAD, &w.grant_path(&member), None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(w.project_token().await.status, StatusCode::UNAUTHORIZED);
    // Rule (5): an absent grant's revoke succeeds and deletes nothing.
    let writes = w.fga.calls("write").await;
    assert_eq!(w.t.admin(DELETE, &w.grant_path(&member), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(w.fga.calls("write").await, writes, "nothing held, nothing deleted");
    // Rule (4): an inherited grant is a validation error.
    let inherited = format!("/v3/OS-INHERIT/domains/default/users/{}/roles/{member}/inherited_to_projects", w.alice);
    let r = w.t.admin(PUT, &inherited, None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(r.body["error"]["message"].as_str().unwrap().contains("inherited"), "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unmapped_role_fails_before_any_call() {
    let w = World::new(&[]).await;
    let service = w.role("service").await;
    let (writes, reads) = (w.fga.calls("write").await, w.fga.calls("read").await);
    // A client error naming the role and the setting, in Keystone's error body (not a 500:
    // nothing in the store failed).
    let r = w.t.admin(PUT, &w.grant_path(&service), None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.body["error"]["code"], 400, "{}", r.body);
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.contains(&service) && message.contains("[openfga] role_to_relation"), "{}", r.body);
    assert_eq!((w.fga.calls("write").await, w.fga.calls("read").await), (writes, reads));
    // A role created at run time is unmapped too, whatever the actor, target and operation.
    let custom = w.t.create("/v3/roles", "role", json!({"name": "custom-role"})).await;
    let group = w.t.create("/v3/groups", "group", json!({"name": "g1", "domain_id": "default"})).await;
    let path = format!("/v3/domains/default/groups/{group}/roles/{custom}");
    for method in [PUT, DELETE, HEAD] {
        let r = w.t.admin(method.clone(), &path, None).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{method} {}", r.body);
    }
    assert_eq!(w.fga.calls("write").await, writes);
}

/// A role the table maps onto `admin`'s relation is refused: by name when the table loads
/// (a file that says so keeps the last good table), by id when it is used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_role_may_take_the_relation_of_admin() {
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("roles.map");
    std::fs::write(&map, crate::testkit::openfga::ROLE_TO_RELATION).unwrap();
    let file = map.display().to_string();
    let w = World::new(&[("role_to_relation", ""), ("role_to_relation_file", &file)]).await;
    let (member, admin) = (w.role("member").await, w.role("admin").await);
    let custom = w.t.create("/v3/roles", "role", json!({"name": "custom"})).await;
    std::fs::write(&map, format!("{}\n{custom}:admin\n", crate::testkit::openfga::ROLE_TO_RELATION)).unwrap();
    let writes = w.fga.calls("write").await;
    let r = w.t.admin(PUT, &w.grant_path(&custom), None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.contains(&custom) && message.contains("[openfga] role_to_relation"), "{}", r.body);
    assert_eq!(w.fga.calls("write").await, writes, "nothing written");
    // An admin tuple reads back as admin alone.
    assert_eq!(w.t.admin(PUT, &w.grant_path(&admin), None).await.status, StatusCode::NO_CONTENT);
    let r = w.listing(&format!("user.id={}&scope.project.id={}", w.alice, w.project)).await;
    assert_eq!(rows(&r.body), [(w.alice.clone(), w.project.clone(), admin.clone())]);
    // By name, the table is refused when read: the last good one stays, member stays member.
    std::fs::write(&map, "admin:admin, manager:manager, member:admin, reader:reader\n").unwrap();
    assert_eq!(w.t.admin(PUT, &w.grant_path(&member), None).await.status, StatusCode::NO_CONTENT);
    let tuple = (format!("user:{}", w.alice), "member".to_string(), format!("project:{}", w.project));
    assert!(w.fga.tuples().await.contains(&tuple), "{:?}", w.fga.tuples().await);
}

/// Ids that would name something else in the store (`*` is every user, `:` and `#` split a
/// tuple, whitespace is refused) answer 400 before any call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_the_store_cannot_hold_are_refused_before_any_call() {
    let w = World::new(&[]).await;
    let (p, member) = (w.project.clone(), w.role("member").await);
    let counted = ["read", "check", "streamed-list-objects", "write"];
    let mut before = Vec::new();
    for c in counted {
        before.push(w.fga.calls(c).await);
    }
    for query in [
        "user.id=*&effective".to_string(),
        format!("user.id=*&scope.project.id={p}&role.id={member}&effective"),
        format!("user.id=u%3Aother&scope.project.id={p}"),
        format!("group.id=g%23member&scope.project.id={p}"),
        "scope.project.id=a%20b".to_string(),
        "scope.domain.id=*".to_string(),
        format!("user.id={}&scope.project.id=*", w.alice),
    ] {
        let r = w.listing(&query).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{query}: {}", r.body);
        assert!(r.body["error"]["message"].as_str().unwrap().contains("relationship store"), "{}", r.body);
    }
    let mut after = Vec::new();
    for c in counted {
        after.push(w.fga.calls(c).await);
    }
    assert_eq!(after, before, "no call reached the store ({counted:?})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_of_the_listing_table() {
    let w = World::new(&[]).await;
    let (member, reader) = (w.role("member").await, w.role("reader").await);
    let group = w.t.create("/v3/groups", "group", json!({"name": "g1", "domain_id": "default"})).await;
    assert_eq!(w.t.admin(PUT, &w.grant_path(&member), None).await.status, StatusCode::NO_CONTENT);
    let group_grant = format!("/v3/projects/{}/groups/{group}/roles/{reader}", w.project);
    assert_eq!(w.t.admin(PUT, &group_grant, None).await.status, StatusCode::NO_CONTENT);
    // alice is in the group in the store (the deployment's sync, rule 9).
    w.fga.seed(&[(&format!("user:{}", w.alice), "member", &format!("group:{group}"))]).await;
    let (a, p) = (w.alice.clone(), w.project.clone());
    let mine = |role: &str| (a.clone(), p.clone(), role.to_string());

    // actor + target + role: effective is the model-resolving check, else the exact read.
    let checks = w.fga.calls("check").await;
    let r = w.listing(&format!("user.id={a}&scope.project.id={p}&role.id={reader}&effective")).await;
    assert_eq!(rows(&r.body), [mine(&reader)], "resolved through the group");
    assert_eq!(w.fga.calls("check").await, checks + 1);
    let r = w.listing(&format!("user.id={a}&scope.project.id={p}&role.id={reader}")).await;
    assert!(rows(&r.body).is_empty(), "no direct tuple: {}", r.body);
    // actor + target: a batch check over every mapped relation, else the read mapped back.
    let batches = w.fga.calls("batch-check").await;
    let r = w.listing(&format!("user.id={a}&scope.project.id={p}&effective")).await;
    let mut want = vec![mine(&member), mine(&reader)];
    want.sort();
    assert_eq!(rows(&r.body), want);
    assert_eq!(w.fga.calls("batch-check").await, batches + 2, "one for the caller's token, one for the listing");
    let r = w.listing(&format!("user.id={a}&scope.project.id={p}")).await;
    assert_eq!(rows(&r.body), [mine(&member)]);
    // actor only: streamed listing per (user type, target type, relation), else 501.
    let streams = w.fga.calls("streamed-list-objects").await;
    let r = w.listing(&format!("user.id={a}&effective")).await;
    assert_eq!(rows(&r.body), want);
    assert_eq!(w.fga.calls("streamed-list-objects").await, streams + 3 * 4, "3 target types x 4 relations");
    let r = w.listing(&format!("user.id={a}")).await;
    assert_eq!(r.status, StatusCode::NOT_IMPLEMENTED, "{}", r.body);
    // target only: a read in both modes, group grants never expanded (rule 2).
    for q in [format!("scope.project.id={p}"), format!("scope.project.id={p}&effective")] {
        let r = w.listing(&q).await;
        let mut want = vec![mine(&member), (group.clone(), p.clone(), reader.clone())];
        want.sort();
        assert_eq!(rows(&r.body), want, "{q}");
        // Rule (1): direct, never inherited, never implied.
        for a in r.body["role_assignments"].as_array().unwrap() {
            assert!(a["scope"]["OS-INHERIT:inherited_to"].is_null() && a["links"]["prior_role"].is_null(), "{a}");
        }
    }
    let r = w.listing(&format!("scope.project.id={p}&role.id={reader}")).await;
    assert_eq!(rows(&r.body), [(group.clone(), p.clone(), reader.clone())]);
    // role only, or nothing: 501 whatever the effective flag.
    for q in [format!("role.id={member}"), format!("role.id={member}&effective"), String::new(), "effective".into()] {
        assert_eq!(w.listing(&q).await.status, StatusCode::NOT_IMPLEMENTED, "{q}");
    }
    // The grant check resolves (rule 3): alice holds reader through the group.
    let check = format!("/v3/projects/{p}/users/{a}/roles/{reader}");
    assert_eq!(w.t.admin(HEAD, &check, None).await.status, StatusCode::NO_CONTENT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_roles_need_the_deployments_membership_sync() {
    let w = World::new(&[]).await;
    let member = w.role("member").await;
    let group = w.t.create("/v3/groups", "group", json!({"name": "g1", "domain_id": "default"})).await;
    let path = format!("/v3/groups/{group}/users/{}", w.alice);
    assert_eq!(w.t.admin(PUT, &path, None).await.status, StatusCode::NO_CONTENT, "a Keystone membership");
    let grant = format!("/v3/projects/{}/groups/{group}/roles/{member}", w.project);
    assert_eq!(w.t.admin(PUT, &grant, None).await.status, StatusCode::NO_CONTENT);
    assert!(w.fga.tuples().await.contains(&(
        format!("group:{group}#member"),
        "member".into(),
        format!("project:{}", w.project)
    )));
    assert_eq!(w.project_token().await.status, StatusCode::UNAUTHORIZED, "unsynced: the token misses the group role");
    w.fga.seed(&[(&format!("user:{}", w.alice), "member", &format!("group:{group}"))]).await;
    let r = w.project_token().await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["token"]["roles"][0]["name"], "member");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_failures_are_retried_and_others_are_not() {
    let fga = FgaServer::start(&[]);
    let model = fga.model_id.clone();
    let w =
        World::on(fga, &[("max_retries", "2"), ("retry_backoff_ms", "10"), ("authorization_model_id", &model)]).await;
    let member = w.role("member").await;
    assert_eq!(w.t.admin(PUT, &w.grant_path(&member), None).await.status, StatusCode::NO_CONTENT);
    let before = w.fga.calls("batch-check").await;
    w.fga.fault(json!({"status": 503, "count": 1, "paths": ["batch-check"]})).await;
    w.fga.fault(json!({"status": 429, "count": 1, "paths": ["batch-check"]})).await;
    assert_eq!(w.project_token().await.status, StatusCode::OK, "two transient failures, two retries");
    assert_eq!(w.fga.calls("batch-check").await, before + 3);
    w.fga.fault(json!({"reset_connection": 1, "paths": ["batch-check"]})).await;
    assert_eq!(w.project_token().await.status, StatusCode::OK, "a reset connection is retried too");
    let before = w.fga.calls("batch-check").await;
    w.fga.fault(json!({"status": 500, "count": 3, "paths": ["batch-check"]})).await;
    let r = w.project_token().await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
    assert_eq!(w.fga.calls("batch-check").await, before + 3, "1 + max_retries");
    let before = w.fga.calls("batch-check").await;
    w.fga.fault(json!({"status": 400, "count": 1, "paths": ["batch-check"]})).await;
    let r = w.project_token().await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR, "{}", r.body);
    assert_eq!(w.fga.calls("batch-check").await, before + 1, "a 400 is not retried");
    let text = w.t.node.metrics_text().unwrap();
    assert!(text.contains("idnode_assignment_driver_retries_total{operation=\"batch-check\"} 5"), "{text}");
    assert!(text.contains("idnode_assignment_driver_calls_total{operation=\"batch-check\",outcome=\"unavailable\"} 1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_are_off_by_default() {
    let w = World::new(&[]).await;
    let member = w.role("member").await;
    assert_eq!(w.t.admin(PUT, &w.grant_path(&member), None).await.status, StatusCode::NO_CONTENT);
    let before = w.fga.calls("write").await;
    w.fga.fault(json!({"status": 503, "count": 1, "paths": ["write"]})).await;
    let r = w.t.admin(PUT, &w.grant_path(&w.role("reader").await), None).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR, "the spec's 500 for a driver failure: {}", r.body);
    assert_eq!(w.fga.calls("write").await, before + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actors_listing_past_1000_objects_is_complete() {
    let w = World::new(&[]).await;
    let user = format!("user:{}", w.alice);
    let projects: Vec<String> = (0..1205).map(|i| format!("project:bulk{i:04}")).collect();
    let tuples: Vec<(&str, &str, &str)> = projects.iter().map(|p| (user.as_str(), "member", p.as_str())).collect();
    w.fga.seed(&tuples).await;
    let r = w.listing(&format!("user.id={}&effective", w.alice)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(rows(&r.body).len(), 1205, "the streamed listing is whole");
    let cut = w.fga.api("list-objects", json!({"type": "project", "relation": "member", "user": user})).await;
    assert_eq!(cut["objects"].as_array().unwrap().len(), 1000, "the non-streaming form would have cut it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_stops_at_1000_pages_and_says_so() {
    let w = World::new(&[]).await;
    let object = format!("project:{}", w.project);
    let users: Vec<String> = (0..1001).map(|i| format!("user:bulk{i:04}")).collect();
    let tuples: Vec<(&str, &str, &str)> = users.iter().map(|u| (u.as_str(), "member", object.as_str())).collect();
    w.fga.seed(&tuples).await;
    w.fga.control(reqwest::Method::POST, "config", Some(json!({"read_page_cap": 1}))).await;
    let reads = w.fga.calls("read").await;
    let r = w.listing(&format!("scope.project.id={}", w.project)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(rows(&r.body).len(), 1000, "cut at the page bound");
    assert_eq!(w.fga.calls("read").await, reads + 1000);
    let text = w.t.node.metrics_text().unwrap();
    assert!(text.contains("idnode_assignment_driver_truncated_reads_total 1"), "{text}");
}

/// What decides on a read never acts on part of it: a group whose admin grant lies past the
/// page bound is privileged for the guard rails (they fail closed), and its delete, which
/// would leave that grant behind, is refused and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_cut_at_its_bound_fails_closed() {
    let w = World::new(&[]).await;
    let manager = w.role("manager").await;
    let mgr = w.t.create("/v3/users", "user", json!({"name": "mgr", "password": "pw", "domain_id": "default"})).await;
    let path = format!("/v3/domains/default/users/{mgr}/roles/{manager}");
    assert_eq!(w.t.admin(PUT, &path, None).await.status, StatusCode::NO_CONTENT);
    let group = w.t.create("/v3/groups", "group", json!({"name": "big", "domain_id": "default"})).await;
    let userset = format!("group:{group}#member");
    let projects: Vec<String> = (0..1000).map(|i| format!("project:bulk{i:04}")).collect();
    let mut tuples: Vec<(&str, &str, &str)> =
        projects.iter().map(|p| (userset.as_str(), "member", p.as_str())).collect();
    let admin_on = format!("project:{}", w.project);
    tuples.push((&userset, "admin", &admin_on)); // written last: read last, on page 1001
    w.fga.seed(&tuples).await;
    w.fga.control(reqwest::Method::POST, "config", Some(json!({"read_page_cap": 1}))).await;
    let before = w.fga.tuples().await;

    let token = w.t.token("mgr", "pw", json!({"domain": {"id": "default"}})).await;
    let rename = json!({"group": {"description": "taken over"}});
    let r = w.t.call(Method::PATCH, &format!("/v3/groups/{group}"), Some(&token), Some(rename)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "the guard rails decided on 1000 of 1001 grants: {}", r.body);

    let writes = w.fga.calls("write").await;
    let r = w.t.admin(DELETE, &format!("/v3/groups/{group}"), None).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR, "{}", r.body);
    assert!(r.body["error"]["message"].as_str().unwrap().contains("bound of 1000 pages"), "{}", r.body);
    assert_eq!(w.fga.calls("write").await, writes, "nothing deleted from the store");
    assert_eq!(w.fga.tuples().await, before);
    assert_eq!(w.t.admin(GET, &format!("/v3/groups/{group}"), None).await.status, StatusCode::OK, "nor from raft");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bearer_token_is_sent_and_an_outage_is_a_503_for_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fga-token");
    std::fs::write(&file, "s3cret-token\n").unwrap();
    let fga = FgaServer::start(&["--token", "s3cret-token"]);
    let file = file.display().to_string();
    let w = World::on(fga, &[("api_token_file", &file)]).await;
    let member = w.role("member").await;
    assert_eq!(w.t.admin(PUT, &w.grant_path(&member), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(w.project_token().await.status, StatusCode::OK);
    w.fga.fault(json!({"status": 503, "count": 1000})).await;
    let r = w.project_token().await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
    assert!(!r.text.contains("s3cret"), "{}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_rails_see_administrators_the_store_makes() {
    let w = World::new(&[]).await;
    let (admin, manager, member) = (w.role("admin").await, w.role("manager").await, w.role("member").await);
    let mgr = w.t.create("/v3/users", "user", json!({"name": "mgr", "password": "pw", "domain_id": "default"})).await;
    let bob = w.t.create("/v3/users", "user", json!({"name": "bob", "password": "pw", "domain_id": "default"})).await;
    for path in [
        format!("/v3/domains/default/users/{mgr}/roles/{manager}"),
        format!("/v3/projects/{}/users/{}/roles/{admin}", w.project, w.alice),
        format!("/v3/projects/{}/users/{bob}/roles/{member}", w.project),
    ] {
        assert_eq!(w.t.admin(PUT, &path, None).await.status, StatusCode::NO_CONTENT, "{path}");
    }
    let token = w.t.token("mgr", "pw", json!({"domain": {"id": "default"}})).await;
    let reset = |id: &str| (format!("/v3/users/{id}"), json!({"user": {"password": "taken-over"}}));
    let (path, body) = reset(&bob);
    let r = w.t.call(Method::PATCH, &path, Some(&token), Some(body)).await;
    assert_eq!(r.status, StatusCode::OK, "an ordinary user is the manager's to manage: {}", r.body);
    let (path, body) = reset(&w.alice);
    let r = w.t.call(Method::PATCH, &path, Some(&token), Some(body.clone())).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "admin only in the store, still guarded: {}", r.body);
    // Handing out admin stays a cloud administrator's, whatever holds the grants.
    let writes = w.fga.calls("write").await;
    let grant = format!("/v3/projects/{}/users/{bob}/roles/{admin}", w.project);
    assert_eq!(w.t.call(PUT, &grant, Some(&token), None).await.status, StatusCode::FORBIDDEN);
    assert_eq!(w.fga.calls("write").await, writes, "refused before any write");
    let grant = format!("/v3/projects/{}/users/{bob}/roles/{member}", w.project);
    assert_eq!(
        w.t.call(PUT, &grant, Some(&token), None).await.status,
        StatusCode::NO_CONTENT,
        "member is the manager's"
    );
    // A store that cannot answer opens nothing: the rails fail closed.
    w.fga.fault(json!({"status": 503, "count": 100, "paths": ["streamed-list-objects"]})).await;
    let (path, body) = reset(&bob);
    let r = w.t.call(Method::PATCH, &path, Some(&token), Some(body)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
}

/// The store holds what the node's deletes leave: nothing of ours naming a deleted user,
/// group, project or domain, in any of a kind's types; other applications' tuples stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_take_our_relationships_with_them_in_every_type() {
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openfga/keystone-kinds.fga");
    let fga = FgaServer::start(&["--model", model]);
    let w = World::on(fga, &[("kinds_user", "user, keystone_user"), ("kinds_project", "project, tenant")]).await;
    let (a, p, member) = (w.alice.clone(), w.project.clone(), w.role("member").await);
    let bob = w.t.create("/v3/users", "user", json!({"name": "bob", "password": "pw", "domain_id": "default"})).await;
    let group = w.t.create("/v3/groups", "group", json!({"name": "g1", "domain_id": "default"})).await;
    for path in [
        format!("/v3/projects/{p}/groups/{group}/roles/{member}"),
        format!("/v3/domains/default/users/{bob}/roles/{member}"),
    ] {
        assert_eq!(w.t.admin(PUT, &path, None).await.status, StatusCode::NO_CONTENT, "{path}");
    }
    // Spellings the node never writes but must find: the second type of users and projects,
    // alice's membership (the deployment's sync), and a relation no role maps to.
    let (ka, tp, g) = (format!("keystone_user:{a}"), format!("tenant:{p}"), format!("group:{group}"));
    w.fga
        .seed(&[(&ka, "member", &tp), (&format!("user:{a}"), "member", &g), (&format!("user:{a}"), "viewer", &tp)])
        .await;
    assert_eq!(w.project_token().await.status, StatusCode::OK, "through the second type and the group");

    // Deleting the user takes its grants in every type and its memberships.
    assert_eq!(w.t.admin(DELETE, &format!("/v3/users/{a}"), None).await.status, StatusCode::NO_CONTENT);
    let left = w.fga.tuples().await;
    let names_alice = |t: &(String, String, String)| t.0.ends_with(&a);
    assert_eq!(
        left.iter().filter(|t| names_alice(t)).collect::<Vec<_>>(),
        [&(format!("user:{a}"), "viewer".to_string(), tp.clone())],
        "only the other application's tuple is left"
    );
    // Deleting the group takes its grants and whatever membership tuples name it.
    w.fga.seed(&[(&format!("user:{bob}"), "member", &g)]).await;
    assert_eq!(w.t.admin(DELETE, &format!("/v3/groups/{group}"), None).await.status, StatusCode::NO_CONTENT);
    assert!(!w.fga.tuples().await.iter().any(|t| t.0.contains(&group) || t.2 == g), "{:?}", w.fga.tuples().await);
    // Deleting the project takes every grant on it; bob's domain grant stays.
    let carol =
        w.t.create("/v3/users", "user", json!({"name": "carol", "password": "pw", "domain_id": "default"})).await;
    w.fga.seed(&[(&format!("user:{carol}"), "member", &format!("project:{p}"))]).await;
    assert_eq!(w.t.admin(DELETE, &format!("/v3/projects/{p}"), None).await.status, StatusCode::NO_CONTENT);
    let left = w.fga.tuples().await;
    assert!(!left.iter().any(|t| t.2 == format!("project:{p}")), "{left:?}");
    assert!(left.contains(&(format!("user:{bob}"), "member".into(), "domain:default".into())), "{left:?}");
    assert!(left.contains(&(format!("user:{a}"), "viewer".into(), tp)), "not ours, never deleted");
}

/// A domain's delete takes the grants on it, on its projects and of its users and groups; a
/// store that cannot answer refuses a delete, which then changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_domain_delete_empties_its_part_of_the_store_or_is_refused() {
    let w = World::new(&[]).await;
    let member = w.role("member").await;
    let d = w.t.create("/v3/domains", "domain", json!({"name": "d1"})).await;
    let dp = w.t.create("/v3/projects", "project", json!({"name": "dp", "domain_id": d})).await;
    let du = w.t.create("/v3/users", "user", json!({"name": "du", "password": "pw", "domain_id": d})).await;
    let dg = w.t.create("/v3/groups", "group", json!({"name": "dg", "domain_id": d})).await;
    for path in [
        format!("/v3/domains/{d}/users/{du}/roles/{member}"),
        format!("/v3/projects/{dp}/groups/{dg}/roles/{member}"),
        format!("/v3/projects/{dp}/users/{}/roles/{member}", w.alice),
        format!("/v3/projects/{}/users/{du}/roles/{member}", w.project),
        w.grant_path(&member),
    ] {
        assert_eq!(w.t.admin(PUT, &path, None).await.status, StatusCode::NO_CONTENT, "{path}");
    }
    // Still enabled: raft refuses the delete, and the store keeps everything.
    let before = w.fga.tuples().await;
    assert_eq!(w.t.admin(DELETE, &format!("/v3/domains/{d}"), None).await.status, StatusCode::FORBIDDEN);
    assert_eq!(w.fga.tuples().await, before);
    let off = json!({"domain": {"enabled": false}});
    assert_eq!(w.t.admin(Method::PATCH, &format!("/v3/domains/{d}"), Some(off)).await.status, StatusCode::OK);
    // A store outage refuses the delete: the domain is still there afterwards.
    w.fga.fault(json!({"status": 503, "count": 100, "paths": ["read"]})).await;
    let r = w.t.admin(DELETE, &format!("/v3/domains/{d}"), None).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
    assert_eq!(w.t.admin(GET, &format!("/v3/domains/{d}"), None).await.status, StatusCode::OK);
    assert_eq!(w.fga.tuples().await, before);
    w.fga.control(Method::POST, "reset", Some(json!({"faults": true}))).await;
    assert_eq!(w.t.admin(DELETE, &format!("/v3/domains/{d}"), None).await.status, StatusCode::NO_CONTENT);
    let left = w.fga.tuples().await;
    for id in [&d, &dp, &du, &dg] {
        assert!(!left.iter().any(|t| t.0.contains(id.as_str()) || t.2.contains(id.as_str())), "{id}: {left:?}");
    }
    let alice_p1 = (format!("user:{}", w.alice), "member".to_string(), format!("project:{}", w.project));
    assert!(left.contains(&alice_p1), "outside the domain: kept {left:?}");
}

/// Rule (6): the whole listing, sorted by marker, sliced by `marker`, `limit` and
/// `page_reverse`; walking the `next` links visits every assignment once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_page_by_marker_both_ways() {
    let w = World::new(&[]).await;
    let p = w.project.clone();
    let mut users = Vec::new();
    for i in 0..7 {
        let body = json!({"name": format!("u{i}"), "password": "pw", "domain_id": "default"});
        users.push(w.t.create("/v3/users", "user", body).await);
    }
    let (member, reader) = (w.role("member").await, w.role("reader").await);
    for u in &users {
        for role in [&member, &reader] {
            let path = format!("/v3/projects/{p}/users/{u}/roles/{role}");
            assert_eq!(w.t.admin(PUT, &path, None).await.status, StatusCode::NO_CONTENT);
        }
    }
    let whole = w.listing(&format!("scope.project.id={p}")).await;
    assert_eq!(rows(&whole.body).len(), 14);
    assert!(whole.body["links"]["next"].is_null(), "{}", whole.body);
    // Forward, 4 at a time, by the next links.
    let (mut seen, mut url, mut pages) = (Vec::new(), Some(format!("scope.project.id={p}&limit=4")), 0);
    while let Some(q) = url {
        let r = w.listing(&q).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        assert!(rows(&r.body).len() <= 4);
        seen.extend(rows(&r.body));
        pages += 1;
        url =
            r.body["links"]["next"].as_str().map(|n| n.split_once('?').map(|(_, q)| q.to_string()).unwrap_or_default());
    }
    assert_eq!(pages, 4);
    seen.sort();
    assert_eq!(seen, rows(&whole.body), "every assignment once");
    // Backward from the 13th assignment's marker: the 4 before it, in order, then the 4
    // before those by the previous link.
    let all = rows(&whole.body);
    let cut = w.listing(&format!("scope.project.id={p}&limit=13")).await;
    let marker = cut.body["links"]["next"].as_str().unwrap().rsplit_once("marker=").unwrap().1.to_string();
    let r = w.listing(&format!("scope.project.id={p}&limit=4&page_reverse&marker={marker}")).await;
    assert_eq!(rows(&r.body), all[8..12], "{}", r.body);
    assert!(r.body["links"]["next"].is_null(), "{}", r.body);
    let previous = r.body["links"]["previous"].as_str().unwrap_or_else(|| panic!("{}", r.body));
    let r = w.listing(previous.split_once('?').unwrap().1).await;
    assert_eq!(rows(&r.body), all[4..8], "{}", r.body);
    assert_eq!(w.listing(&format!("scope.project.id={p}&limit=0")).await.status, StatusCode::BAD_REQUEST);
}
