//! The account page through the real router: signing in (password, an expired password),
//! the sections, and the refusals that must change nothing (another session's CSRF value, a
//! post from another site, another domain's session or user, a disabled user).

use std::collections::HashMap;

use axum::http::{header, Method, StatusCode};
use serde_json::{json, Value};

use crate::testkit::{send_content, Reply, TestNode};

const PW: &str = "account page pw 1";

/// A browser: its cookies, sent back on every request.
#[derive(Default, Clone)]
struct Browser {
    cookies: HashMap<String, String>,
}

impl Browser {
    fn cookie_header(&self) -> String {
        self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
    }

    fn keep(&mut self, r: &Reply) {
        for v in r.headers.get_all(header::SET_COOKIE) {
            let v = v.to_str().unwrap();
            let (pair, attrs) = v.split_once(';').unwrap_or((v, ""));
            let (k, val) = pair.split_once('=').unwrap();
            if attrs.contains("Max-Age=0") {
                self.cookies.remove(k);
            } else {
                self.cookies.insert(k.to_string(), val.to_string());
            }
        }
    }

    async fn get(&mut self, t: &TestNode, path: &str) -> Reply {
        let c = self.cookie_header();
        let r = send_content(&t.router, Method::GET, path, &[("cookie", &c)], None).await;
        self.keep(&r);
        r
    }

    async fn post(&mut self, t: &TestNode, path: &str, form: &[(&str, &str)], extra: &[(&str, &str)]) -> Reply {
        let c = self.cookie_header();
        let mut headers = vec![("cookie", c.as_str())];
        headers.extend_from_slice(extra);
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let r =
            send_content(&t.router, Method::POST, path, &headers, Some(("application/x-www-form-urlencoded", body)))
                .await;
        self.keep(&r);
        r
    }
}

/// The value of hidden field `name` in a page.
fn field(html: &str, name: &str) -> String {
    let at = html.find(&format!("name=\"{name}\" value=\"")).unwrap_or_else(|| panic!("no {name} in {html}"));
    let rest = &html[at + name.len() + 15..];
    rest[..rest.find('"').unwrap()].to_string()
}

async fn user(t: &TestNode, name: &str, domain: &str) -> String {
    t.create("/v3/users", "user", json!({"name": name, "domain_id": domain, "password": PW})).await
}

/// Signs `name` in at domain `domain`'s page; the browser then holds the session.
async fn sign_in(t: &TestNode, b: &mut Browser, domain: &str, name: &str, pw: &str) -> Reply {
    let page = b.get(t, &format!("/v4/account/{domain}")).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let csrf = field(&page.text, "login_csrf");
    b.post(
        t,
        &format!("/v4/account/{domain}/signin"),
        &[("login_csrf", &csrf), ("username", name), ("password", pw)],
        &[],
    )
    .await
}

/// The session's CSRF value, from a section's page.
async fn csrf(t: &TestNode, b: &mut Browser, domain: &str) -> String {
    let r = b.get(t, &format!("/v4/account/{domain}/credentials")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    field(&r.text, "csrf")
}

async fn credential(t: &TestNode, user_id: &str, name: &str, project: &str) -> String {
    let token = t.token_for_id(user_id, PW, json!({"project": {"id": project}})).await;
    let r = t
        .call(
            Method::POST,
            &format!("/v3/users/{user_id}/application_credentials"),
            Some(&token),
            Some(json!({"application_credential": {"name": name}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body["application_credential"]["id"].as_str().unwrap().to_string()
}

async fn credentials_of(t: &TestNode, user_id: &str) -> Vec<Value> {
    let r = t.admin(Method::GET, &format!("/v3/users/{user_id}/application_credentials"), None).await;
    r.body["application_credentials"].as_array().cloned().unwrap_or_default()
}

async fn member_of_a_project(t: &TestNode, user_id: &str) -> String {
    let project =
        t.create("/v3/projects", "project", json!({"name": format!("p-{user_id}"), "domain_id": "default"})).await;
    let roles = t.admin(Method::GET, "/v3/roles?name=member", None).await;
    let role = roles.body["roles"][0]["id"].as_str().unwrap().to_string();
    let r = t.admin(Method::PUT, &format!("/v3/projects/{project}/users/{user_id}/roles/{role}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    project
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_signs_in_manages_credentials_and_signs_out() {
    let t = TestNode::start().await;
    let id = user(&t, "ada", "default").await;
    let project = member_of_a_project(&t, &id).await;
    let mut b = Browser::default();
    let r = sign_in(&t, &mut b, "default", "ada", "wrong").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.text.contains("Invalid username or password."), "{}", r.text);
    let r = sign_in(&t, &mut b, "default", "ada", PW).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
    assert!(r.headers[header::SET_COOKIE].to_str().unwrap().contains("HttpOnly; SameSite=Strict"));
    for tab in ["passkeys", "password", "consents", "sessions", "credentials"] {
        let page = b.get(&t, &format!("/v4/account/default/{tab}")).await;
        assert_eq!(page.status, StatusCode::OK, "{tab}: {}", page.text);
        assert!(page.text.contains(">ada<"), "{tab}");
        let csp = page.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(csp.contains("script-src 'sha256-") && csp.contains("frame-ancestors 'none'"), "{csp}");
    }
    // Create an application credential: the secret is shown once and works.
    let token = csrf(&t, &mut b, "default").await;
    let r = b
        .post(&t, "/v4/account/default/credentials", &[("csrf", &token), ("name", "ci"), ("project_id", &project)], &[])
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let secret = r.text.split("id=\"created-secret\">").nth(1).unwrap().split('<').next().unwrap().to_string();
    let cred_id = r.text.split("id=\"created-id\">").nth(1).unwrap().split('<').next().unwrap().to_string();
    let auth = json!({"auth": {"identity": {"methods": ["application_credential"],
        "application_credential": {"id": cred_id, "secret": secret}}}});
    assert_eq!(t.call(Method::POST, "/v3/auth/tokens", None, Some(auth)).await.status, StatusCode::OK);
    let listed = b.get(&t, "/v4/account/default/credentials").await;
    assert!(!listed.text.contains(&secret), "the secret is shown only once");
    // Delete it.
    let r = b.post(&t, &format!("/v4/account/default/credentials/{cred_id}/delete"), &[("csrf", &token)], &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
    assert!(credentials_of(&t, &id).await.is_empty());
    // Sign out: the session's token is revoked and the pages ask to sign in again.
    let r = b.post(&t, "/v4/account/default/signout", &[("csrf", &token)], &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let r = b.get(&t, "/v4/account/default/passkeys").await;
    assert_eq!(
        (r.status, r.headers[header::LOCATION].to_str().unwrap()),
        (StatusCode::SEE_OTHER, "/v4/account/default")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_posts_change_nothing() {
    let t = TestNode::start().await;
    let id = user(&t, "bob", "default").await;
    let project = member_of_a_project(&t, &id).await;
    let kept = credential(&t, &id, "kept", &project).await;
    let delete = format!("/v4/account/default/credentials/{kept}/delete");
    let mut one = Browser::default();
    let mut two = Browser::default();
    assert_eq!(sign_in(&t, &mut one, "default", "bob", PW).await.status, StatusCode::SEE_OTHER);
    assert_eq!(sign_in(&t, &mut two, "default", "bob", PW).await.status, StatusCode::SEE_OTHER);
    let csrf_one = csrf(&t, &mut one, "default").await;
    let csrf_two = csrf(&t, &mut two, "default").await;
    assert_ne!(csrf_one, csrf_two);

    // Another session's CSRF value, no CSRF value, a post from another site.
    assert_eq!(one.post(&t, &delete, &[("csrf", &csrf_two)], &[]).await.status, StatusCode::FORBIDDEN);
    assert_eq!(one.post(&t, &delete, &[], &[]).await.status, StatusCode::FORBIDDEN);
    let r = one.post(&t, &delete, &[("csrf", &csrf_one)], &[("origin", "https://evil.example")]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(r.text.contains("posted from another site"), "{}", r.text);
    let r = one.post(&t, &delete, &[("csrf", &csrf_one)], &[("sec-fetch-site", "cross-site")]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // An opaque origin (`Origin: null`) is no proof of this site without `same-origin`.
    for extra in [&[("origin", "null")][..], &[("origin", "null"), ("sec-fetch-site", "cross-site")][..]] {
        let r = one.post(&t, &delete, &[("csrf", &csrf_one)], extra).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{extra:?}");
    }
    // A session of another domain's page is no session here.
    let other = t.create("/v3/domains", "domain", json!({"name": "other"})).await;
    user(&t, "carol", &other).await;
    let mut three = Browser::default();
    assert_eq!(sign_in(&t, &mut three, &other, "carol", PW).await.status, StatusCode::SEE_OTHER);
    let csrf_three = csrf(&t, &mut three, &other).await;
    let r = three.post(&t, &delete, &[("csrf", &csrf_three)], &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "to the sign-in page");
    // A user of another domain cannot sign in here.
    let mut four = Browser::default();
    assert_eq!(sign_in(&t, &mut four, "default", "carol", PW).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(credentials_of(&t, &id).await.len(), 1, "nothing was deleted");
    // Chromium's own post under `Referrer-Policy: no-referrer`: `Origin: null`, same-origin.
    let mine = credential(&t, &id, "mine", &project).await;
    let chromium = [("origin", "null"), ("sec-fetch-site", "same-origin")];
    let path = format!("/v4/account/default/credentials/{mine}/delete");
    let r = one.post(&t, &path, &[("csrf", &csrf_one)], &chromium).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
    assert_eq!(credentials_of(&t, &id).await.len(), 1, "only the browser's own post deleted one");

    // A disabled user: the session ends, and signing in again is refused.
    let r = t.admin(Method::PATCH, &format!("/v3/users/{id}"), Some(json!({"user": {"enabled": false}}))).await;
    assert_eq!(r.status, StatusCode::OK);
    let r = one.post(&t, &delete, &[("csrf", &csrf_one)], &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(r.headers[header::LOCATION].to_str().unwrap(), "/v4/account/default");
    assert_eq!(sign_in(&t, &mut Browser::default(), "default", "bob", PW).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(credentials_of(&t, &id).await.len(), 1, "nothing was deleted");
    // No such domain, or a disabled one: no account page.
    assert_eq!(Browser::default().get(&t, "/v4/account/nope").await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_password_is_changed_first_with_the_rules_messages() {
    let t = TestNode::start_with(&[
        ("security_compliance", "change_password_upon_first_use", "true"),
        ("security_compliance", "password_regex", "^.{12,}$"),
        ("security_compliance", "password_regex_description", "at least 12 characters"),
    ])
    .await;
    user(&t, "dora", "default").await;
    let mut b = Browser::default();
    let r = sign_in(&t, &mut b, "default", "dora", PW).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.text.contains("id=\"expired-form\""), "{}", r.text);
    let csrf = field(&r.text, "login_csrf");
    let post = |pw: &'static str, confirm: &'static str| {
        let csrf = csrf.clone();
        let mut b = b.clone();
        let t = &t;
        async move {
            b.post(
                t,
                "/v4/account/default/signin/expired",
                &[
                    ("login_csrf", &csrf),
                    ("username", "dora"),
                    ("original_password", PW),
                    ("password", pw),
                    ("confirm", confirm),
                ],
                &[],
            )
            .await
        }
    };
    let r = post("short", "short").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.text.contains("The password does not match the requirements: at least 12 characters."), "{}", r.text);
    let r = post("a long new password", "a different one!").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = post("a long new password", "a long new password").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
    assert!(r.headers[header::SET_COOKIE].to_str().unwrap().starts_with("idnode_account="));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_speaks_german_and_wears_the_domain_s_branding() {
    let t = TestNode::start().await;
    let opts = json!({"options": {"branding_name": "Acme Cloud", "branding_color": "#0a66c2",
        "branding_logo_url": "https://cdn.acme.example/logo.png"}});
    let r = t.admin(Method::PATCH, "/v3/domains/default", Some(json!({"domain": {"options": opts["options"]}}))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let bad = t
        .admin(Method::PATCH, "/v3/domains/default", Some(json!({"domain": {"options": {"branding_color": "red"}}})))
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
    let r = send_content(&t.router, Method::GET, "/v4/account/default", &[("accept-language", "de-DE,de;q=0.9")], None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.text.contains("<html lang=\"de\">") && r.text.contains("Ihr Konto") && r.text.contains("Acme Cloud"),
        "{}",
        r.text
    );
    assert!(r.text.contains(":root{--brand:#0a66c2}"));
    let csp = r.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(csp.contains("img-src https://cdn.acme.example/logo.png;"), "{csp}");
}
