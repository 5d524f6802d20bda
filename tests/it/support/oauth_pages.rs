//! The OAuth2 provider's browser pages walked by hand, for the tests that need tokens from
//! the authorization code flow (`oauth2_cluster`, the partition campaign's refresh rotation):
//! the hidden inputs of each form parsed with a regex, the CSRF cookie the first page set sent
//! back, the final 303 read, not followed. `web` must not follow redirects.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use reqwest::StatusCode;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::random_hex;

/// The redirect URI of the browser clients; never contacted (the 303 is not followed).
pub const REDIRECT_URI: &str = "http://127.0.0.1:9/cb";

/// One answer of [`form`] / [`get_page`].
pub struct Answer {
    pub status: StatusCode,
    pub location: Option<String>,
    pub set_cookie: Option<String>,
    pub text: String,
    pub json: Value,
}

/// A client for the pages: no proxy, no redirect followed, each request bounded by `timeout`.
pub fn page_client(timeout: std::time::Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .build()
        .expect("reqwest client")
}

async fn answer(resp: reqwest::Response) -> Answer {
    let status = resp.status();
    let header = |name| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let (location, set_cookie) = (header(LOCATION), header(SET_COOKIE));
    let text = resp.text().await.expect("response body");
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Answer { status, location, set_cookie, text, json }
}

pub async fn get_page(web: &reqwest::Client, url: &str, cookie: Option<&str>) -> Answer {
    let mut req = web.get(url);
    if let Some(c) = cookie {
        req = req.header(COOKIE, c);
    }
    answer(req.send().await.unwrap_or_else(|e| panic!("GET {url}: {e}"))).await
}

/// A form post (`application/x-www-form-urlencoded`).
pub async fn form(web: &reqwest::Client, url: &str, cookie: Option<&str>, fields: &[(&str, &str)]) -> Answer {
    let mut req = web.post(url).form(fields);
    if let Some(c) = cookie {
        req = req.header(COOKIE, c);
    }
    answer(req.send().await.unwrap_or_else(|e| panic!("POST {url}: {e}"))).await
}

/// `(verifier, S256 challenge)` of a fresh PKCE pair (RFC 7636 §4.1-4.2).
pub fn pkce() -> (String, String) {
    let verifier = random_hex(32);
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

fn unescape(v: &str) -> String {
    v.replace("&quot;", "\"").replace("&#39;", "'").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// A page's form: its action and hidden inputs.
fn page_form(html: &str) -> (String, Vec<(String, String)>) {
    let action = regex::Regex::new(r#"<form method="post" action="([^"]+)">"#).expect("regex");
    let hidden = regex::Regex::new(r#"<input type="hidden" name="([^"]+)" value="([^"]*)">"#).expect("regex");
    let found = action.captures(html).unwrap_or_else(|| panic!("no form in the page:\n{html}"));
    // The first form only, as a browser posts one form (the login page has a second, the
    // passkey button's).
    let start = found.get(0).map_or(0, |m| m.end());
    let form = &html[start..html[start..].find("</form>").map_or(html.len(), |e| start + e)];
    let action = found[1].to_string();
    let fields: Vec<(String, String)> =
        hidden.captures_iter(form).map(|c| (c[1].to_string(), unescape(&c[2]))).collect();
    assert!(fields.iter().any(|(k, _)| k == "page_state"), "no page_state in the form:\n{html}");
    (unescape(&action), fields)
}

/// The code flow's pages for `client_id` of `domain`: `/authorize` and the login post on the
/// API at `login`, the consent post (approve) on the API at `consent`, as the user with
/// `(name, password)`. Returns the code from the final 303.
pub async fn code_flow(
    web: &reqwest::Client,
    (login, consent): (&str, &str),
    domain: &str,
    client_id: &str,
    (name, password): (&str, &str),
    challenge: &str,
) -> String {
    let state = random_hex(8);
    let mut url = url::Url::parse(&format!("{login}/v4/oauth2/{domain}/authorize")).expect("authorize URL");
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", REDIRECT_URI)
        .append_pair("scope", "openid profile")
        .append_pair("state", &state)
        .append_pair("nonce", "n-0S6_WzA2Mj")
        .append_pair("code_challenge", challenge)
        .append_pair("code_challenge_method", "S256");
    let page = get_page(web, url.as_str(), None).await;
    assert_eq!(page.status, StatusCode::OK, "GET /authorize on {login}: {}", page.text);
    let set_cookie = page.set_cookie.unwrap_or_else(|| panic!("/authorize set no CSRF cookie"));
    // `name=value; Path=…; HttpOnly; …` → `name=value`
    let cookie = set_cookie.split(';').next().expect("cookie pair").trim().to_string();

    let (action, hidden) = page_form(&page.text);
    let mut fields: Vec<(&str, &str)> = hidden.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    fields.extend([("username", name), ("password", password)]);
    let page = form(web, &format!("{login}{action}"), Some(&cookie), &fields).await;
    assert_eq!(page.status, StatusCode::OK, "login post on {login}: {}", page.text);
    assert!(page.text.contains(r#"name="decision" value="approve""#), "not the consent page:\n{}", page.text);

    let (action, hidden) = page_form(&page.text);
    let mut fields: Vec<(&str, &str)> = hidden.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    fields.push(("decision", "approve"));
    let done = form(web, &format!("{consent}{action}"), Some(&cookie), &fields).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "consent post on {consent}: {}", done.text);
    let location = done.location.expect("the consent post's Location");
    assert!(location.starts_with(REDIRECT_URI), "redirected elsewhere: {location}");
    let back = url::Url::parse(&location).expect("Location URL");
    let q: std::collections::HashMap<String, String> = back.query_pairs().into_owned().collect();
    assert_eq!(q.get("state"), Some(&state), "state comes back: {location}");
    q.get("code").unwrap_or_else(|| panic!("no code in {location}")).clone()
}
