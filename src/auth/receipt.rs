//! Auth receipts (Keystone's `[receipt]`): when the methods a user proved meet none of their
//! multi-factor rules, token issue answers 401 with a receipt in `Openstack-Auth-Receipt`; a
//! later request of the same user carrying it counts the receipt's methods as proven. A
//! receipt is sealed under the token key ring with its own derived key and associated data
//! (`token::sealed`), so it opens on every node, cannot be read or altered by its holder, and
//! is never a token (token validation does not open it, nor does this open a token).

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::clock::now_micros;
use crate::http::error::{ApiError, ApiResult};
use crate::state::model::User;
use crate::state::Reader;
use crate::token::render::iso_micros;
use crate::token::sealed::{self, Purpose};
use crate::token::{Method, Tokens};

/// The request and response header (Keystone's `AUTH_RECEIPT_HEADER`).
pub const HEADER: &str = "Openstack-Auth-Receipt";

const PURPOSE: Purpose = Purpose { label: "idnode auth receipt v1", ad: b"idnode-auth-receipt-v1", max_len: 1024 };

/// What a receipt carries.
#[derive(Serialize, Deserialize)]
struct Receipt {
    user_id: String,
    /// `Method` bits proven so far.
    methods: u8,
    /// Unix microseconds.
    issued_at: i64,
    expires_at: i64,
}

/// The methods a receipt in `headers` proved for `user_id` (none without the header). A
/// receipt that does not open, has expired or belongs to another user is Keystone's 401.
pub fn carried_methods(node: &Tokens, headers: &HeaderMap, user_id: &str) -> ApiResult<u8> {
    let Some(value) = headers.get(HEADER) else { return Ok(0) };
    let not_found = || ApiError::unauthorized("Could not find auth receipt.");
    let text = value.to_str().map_err(|_| not_found())?;
    let ring = node.token_ring().map_err(|_| ApiError::unavailable("The cluster is not bootstrapped yet."))?;
    let r: Receipt = sealed::open(&ring, &PURPOSE, text).ok_or_else(not_found)?;
    if r.expires_at <= now_micros() || r.user_id != user_id {
        return Err(not_found());
    }
    Ok(r.methods)
}

/// The method names of `methods` bits, in Keystone's order.
pub fn names(methods: u8) -> Vec<&'static str> {
    Method::ALL.iter().filter(|m| methods & (**m as u8) != 0).map(|m| m.name()).collect()
}

/// The 401 that asks for more methods: a new receipt for what `user` proved (`methods`) and
/// the rules that would complete it (`required`).
pub fn ask_for_more(node: &Tokens, user: &User, methods: u8, required: Vec<Vec<String>>) -> ApiResult<Response> {
    // Keystone's receipt expiry is in whole seconds.
    let issued_at = now_micros();
    let expires_at = (issued_at / 1_000_000 + node.cfg.receipt_expiration_s) * 1_000_000;
    let receipt = Receipt { user_id: user.id.clone(), methods, issued_at, expires_at };
    let ring = node.token_ring().map_err(|_| ApiError::unavailable("The cluster is not bootstrapped yet."))?;
    let sealed = sealed::seal(&ring, &PURPOSE, &receipt).ok_or_else(|| ApiError::internal("no primary token key"))?;
    let domain = node.engine.read().domain(&user.domain_id)?;
    let body = json!({
        "receipt": {
            "methods": names(methods),
            "user": {
                "id": user.id, "name": user.name,
                "domain": {"id": user.domain_id, "name": domain.map(|d| d.name)},
            },
            "expires_at": iso_micros(expires_at),
            "issued_at": iso_micros(issued_at),
        },
        "required_auth_methods": required,
    });
    let mut resp = (StatusCode::UNAUTHORIZED, Json(body)).into_response();
    resp.headers_mut().insert(HEADER, HeaderValue::from_str(&sealed).map_err(ApiError::internal)?);
    Ok(resp)
}
