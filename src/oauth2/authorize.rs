//! `GET /v4/oauth2/{domain_id}/authorize` and its pages: the authorization code flow's
//! browser side (RFC 6749 §4.1, PKCE RFC 7636, OpenID Connect Core §3.1.2).
//!
//! The client and the redirect URI are checked first; while either is in doubt nothing is
//! redirected (an error page, 400), so the endpoint can never be turned into an open
//! redirector. Every later error goes back to the client RFC 6749 §4.1.2.1 style. Then the
//! login page, then the consent page (skipped for a pre-authorized client, or when a
//! remembered consent covers the scopes and `prompt=consent` does not force it), then a
//! code, single use and valid 60 s, replicated with `IssueCode` so any node redeems it.
//! The pending request travels sealed between the pages (`page_state`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use minijinja::context;
use utoipa::ToSchema;

use super::html::{self, Chrome, Page, PageError, PageResult, PAGES, PASSKEY_SCRIPT};
use super::issuer::base_path;
use super::page_state::{self, AuthRequest, Flow, Login, PageState};
use super::secrets::{keyed_hash, new_secret, CODE};
use super::{client_auth, scopes};
use crate::clock::now_secs;
use crate::context::Core;
use crate::passkey::ceremony::RelyingParty;
use crate::state::model::User;
use crate::state::oauth2::{AuthCode, Client, Consent, OAuth2Applied, OAuth2Command};
use crate::state::read::OAuth2Reads;
use crate::state::Reader;
use crate::token::Tokens;

/// Seconds an authorization code is valid.
pub const CODE_LIFETIME_S: i64 = 60;
/// Longest `state` and `nonce` accepted (they travel back in URLs and tokens).
const MAX_STATE: usize = 2048;
const MAX_NONCE: usize = 512;

/// The consent form (`/authorize/consent`, `/device/consent`).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ConsentForm {
    page_state: String,
    /// `approve` or `deny`.
    decision: String,
    /// `on` to remember the decision for the same or fewer scopes.
    remember: Option<String>,
}

/// Query or form parameters, each at most once (RFC 6749 §3.1); the names sent twice.
pub(super) fn params(raw: &[u8]) -> (HashMap<String, String>, Vec<String>) {
    let mut out = HashMap::new();
    let mut repeated = Vec::new();
    for (k, v) in url::form_urlencoded::parse(raw) {
        if out.insert(k.to_string(), v.into_owned()).is_some() && !repeated.contains(&k.to_string()) {
            repeated.push(k.into_owned());
        }
    }
    (out, repeated)
}

/// A page post's form: bounded, each field once (the pages' toolkit's parser).
pub(super) use crate::web::form::parse as page_form;

/// A parameter, empty counting as absent.
pub(super) fn get<'a>(p: &'a HashMap<String, String>, name: &str) -> Option<&'a str> {
    p.get(name).map(String::as_str).filter(|v| !v.is_empty())
}

/// The pages are served only for an existing, enabled domain.
pub(super) fn domain_enabled(node: &Core, domain_id: &str) -> PageResult<()> {
    if node.engine.read().domain(domain_id)?.is_some_and(|d| d.enabled) {
        Ok(())
    } else {
        Err(PageError { status: StatusCode::NOT_FOUND, message: "There is no such sign-in service.".into() })
    }
}

/// `uri` with the response parameters appended to its query (RFC 6749 §4.1.2).
pub fn redirect_with(uri: &str, pairs: &[(&str, Option<&str>)]) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        if let Some(v) = v {
            q.append_pair(k, v);
        }
    }
    let q = q.finish();
    let sep = match uri.find('?') {
        None => "?",
        Some(_) if uri.ends_with('?') || uri.ends_with('&') => "",
        Some(_) => "&",
    };
    format!("{uri}{sep}{q}")
}

/// The client of a pending request, still enabled, registered for `grant` and (with
/// `redirect_uri`) still registered for that URI: it may have changed between pages.
pub(super) fn live_client(
    node: &Core,
    domain_id: &str,
    client_id: &str,
    grant: &str,
    redirect_uri: Option<&str>,
) -> PageResult<Client> {
    let client = client_auth::load(node, domain_id, client_id)?
        .filter(|c| c.enabled && c.allows_grant(grant))
        .filter(|c| redirect_uri.is_none_or(|u| c.redirect_uris.iter().any(|r| r == u)));
    client.ok_or_else(|| PageError::bad_request("The application is unknown, disabled, or not allowed to do this."))
}

/// What the login page shows.
#[derive(Default)]
pub(super) struct LoginView<'a> {
    pub client_name: &'a str,
    /// Where the password form posts.
    pub action: String,
    pub sealed: &'a str,
    pub username: &'a str,
    /// Set when the last attempt failed.
    pub error: Option<&'a str>,
    pub redirect_origin: Option<String>,
    pub cookie: Option<String>,
    /// The passkey sign-in's endpoints (`…/authorize/passkey`), when the flow offers it.
    pub passkey: Option<String>,
    pub chrome: Chrome,
}

pub(super) fn login_page(v: LoginView<'_>) -> Response {
    let mut chrome = v.chrome;
    if v.passkey.is_some() {
        chrome.scripts.push(PASSKEY_SCRIPT);
    }
    let ctx = context! {
        client_name => v.client_name,
        error => v.error,
        action => v.action,
        page_state => v.sealed,
        username => v.username,
        passkey_start => v.passkey.as_ref().map(|base| format!("{base}/start")),
        passkey_action => v.passkey,
    };
    let mut page = Page::render(&PAGES, "login.html", StatusCode::OK, &chrome, ctx);
    page.redirect_origin = v.redirect_origin;
    page.set_cookie = v.cookie.into_iter().collect();
    page.into_response()
}

/// The passkey endpoints of the authorization flow's login page, when passkeys are on.
pub(super) fn passkey_base(node: &Core, passkeys: &RelyingParty, domain_id: &str) -> Option<String> {
    passkeys.disabled().is_none().then(|| format!("{}/authorize/passkey", base_path(node, domain_id)))
}

/// The consent page; `user_code`: the device flow's code, shown for the user to compare.
pub(super) struct ConsentView<'a> {
    pub client_name: &'a str,
    pub user_name: &'a str,
    pub scopes: &'a [String],
    pub action: &'a str,
    pub sealed: &'a str,
    pub user_code: Option<&'a str>,
    pub redirect_origin: Option<String>,
}

pub(super) fn consent_page(v: ConsentView<'_>, chrome: &Chrome) -> Response {
    let ctx = context! {
        client_name => v.client_name,
        user_name => v.user_name,
        scopes => html::scope_items(&chrome.lang, v.scopes),
        user_code => v.user_code,
        action => v.action,
        page_state => v.sealed,
    };
    let mut page = Page::render(&PAGES, "consent.html", StatusCode::OK, chrome, ctx);
    page.redirect_origin = v.redirect_origin;
    page.into_response()
}

/// The consent to remember with an approval: the scopes approved now plus those remembered
/// before (a narrower request never shrinks what the user granted).
pub(super) fn remembered_consent(
    node: &Core,
    domain_id: &str,
    user_id: &str,
    client_id: &str,
    scopes: &[String],
) -> PageResult<Consent> {
    let at = now_secs();
    let mut all: Vec<String> = node
        .engine
        .read()
        .oauth2_consent(user_id, client_id)?
        .filter(|c| c.domain_id == domain_id)
        .map(|c| c.scopes)
        .unwrap_or_default();
    for s in scopes {
        if !all.contains(s) {
            all.push(s.clone());
        }
    }
    Ok(Consent {
        user_id: user_id.to_string(),
        domain_id: domain_id.to_string(),
        client_id: client_id.to_string(),
        scopes: all,
        granted_at: at,
        updated_at: at,
    })
}

/// Whether a remembered consent covers `scopes`.
fn consent_covers(node: &Core, domain_id: &str, user_id: &str, client_id: &str, scopes: &[String]) -> PageResult<bool> {
    let c = node.engine.read().oauth2_consent(user_id, client_id)?;
    Ok(c.is_some_and(|c| c.domain_id == domain_id && scopes.iter().all(|s| c.scopes.contains(s))))
}

fn valid_challenge(c: &str) -> bool {
    c.len() == 43 && c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Refuses a sign-in that a password change or a disable ended since (a signed-in page stays
/// usable for minutes): the user signs in again.
pub(super) fn still_signed_in(node: &Core, login: &Login) -> PageResult<()> {
    let ended = node
        .engine
        .read()
        .user(&login.user_id)?
        .is_some_and(|u| super::cutoff::sign_in_cut_off(&u, login.auth_time, Some(login.cutoff_us)));
    if ended {
        return Err(PageError::bad_request(
            "Your password changed or your account was disabled after you signed in; start again from the application.",
        ));
    }
    Ok(())
}

/// The request of `GET /authorize`, validated: the client and redirect URI (errors are
/// pages), then the rest (errors are redirects to the client).
fn validate(node: &Core, domain_id: &str, raw_query: &str) -> PageResult<Result<(AuthRequest, Client), Response>> {
    let (p, repeated) = params(raw_query.as_bytes());
    if repeated.iter().any(|n| n == "client_id" || n == "redirect_uri") {
        return Err(PageError::bad_request("client_id and redirect_uri may be given only once."));
    }
    let client_id =
        get(&p, "client_id").ok_or_else(|| PageError::bad_request("The client_id parameter is missing."))?;
    let client = client_auth::load(node, domain_id, client_id)?
        .filter(|c| c.enabled && c.allows_grant(scopes::AUTHORIZATION_CODE))
        .ok_or_else(|| {
            PageError::bad_request("The application is unknown, disabled, or not registered for this flow.")
        })?;
    let redirect_uri = match get(&p, "redirect_uri") {
        Some(u) if client.redirect_uris.iter().any(|r| r == u) => u.to_string(),
        Some(_) => return Err(PageError::bad_request("The redirect_uri is not registered for this application.")),
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => return Err(PageError::bad_request("The redirect_uri parameter is missing.")),
    };
    // From here on, errors go back to the client.
    let state = get(&p, "state").filter(|s| s.len() <= MAX_STATE);
    let fail = |error: &str, description: &str| {
        html::see_other(
            &redirect_with(
                &redirect_uri,
                &[("error", Some(error)), ("error_description", Some(description)), ("state", state)],
            ),
            &[],
        )
    };
    if let Some(name) = repeated.first() {
        return Ok(Err(fail("invalid_request", &format!("The parameter {name} is included more than once."))));
    }
    if p.get("state").is_some_and(|s| s.len() > MAX_STATE) {
        return Ok(Err(fail("invalid_request", "The state parameter is too long.")));
    }
    match get(&p, "response_type") {
        Some("code") => {}
        None => return Ok(Err(fail("invalid_request", "The response_type parameter is missing."))),
        Some(_) => return Ok(Err(fail("unsupported_response_type", "Only response_type=code is supported."))),
    }
    let granted = match scopes::granted(&client, get(&p, "scope"), true) {
        Ok(s) => s,
        Err(e) => return Ok(Err(fail("invalid_scope", &e.description))),
    };
    let method = get(&p, "code_challenge_method");
    let challenge = get(&p, "code_challenge");
    if method.is_some_and(|m| m != "S256") {
        return Ok(Err(fail("invalid_request", "Only code_challenge_method=S256 is supported.")));
    }
    match (challenge, method) {
        (Some(_), None) => {
            return Ok(Err(fail("invalid_request", "code_challenge_method=S256 is required with code_challenge.")))
        }
        (Some(c), Some(_)) if !valid_challenge(c) => {
            return Ok(Err(fail("invalid_request", "The code_challenge must be 43 base64url characters (S256).")))
        }
        (None, Some(_)) => return Ok(Err(fail("invalid_request", "The code_challenge parameter is missing."))),
        (None, None) if !client.confidential || client.require_pkce => {
            return Ok(Err(fail(
                "invalid_request",
                "PKCE is required: send code_challenge with code_challenge_method=S256.",
            )))
        }
        _ => {}
    }
    let nonce = get(&p, "nonce");
    if nonce.is_some_and(|n| n.len() > MAX_NONCE) {
        return Ok(Err(fail("invalid_request", "The nonce parameter is too long.")));
    }
    let prompts: Vec<&str> =
        get(&p, "prompt").map(|s| s.split(' ').filter(|s| !s.is_empty()).collect()).unwrap_or_default();
    if prompts.contains(&"none") {
        // No sessions here: every authorization needs the login page.
        return Ok(Err(fail("login_required", "The user must sign in.")));
    }
    Ok(Ok((
        AuthRequest {
            client_id: client.client_id.clone(),
            redirect_uri,
            scopes: granted,
            state: state.map(str::to_string),
            code_challenge: challenge.map(str::to_string),
            nonce: nonce.map(str::to_string),
            force_consent: prompts.contains(&"consent"),
        },
        client,
    )))
}

#[utoipa::path(get, path = "/v4/oauth2/{domain_id}/authorize", operation_id = "oauth2_authorize", tag = "oauth2",
    security(()),
    params(("domain_id" = String, Path, description = "The domain whose provider it is."), ("response_type" = String, Query, description = "`code`."),
           ("client_id" = String, Query, description = "The client."),
           ("redirect_uri" = Option<String>, Query, description = "One of the client's registered redirect URIs (optional when it has exactly one)."),
           ("scope" = Option<String>, Query, description = "Space-separated scopes (`openid`, `profile`, `email`); default: the client's allowed scopes without `platform:api`."),
           ("state" = Option<String>, Query, description = "Echoed back to the client."),
           ("code_challenge" = Option<String>, Query, description = "PKCE S256 challenge (43 base64url characters); required for public clients and clients registered with require_pkce."),
           ("code_challenge_method" = Option<String>, Query, description = "`S256`."),
           ("nonce" = Option<String>, Query, description = "Echoed in the id_token."),
           ("prompt" = Option<String>, Query, description = "`consent` forces the consent page; `none` answers `login_required`.")),
    responses((status = 200, description = "The login page (HTML); sets the CSRF cookie.", content_type = "text/html", body = String),
              (status = 303, description = "A request error, RFC 6749 §4.1.2.1 style, to the redirect URI (`error`, `error_description`, `state`)."),
              (status = 400, description = "Unknown or disabled client, or a redirect URI that is not registered (an HTML page; never a redirect).", content_type = "text/html", body = String),
              super::html::PageUnavailable))]
pub async fn authorize(
    State(node): State<Arc<Tokens>>,
    State(passkeys): State<Arc<RelyingParty>>,
    Path(domain_id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> PageResult {
    domain_enabled(&node, &domain_id)?;
    let (req, client) = match validate(&node, &domain_id, query.as_deref().unwrap_or(""))? {
        Ok(v) => v,
        Err(redirect) => return Ok(redirect),
    };
    let origin = html::origin_of(&req.redirect_uri);
    let csrf = page_state::csrf_for(&node, &headers);
    let cookie = page_state::set_cookie(&node, &domain_id, &csrf);
    let sealed = page_state::seal(&node, &page_state::fresh(&domain_id, csrf, Flow::Authorize(req)))?;
    Ok(login_page(LoginView {
        client_name: &client.name,
        action: format!("{}/authorize/login", base_path(&node, &domain_id)),
        sealed: &sealed,
        redirect_origin: origin,
        cookie: Some(cookie),
        passkey: passkey_base(&node, &passkeys, &domain_id),
        chrome: html::chrome(&node, &domain_id, &headers),
        ..Default::default()
    }))
}

/// The login page again after a failed attempt.
#[allow(clippy::too_many_arguments)]
pub(super) fn login_again(
    node: &Core,
    passkeys: &RelyingParty,
    domain_id: &str,
    client: &Client,
    req: &AuthRequest,
    sealed: Option<&str>,
    username: Option<&str>,
    error: &str,
    chrome: Chrome,
) -> Response {
    login_page(LoginView {
        client_name: &client.name,
        action: format!("{}/authorize/login", base_path(node, domain_id)),
        sealed: sealed.unwrap_or_default(),
        username: username.unwrap_or_default(),
        error: Some(error),
        redirect_origin: html::origin_of(&req.redirect_uri),
        cookie: None,
        passkey: passkey_base(node, passkeys, domain_id),
        chrome,
    })
}

/// After a sign-in (password or passkey): the consent page, or the code when no consent is
/// needed.
pub(super) async fn signed_in_as(
    node: &Tokens,
    domain_id: &str,
    mut st: PageState,
    req: &AuthRequest,
    client: &Client,
    user: &User,
    chrome: &Chrome,
) -> PageResult {
    let at = now_secs();
    let login = Login { user_id: user.id.clone(), auth_time: at, cutoff_us: user.tokens_valid_after };
    st.login = Some(login.clone());
    st.exp = at + page_state::LIFETIME_S;
    let skip = client.pre_authorized
        || (!req.force_consent && consent_covers(node, domain_id, &user.id, &client.client_id, &req.scopes)?);
    if skip {
        return issue(node, domain_id, req, &login, None).await;
    }
    let action = format!("{}/authorize/consent", base_path(node, domain_id));
    let sealed = page_state::seal(node, &st)?;
    let view = ConsentView {
        client_name: &client.name,
        user_name: &user.name,
        scopes: &req.scopes,
        action: &action,
        sealed: &sealed,
        user_code: None,
        redirect_origin: html::origin_of(&req.redirect_uri),
    };
    Ok(consent_page(view, chrome))
}

/// A consent post's decision.
pub(super) fn decision(form: &HashMap<String, String>) -> PageResult<bool> {
    match get(form, "decision") {
        Some("approve") => Ok(true),
        Some("deny") => Ok(false),
        _ => Err(PageError::bad_request("Choose Allow or Deny.")),
    }
}

/// The signed-in state of a consent post.
pub(super) fn signed_in(st: &PageState) -> PageResult<Login> {
    st.login.clone().ok_or_else(|| PageError::bad_request("Sign in first; start again from the application."))
}

/// The authorization request a page post carries (not a device flow's).
fn authorize_flow(st: &PageState) -> PageResult<AuthRequest> {
    match &st.flow {
        Flow::Authorize(req) => Ok(req.clone()),
        Flow::Device { .. } => Err(PageError::bad_request("The form is not valid; start again from the application.")),
    }
}

/// A page's form post: the domain enabled, the form, and the page state it carries (sealed,
/// unexpired, its CSRF cookie matched).
pub(super) fn page_post(
    node: &Tokens,
    domain_id: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> PageResult<(HashMap<String, String>, PageState)> {
    domain_enabled(node, domain_id)?;
    let form = page_form(body)?;
    let st = page_state::open(node, domain_id, get(&form, "page_state"), headers)?;
    Ok((form, st))
}

/// The open authorization request a sign-in form (password or passkey) posts, before anyone
/// signed in, and its client, still live for it.
pub(super) fn pending_sign_in(node: &Core, domain_id: &str, st: &PageState) -> PageResult<(AuthRequest, Client)> {
    let req = authorize_flow(st)?;
    if st.login.is_some() {
        return Err(PageError::bad_request("You are signed in already; start again from the application."));
    }
    let client = live_client(node, domain_id, &req.client_id, scopes::AUTHORIZATION_CODE, Some(&req.redirect_uri))?;
    Ok((req, client))
}

#[utoipa::path(post, path = "/v4/oauth2/{domain_id}/authorize/consent", operation_id = "oauth2_authorize_consent", tag = "oauth2",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = ConsentForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 303, description = "To the redirect URI: with `code` and `state` on approval, `error=access_denied` on denial."),
              (status = 400, description = "Expired or altered form, no login, CSRF cookie mismatch, or the user or client is disabled (HTML).", content_type = "text/html", body = String),
              super::html::PageUnavailable))]
pub async fn authorize_consent(
    State(node): State<Arc<Tokens>>,
    Path(domain_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let (form, st) = page_post(&node, &domain_id, &headers, &body)?;
    let req = &authorize_flow(&st)?;
    let login = signed_in(&st)?;
    live_client(&node, &domain_id, &req.client_id, scopes::AUTHORIZATION_CODE, Some(&req.redirect_uri))?;
    if !decision(&form)? {
        return Ok(html::see_other(
            &redirect_with(
                &req.redirect_uri,
                &[
                    ("error", Some("access_denied")),
                    ("error_description", Some("The user denied the request.")),
                    ("state", req.state.as_deref()),
                ],
            ),
            &[],
        ));
    }
    let consent = match get(&form, "remember") {
        Some("on") => Some(remembered_consent(&node, &domain_id, &login.user_id, &req.client_id, &req.scopes)?),
        _ => None,
    };
    issue(&node, &domain_id, req, &login, consent).await
}

/// Draws a code for an approved request, replicates it (with the consent to remember) and
/// sends the browser back to the client with it.
async fn issue(node: &Core, domain_id: &str, req: &AuthRequest, login: &Login, consent: Option<Consent>) -> PageResult {
    still_signed_in(node, login)?;
    let mut attempt = 0;
    loop {
        // The token endpoint checks the cut-off in the code again when it is redeemed.
        let code = super::cutoff::new_code(login.cutoff_us, &new_secret());
        let hash = keyed_hash(node, CODE, &code)?;
        let record = AuthCode {
            domain_id: domain_id.to_string(),
            client_id: req.client_id.clone(),
            user_id: login.user_id.clone(),
            redirect_uri: req.redirect_uri.clone(),
            scopes: req.scopes.clone(),
            code_challenge: req.code_challenge.clone(),
            nonce: req.nonce.clone(),
            auth_time: login.auth_time,
            expires_at: now_secs() + CODE_LIFETIME_S,
            redeemed: None,
        };
        let cmd = OAuth2Command::IssueCode { hash, code: record, consent: consent.clone() };
        // The client may redeem the code at any node the moment it has it.
        match super::propose::propose_everywhere::<OAuth2Applied>(node, cmd).await {
            Ok(_) => {
                return Ok(html::see_other(
                    &redirect_with(&req.redirect_uri, &[("code", Some(&code)), ("state", req.state.as_deref())]),
                    &[],
                ))
            }
            // A hash collision of 256-bit codes: practically never; draw again once.
            Err(e) if e.status == StatusCode::CONFLICT && attempt == 0 => attempt += 1,
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_parameters_are_appended_and_encoded() {
        assert_eq!(
            redirect_with("https://a.example/cb", &[("code", Some("x y")), ("state", None)]),
            "https://a.example/cb?code=x+y"
        );
        assert_eq!(
            redirect_with("https://a.example/cb?k=v", &[("error", Some("access_denied")), ("state", Some("s&t"))]),
            "https://a.example/cb?k=v&error=access_denied&state=s%26t"
        );
        assert_eq!(redirect_with("https://a.example/cb?", &[("code", Some("c"))]), "https://a.example/cb?code=c");
    }

    #[test]
    fn params_report_repeated_names_and_challenges_are_checked() {
        let (p, rep) = params(b"a=1&b=2&a=3&a=4");
        assert_eq!(p.get("b").map(String::as_str), Some("2"));
        assert_eq!(rep, vec!["a".to_string()]);
        assert!(page_form(b"x=1&x=2").is_err());
        assert!(valid_challenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        assert!(!valid_challenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw+cM"));
        assert!(!valid_challenge("short"));
    }
}
