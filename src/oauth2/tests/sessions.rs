//! A user's OAuth2 sessions through the real router: listed after a code grant with a
//! refresh token, `last_used_at` set by a refresh, ended one by one or all at once (the
//! refresh token then fails with `invalid_grant`), and nobody else's to see or end.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::errors::{alice_and_client, assert_error, family_of, refresh, s, user_in, user_tokens, D, PW};
use crate::state::apply::SELF_SERVICE_VERSION;
use crate::testkit::TestNode;

async fn sessions(t: &TestNode, user_id: &str, token: &str) -> Vec<Value> {
    let r = t.call(Method::GET, &format!("/v4/users/{user_id}/oauth2/sessions"), Some(token), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["sessions"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_listed_used_and_ended_by_their_user() {
    let (t, alice, c) = alice_and_client(json!({})).await;
    // A fresh cluster raises its version on demand; refreshes record their time from 15 on.
    t.node.raft.version_gate(SELF_SERVICE_VERSION).await.unwrap();
    let token = t.token_for_id(&alice, PW, Value::Null).await;
    assert_eq!(sessions(&t, &alice, &token).await, Vec::<Value>::new());

    let first = s(&user_tokens(&t, &c, &alice, "openid").await, "refresh_token");
    let listed = sessions(&t, &alice, &token).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let one = &listed[0];
    assert_eq!(one["id"], json!(family_of(&first)));
    assert_eq!((one["client_id"].clone(), one["client_name"].clone()), (json!(c.id), json!("App")));
    assert_eq!(one["scopes"], json!(["openid"]));
    assert_eq!(one["last_used_at"], Value::Null, "never refreshed");
    let created = one["created_at"].as_i64().unwrap();
    assert!(one["expires_at"].as_i64().unwrap() > created, "{one}");
    let members: Vec<&String> = one.as_object().unwrap().keys().collect();
    assert_eq!(members.len(), 7, "{one}");

    // A refresh stamps the family's last use; the session keeps its id.
    let r = refresh(&t, &c, &first).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let first = s(&r.body, "refresh_token");
    let listed = sessions(&t, &alice, &token).await;
    assert_eq!(listed[0]["id"], json!(family_of(&first)));
    assert!(listed[0]["last_used_at"].as_i64().is_some_and(|at| at >= created), "{}", listed[0]);

    let second = s(&user_tokens(&t, &c, &alice, "openid").await, "refresh_token");
    let third = s(&user_tokens(&t, &c, &alice, "openid").await, "refresh_token");
    let listed = sessions(&t, &alice, &token).await;
    assert_eq!(listed.len(), 3);
    let order: Vec<(i64, String)> = listed.iter().map(|x| (x["created_at"].as_i64().unwrap(), s(x, "id"))).collect();
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "oldest first: {order:?}");

    // Ending one: its refresh token is refused, the others work.
    let one = format!("/v4/users/{alice}/oauth2/sessions/{}", family_of(&first));
    let r = t.call(Method::DELETE, &one, Some(&token), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    assert_error(&refresh(&t, &c, &first).await, StatusCode::BAD_REQUEST, "invalid_grant");
    assert_eq!(t.call(Method::DELETE, &one, Some(&token), None).await.status, StatusCode::NOT_FOUND, "ended");
    assert_eq!(sessions(&t, &alice, &token).await.len(), 2);
    let r = refresh(&t, &c, &second).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let second = s(&r.body, "refresh_token");

    // Ending all of them.
    let all = format!("/v4/users/{alice}/oauth2/sessions");
    let r = t.call(Method::DELETE, &all, Some(&token), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    for rt in [&second, &third] {
        assert_error(&refresh(&t, &c, rt).await, StatusCode::BAD_REQUEST, "invalid_grant");
    }
    assert_eq!(sessions(&t, &alice, &token).await, Vec::<Value>::new());
    assert_eq!(t.call(Method::DELETE, &all, Some(&token), None).await.status, StatusCode::NO_CONTENT, "none left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_sessions_are_neither_shown_nor_ended() {
    let (t, alice, c) = alice_and_client(json!({})).await;
    let bob = user_in(&t, D, "bob", json!({})).await;
    let bob_token = t.token_for_id(&bob, PW, Value::Null).await;
    let rt = s(&user_tokens(&t, &c, &alice, "openid").await, "refresh_token");
    let family = family_of(&rt);

    let list = format!("/v4/users/{alice}/oauth2/sessions");
    assert_eq!(t.call(Method::GET, &list, Some(&bob_token), None).await.status, StatusCode::FORBIDDEN);
    assert_eq!(t.call(Method::GET, &list, None, None).await.status, StatusCode::UNAUTHORIZED);
    for path in [format!("{list}/{family}"), list.clone()] {
        let r = t.call(Method::DELETE, &path, Some(&bob_token), None).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{path}: {}", r.body);
        assert!(r.body["error"]["message"].is_string(), "{}", r.body);
    }
    // Alice's session under bob's path: not bob's, whoever asks.
    let under_bob = format!("/v4/users/{bob}/oauth2/sessions/{family}");
    assert_eq!(t.call(Method::DELETE, &under_bob, Some(&bob_token), None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(Method::DELETE, &under_bob, None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        t.call(Method::GET, &format!("/v4/users/{bob}/oauth2/sessions"), Some(&bob_token), None).await.body,
        json!({"sessions": []})
    );
    // All still alive; an admin sees and ends them.
    assert_eq!(refresh(&t, &c, &rt).await.status, StatusCode::OK);
    let r = t.admin(Method::GET, &list, None).await;
    assert_eq!(r.body["sessions"].as_array().map(Vec::len), Some(1), "{}", r.body);
    let r = t.admin(Method::DELETE, &format!("{list}/{family}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    assert_eq!(t.admin(Method::GET, "/v4/users/nobody/oauth2/sessions", None).await.status, StatusCode::NOT_FOUND);
}
