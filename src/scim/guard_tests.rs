//! SCIM writes go through the guard rails: a realm's API key is never a cloud administrator,
//! so it may not add members to, change or deprovision a group that holds `admin`, nor change,
//! deactivate or deprovision a user who does; the purge path leaves those to a cloud
//! administrator. Each refusal is the SCIM error envelope (403) and writes nothing; the same
//! writes on ordinary users and groups still pass. Both admin modes.

use axum::http::{Method, StatusCode};
use serde_json::json;

use super::endpoint_tests::{assert_scim_error, group, patch_op, replace_op, user, World};
use crate::policy::guard;
use crate::state::keys::ns;
use crate::state::scim::{keys, Kind, ScimResourceIndex};
use crate::state::{cf, Reader};

fn version(w: &World, kind: Kind, id: &str) -> u64 {
    let idx: ScimResourceIndex = w.t.node.engine.read().get_t(cf::SCIM, &keys::index(kind, id)).unwrap().unwrap();
    idx.version
}

async fn scim_group(w: &World, name: &str) -> String {
    let r = w.scim(Method::POST, "/Groups", Some(group(name, &[]))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body["id"].as_str().unwrap().to_string()
}

/// The cloud administrator grants `admin` on the realm's domain to a user or group.
async fn grant_admin(w: &World, actor: &str, id: &str) {
    let admin = w.t.node.engine.read().id_by_name(ns::ROLE_NAME, "", "admin").unwrap().unwrap();
    let r = w.t.admin(Method::PUT, &format!("/v3/domains/{}/{actor}/{id}/roles/{admin}", w.d), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scim_writes_never_reach_privileged_users_and_groups() {
    for mode in ["any", "system"] {
        let w = World::with(&[("policy", "admin_scope", mode)]).await;
        let mine = w.create_user("00u1", "mallory").await;
        let boss = w.create_user("00u2", "boss").await;
        let admins = scim_group(&w, "admins").await;
        let plain = scim_group(&w, "plain").await;
        grant_admin(&w, "groups", &admins).await;
        grant_admin(&w, "users", &boss).await;
        let (g_version, u_version) = (version(&w, Kind::Group, &admins), version(&w, Kind::User, &boss));

        let add_mine = patch_op(json!([{"op": "add", "path": "members", "value": [{"value": mine}]}]));
        let deactivate = replace_op("active", json!(false));
        let mut inactive = user("00u2", "boss");
        inactive["active"] = json!(false);
        for (method, path, body) in [
            (Method::PATCH, format!("/Groups/{admins}"), Some(add_mine.clone())),
            (Method::PUT, format!("/Groups/{admins}"), Some(group("admins", &[&mine]))),
            (Method::DELETE, format!("/Groups/{admins}"), None),
            (Method::PATCH, format!("/Users/{boss}"), Some(deactivate.clone())),
            (Method::PUT, format!("/Users/{boss}"), Some(inactive)),
            (Method::DELETE, format!("/Users/{boss}"), None),
        ] {
            let r = w.scim(method.clone(), &path, body).await;
            assert_scim_error(&r, StatusCode::FORBIDDEN, None);
            assert!(r.body["detail"].as_str().unwrap().contains("cloud administrator"), "[{mode}] {method} {path}");
        }
        let view = w.t.node.engine.read();
        assert!(!view.is_member(&admins, &mine).unwrap(), "[{mode}] no member was added");
        assert!(view.user(&boss).unwrap().unwrap().enabled, "[{mode}] the admin is still enabled");
        assert!(guard::privileged_group(&view, None, &admins).unwrap(), "[{mode}] the group keeps its grant");
        drop(view);
        assert_eq!(version(&w, Kind::Group, &admins), g_version, "[{mode}]");
        assert_eq!(version(&w, Kind::User, &boss), u_version, "[{mode}]");

        // Ordinary users and groups of the realm: as before.
        let r = w.scim(Method::PATCH, &format!("/Groups/{plain}"), Some(add_mine)).await;
        assert_eq!(r.status, StatusCode::OK, "[{mode}] {}", r.body);
        let r = w.scim(Method::PATCH, &format!("/Users/{mine}"), Some(deactivate)).await;
        assert_eq!(r.status, StatusCode::OK, "[{mode}] {}", r.body);
    }
}

/// A deprovisioned user or group that a cloud administrator then made privileged is purged by
/// a cloud administrator only, not by the realm's domain manager.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purging_a_privileged_resource_needs_a_cloud_admin() {
    for mode in ["any", "system"] {
        let w = World::with(&[("policy", "admin_scope", mode)]).await;
        let u = w.create_user("00u3", "gone").await;
        let g = scim_group(&w, "gone-group").await;
        for path in [format!("/Users/{u}"), format!("/Groups/{g}")] {
            assert_eq!(w.scim(Method::DELETE, &path, None).await.status, StatusCode::NO_CONTENT, "[{mode}] {path}");
        }
        grant_admin(&w, "users", &u).await;
        grant_admin(&w, "groups", &g).await;
        let manager = w.t.node.engine.read().id_by_name(ns::ROLE_NAME, "", "manager").unwrap().unwrap();
        let dm = w.t.create("/v3/users", "user", json!({"name": "dm", "domain_id": w.d, "password": "pw-dm-1"})).await;
        let r = w.t.admin(Method::PUT, &format!("/v3/domains/{}/users/{dm}/roles/{manager}", w.d), None).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
        let dm = w.t.token_for_id(&dm, "pw-dm-1", json!({"domain": {"id": w.d}})).await;

        for (kind, id) in [("user", &u), ("group", &g)] {
            let purge = format!("/v4/scim-realms/{}/okta-scim/purge/{kind}/{id}", w.d);
            let r = w.t.call(Method::DELETE, &purge, Some(&dm), None).await;
            assert_eq!(r.status, StatusCode::FORBIDDEN, "[{mode}] {purge}: {}", r.body);
            assert!(r.body["error"]["message"].is_string(), "[{mode}] {}", r.body);
        }
        let view = w.t.node.engine.read();
        assert!(view.user(&u).unwrap().is_some() && view.group(&g).unwrap().is_some(), "[{mode}] nothing purged");
        drop(view);
        for (kind, id) in [("user", &u), ("group", &g)] {
            let purge = format!("/v4/scim-realms/{}/okta-scim/purge/{kind}/{id}", w.d);
            assert_eq!(w.t.admin(Method::DELETE, &purge, None).await.status, StatusCode::NO_CONTENT, "[{mode}]");
        }
    }
}
