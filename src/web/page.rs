//! One page response: the document rendered through the layout, and the headers every page
//! and redirect carries: no caching, no framing, no referrer, no sniffing, and a CSP that
//! allows nothing but the page's inline style and scripts (by their SHA-256 hashes), the
//! scripts' calls to this origin, the domain's logo, and form posts to this origin (plus,
//! where a post ends in a redirect to a client, that client's origin: Chromium applies
//! `form-action` to the redirect after a post).

use std::sync::LazyLock;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use minijinja::{context, Environment, Value};
use sha2::{Digest, Sha256};

use super::brand::Brand;
use super::i18n::Lang;
use super::templates;

/// The style sheet every page inlines (with the domain's accent colour after it).
pub const STYLE: &str = include_str!("pages/style.css");

/// The toolkit's own templates (layout and message page), for messages and error pages.
static SHARED: LazyLock<Environment<'static>> = LazyLock::new(|| templates::environment(&[]));

/// What frames a page besides its own content: language, branding, the scripts it runs.
#[derive(Debug, Clone, Default)]
pub struct Chrome {
    pub lang: Lang,
    pub brand: Brand,
    /// Inline scripts, each allowed by its hash; most pages run none.
    pub scripts: Vec<&'static str>,
    /// A wider main column (tables).
    pub wide: bool,
}

/// A rendered page with its status, cookies and the sources its CSP allows.
pub struct Page {
    pub status: StatusCode,
    html: String,
    style_hash: String,
    script_hashes: Vec<String>,
    img_src: Option<String>,
    /// An origin the page's form posts may end up redirected to.
    pub redirect_origin: Option<String>,
    pub set_cookie: Vec<String>,
}

fn hash(text: &str) -> String {
    format!("'sha256-{}'", STANDARD.encode(Sha256::digest(text.as_bytes())))
}

impl Page {
    /// `template` of `env` with `ctx`, framed by `chrome`. A template that fails to render is
    /// logged and answered with a plain error page.
    pub fn render(env: &Environment<'_>, template: &str, status: StatusCode, chrome: &Chrome, ctx: Value) -> Page {
        let style = format!("{STYLE}{}", chrome.brand.css());
        let scripts: Vec<Value> = chrome.scripts.iter().map(|s| Value::from_safe_string(s.to_string())).collect();
        let full = context! {
            lang => chrome.lang.tag(),
            brand => &chrome.brand,
            style => Value::from_safe_string(style.clone()),
            scripts => scripts,
            wide => chrome.wide,
            ..ctx
        };
        match env.get_template(template).and_then(|t| t.render(full)) {
            Ok(html) => Page {
                status,
                html,
                style_hash: hash(&style),
                script_hashes: chrome.scripts.iter().map(|s| hash(s)).collect(),
                img_src: chrome.brand.logo_url.clone(),
                redirect_origin: None,
                set_cookie: Vec::new(),
            },
            Err(e) => {
                tracing::error!(template, error = %e, "a page did not render");
                Page {
                    status: StatusCode::INTERNAL_SERVER_ERROR,
                    html: "<!DOCTYPE html><title>Error</title><p>Something went wrong.</p>".into(),
                    style_hash: "'none'".into(),
                    script_hashes: Vec::new(),
                    img_src: None,
                    redirect_origin: None,
                    set_cookie: Vec::new(),
                }
            }
        }
    }

    /// The page's `Content-Security-Policy`.
    pub fn csp(&self) -> String {
        let scripts = if self.script_hashes.is_empty() { "'none'".to_string() } else { self.script_hashes.join(" ") };
        let img = self.img_src.as_deref().unwrap_or("'none'");
        let extra = self.redirect_origin.as_ref().map(|o| format!(" {o}")).unwrap_or_default();
        format!(
            "default-src 'none'; style-src {}; script-src {scripts}; connect-src 'self'; img-src {img}; \
             form-action 'self'{extra}; frame-ancestors 'none'; base-uri 'none'",
            self.style_hash
        )
    }

    #[cfg(test)]
    pub fn html(&self) -> &str {
        &self.html
    }
}

/// Headers every page and redirect carries; `csp`: the page's policy.
fn protect(h: &mut HeaderMap, csp: &str) {
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    let policy = HeaderValue::from_str(csp)
        .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"));
    h.insert(header::CONTENT_SECURITY_POLICY, policy);
}

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        let csp = self.csp();
        let mut resp = (self.status, self.html).into_response();
        let h = resp.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        protect(h, &csp);
        for c in self.set_cookie {
            if let Ok(v) = HeaderValue::from_str(&c) {
                h.append(header::SET_COOKIE, v);
            }
        }
        resp
    }
}

/// A page with a heading and one message (errors, "you may return to your device").
pub fn message(status: StatusCode, lang: &Lang, heading: &str, text: &str) -> Page {
    let chrome = Chrome { lang: *lang, ..Chrome::default() };
    Page::render(&SHARED, "message.html", status, &chrome, context! { heading, message => text })
}

/// `303 See Other` to `location`, with `cookies` set; a location that is not a valid header is
/// a 400 page.
pub fn see_other(location: &str, cookies: &[String]) -> Response {
    let mut resp = StatusCode::SEE_OTHER.into_response();
    let h = resp.headers_mut();
    protect(h, "default-src 'none'; frame-ancestors 'none'; base-uri 'none'");
    for c in cookies {
        if let Ok(v) = HeaderValue::from_str(c) {
            h.append(header::SET_COOKIE, v);
        }
    }
    match HeaderValue::from_str(location) {
        Ok(v) => {
            h.insert(header::LOCATION, v);
            resp
        }
        Err(_) => {
            let lang = Lang::default();
            message(
                StatusCode::BAD_REQUEST,
                &lang,
                &lang.text("error-invalid-request"),
                "The redirect URI is not valid.",
            )
            .into_response()
        }
    }
}

/// The origin of a URI (`scheme://host[:port]`), for `form-action`; None when opaque.
pub fn origin_of(uri: &str) -> Option<String> {
    let u = url::Url::parse(uri).ok()?;
    match u.origin() {
        o @ url::Origin::Tuple(..) => Some(o.ascii_serialization()),
        url::Origin::Opaque(_) => None,
    }
}

/// What any page may answer besides its own statuses, as an HTML page: 404 for no such
/// enabled domain, 503 when the cluster cannot answer now (for annotations).
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

#[cfg(test)]
mod tests {
    use super::*;

    fn inline(html: &str, tag: &str) -> Vec<String> {
        html.split(&format!("<{tag}>"))
            .skip(1)
            .filter_map(|s| s.split(&format!("</{tag}>")).next())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_csp_names_exactly_the_inline_style_scripts_and_logo_and_pages_suit_phones() {
        let brand = Brand::from_options(
            r##"{"branding_color": "#112233", "branding_logo_url": "https://cdn.example/l.png", "branding_name": "Acme <b>"}"##,
        );
        let chrome = Chrome { lang: Lang::parse("de"), brand, scripts: vec!["console.log('a<b')"], wide: false };
        let mut page = message(StatusCode::OK, &Lang::default(), "h", "m");
        assert!(page.csp().contains("script-src 'none';"), "{}", page.csp());
        page = Page::render(
            &SHARED,
            "message.html",
            StatusCode::OK,
            &chrome,
            context! { heading => "x", message => "<i>" },
        );
        let html = page.html().to_string();
        let style = &inline(&html, "style")[0];
        assert!(style.ends_with(":root{--brand:#112233}"));
        let csp = page.csp();
        assert!(csp.contains(&format!("style-src {};", hash(style))), "{csp}");
        assert!(csp.contains(&format!("script-src {};", hash(&inline(&html, "script")[0]))), "{csp}");
        assert!(csp.contains("img-src https://cdn.example/l.png;"), "{csp}");
        assert!(html.contains("<html lang=\"de\">") && html.contains("Acme &lt;b&gt;") && html.contains("&lt;i&gt;"));
        assert!(html.contains("width=device-width, initial-scale=1"));
        page.redirect_origin = Some("https://app.example".into());
        assert!(page.csp().contains("form-action 'self' https://app.example;"));
        assert_eq!(origin_of("https://app.example:8443/cb?x=1").as_deref(), Some("https://app.example:8443"));
        assert_eq!(origin_of("not a uri"), None);
    }
}
