//! The provider's browser side through the real router: the authorize flow's pages and
//! redirects, the device flow's start and pages, and the consent API.

use axum::http::{Method, StatusCode};
use regex::Regex;
use serde_json::{json, Value};

use super::errors::send;

use crate::oauth2::device::USER_CODE_ALPHABET;
use crate::oauth2::secrets::{self, keyed_hash};
use crate::state::cf;
use crate::state::oauth2::{keys, AuthCode, Consent, DeviceGrant, DeviceStatus};
use crate::testkit::{Reply, TestNode};

pub(super) const D: &str = "default";
pub(super) const CB: &str = "https://app.example/cb";
const CHALLENGE: &str = "zY3dLN7IOx58P_4ckFRohSQVPpiKxfSo4ju7_lQKixI";
pub(super) const PW: &str = "alice password 1";

pub(super) fn form(pairs: &[(&str, &str)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

fn header(r: &Reply, name: &str) -> String {
    r.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string()
}

/// The hidden page_state of a page.
pub(super) fn page_state(r: &Reply) -> String {
    let re = Regex::new(r#"name="page_state" value="([^"]*)""#).unwrap();
    re.captures(&r.text).unwrap_or_else(|| panic!("no page_state in {}", r.text))[1].to_string()
}

/// `name=value` of the CSRF cookie the page set.
pub(super) fn cookie(r: &Reply) -> String {
    let c = header(r, "set-cookie");
    c.split(';').next().unwrap_or_else(|| panic!("no cookie: {c}")).to_string()
}

/// Query parameters of a redirect.
pub(super) fn location(r: &Reply) -> (String, Vec<(String, String)>) {
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
    let loc = url::Url::parse(&header(r, "location")).unwrap();
    let base = format!("{}://{}{}", loc.scheme(), loc.host_str().unwrap(), loc.path());
    (base, loc.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
}

pub(super) fn param<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn assert_page_headers(r: &Reply) {
    assert_eq!(header(r, "content-type"), "text/html; charset=utf-8");
    assert_eq!(header(r, "cache-control"), "no-store");
    assert_eq!(header(r, "x-frame-options"), "DENY");
    assert_eq!(header(r, "referrer-policy"), "no-referrer");
    let csp = header(r, "content-security-policy");
    for part in
        ["default-src 'none'", "style-src 'sha256-", "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'"]
    {
        assert!(csp.contains(part), "{part} not in {csp}");
    }
    assert!(!csp.contains("unsafe-inline"));
    assert!(r.text.contains(r#"<meta name="viewport" content="width=device-width, initial-scale=1">"#));
    // Every inline script runs only by its hash (the passkey button's), and the passkey
    // section stays hidden until that script shows it: without scripts the password form is
    // the whole page.
    for script in r.text.split("<script>").skip(1).filter_map(|s| s.split("</script>").next()) {
        use base64::Engine as _;
        use sha2::Digest as _;
        let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(script.as_bytes()));
        assert!(csp.contains(&format!("script-src 'sha256-{hash}'")), "script not allowed by {csp}");
        assert!(r.text.contains(r#"<div id="passkey" hidden"#), "{}", r.text);
    }
}

/// A user of the default domain.
pub(super) async fn user(t: &TestNode, name: &str) -> String {
    t.create("/v3/users", "user", json!({"name": name, "domain_id": D, "password": PW})).await
}

/// A client of the default domain; returns its id.
pub(super) async fn client(t: &TestNode, fields: Value) -> String {
    let mut body = json!({"name": "App <One>", "confidential": false, "grant_types": ["authorization_code"],
        "redirect_uris": [CB], "allowed_scopes": ["openid", "profile", "email", "platform:api"]});
    for (k, v) in fields.as_object().unwrap() {
        body[k] = v.clone();
    }
    let r = t.admin(Method::POST, &format!("/v4/oauth2/{D}/clients"), Some(json!({ "oauth2_client": body }))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body["oauth2_client"]["client_id"].as_str().unwrap().to_string()
}

pub(super) fn authorize_url(client_id: &str, extra: &[(&str, &str)]) -> String {
    let mut pairs = vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", CB),
        ("state", "st-123"),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
    ];
    for (k, v) in extra {
        pairs.retain(|(pk, _)| pk != k);
        if !v.is_empty() {
            pairs.push((k, v));
        }
    }
    format!("/v4/oauth2/{D}/authorize?{}", form(&pairs))
}

/// GET /authorize, then the login post; returns the login post's reply and the cookie.
async fn sign_in(t: &TestNode, url: &str, username: &str) -> (Reply, String) {
    sign_in_with(t, url, username, PW).await
}

/// [`sign_in`] with another password.
pub(super) async fn sign_in_with(t: &TestNode, url: &str, username: &str, password: &str) -> (Reply, String) {
    let page = send(t, Method::GET, url, &[], None).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let c = cookie(&page);
    let body = form(&[("page_state", &page_state(&page)), ("username", username), ("password", password)]);
    let r = send(t, Method::POST, &format!("/v4/oauth2/{D}/authorize/login"), &[("cookie", &c)], Some(&body)).await;
    (r, c)
}

pub(super) async fn decide(t: &TestNode, consent_page: &Reply, c: &str, decision: &str, remember: bool) -> Reply {
    let st = page_state(consent_page);
    let mut pairs = vec![("page_state", st.as_str()), ("decision", decision)];
    if remember {
        pairs.push(("remember", "on"));
    }
    send(t, Method::POST, &format!("/v4/oauth2/{D}/authorize/consent"), &[("cookie", c)], Some(&form(&pairs))).await
}

pub(super) fn stored_code(t: &TestNode, code: &str) -> AuthCode {
    let hash = keyed_hash(&t.node, secrets::CODE, code).unwrap();
    t.node.engine.read().get_t::<AuthCode>(cf::OAUTH2, &keys::code(&hash)).unwrap().expect("stored code")
}

fn stored_consent(t: &TestNode, user_id: &str, client_id: &str) -> Option<Consent> {
    t.node.engine.read().get_t::<Consent>(cf::OAUTH2, &keys::consent(user_id, client_id)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorize_login_consent_redirects_with_a_code() {
    let t = TestNode::start().await;
    let alice = user(&t, "alice").await;
    let cid = client(&t, json!({})).await;
    let url = authorize_url(&cid, &[("scope", "openid profile"), ("nonce", "n-1")]);

    let page = send(&t, Method::GET, &url, &[], None).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert_page_headers(&page);
    assert!(header(&page, "content-security-policy").contains("form-action 'self' https://app.example;"));
    assert!(page.text.contains(&format!(r#"data-start="/v4/oauth2/{D}/authorize/passkey/start""#)), "{}", page.text);
    let set = header(&page, "set-cookie");
    assert!(set.starts_with("idnode_oauth2_csrf="), "{set}");
    for attr in ["HttpOnly", "SameSite=Strict", &format!("Path=/v4/oauth2/{D}")] {
        assert!(set.contains(attr), "{attr} not in {set}");
    }
    assert!(!set.contains("Secure"), "plain http issuer: {set}");
    assert!(page.text.contains("App &lt;One&gt;"), "the client name is escaped");
    assert!(page.text.contains(&format!(r#"action="/v4/oauth2/{D}/authorize/login""#)));
    assert!(page.text.contains(r#"name="username""#) && page.text.contains(r#"name="password""#));
    let c = cookie(&page);
    let st = page_state(&page);

    // Wrong password and unknown user: the same generic answer, the form again.
    for (u, p) in [("alice", "wrong"), ("nobody", PW)] {
        let body = form(&[("page_state", &st), ("username", u), ("password", p)]);
        let r =
            send(&t, Method::POST, &format!("/v4/oauth2/{D}/authorize/login"), &[("cookie", &c)], Some(&body)).await;
        assert_eq!(r.status, StatusCode::OK);
        assert!(r.text.contains("Invalid username or password."), "{}", r.text);
        assert_eq!(page_state(&r), st);
        assert_page_headers(&r);
    }

    let body = form(&[("page_state", &st), ("username", "alice"), ("password", PW)]);
    let consent =
        send(&t, Method::POST, &format!("/v4/oauth2/{D}/authorize/login"), &[("cookie", &c)], Some(&body)).await;
    assert_eq!(consent.status, StatusCode::OK, "{}", consent.text);
    assert_page_headers(&consent);
    assert!(header(&consent, "content-security-policy").contains("https://app.example"));
    for text in [
        "App &lt;One&gt;",
        "<strong>openid</strong>",
        "<strong>profile</strong>",
        "see your name and profile",
        r#"name="remember""#,
        r#"name="decision" value="approve""#,
        r#"name="decision" value="deny""#,
    ] {
        assert!(consent.text.contains(text), "{text} not in {}", consent.text);
    }
    assert!(!consent.text.contains("<strong>email</strong>"));

    let r = decide(&t, &consent, &c, "approve", false).await;
    assert_eq!(header(&r, "cache-control"), "no-store");
    let (base, q) = location(&r);
    assert_eq!(base, CB);
    assert_eq!(param(&q, "state"), Some("st-123"));
    let code = param(&q, "code").unwrap();
    let stored = stored_code(&t, code);
    assert_eq!(stored.user_id, alice);
    assert_eq!(stored.client_id, cid);
    assert_eq!(stored.scopes, vec!["openid", "profile"]);
    assert_eq!(stored.code_challenge.as_deref(), Some(CHALLENGE));
    assert_eq!(stored.nonce.as_deref(), Some("n-1"));
    assert_eq!(stored.redirect_uri, CB);
    assert!(stored.expires_at - crate::clock::now_secs() <= 60 && stored.redeemed.is_none());
    assert!(stored_consent(&t, &alice, &cid).is_none(), "not remembered unless asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remembered_consent_skips_the_page_unless_forced_or_widened() {
    let t = TestNode::start().await;
    let alice = user(&t, "alice").await;
    let cid = client(&t, json!({})).await;
    let url = authorize_url(&cid, &[("scope", "openid profile")]);
    let (consent, c) = sign_in(&t, &url, "alice").await;
    let (_, q) = location(&decide(&t, &consent, &c, "approve", true).await);
    assert!(param(&q, "code").is_some());
    let remembered = stored_consent(&t, &alice, &cid).expect("remembered");
    assert_eq!(remembered.scopes, vec!["openid", "profile"]);

    // Same or fewer scopes: straight back to the client after login.
    for scope in ["openid profile", "openid"] {
        let (r, _) = sign_in(&t, &authorize_url(&cid, &[("scope", scope)]), "alice").await;
        let (_, q) = location(&r);
        assert!(param(&q, "code").is_some());
        assert_eq!(param(&q, "state"), Some("st-123"));
    }
    // prompt=consent forces the page; a wider request shows it too.
    let (r, _) = sign_in(&t, &authorize_url(&cid, &[("scope", "openid"), ("prompt", "consent")]), "alice").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.text.contains(r#"value="approve""#));
    let (r, c) = sign_in(&t, &authorize_url(&cid, &[("scope", "openid email")]), "alice").await;
    assert_eq!(r.status, StatusCode::OK);
    location(&decide(&t, &r, &c, "approve", true).await);
    let mut scopes = stored_consent(&t, &alice, &cid).unwrap().scopes;
    scopes.sort();
    assert_eq!(scopes, vec!["email", "openid", "profile"], "remembered scopes accumulate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_authorized_clients_never_show_consent_and_deny_redirects() {
    let t = TestNode::start().await;
    user(&t, "alice").await;
    let pre = client(&t, json!({"pre_authorized": true, "name": "Trusted"})).await;
    for extra in [vec![], vec![("prompt", "consent")]] {
        let (r, _) = sign_in(&t, &authorize_url(&pre, &extra), "alice").await;
        let (base, q) = location(&r);
        assert_eq!(base, CB);
        assert!(param(&q, "code").is_some());
    }

    let cid = client(&t, json!({})).await;
    let (consent, c) = sign_in(&t, &authorize_url(&cid, &[]), "alice").await;
    let (base, q) = location(&decide(&t, &consent, &c, "deny", false).await);
    assert_eq!(base, CB);
    assert_eq!(param(&q, "error"), Some("access_denied"));
    assert_eq!(param(&q, "state"), Some("st-123"));
    assert_eq!(param(&q, "code"), None);
    // Neither approve nor deny.
    let r = decide(&t, &consent, &c, "maybe", false).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_errors_are_pages_until_the_redirect_uri_is_known_then_redirects() {
    let t = TestNode::start().await;
    let cid = client(&t, json!({})).await;
    let confidential = client(
        &t,
        json!({"confidential": true, "require_pkce": false, "redirect_uris": [CB, "https://app.example/other"]}),
    )
    .await;

    for url in [
        authorize_url(&cid, &[("redirect_uri", "https://evil.example/cb")]),
        authorize_url("no-such-client", &[]),
        authorize_url(&cid, &[("client_id", "")]),
        authorize_url(&confidential, &[("redirect_uri", "")]),
    ] {
        let r = send(&t, Method::GET, &url, &[], None).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{url}: {}", r.text);
        assert!(r.headers.get("location").is_none(), "never redirected: {url}");
        assert_page_headers(&r);
    }
    // A client with one registered URI may omit it.
    let r = send(&t, Method::GET, &authorize_url(&cid, &[("redirect_uri", "")]), &[], None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);

    for (extra, error) in [
        (vec![("scope", "openid platform:api")], "invalid_scope"),
        (vec![("scope", "openid unknown")], "invalid_scope"),
        (vec![("code_challenge", ""), ("code_challenge_method", "")], "invalid_request"),
        (vec![("code_challenge_method", "plain")], "invalid_request"),
        (vec![("code_challenge", "too-short")], "invalid_request"),
        (vec![("response_type", "token")], "unsupported_response_type"),
        (vec![("response_type", "")], "invalid_request"),
        (vec![("prompt", "none")], "login_required"),
    ] {
        let r = send(&t, Method::GET, &authorize_url(&cid, &extra), &[], None).await;
        let (base, q) = location(&r);
        assert_eq!(base, CB);
        assert_eq!(param(&q, "error"), Some(error), "{extra:?}");
        assert!(param(&q, "error_description").is_some());
        assert_eq!(param(&q, "state"), Some("st-123"));
    }
    // A confidential client without require_pkce may skip PKCE.
    let url = authorize_url(&confidential, &[("code_challenge", ""), ("code_challenge_method", "")]);
    assert_eq!(send(&t, Method::GET, &url, &[], None).await.status, StatusCode::OK);
    // Unknown domain: a page, no redirect.
    let r = send(&t, Method::GET, &authorize_url(&cid, &[]).replace("/default/", "/nope/"), &[], None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn form_posts_need_the_matching_csrf_cookie_and_an_intact_state() {
    let t = TestNode::start().await;
    user(&t, "alice").await;
    let cid = client(&t, json!({})).await;
    let page = send(&t, Method::GET, &authorize_url(&cid, &[]), &[], None).await;
    let st = page_state(&page);
    let c = cookie(&page);
    let login = format!("/v4/oauth2/{D}/authorize/login");
    let body = form(&[("page_state", &st), ("username", "alice"), ("password", PW)]);
    let other = format!("idnode_oauth2_csrf={}", idnode_keys::random_token(32));
    for headers in [vec![], vec![("cookie", other.as_str())]] {
        let r = send(&t, Method::POST, &login, &headers, Some(&body)).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text);
        assert!(r.text.contains("could not be verified"), "{}", r.text);
        assert_page_headers(&r);
    }
    let mut tampered = st.clone().into_bytes();
    let i = tampered.len() / 2;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    let bad = form(&[("page_state", std::str::from_utf8(&tampered).unwrap()), ("username", "alice"), ("password", PW)]);
    let r = send(&t, Method::POST, &login, &[("cookie", &c)], Some(&bad)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    // Another domain's path does not accept this domain's state.
    let dom = t.create("/v3/domains", "domain", json!({"name": "other"})).await;
    let r = send(&t, Method::POST, &format!("/v4/oauth2/{dom}/authorize/login"), &[("cookie", &c)], Some(&body)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    // A consent post before login is refused, even with the right cookie.
    let r = decide(&t, &page, &c, "approve", false).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.headers.get("location").is_none());
    // The right cookie passes; a second tab reuses the cookie it already has.
    let again = send(&t, Method::GET, &authorize_url(&cid, &[]), &[("cookie", &c)], None).await;
    assert_eq!(cookie(&again), c);
    let r = send(&t, Method::POST, &login, &[("cookie", &c)], Some(&body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

pub(super) async fn device_start(t: &TestNode, client_id: &str, scope: Option<&str>) -> Reply {
    let mut pairs = vec![("client_id", client_id)];
    if let Some(s) = scope {
        pairs.push(("scope", s));
    }
    send(t, Method::POST, &format!("/v4/oauth2/{D}/device_authorization"), &[], Some(&form(&pairs))).await
}

fn device_grant(t: &TestNode, device_code: &str) -> DeviceGrant {
    let hash = keyed_hash(&t.node, secrets::DEVICE_CODE, device_code).unwrap();
    t.node.engine.read().get_t::<DeviceGrant>(cf::OAUTH2, &keys::device(&hash)).unwrap().expect("grant")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_authorization_answers_codes_of_the_spec_shape() {
    let t = TestNode::start().await;
    let cid =
        client(&t, json!({"grant_types": ["urn:ietf:params:oauth:grant-type:device_code"], "redirect_uris": []})).await;
    let r = device_start(&t, &cid, Some("openid profile")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(header(&r, "cache-control"), "no-store");
    let mut fields: Vec<&str> = r.body.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort();
    assert_eq!(
        fields,
        vec!["device_code", "expires_in", "interval", "user_code", "verification_uri", "verification_uri_complete"]
    );
    let alphabet = std::str::from_utf8(USER_CODE_ALPHABET).unwrap();
    let code_re = Regex::new(&format!("^[{alphabet}]{{4}}-[{alphabet}]{{4}}$")).unwrap();
    let user_code = r.body["user_code"].as_str().unwrap();
    assert!(code_re.is_match(user_code), "{user_code}");
    let uri = r.body["verification_uri"].as_str().unwrap();
    assert_eq!(uri, format!("{}/v4/oauth2/{D}/device", t.node.cfg.public_base()));
    assert_eq!(r.body["verification_uri_complete"], json!(format!("{uri}?user_code={user_code}")));
    assert_eq!(r.body["expires_in"], json!(600));
    assert_eq!(r.body["interval"], json!(5));
    let grant = device_grant(&t, r.body["device_code"].as_str().unwrap());
    assert_eq!(grant.user_code, user_code.replace('-', ""));
    assert_eq!(grant.scopes, vec!["openid", "profile"]);
    assert_eq!(grant.status, DeviceStatus::Pending);
    assert_eq!(grant.last_poll, None);

    for _ in 0..20 {
        let r = device_start(&t, &cid, None).await;
        assert!(code_re.is_match(r.body["user_code"].as_str().unwrap()));
    }
    let r = device_start(&t, &cid, Some("platform:api")).await;
    assert_eq!((r.status, r.body["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_scope")));
    let r = device_start(&t, "no-such-client", None).await;
    assert_eq!((r.status, r.body["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("invalid_client")));
    let code_only = client(&t, json!({})).await;
    let r = device_start(&t, &code_only, None).await;
    assert_eq!((r.status, r.body["error"].as_str()), (StatusCode::BAD_REQUEST, Some("unauthorized_client")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_page_signs_in_and_records_the_decision() {
    let t = TestNode::start().await;
    let alice = user(&t, "alice").await;
    let cid = client(
        &t,
        json!({"grant_types": ["urn:ietf:params:oauth:grant-type:device_code"], "redirect_uris": [], "name": "TV <App>",
               "pre_authorized": true}),
    )
    .await;
    let page = format!("/v4/oauth2/{D}/device");

    let r = send(&t, Method::GET, &page, &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_page_headers(&r);
    assert!(r.text.contains(r#"name="user_code""#));
    let r = send(&t, Method::GET, &format!("{page}?user_code=ABCD-EFGH"), &[], None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "unknown code");
    assert!(r.text.contains(r#"name="user_code""#) && r.text.contains("ABCD-EFGH"));

    for (decision, remember) in [("approve", true), ("deny", false)] {
        let start = device_start(&t, &cid, Some("openid")).await;
        let device_code = start.body["device_code"].as_str().unwrap().to_string();
        let shown = start.body["user_code"].as_str().unwrap().to_string();
        // Typed lower case without the dash.
        let typed = shown.replace('-', "").to_lowercase();
        let login = send(&t, Method::GET, &format!("{page}?user_code={typed}"), &[], None).await;
        assert_eq!(login.status, StatusCode::OK, "{}", login.text);
        assert!(login.text.contains("TV &lt;App&gt;"));
        assert!(login.text.contains(&format!(r#"action="/v4/oauth2/{D}/device/login""#)));
        assert!(!login.text.contains("passkey"), "the device flow's sign-in has no passkey button");
        let c = cookie(&login);
        let body = form(&[("page_state", &page_state(&login)), ("username", "alice"), ("password", PW)]);
        let consent = send(&t, Method::POST, &format!("{page}/login"), &[("cookie", &c)], Some(&body)).await;
        assert_eq!(consent.status, StatusCode::OK, "{}", consent.text);
        assert!(consent.text.contains(&shown), "the code is shown to compare");
        assert!(consent.text.contains("<strong>openid</strong>") && consent.text.contains("TV &lt;App&gt;"));
        let mut pairs = vec![("page_state", page_state(&consent)), ("decision", decision.to_string())];
        if remember {
            pairs.push(("remember", "on".to_string()));
        }
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let done = send(&t, Method::POST, &format!("{page}/consent"), &[("cookie", &c)], Some(&form(&pairs))).await;
        assert_eq!(done.status, StatusCode::OK, "{}", done.text);
        assert_page_headers(&done);
        let grant = device_grant(&t, &device_code);
        if decision == "approve" {
            assert!(done.text.contains("You may return to your device."));
            assert!(matches!(&grant.status, DeviceStatus::Approved { user_id, .. } if *user_id == alice), "{grant:?}");
            assert_eq!(stored_consent(&t, &alice, &cid).unwrap().scopes, vec!["openid"]);
        } else {
            assert!(done.text.contains("not given access"));
            assert_eq!(grant.status, DeviceStatus::Denied);
        }
        // A decided code is no longer accepted, on the page or by a replayed post.
        let again = send(&t, Method::GET, &format!("{page}?user_code={shown}"), &[], None).await;
        assert_eq!(again.status, StatusCode::BAD_REQUEST);
        let replay = send(&t, Method::POST, &format!("{page}/consent"), &[("cookie", &c)], Some(&form(&pairs))).await;
        assert_eq!(replay.status, StatusCode::BAD_REQUEST);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consent_api_lists_and_withdraws_own_consents() {
    let t = TestNode::start().await;
    let alice = user(&t, "alice").await;
    let bob = user(&t, "bob").await;
    let cid = client(&t, json!({})).await;
    let (consent, c) = sign_in(&t, &authorize_url(&cid, &[("scope", "openid email")]), "alice").await;
    location(&decide(&t, &consent, &c, "approve", true).await);

    let alice_token = t.token_for_id(&alice, PW, Value::Null).await;
    let bob_token = t.token_for_id(&bob, PW, Value::Null).await;
    let list = format!("/v4/users/{alice}/oauth2/consents");
    let r = t.call(Method::GET, &list, Some(&alice_token), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let items = r.body["consents"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    let item = &items[0];
    assert_eq!(item["client_id"], json!(cid));
    assert_eq!(item["client_name"], json!("App <One>"));
    assert_eq!(item["scopes"], json!(["openid", "email"]));
    assert_eq!(item["authorization_target"], Value::Null);
    assert!(item["granted_at"].is_i64() && item["updated_at"].is_i64());
    assert_eq!(t.admin(Method::GET, &list, None).await.status, StatusCode::OK);
    assert_eq!(t.call(Method::GET, &list, Some(&bob_token), None).await.status, StatusCode::FORBIDDEN);
    assert_eq!(t.call(Method::GET, &list, None, None).await.status, StatusCode::UNAUTHORIZED);
    let del = format!("{list}/{cid}");
    assert_eq!(t.call(Method::DELETE, &del, Some(&bob_token), None).await.status, StatusCode::FORBIDDEN);

    // Consents of deleted clients are not listed.
    let gone = client(&t, json!({"pre_authorized": false})).await;
    let (consent, c) = sign_in(&t, &authorize_url(&gone, &[]), "alice").await;
    location(&decide(&t, &consent, &c, "approve", true).await);
    let r = t.call(Method::GET, &list, Some(&alice_token), None).await;
    assert_eq!(r.body["consents"].as_array().unwrap().len(), 2);
    let r = t.admin(Method::DELETE, &format!("/v4/oauth2/{D}/clients/{gone}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = t.call(Method::GET, &list, Some(&alice_token), None).await;
    assert_eq!(r.body["consents"].as_array().unwrap().len(), 1);

    let r = t.call(Method::DELETE, &del, Some(&alice_token), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    assert!(stored_consent(&t, &alice, &cid).is_none());
    let r = t.call(Method::DELETE, &del, Some(&alice_token), None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    assert_eq!(t.admin(Method::DELETE, &del, None).await.status, StatusCode::NOT_FOUND);
    let r = t.call(Method::GET, &list, Some(&alice_token), None).await;
    assert_eq!(r.body["consents"], json!([]));
    // After a withdrawal the consent page shows again.
    let (r, _) = sign_in(&t, &authorize_url(&cid, &[("scope", "openid")]), "alice").await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn application_credential_tokens_cannot_manage_consents() {
    let t = TestNode::start().await;
    let project = t.create("/v3/projects", "project", json!({"name": "p", "domain_id": D})).await;
    let alice = user(&t, "alice").await;
    let roles = t.admin(Method::GET, "/v3/roles?name=member", None).await;
    let role = roles.body["roles"][0]["id"].as_str().unwrap().to_string();
    t.admin(Method::PUT, &format!("/v3/projects/{project}/users/{alice}/roles/{role}"), None).await;
    let token = t.token_for_id(&alice, PW, json!({"project": {"id": project}})).await;
    let r = t
        .call(
            Method::POST,
            &format!("/v3/users/{alice}/application_credentials"),
            Some(&token),
            Some(json!({"application_credential": {"name": "ci"}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let ac = &r.body["application_credential"];
    let auth = json!({"auth": {"identity": {"methods": ["application_credential"],
        "application_credential": {"id": ac["id"], "secret": ac["secret"]}}}});
    let r = t.call(Method::POST, "/v3/auth/tokens", None, Some(auth)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let ac_token = r.headers["x-subject-token"].to_str().unwrap().to_string();
    let list = format!("/v4/users/{alice}/oauth2/consents");
    assert_eq!(t.call(Method::GET, &list, Some(&token), None).await.status, StatusCode::OK);
    assert_eq!(t.call(Method::GET, &list, Some(&ac_token), None).await.status, StatusCode::FORBIDDEN);
    let r = t.call(Method::DELETE, &format!("{list}/any"), Some(&ac_token), None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
}

/// The PKCE verifier whose S256 challenge is [`CHALLENGE`].
pub(super) const VERIFIER: &str = "dBjftJeZ4CVP-mJ92K9CaUuv9kF4i1rKZ0ryFfxRh2w";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codes_and_approved_device_grants_redeem_at_the_token_endpoint() {
    let t = TestNode::start().await;
    user(&t, "alice").await;
    let cid =
        client(&t, json!({"grant_types": ["authorization_code", "urn:ietf:params:oauth:grant-type:device_code"]}))
            .await;
    let token = format!("/v4/oauth2/{D}/token");
    let (consent, c) = sign_in(&t, &authorize_url(&cid, &[("scope", "openid"), ("nonce", "n-9")]), "alice").await;
    let (_, q) = location(&decide(&t, &consent, &c, "approve", false).await);
    let body = form(&[
        ("grant_type", "authorization_code"),
        ("code", param(&q, "code").unwrap()),
        ("redirect_uri", CB),
        ("code_verifier", VERIFIER),
        ("client_id", &cid),
    ]);
    let r = send(&t, Method::POST, &token, &[], Some(&body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body["access_token"].is_string() && r.body["id_token"].is_string(), "{}", r.body);

    let start = device_start(&t, &cid, Some("openid")).await;
    let device_code = start.body["device_code"].as_str().unwrap().to_string();
    let page = format!("/v4/oauth2/{D}/device");
    let login = send(
        &t,
        Method::GET,
        start.body["verification_uri_complete"].as_str().unwrap().trim_start_matches(&t.node.cfg.public_base()),
        &[],
        None,
    )
    .await;
    assert_eq!(login.status, StatusCode::OK, "{}", login.text);
    let c = cookie(&login);
    let body = form(&[("page_state", &page_state(&login)), ("username", "alice"), ("password", PW)]);
    let consent = send(&t, Method::POST, &format!("{page}/login"), &[("cookie", &c)], Some(&body)).await;
    let body = form(&[("page_state", &page_state(&consent)), ("decision", "approve")]);
    let done = send(&t, Method::POST, &format!("{page}/consent"), &[("cookie", &c)], Some(&body)).await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.text);
    let body = form(&[
        ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
        ("device_code", &device_code),
        ("client_id", &cid),
    ]);
    let r = send(&t, Method::POST, &token, &[], Some(&body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body["access_token"].is_string(), "{}", r.body);
}
