//! The device authorization grant's start and browser side (RFC 8628):
//! `POST /device_authorization` hands a device a device code (a bearer secret, stored as a
//! keyed hash) and a short user code; on `GET /device` the user types that code, signs in
//! and approves or denies on the consent page, which always shows (and asks the user to
//! compare) the code: a user code is easy to relay to a victim (RFC 8628 §5.4), so a
//! remembered consent or a pre-authorized client does not skip it here. The decision is
//! replicated (`DecideDevice`); the device learns it by polling `/token`.
//!
//! User codes: 8 characters from `ABCDEFGHJKMNPQRSTUVWXYZ23456789` (A-Z and 0-9 without
//! the look-alikes O 0 I L 1), shown as `XXXX-XXXX`, stored upper case without the dash;
//! typed in any case, with or without the dash.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use utoipa::ToSchema;

use super::authorize::{self as az, get, ConsentForm};
use super::error::{json_no_cache, OAuthError, OAuthResult};
use super::form::OAuthForm;
use super::html::{self, Chrome, Page, PageError, PageResult, PAGES};
use super::issuer::{base_path, issuer};
use super::page_state::{self, Flow};
use super::secrets::{self, keyed_hash, new_secret};
use super::{client_auth, scopes};
use crate::clock::now_secs;
use crate::context::Core;
use crate::state::oauth2::{DeviceGrant, DeviceStatus, OAuth2Command};
use crate::state::read::OAuth2Reads;
use crate::state::{Command, Reader};
use crate::token::Tokens;
use minijinja::context;

/// The characters of user codes, the spec's: A-Z and 0-9 minus the look-alikes O, 0, I and 1
/// (the spec's lowercase l never appears: codes are upper case).
pub const USER_CODE_ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
pub const USER_CODE_LEN: usize = 8;

/// RFC 8628 §3.2 device authorization response.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct DeviceAuthorization {
    /// Bearer secret for polling `/token`; shown only here.
    device_code: String,
    /// For the user to type, `XXXX-XXXX`.
    #[schema(example = "WDJB-MJHT")]
    user_code: String,
    verification_uri: String,
    verification_uri_complete: String,
    /// Seconds.
    expires_in: i64,
    /// Seconds between polls.
    interval: i64,
}

/// The device_authorization form.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct DeviceAuthorizationForm {
    client_id: String,
    /// Confidential clients (or HTTP Basic).
    client_secret: Option<String>,
    scope: Option<String>,
}

/// A fresh user code (normalized), uniformly from the alphabet.
pub fn new_user_code() -> String {
    let n = USER_CODE_ALPHABET.len();
    // Bytes at or above the largest multiple of the alphabet's size are dropped (no bias).
    // (Computed in usize: with 32 characters the limit is 256, every byte.)
    let limit = 256 / n * n;
    let mut out = String::with_capacity(USER_CODE_LEN);
    while out.len() < USER_CODE_LEN {
        for b in idnode_keys::random_bytes::<32>() {
            if (b as usize) < limit && out.len() < USER_CODE_LEN {
                out.push(USER_CODE_ALPHABET[b as usize % n] as char);
            }
        }
    }
    out
}

/// A typed user code normalized (upper case; dashes and spaces dropped), if it can be one: a
/// look-alike outside the alphabet (O, 0, I, 1) is refused, never guessed.
pub fn normalize_user_code(input: &str) -> Option<String> {
    if input.len() > 32 {
        return None;
    }
    let code: String =
        input.chars().filter(|c| *c != '-' && !c.is_whitespace()).collect::<String>().to_ascii_uppercase();
    (code.len() == USER_CODE_LEN && code.bytes().all(|b| USER_CODE_ALPHABET.contains(&b))).then_some(code)
}

/// A normalized user code as shown: `XXXX-XXXX`.
pub fn display_user_code(code: &str) -> String {
    match (code.get(..4), code.get(4..)) {
        (Some(a), Some(b)) if !b.is_empty() => format!("{a}-{b}"),
        _ => code.to_string(),
    }
}

#[utoipa::path(post, path = "/v4/oauth2/{domain_id}/device_authorization", operation_id = "oauth2_device_authorization", tag = "oauth2",
    security(()),
    params(("domain_id" = String, Path, description = "The domain whose provider it is.")),
    request_body(content = DeviceAuthorizationForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Device and user codes (RFC 8628 §3.2); `Cache-Control: no-store`.", body = DeviceAuthorization),
              (status = 400, description = "`invalid_request`, `unauthorized_client` (not registered for the device grant) or `invalid_scope`.", body = super::schemas::OAuthErrorBody),
              (status = 401, description = "`invalid_client`.", body = super::schemas::OAuthErrorBody),
              (status = 404, description = "No such enabled domain.", body = super::schemas::OAuthErrorBody),
              (status = 429, description = "Rate limited (the `[oauth2]` per-source limit of `/token`); see Retry-After.", body = super::schemas::OAuthErrorBody),
              (status = 503, description = "`temporarily_unavailable`.", body = super::schemas::OAuthErrorBody)))]
pub async fn device_authorization(
    State(node): State<Arc<Core>>,
    Path(domain_id): Path<String>,
    headers: HeaderMap,
    form: OAuthForm,
) -> OAuthResult<Response> {
    if !node.engine.read().domain(&domain_id)?.is_some_and(|d| d.enabled) {
        return Err(OAuthError::not_found(format!("Could not find domain: {domain_id}.")));
    }
    let client = client_auth::authenticate(&node, &domain_id, &headers, &form.single)?;
    if !client.allows_grant(scopes::DEVICE_CODE) {
        return Err(OAuthError::unauthorized_client("The client is not registered for the device_code grant."));
    }
    let granted = scopes::granted(&client, form.get("scope"), true)?;
    let lifetime = node.cfg.oauth2.device_code_lifetime_s;
    let interval = node.cfg.oauth2.device_poll_interval_s;
    let mut attempt = 0;
    let (device_code, user_code) = loop {
        let device_code = new_secret();
        let user_code = new_user_code();
        let at = now_secs();
        let grant = DeviceGrant {
            domain_id: domain_id.clone(),
            client_id: client.client_id.clone(),
            scopes: granted.clone(),
            user_code: user_code.clone(),
            expires_at: at + lifetime,
            interval,
            last_poll: None,
            status: DeviceStatus::Pending,
        };
        let hash = keyed_hash(&node, secrets::DEVICE_CODE, &device_code)?;
        match node.propose(Command::OAuth2(OAuth2Command::StartDeviceAt { hash, grant, at })).await {
            Ok(_) => break (device_code, user_code),
            // A user code already pending (about 1 in 10^11 per pending code): draw again.
            Err(e) if e.status == StatusCode::CONFLICT && attempt == 0 => attempt += 1,
            Err(e) => return Err(e.into()),
        }
    };
    let shown = display_user_code(&user_code);
    let verification_uri = format!("{}/device", issuer(&node, &domain_id));
    let complete = format!(
        "{verification_uri}?{}",
        url::form_urlencoded::Serializer::new(String::new()).append_pair("user_code", &shown).finish()
    );
    Ok(json_no_cache(json!({
        "device_code": device_code,
        "user_code": shown,
        "verification_uri": verification_uri,
        "verification_uri_complete": complete,
        "expires_in": lifetime,
        "interval": interval,
    })))
}

/// The pending, unexpired device grant of `domain_id` with this (normalized) user code.
pub(super) fn pending_grant(node: &Core, domain_id: &str, user_code: &str) -> PageResult<Option<DeviceGrant>> {
    let read = node.engine.read();
    let Some(hash) = read.oauth2_device_hash(user_code)? else { return Ok(None) };
    let grant = read.oauth2_device_grant(&hash)?;
    Ok(grant.filter(|g| {
        g.domain_id == domain_id
            && g.user_code == user_code
            && g.status == DeviceStatus::Pending
            && now_secs() < g.expires_at
    }))
}

const UNKNOWN_CODE: &str = "That code is not valid, has expired, or has been used. Check the code your device shows.";

/// The code entry page; `error` after a code that did not work.
fn code_page(node: &Core, domain_id: &str, typed: &str, error: bool, chrome: &Chrome) -> Response {
    let action = format!("{}/device", base_path(node, domain_id));
    let error = error.then(|| chrome.lang.text("unknown-code"));
    let status = if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    let ctx = context! { error, action, user_code => typed };
    Page::render(&PAGES, "device_code.html", status, chrome, ctx).into_response()
}

#[utoipa::path(get, path = "/v4/oauth2/{domain_id}/device", operation_id = "oauth2_device_page", tag = "oauth2",
    security(()),
    params(("domain_id" = String, Path, description = "The domain."),
           ("user_code" = Option<String>, Query, description = "The code the device shows (any case, with or without the dash).")),
    responses((status = 200, description = "The code entry page (no code), or the login page for the code (HTML; sets the CSRF cookie).", content_type = "text/html", body = String),
              (status = 400, description = "The code is unknown, expired or used: the code entry page again (HTML).", content_type = "text/html", body = String),
              super::html::PageUnavailable))]
pub async fn device_page(
    State(node): State<Arc<Tokens>>,
    Path(domain_id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> PageResult {
    az::domain_enabled(&node, &domain_id)?;
    let (p, _) = az::params(query.as_deref().unwrap_or("").as_bytes());
    let chrome = html::chrome(&node, &domain_id, &headers);
    let Some(typed) = get(&p, "user_code") else {
        return Ok(code_page(&node, &domain_id, "", false, &chrome));
    };
    let typed_shown: String = typed.chars().take(16).collect();
    let Some(user_code) = normalize_user_code(typed) else {
        return Ok(code_page(&node, &domain_id, &typed_shown, true, &chrome));
    };
    let Some(grant) = pending_grant(&node, &domain_id, &user_code)? else {
        return Ok(code_page(&node, &domain_id, &typed_shown, true, &chrome));
    };
    let Ok(client) = az::live_client(&node, &domain_id, &grant.client_id, scopes::DEVICE_CODE, None) else {
        return Ok(code_page(&node, &domain_id, &typed_shown, true, &chrome));
    };
    let csrf = page_state::csrf_for(&node, &headers);
    let cookie = page_state::set_cookie(&node, &domain_id, &csrf);
    let sealed = page_state::seal(&node, &page_state::fresh(&domain_id, csrf, Flow::Device { user_code }))?;
    Ok(az::login_page(az::LoginView {
        client_name: &client.name,
        action: format!("{}/device/login", base_path(&node, &domain_id)),
        sealed: &sealed,
        cookie: Some(cookie),
        chrome,
        ..Default::default()
    }))
}

pub(super) fn device_flow(st: &page_state::PageState) -> PageResult<String> {
    match &st.flow {
        Flow::Device { user_code } => Ok(user_code.clone()),
        Flow::Authorize(_) => Err(PageError::bad_request("The form is not valid; start again.")),
    }
}

pub(super) fn code_gone() -> PageError {
    PageError::bad_request(UNKNOWN_CODE)
}

#[utoipa::path(post, path = "/v4/oauth2/{domain_id}/device/consent", operation_id = "oauth2_device_consent", tag = "oauth2",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = ConsentForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Decided: the user may return to the device (HTML).", content_type = "text/html", body = String),
              (status = 400, description = "Expired or altered form, no login, CSRF cookie mismatch, the code is no longer pending, or the user or client is disabled (HTML).", content_type = "text/html", body = String),
              super::html::PageUnavailable))]
pub async fn device_consent(
    State(node): State<Arc<Tokens>>,
    Path(domain_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let (form, st) = az::page_post(&node, &domain_id, &headers, &body)?;
    let user_code = device_flow(&st)?;
    let login = az::signed_in(&st)?;
    let approve = az::decision(&form)?;
    if approve {
        az::still_signed_in(&node, &login)?;
    }
    let grant = pending_grant(&node, &domain_id, &user_code)?.ok_or_else(code_gone)?;
    let consent = match (approve, get(&form, "remember")) {
        (true, Some("on")) => {
            Some(az::remembered_consent(&node, &domain_id, &login.user_id, &grant.client_id, &grant.scopes)?)
        }
        _ => None,
    };
    let cmd = OAuth2Command::DecideDevice {
        domain_id: domain_id.clone(),
        user_code,
        approve: approve.then(|| (login.user_id.clone(), login.auth_time)),
        consent,
        at: now_secs(),
    };
    node.propose(Command::OAuth2(cmd)).await?;
    let lang = html::Lang::of(&headers);
    let (heading, text) =
        if approve { ("device-connected", "device-connected-text") } else { ("device-denied", "device-denied-text") };
    Ok(html::message(StatusCode::OK, &lang, &lang.text(heading), &lang.text(text)).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_codes_use_the_unambiguous_alphabet_and_normalize() {
        let spec: Vec<u8> = (b'A'..=b'Z').chain(b'0'..=b'9').filter(|c| !b"O0I1".contains(c)).collect();
        assert_eq!(USER_CODE_ALPHABET, &spec[..], "A-Z and 0-9 minus O, 0, I, 1");
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..500 {
            let c = new_user_code();
            assert_eq!(c.len(), 8);
            assert!(c.bytes().all(|b| USER_CODE_ALPHABET.contains(&b)), "{c}");
            seen.extend(c.bytes());
            assert_eq!(normalize_user_code(&display_user_code(&c).to_lowercase()), Some(c.clone()));
        }
        // 4,000 draws from 32 characters: every one shows up (a skipped one would be a bias).
        assert_eq!(seen.len(), USER_CODE_ALPHABET.len());
        assert_eq!(display_user_code("WDJBMJHT"), "WDJB-MJHT");
        assert_eq!(normalize_user_code("wdjb-mjht").as_deref(), Some("WDJBMJHT"));
        assert_eq!(normalize_user_code(" WDJB MJHT ").as_deref(), Some("WDJBMJHT"));
        assert_eq!(normalize_user_code("WDJB-MJH"), None, "too short");
        assert_eq!(normalize_user_code("WDJB-MJH0"), None, "0 is not in the alphabet");
        assert_eq!(normalize_user_code("wdjb-mjhl").as_deref(), Some("WDJBMJHL"), "a typed l is the code's L");
        for look_alike in ["WDJB-MJHO", "WDJB-MJHI", "WDJB-MJH1", "wdjb-mjho", "wdjb-mjhi"] {
            assert_eq!(normalize_user_code(look_alike), None, "{look_alike}");
        }
        assert_eq!(normalize_user_code("WDJB_MJHT"), None, "only dashes and spaces are dropped");
        assert_eq!(normalize_user_code("WDJB-MJHTT"), None, "too long");
    }
}
