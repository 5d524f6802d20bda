//! Tokens Keystone issued before the move (issue 52): when a token does not open with the
//! cluster's own key ring and a Keystone fernet key repository was imported
//! (`idnode keys keystone-fernet`), it is read as Keystone's and validated like one of
//! ours: same user, scope, methods, audit ids, issue and expiry times; roles, revocations and
//! the user's cut-off as they are now; a trust's or an application credential's token acts
//! through the imported trust or credential, as ours do; a federated token holds its login's
//! groups' roles, an OAuth1 token its imported access token's.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use idnode_keys::keystone_fernet::{
    method_names, KeystoneDelegation, KeystoneFernetKeys, KeystoneScope, DEFAULT_METHODS,
};

use super::payload::{Delegation, FederatedLogin, Method, TokenPayload, TokenScope, PAYLOAD_VERSION};
use crate::reads::trust::Trust;
use crate::state::model::DocKind;
use crate::state::read::TokenReads;
use crate::state::Reader;

/// idnode's method bit for a Keystone method name; `None` for one idnode does not issue.
fn method_bit(name: &str) -> Option<u8> {
    Some(match name {
        "password" => Method::Password,
        "token" => Method::Token,
        "application_credential" => Method::ApplicationCredential,
        "mapped" => Method::Mapped,
        "totp" => Method::Totp,
        "oauth1" => Method::OAuth1,
        _ => return None,
    } as u8)
}

/// The payload a Keystone token stands for, when the imported keys open it and its kind is
/// read. Keystone's `[auth] methods` (the bit order of its method mask) are the imported ones
/// (`idnode import keystone --auth-methods`), else its defaults; a method idnode does not
/// know leaves the token without validation, except a federated token's protocol, which is
/// its `mapped` method.
pub fn payload(view: &impl Reader, token: &str) -> idnode_storage::Result<Option<TokenPayload>> {
    let Some(keys) = view.keystone_fernet_keys()? else { return Ok(None) };
    let Ok(keys) = KeystoneFernetKeys::new(&keys) else { return Ok(None) };
    let Ok(t) = keys.decode(token) else { return Ok(None) };
    let configured = view.keystone_auth_methods()?;
    let order: Vec<&str> = match &configured {
        Some(m) => m.iter().map(String::as_str).collect(),
        None => DEFAULT_METHODS.to_vec(),
    };
    let protocol = match &t.delegation {
        KeystoneDelegation::Federated(f) => Some(f.protocol_id.as_str()),
        _ => None,
    };
    let mut methods = 0u8;
    for name in method_names(t.methods, &order) {
        match method_bit(&name) {
            Some(bit) => methods |= bit,
            None if Some(name.as_str()) == protocol => methods |= Method::Mapped as u8,
            None => return Ok(None),
        }
    }
    let scope = match t.scope {
        KeystoneScope::Unscoped => TokenScope::Unscoped,
        KeystoneScope::Domain(d) => TokenScope::Domain(d),
        KeystoneScope::Project(p) => TokenScope::Project(p),
        KeystoneScope::System(s) if s == "all" => TokenScope::System,
        KeystoneScope::System(_) => return Ok(None),
    };
    let mut audit_ids = Vec::with_capacity(t.audit_ids.len());
    for a in &t.audit_ids {
        let Some(raw) = URL_SAFE_NO_PAD.decode(a).ok().and_then(|b| <[u8; 16]>::try_from(b).ok()) else {
            return Ok(None);
        };
        audit_ids.push(raw);
    }
    let mut user_id = t.user_id;
    let delegation = match t.delegation {
        KeystoneDelegation::None => Delegation::None,
        KeystoneDelegation::AppCred(id) => Delegation::AppCred(id),
        KeystoneDelegation::Trust(id) => {
            // Keystone's payload names the trustee; an impersonating trust's token acts as the
            // trustor, which is the user idnode's own trust tokens carry.
            if let Some(doc) = view.doc(DocKind::Trust, &id)? {
                if let Ok(trust) = Trust::parse(&doc) {
                    if trust.impersonation && trust.trustee_user_id == user_id {
                        user_id = trust.trustor_user_id;
                    }
                }
            }
            Delegation::Trust(id)
        }
        KeystoneDelegation::Federated(f) => Delegation::Federated(FederatedLogin {
            identity_provider_id: f.identity_provider_id,
            protocol_id: f.protocol_id,
            group_ids: f.group_ids,
        }),
        KeystoneDelegation::OAuth1(id) => Delegation::OAuth1(id),
    };
    Ok(Some(TokenPayload {
        version: PAYLOAD_VERSION,
        user_id,
        methods,
        scope,
        issued_at: t.issued_at.saturating_mul(1_000_000),
        expires_at: t.expires_at,
        audit_ids,
        delegation,
        restriction: None,
        // Judged by its issue time against the user's cut-off, as Keystone judges it.
        user_cutoff: None,
    }))
}

/// 503 until every voter opens idnode tokens carrying a Keystone federated login or an OAuth1
/// access token ([`super::payload::KEYSTONE_DELEGATIONS_VERSION`]): minting one earlier would
/// give a token some members answer 404 for.
pub async fn delegations_allowed(core: &crate::context::Core) -> crate::http::error::ApiResult<()> {
    core.raft.version_gate(super::payload::KEYSTONE_DELEGATIONS_VERSION).await.map_err(|why| {
        crate::http::error::ApiError::unavailable(format!("This request needs an upgraded cluster: {why}"))
    })
}

#[cfg(test)]
#[path = "keystone_tests.rs"]
mod tests;
