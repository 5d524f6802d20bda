//! The provider's browser pages (login, consent, device code entry), on the pages' toolkit
//! (`crate::web`): the templates here (`pages/*.html`), the passkey button's script, and the
//! frame of a domain's page (its branding, the browser's language).

use std::sync::LazyLock;

use axum::http::HeaderMap;
use minijinja::Environment;
use serde::Serialize;

use crate::context::Core;
use crate::state::Reader;
pub use crate::web::page::{message, origin_of, PageUnavailable};
pub use crate::web::{see_other, Chrome, Lang, Page, PageError, PageResult};
use crate::web::{templates, Brand};

/// The login page's passkey button: the only script of these pages, allowed by its hash.
pub const PASSKEY_SCRIPT: &str = include_str!("pages/passkey.js");

/// The provider's templates.
pub static PAGES: LazyLock<Environment<'static>> = LazyLock::new(|| {
    templates::environment(&[
        ("login.html", include_str!("pages/login.html")),
        ("consent.html", include_str!("pages/consent.html")),
        ("device_code.html", include_str!("pages/device_code.html")),
    ])
});

/// The frame of a page of `domain_id`'s provider: its branding, the request's language.
pub fn chrome(node: &Core, domain_id: &str, headers: &HeaderMap) -> Chrome {
    let brand = match node.engine.read().project(domain_id) {
        Ok(Some(d)) => Brand::from_options(&d.options),
        _ => Brand::default(),
    };
    Chrome { lang: Lang::of(headers), brand, ..Chrome::default() }
}

/// One line of the consent page's list of scopes.
#[derive(Serialize)]
pub struct ScopeItem {
    name: String,
    description: String,
}

/// The consent page's list of scopes, described in the page's language.
pub fn scope_items(lang: &Lang, scopes: &[String]) -> Vec<ScopeItem> {
    scopes
        .iter()
        .map(|s| {
            let key = match s.as_str() {
                "openid" => "scope-openid",
                "profile" => "scope-profile",
                "email" => "scope-email",
                "platform:api" => "scope-platform-api",
                _ => "scope-other",
            };
            ScopeItem { name: s.clone(), description: lang.text(key) }
        })
        .collect()
}

impl From<super::error::OAuthError> for PageError {
    fn from(e: super::error::OAuthError) -> Self {
        PageError { status: e.status, message: e.description }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use minijinja::context;

    #[test]
    fn the_login_page_escapes_what_the_request_brought_and_allows_only_the_passkey_script() {
        let chrome = Chrome { scripts: vec![PASSKEY_SCRIPT], ..Chrome::default() };
        let page = Page::render(
            &PAGES,
            "login.html",
            StatusCode::OK,
            &chrome,
            context! { client_name => "<script>x</script>", username => "\" autofocus onfocus=\"x", passkey_start => "/s", passkey_action => "/a", page_state => "st", action => "/l", error => "bad" },
        );
        let html = page.html();
        assert!(!html.contains("<script>x"), "{html}");
        assert!(html.contains("&quot; autofocus onfocus=&quot;x"), "{html}");
        assert!(html.contains("data-start=\"/s\"") && html.contains("role=\"alert\">bad<"));
        assert!(page.csp().contains("script-src 'sha256-"), "{}", page.csp());
        for t in ["consent.html", "device_code.html"] {
            let p = Page::render(
                &PAGES,
                t,
                StatusCode::OK,
                &Chrome::default(),
                context! { scopes => scope_items(&Lang::parse("de"), &["openid".into()]) },
            );
            assert_eq!(p.status, StatusCode::OK, "{t}");
        }
    }

    #[test]
    fn scopes_are_described_in_the_page_s_language() {
        let de = scope_items(&Lang::parse("de"), &["email".into(), "x".into()]);
        assert_eq!(de[0].description, "Ihre E-Mail-Adresse sehen");
        assert_eq!(scope_items(&Lang::default(), &["x".into()])[0].description, "access granted by this scope");
    }
}
