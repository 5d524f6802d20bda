//! The signed-in sections, each shown from what the API answers the user: `GET` of a
//! section, and the same section again after a refused action (with the API's message).

use axum::extract::RawQuery;
use axum::http::StatusCode;
use axum::response::Response;

use super::session::Session;
use super::visit::{done_of, Visit};
use super::{consents, credentials, passkeys, password, sessions};

pub async fn render(
    v: &Visit,
    s: &Session,
    tab: &str,
    status: StatusCode,
    error: Option<String>,
    done: Option<&str>,
) -> Response {
    match tab {
        "password" => password::show(v, s, status, error, done).await,
        "consents" => consents::show(v, s, status, error, done).await,
        "sessions" => sessions::show(v, s, status, error, done).await,
        "credentials" => credentials::show(v, s, status, error, done, None).await,
        _ => passkeys::show(v, s, status, error, done).await,
    }
}

/// `GET` of section `tab`: the section, or the sign-in page without a session.
pub async fn get(v: Visit, tab: &str, query: RawQuery) -> Response {
    let s = match v.signed_in() {
        Ok(s) => s,
        Err(to_sign_in) => return *to_sign_in,
    };
    let done = done_of(query.0.as_deref());
    render(&v, &s, tab, StatusCode::OK, None, done.as_deref()).await
}

/// Documents a section's `GET` for the OpenAPI description.
macro_rules! section_get {
    ($name:ident, $path:literal, $id:literal, $tab:literal, $what:literal) => {
        #[utoipa::path(get, path = $path, operation_id = $id, tag = "account",
            security(()),
            params(("domain_id" = String, Path, description = "The domain."),
                   ("done" = Option<String>, Query, description = "The outcome of the action just taken, to show.")),
            responses((status = 200, description = $what, content_type = "text/html", body = String),
                      (status = 303, description = "Not signed in: to the sign-in page."),
                      crate::web::page::PageUnavailable))]
        pub async fn $name(v: super::visit::Visit, query: axum::extract::RawQuery) -> axum::response::Response {
            super::sections::get(v, $tab, query).await
        }
    };
}
pub(crate) use section_get;
