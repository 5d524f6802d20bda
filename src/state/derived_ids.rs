//! Users created under the first derivation of user ids (`scim::legacy_derived_user_id`: no
//! provider, no separators) stay reachable under the new one without being re-keyed (their ids
//! are referenced by grants, tokens, memberships and credentials). A replicated migration
//! (`Command::MigrateDerivedUserIds`, applied in bounded batches over the users in id order)
//! writes, for every user the old derivation created, an alias from each id the new derivation
//! gives it to the user's id. Lookups go through [`resolve_derived_user`]: the new id, then its
//! alias. Once the migration has run, the old derivation is never consulted again, so two
//! providers whose subjects collide reach two users (except for a pair that already shared one
//! user before the upgrade: that user keeps both identities, as it had them).
//!
//! Records live in the `scim` column family under their own prefixes (`a/`, `m/`).

use serde::{Deserialize, Serialize};

use super::cf;
use super::model::User;
use super::read::reader::Reader;
use super::scim::{
    derived_user_id, keys as scim_keys, legacy_derived_user_id, DerivedBy, Kind, ScimRealm, ScimResourceIndex,
};

pub mod keys {
    /// New-derivation id → the id of the existing user it reaches.
    pub fn alias(new_id: &str) -> Vec<u8> {
        format!("a/{new_id}").into_bytes()
    }
    /// The migration's progress ([`super::Progress`]).
    pub const PROGRESS: &[u8] = b"m/derived-user-ids";
}

/// How far the migration went: the last user id it looked at, and whether it reached the end.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub after: Option<String>,
    pub done: bool,
}

/// Most users one migration command looks at.
pub const MAX_BATCH: u32 = 1000;

pub fn progress(r: &impl Reader) -> idnode_storage::Result<Progress> {
    Ok(r.get(cf::SCIM, keys::PROGRESS)?.unwrap_or_default())
}

/// The new-derivation ids under which `user`, if the old derivation created it, must stay
/// reachable: each federated identity whose subject derived the user's id (under its identity
/// provider), and, for a SCIM-provisioned user, its realm's (under the realm, and under the
/// realm's identity provider, whose logins met the provisioned user before).
pub fn aliases_for(r: &impl Reader, user: &User) -> idnode_storage::Result<Vec<String>> {
    let mut out = Vec::new();
    let made_by_legacy = |subject: &str| legacy_derived_user_id(&user.domain_id, subject) == user.id;
    for f in &user.federated {
        for p in &f.protocols {
            if made_by_legacy(&p.unique_id) {
                out.push(derived_user_id(DerivedBy::Mapped, &user.domain_id, &f.idp_id, &p.unique_id));
            }
        }
    }
    if let Some(idx) = r.get::<ScimResourceIndex>(cf::SCIM, &scim_keys::index(Kind::User, &user.id))? {
        if let Some(ext) = idx.external_id.as_deref().filter(|e| made_by_legacy(e)) {
            out.push(derived_user_id(DerivedBy::Scim, &idx.domain_id, &idx.provider_id, ext));
            let realm = r.get::<ScimRealm>(cf::SCIM, &scim_keys::realm(&idx.domain_id, &idx.provider_id))?;
            if let Some(realm) = realm {
                out.push(derived_user_id(DerivedBy::Mapped, &idx.domain_id, &realm.idp_id, ext));
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The id of the user identity provider `provider_id` reaches for `subject` in a domain: the
/// new derivation's id if that user exists, else the user its alias names, else (only while
/// the migration has not finished) the old derivation's user if it would get that alias; when
/// none exists, the new derivation's id (the user a first login creates).
pub fn resolve_derived_user(
    r: &impl Reader,
    domain_id: &str,
    provider_id: &str,
    subject: &str,
) -> idnode_storage::Result<String> {
    let new_id = derived_user_id(DerivedBy::Mapped, domain_id, provider_id, subject);
    if r.user(&new_id)?.is_some() {
        return Ok(new_id);
    }
    if let Some(target) = r.get::<String>(cf::SCIM, &keys::alias(&new_id))? {
        if r.user(&target)?.is_some() {
            return Ok(target);
        }
    }
    if !progress(r)?.done {
        // Before the migration reaches this user, find it as the migration will.
        let legacy = legacy_derived_user_id(domain_id, subject);
        if let Some(u) = r.user(&legacy)? {
            if aliases_for(r, &u)?.contains(&new_id) {
                return Ok(legacy);
            }
        }
    }
    Ok(new_id)
}
