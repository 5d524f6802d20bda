//! The provider's browser pages (login, consent, device code entry, messages): templates
//! compiled into the binary (`pages/*.html`) and a tiny renderer in which every value is
//! HTML-escaped unless it is markup this module rendered itself ([`Html`]), so no request
//! value can reach a page unescaped. Every page and redirect carries the same protective
//! headers: no caching, no framing, no referrer, and a CSP that allows nothing but the
//! inline style and the passkey script (by their hashes), the script's calls to this origin,
//! and form posts to this origin (plus, where a post ends in a
//! redirect to the client, the client's origin: Chromium applies `form-action` to the
//! redirect after a post).

use std::sync::LazyLock;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha2::{Digest, Sha256};

use super::error::OAuthError;
use crate::http::ApiError;

pub const STYLE: &str = include_str!("pages/style.css");
const LAYOUT: &str = include_str!("pages/layout.html");
pub const LOGIN: &str = include_str!("pages/login.html");
pub const CONSENT: &str = include_str!("pages/consent.html");
pub const SCOPE_ITEM: &str = include_str!("pages/scope_item.html");
pub const DEVICE_NOTE: &str = include_str!("pages/device_note.html");
pub const ERROR_NOTE: &str = include_str!("pages/error_note.html");
pub const MESSAGE: &str = include_str!("pages/message.html");
pub const DEVICE_CODE: &str = include_str!("pages/device_code.html");
const PASSKEY_LOGIN: &str = include_str!("pages/passkey_login.html");
/// The login page's passkey button: the only script of the pages, allowed by its hash.
const PASSKEY_SCRIPT: &str = include_str!("pages/passkey.js");

/// The CSP source of the inline style: its SHA-256, computed once.
static STYLE_HASH: LazyLock<String> =
    LazyLock::new(|| format!("'sha256-{}'", STANDARD.encode(Sha256::digest(STYLE.as_bytes()))));

/// The CSP source of the passkey script.
static SCRIPT_HASH: LazyLock<String> =
    LazyLock::new(|| format!("'sha256-{}'", STANDARD.encode(Sha256::digest(PASSKEY_SCRIPT.as_bytes()))));

/// Markup produced by [`render`] (or empty): the only kind of value inserted unescaped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Html(String);

impl Html {
    #[cfg(test)]
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// Several fragments in sequence.
    pub fn concat(parts: impl IntoIterator<Item = Html>) -> Html {
        Html(parts.into_iter().map(|h| h.0).collect())
    }
}

/// A template value: text (escaped) or markup rendered here.
pub enum Val<'a> {
    Text(&'a str),
    Html(&'a Html),
}

/// Escapes text for element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Replaces every `{{name}}` of `template` with its value (text escaped, markup as is); an
/// unknown name renders as nothing. Templates are compiled in, never taken from a request.
pub fn render(template: &str, vars: &[(&str, Val<'_>)]) -> Html {
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let name = after[..end].trim();
        match vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v) {
            Some(Val::Text(t)) => out.push_str(&escape(t)),
            Some(Val::Html(h)) => out.push_str(&h.0),
            None => {}
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Html(out)
}

/// "Sign in with a passkey" (shown only where WebAuthn is available): the script asks
/// `start` for a challenge for the typed username, has the browser sign it, and posts the
/// answer to `action` with the page's state, as the password form does.
pub fn passkey_button(start: &str, action: &str, sealed: &str) -> Html {
    let script = Html(PASSKEY_SCRIPT.to_string());
    render(
        PASSKEY_LOGIN,
        &[
            ("start_action", Val::Text(start)),
            ("action", Val::Text(action)),
            ("page_state", Val::Text(sealed)),
            ("script", Val::Html(&script)),
        ],
    )
}

/// A whole document around `body`.
pub fn document(title: &str, body: &Html) -> Html {
    let style = Html(STYLE.to_string());
    render(LAYOUT, &[("title", Val::Text(title)), ("style", Val::Html(&style)), ("body", Val::Html(body))])
}

/// The `Content-Security-Policy` of a page; `redirect_origin`: an origin its forms' posts may
/// end up redirected to.
pub fn csp(redirect_origin: Option<&str>) -> String {
    let extra = redirect_origin.map(|o| format!(" {o}")).unwrap_or_default();
    format!(
        "default-src 'none'; style-src {}; script-src {}; connect-src 'self'; form-action 'self'{extra}; \
         frame-ancestors 'none'; base-uri 'none'",
        *STYLE_HASH, *SCRIPT_HASH
    )
}

/// The origin of a URI (`scheme://host[:port]`), for `form-action`; None when opaque.
pub fn origin_of(uri: &str) -> Option<String> {
    let u = url::Url::parse(uri).ok()?;
    match u.origin() {
        o @ url::Origin::Tuple(..) => Some(o.ascii_serialization()),
        url::Origin::Opaque(_) => None,
    }
}

/// Headers every page and redirect of the provider carries.
fn protect(h: &mut HeaderMap, redirect_origin: Option<&str>) {
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    let policy = HeaderValue::from_str(&csp(redirect_origin))
        .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"));
    h.insert(header::CONTENT_SECURITY_POLICY, policy);
}

/// What any page of the flows may answer besides its own statuses, as an HTML page: 404 for
/// no such enabled domain, 503 when the cluster cannot answer now (for annotations).
pub struct PageUnavailable;

impl utoipa::IntoResponses for PageUnavailable {
    fn responses() -> std::collections::BTreeMap<String, utoipa::openapi::RefOr<utoipa::openapi::Response>> {
        use utoipa::openapi::{ContentBuilder, RefOr, ResponseBuilder};
        let page = |description: &str| {
            let content = ContentBuilder::new().schema(Some(<String as utoipa::PartialSchema>::schema())).build();
            RefOr::T(ResponseBuilder::new().description(description).content("text/html", content).build())
        };
        std::collections::BTreeMap::from([
            ("404".to_string(), page("No such enabled domain (HTML).")),
            ("503".to_string(), page("The cluster cannot answer now (HTML).")),
        ])
    }
}

/// A rendered page with its status, optional cookie and the origin its forms may redirect to.
pub struct Page {
    pub status: StatusCode,
    pub title: String,
    pub body: Html,
    pub redirect_origin: Option<String>,
    pub set_cookie: Option<String>,
}

impl Page {
    pub fn new(status: StatusCode, title: &str, body: Html) -> Page {
        Page { status, title: title.to_string(), body, redirect_origin: None, set_cookie: None }
    }
}

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        let doc = document(&self.title, &self.body);
        let mut resp = (self.status, doc.0).into_response();
        let h = resp.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        protect(h, self.redirect_origin.as_deref());
        if let Some(v) = self.set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
            h.insert(header::SET_COOKIE, v);
        }
        resp
    }
}

/// A page with a heading and one message (errors, "you may return to your device").
pub fn message(status: StatusCode, heading: &str, text: &str) -> Page {
    Page::new(status, heading, render(MESSAGE, &[("heading", Val::Text(heading)), ("message", Val::Text(text))]))
}

/// The error fragment of a form (`None`: nothing).
pub fn error_note(text: Option<&str>) -> Html {
    match text {
        Some(t) => render(ERROR_NOTE, &[("message", Val::Text(t))]),
        None => Html::default(),
    }
}

/// `303 See Other` to `location` (the client's redirect URI with the response parameters).
pub fn see_other(location: &str) -> Response {
    let mut resp = StatusCode::SEE_OTHER.into_response();
    let h = resp.headers_mut();
    protect(h, None);
    match HeaderValue::from_str(location) {
        Ok(v) => {
            h.insert(header::LOCATION, v);
            resp
        }
        Err(_) => message(StatusCode::BAD_REQUEST, "Invalid request", "The redirect URI is not valid.").into_response(),
    }
}

/// The human description of a scope on the consent page.
pub fn scope_description(scope: &str) -> &'static str {
    match scope {
        "openid" => "confirm who you are (sign you in)",
        "profile" => "see your name and profile",
        "email" => "see your email address",
        "platform:api" => "call the platform's APIs with your roles",
        _ => "access granted by this scope",
    }
}

/// The consent page's list of scopes.
pub fn scope_list(scopes: &[String]) -> Html {
    if scopes.is_empty() {
        return render(
            SCOPE_ITEM,
            &[("scope", Val::Text("sign-in only")), ("description", Val::Text("know that you signed in"))],
        );
    }
    Html::concat(
        scopes
            .iter()
            .map(|s| render(SCOPE_ITEM, &[("scope", Val::Text(s)), ("description", Val::Text(scope_description(s)))])),
    )
}

/// Errors of a page handler: an HTML error page, never a JSON body or internals.
#[derive(Debug)]
pub struct PageError {
    pub status: StatusCode,
    pub message: String,
}

pub type PageResult<T = Response> = Result<T, PageError>;

impl PageError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        PageError { status: StatusCode::BAD_REQUEST, message: message.into() }
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let heading = match self.status.as_u16() {
            400 => "Invalid request",
            403 => "Forbidden",
            404 => "Not found",
            503 => "Temporarily unavailable",
            _ => "Something went wrong",
        };
        let mut resp = message(self.status, heading, &self.message).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        resp
    }
}

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        PageError { status: e.status, message: e.message }
    }
}

impl From<OAuthError> for PageError {
    fn from(e: OAuthError) -> Self {
        PageError { status: e.status, message: e.description }
    }
}

impl From<idnode_storage::StorageError> for PageError {
    fn from(e: idnode_storage::StorageError) -> Self {
        ApiError::internal(e).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_text_value_is_escaped_markup_is_not() {
        let inner = render("<b>{{x}}</b>", &[("x", Val::Text("<script>alert(1)</script>"))]);
        assert_eq!(inner.as_str(), "<b>&lt;script&gt;alert(1)&lt;/script&gt;</b>");
        let outer = render(
            "<p title=\"{{t}}\">{{inner}}{{missing}}</p>",
            &[("t", Val::Text("\" onmouseover='x' &")), ("inner", Val::Html(&inner))],
        );
        assert_eq!(
            outer.as_str(),
            "<p title=\"&quot; onmouseover=&#39;x&#39; &amp;\"><b>&lt;script&gt;alert(1)&lt;/script&gt;</b></p>"
        );
        // A value that looks like a placeholder is not expanded again.
        assert_eq!(render("{{a}}", &[("a", Val::Text("{{b}}")), ("b", Val::Text("no"))]).as_str(), "{{b}}");
        assert_eq!(render("x {{ unclosed", &[]).as_str(), "x {{ unclosed");
    }

    #[test]
    fn the_csp_hash_is_the_inline_style_and_pages_are_readable_on_phones() {
        let doc = document("t", &Html::default());
        let inline = doc.as_str().split("<style>").nth(1).and_then(|s| s.split("</style>").next()).unwrap();
        let hash = format!("'sha256-{}'", STANDARD.encode(Sha256::digest(inline.as_bytes())));
        assert!(csp(None).contains(&format!("style-src {hash};")), "{}", csp(None));
        assert!(doc.as_str().contains("width=device-width, initial-scale=1"));
        assert!(csp(Some("https://app.example")).contains("form-action 'self' https://app.example;"));
        assert_eq!(origin_of("https://app.example:8443/cb?x=1").as_deref(), Some("https://app.example:8443"));
        assert_eq!(origin_of("not a uri"), None);
    }
}
