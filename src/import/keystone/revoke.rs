//! Keystone's revocation events (`revocation_event`): a token revoked there stays revoked here.
//!
//! An event naming an audit id becomes a revoked audit id. An event naming only a user (a
//! password change, a disabled or deleted user) becomes that user's token cut-off: tokens
//! issued up to its `issued_before` stop validating, as in Keystone. Events naming a project,
//! role, domain, trust or OAuth1 consumer are not needed: idnode judges every token against the
//! current state of those records, so such a token loses what the event took away.

use std::collections::HashMap;

use super::db::Db;
use super::source::Source;
use crate::state::import::ImportRecord;
use crate::state::model::Revocation;

/// Keystone's `[token] allow_expired_window` (2 days): a revoked token's record is kept that
/// long past its expiry, while `allow_expired` could still show it.
const ALLOW_EXPIRED_WINDOW_US: i64 = 2 * 24 * 3600 * 1_000_000;

/// Pushes the audit-id revocations and answers each user's cut-off (unix microseconds).
pub async fn read(db: &Db, src: &mut Source) -> anyhow::Result<HashMap<String, i64>> {
    let cols = [
        "domain_id",
        "project_id",
        "user_id",
        "role_id",
        "trust_id",
        "consumer_id",
        "access_token_id",
        "issued_before",
        "expires_at",
        "revoked_at",
        "audit_id",
        "audit_chain_id",
    ];
    let mut cutoffs: HashMap<String, i64> = HashMap::new();
    for r in db.rows("revocation_event", &cols, "ORDER BY `id`").await? {
        let revoked_at = r.micros("revoked_at").unwrap_or(0);
        let issued_before = r.micros("issued_before").unwrap_or(revoked_at);
        let others = ["domain_id", "project_id", "role_id", "trust_id", "consumer_id", "access_token_id"];
        let named: Vec<&str> = others.iter().copied().filter(|c| r.opt(c).is_some()).collect();
        if let Some(audit_id) = r.opt("audit_id").or(r.opt("audit_chain_id")) {
            // Keystone keeps the event until the token's expiry; a token's own expiry is the
            // latest it could validate, plus the window.
            let expires_at = r.micros("expires_at").unwrap_or(issued_before + 24 * 3600 * 1_000_000);
            let revocation = Revocation { expires_at: expires_at + ALLOW_EXPIRED_WINDOW_US, revoked_at };
            src.push(ImportRecord::Revocation { audit_id: audit_id.to_string(), revocation });
        } else if let (Some(user), true) = (r.opt("user_id"), named.is_empty()) {
            let cutoff = cutoffs.entry(user.to_string()).or_default();
            *cutoff = (*cutoff).max(issued_before + 1);
        } else {
            let label = format!("{} at {}", named.join(", "), r.text("revoked_at"));
            src.skip(
                "revocation events",
                label,
                "idnode judges tokens against the current projects, roles, domains and trusts, which this event \
                 reflects",
            );
        }
    }
    Ok(cutoffs)
}
