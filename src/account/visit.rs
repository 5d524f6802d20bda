//! One request to the account page: the domain it is for (enabled, or 404), the browser's
//! language and the domain's branding, the API to act through, and the session if signed in.
//! Every signed-in page and action starts here; an action's post is checked for its origin
//! and the session's CSRF value before anything is sent to the API.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRef, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use minijinja::{context, Value};
use serde_json::Value as Json;

use super::audit::Note;
use super::session::{self, Session};
use super::templates::{PAGES, SCRIPT};
use crate::state::Reader;
use crate::token::Tokens;
use crate::web::api::{Caller, InProcess, Reply};
use crate::web::{Brand, Chrome, Lang, Page, PageError, PageResult};

pub struct Visit {
    pub node: Arc<Tokens>,
    pub domain_id: String,
    pub headers: HeaderMap,
    pub caller: Caller,
    pub api: InProcess,
    pub chrome: Chrome,
}

impl<S> FromRequestParts<S> for Visit
where
    S: Send + Sync,
    Arc<Tokens>: FromRef<S>,
{
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PageError> {
        let node = Arc::<Tokens>::from_ref(state);
        // `/v4/account/{domain_id}/…`
        let domain_id = parts.uri.path().split('/').nth(3).unwrap_or_default().to_string();
        let domain = node.engine.read().project(&domain_id)?.filter(|d| d.is_domain && d.enabled);
        let Some(domain) = domain else {
            return Err(PageError { status: StatusCode::NOT_FOUND, message: "There is no such account page.".into() });
        };
        let api = parts.extensions.get::<InProcess>().cloned().ok_or_else(|| PageError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: "The account page is not available on this listener.".into(),
        })?;
        let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0);
        let chrome = Chrome {
            lang: Lang::of(&parts.headers),
            brand: Brand::from_options(&domain.options),
            scripts: vec![SCRIPT],
            wide: false,
        };
        Ok(Visit {
            node,
            domain_id,
            caller: Caller::of(&parts.headers, peer),
            headers: parts.headers.clone(),
            api,
            chrome,
        })
    }
}

/// The signed-in pages, in the order of their tabs: id, message key, path.
pub const TABS: &[(&str, &str, &str)] = &[
    ("passkeys", "account-tab-passkeys", "passkeys"),
    ("password", "account-tab-password", "password"),
    ("consents", "account-tab-consents", "consents"),
    ("sessions", "account-tab-sessions", "sessions"),
    ("credentials", "account-tab-credentials", "credentials"),
];

/// What a signed-in page shows after an action: the outcome's message key (`?done=`), known
/// keys only.
const DONE: &[&str] = &[
    "passkey-added",
    "passkey-renamed",
    "passkey-removed",
    "password-changed",
    "consent-revoked",
    "session-ended",
    "sessions-ended",
    "credential-deleted",
];

impl Visit {
    pub fn base(&self) -> String {
        session::base(&self.domain_id)
    }

    pub fn text(&self, key: &str) -> String {
        self.chrome.lang.text(key)
    }

    /// The session, or the sign-in page's address to go to.
    pub fn signed_in(&self) -> Result<Session, Box<Response>> {
        session::open(&self.node, &self.domain_id, &self.headers).ok_or_else(|| Box::new(self.to_sign_in()))
    }

    /// Back to the sign-in page, the session's cookie removed.
    pub fn to_sign_in(&self) -> Response {
        crate::web::see_other(&self.base(), &[session::end(&self.node, &self.domain_id)])
    }

    /// An action's post: the session, its form (checked for origin and CSRF).
    pub fn posted(&self, body: &[u8]) -> Result<(Session, HashMap<String, String>), Box<Response>> {
        let s = self.signed_in()?;
        let form = crate::web::form::parse(body).map_err(|e| Box::new(e.into_response()))?;
        session::posted(&self.node, &s, &self.headers, form.get("csrf").map(String::as_str))
            .map_err(|e| Box::new(e.into_response()))?;
        Ok((s, form))
    }

    /// A call to the API as the signed-in user.
    pub async fn call(&self, s: &Session, method: Method, path: &str, body: Option<&Json>) -> Reply {
        self.api.call(&self.caller, method, path, Some(&s.token), body).await
    }

    /// A page of `template` with the visit's frame.
    pub fn page(&self, template: &str, status: StatusCode, ctx: Value) -> Page {
        let ctx = context! { base => self.base(), ..ctx };
        Page::render(&PAGES, template, status, &self.chrome, ctx)
    }

    /// A signed-in section (`tab`) with `ctx`, an optional error and the `?done=` message.
    pub fn section(
        &self,
        s: &Session,
        tab: &str,
        status: StatusCode,
        error: Option<String>,
        done: Option<&str>,
        ctx: Value,
    ) -> Response {
        let base = self.base();
        let tabs: Vec<Value> = TABS
            .iter()
            .map(|(id, key, path)| {
                context! { id, label => self.text(key), href => format!("{base}/{path}"), current => *id == tab }
            })
            .collect();
        let heading = TABS.iter().find(|(id, ..)| *id == tab).map(|(_, key, _)| self.text(key)).unwrap_or_default();
        let done = done.filter(|d| DONE.contains(d)).map(|d| self.text(&format!("account-done-{d}")));
        let ctx = context! {
            tabs, heading, error, done,
            csrf => &s.csrf,
            user_name => &s.user_name,
            ..ctx
        };
        let mut page = self.page(&format!("{tab}.html"), status, ctx);
        page.status = status;
        page.into_response()
    }

    /// After an action: its audit event, then the section again with the outcome, or (through
    /// `again`, the section's own rendering) with the API's refusal, its status and message.
    pub async fn after<F, Fut>(
        &self,
        s: &Session,
        note: Note<'_>,
        reply: &Reply,
        tab: &str,
        done: &str,
        again: F,
    ) -> Response
    where
        F: FnOnce(StatusCode, String) -> Fut,
        Fut: std::future::Future<Output = Response>,
    {
        note.emit(&self.node, s, reply.ok());
        if reply.status == StatusCode::UNAUTHORIZED {
            return self.to_sign_in();
        }
        if reply.ok() {
            return crate::web::see_other(&format!("{}/{tab}?done={done}", self.base()), &[]);
        }
        again(reply.status, reply.message()).await
    }
}

/// `?done=` of a section's address.
pub fn done_of(query: Option<&str>) -> Option<String> {
    url::form_urlencoded::parse(query.unwrap_or("").as_bytes()).find(|(k, _)| k == "done").map(|(_, v)| v.to_string())
}

/// A time of the API (unix seconds or an ISO 8601 string) as the page shows it.
pub fn when(v: &Json) -> Option<String> {
    let at = match v {
        Json::Number(n) => chrono::DateTime::from_timestamp(n.as_i64()?, 0)?,
        Json::String(s) => chrono::DateTime::parse_from_rfc3339(s).ok()?.with_timezone(&chrono::Utc),
        _ => return None,
    };
    Some(at.format("%Y-%m-%d %H:%M UTC").to_string())
}

pub type Answer = PageResult<Response>;

/// A section's `GET` (documented for the OpenAPI description): the section, with the outcome
/// of the action just taken, or the sign-in page without a session.
macro_rules! section_get {
    ($path:literal, $id:literal, $what:literal) => {
        #[utoipa::path(get, path = $path, operation_id = $id, tag = "account",
            security(()),
            params(("domain_id" = String, Path, description = "The domain."),
                   ("done" = Option<String>, Query, description = "The outcome of the action just taken, to show.")),
            responses((status = 200, description = $what, content_type = "text/html", body = String),
                      (status = 303, description = "Not signed in: to the sign-in page."),
                      crate::web::page::PageUnavailable))]
        pub async fn page(v: super::visit::Visit, query: axum::extract::RawQuery) -> axum::response::Response {
            let s = match v.signed_in() {
                Ok(s) => s,
                Err(to_sign_in) => return *to_sign_in,
            };
            let done = super::visit::done_of(query.0.as_deref());
            show(&v, &s, axum::http::StatusCode::OK, None, done.as_deref()).await
        }
    };
}
pub(crate) use section_get;
