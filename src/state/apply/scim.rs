//! SCIM's invariants (spec "SCIM realm and resource index", the SCIM rows of "States and
//! transitions", Errors item 6): a realm is one per provider coordinate, in an existing
//! domain, naming a registered OIDC identity provider; a realm acts only while enabled and
//! only on the live resources it owns (anything else is not found); `userName`,
//! `displayName` and `externalId` are unique per domain, case-insensitively (409
//! `uniqueness`); a group's members are live users of its realm (400 `invalidValue`); every
//! change moves the resource's `version` on, and `If-Match` compares against it here, in log
//! order, so two writers racing on one version cannot both win (412).

use serde_json::{Map, Value};

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::cutoff::Cutoff;
use super::super::keys::ns as names;
use super::super::model::{Group, User};
use super::super::providers::{keys as provider_keys, ProviderKind};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::super::scim::{
    keys, Expect, GroupFields, Kind, Members, RealmRef, ScimApplied, ScimCommand, ScimRealm, ScimResourceIndex,
    UserFields, MAX_MEMBERS_PER_WRITE,
};
use super::fatal::Fatal;
use super::{group, identity, scim_ownership, user_updated};

pub fn apply(tx: &mut Tx<'_>, cmd: ScimCommand) -> Result<ApplyResult, Fatal> {
    match cmd {
        ScimCommand::PutRealm { realm, create } => put_realm(tx, *realm, create),
        ScimCommand::PutUser { realm, id, fields, expect, at } => put_user(tx, &realm, &id, *fields, expect, at),
        ScimCommand::PutGroup { realm, id, fields, expect, at } => put_group(tx, &realm, &id, *fields, expect, at),
        ScimCommand::Deprovision { realm, kind, id, at } => deprovision(tx, &realm, kind, &id, at),
        ScimCommand::Purge { realm, kind, id, deprovisioned_by } => purge(tx, &realm, kind, &id, deprovisioned_by),
    }
}

fn put_realm(tx: &mut Tx<'_>, mut realm: ScimRealm, create: bool) -> Result<ApplyResult, Fatal> {
    let key = keys::realm(&realm.domain_id, &realm.provider_id);
    let before = tx.get::<ScimRealm>(cf::SCIM, &key)?;
    match (&before, create) {
        (Some(_), true) => {
            return Ok(Err(ApplyError::Conflict(format!(
                "A SCIM realm for provider {} already exists in domain {}.",
                realm.provider_id, realm.domain_id
            ))))
        }
        (None, false) => return Ok(Err(not_found("scim_realm", &realm.provider_id))),
        (Some(old), false) => realm.created_at = old.created_at,
        (None, true) => {}
    }
    if tx.domain(&realm.domain_id)?.is_none() {
        return Ok(Err(not_found("domain", &realm.domain_id)));
    }
    if tx.get_raw(cf::PROVIDERS, &provider_keys::record(ProviderKind::Oidc, &realm.idp_id))?.is_none() {
        return Ok(Err(not_found("identity_provider", &realm.idp_id)));
    }
    tx.put(cf::SCIM, key, &realm)?;
    Ok(Ok(Applied::Scim(ScimApplied::Realm(Box::new(realm)))))
}

/// A refusal carrying its SCIM `scimType` (empty: none).
fn scim(status: u16, scim_type: &str, message: impl Into<String>) -> ApplyError {
    ApplyError::Detailed { status, key: scim_type.to_string(), message: message.into() }
}

fn uniqueness(what: &str, value: &str) -> ApplyError {
    scim(409, "uniqueness", format!("{what} {value:?} is already taken in this domain."))
}

fn gone(kind: Kind, id: &str) -> ApplyError {
    not_found(kind.tag(), id)
}

/// The realm, if it is registered and enabled (403 otherwise, as before any storage access
/// on the request path: a realm disabled while a write was in flight refuses it too).
fn check_realm(tx: &Tx<'_>, realm: &RealmRef) -> Result<Result<(), ApplyError>, Fatal> {
    Ok(match tx.get::<ScimRealm>(cf::SCIM, &keys::realm(&realm.domain_id, &realm.provider_id))? {
        Some(r) if r.enabled => Ok(()),
        _ => Err(ApplyError::Forbidden("The SCIM realm is not registered or is disabled.".into())),
    })
}

/// The live resource `realm` owns, for a change (`Some` version: only at that version).
fn owned(
    tx: &Tx<'_>,
    realm: &RealmRef,
    kind: Kind,
    id: &str,
    if_match: Option<u64>,
) -> Result<Result<ScimResourceIndex, ApplyError>, Fatal> {
    let Some(idx) = tx.get::<ScimResourceIndex>(cf::SCIM, &keys::index(kind, id))?.filter(|i| i.live_in(realm)) else {
        return Ok(Err(gone(kind, id)));
    };
    if if_match.is_some_and(|v| v != idx.version) {
        return Ok(Err(scim(
            412,
            "",
            format!("The resource is at version {}, not the one If-Match names.", idx.version),
        )));
    }
    Ok(Ok(idx))
}

/// Whether `user_id` is a live user of `realm`.
fn realm_user(tx: &Tx<'_>, realm: &RealmRef, user_id: &str) -> Result<bool, Fatal> {
    Ok(tx.get::<ScimResourceIndex>(cf::SCIM, &keys::index(Kind::User, user_id))?.is_some_and(|i| i.live_in(realm)))
}

/// Claims `external_id` for `id` in the domain's index of `kind`, releasing `old`.
fn set_external_id(
    tx: &mut Tx<'_>,
    kind: Kind,
    domain_id: &str,
    id: &str,
    old: Option<&str>,
    new: Option<&str>,
) -> Result<Result<(), ApplyError>, Fatal> {
    let same = |a: &str, b: &str| a.to_lowercase() == b.to_lowercase();
    if let Some(n) = new {
        if old.is_none_or(|o| !same(o, n)) {
            if let Some(holder) = tx.id_by_name(kind.external_ns(), domain_id, n)? {
                if holder != id {
                    return Ok(Err(uniqueness("externalId", n)));
                }
            }
        }
    }
    if let Some(o) = old {
        tx.delete_name(kind.external_ns(), domain_id, o);
    }
    if let Some(n) = new {
        tx.put_name(kind.external_ns(), domain_id, n, id);
    }
    Ok(Ok(()))
}

fn set_extra(extra: &mut Map<String, Value>, key: &str, value: &Option<Option<String>>) {
    match value {
        None => {}
        Some(None) => {
            extra.remove(key);
        }
        Some(Some(v)) => {
            extra.insert(key.into(), Value::String(v.clone()));
        }
    }
}

/// The stored user with `f` written over it (`at`: unix microseconds).
fn merge_user(u: &mut User, f: &UserFields, cut: Cutoff) {
    if let Some(n) = &f.user_name {
        u.name = n.clone();
    }
    if let Some(active) = f.active {
        if !active && u.enabled {
            cut.apply(u);
        }
        u.enabled = active;
    }
    let mut extra: Map<String, Value> = serde_json::from_str(&u.extra).unwrap_or_default();
    set_extra(&mut extra, "scim_given_name", &f.given_name);
    set_extra(&mut extra, "scim_family_name", &f.family_name);
    set_extra(&mut extra, "scim_display_name", &f.display_name);
    set_extra(&mut extra, "scim_primary_email", &f.email);
    match f.email_primary {
        Some(false) => {
            extra.insert("scim_email_primary".into(), Value::Bool(false));
        }
        Some(true) => {
            extra.remove("scim_email_primary");
        }
        None => {}
    }
    u.extra = Value::Object(extra).to_string();
}

fn seconds(at_micros: i64) -> i64 {
    at_micros.div_euclid(1_000_000)
}

fn stored(tx: &mut Tx<'_>, idx: ScimResourceIndex) -> Result<ApplyResult, Fatal> {
    tx.put(cf::SCIM, keys::index(idx.kind, &idx.keystone_id), &idx)?;
    Ok(Ok(Applied::Scim(ScimApplied::Resource(Box::new(idx)))))
}

fn new_index(realm: &RealmRef, kind: Kind, id: &str, external_id: Option<String>, at: i64) -> ScimResourceIndex {
    ScimResourceIndex {
        domain_id: realm.domain_id.clone(),
        provider_id: realm.provider_id.clone(),
        kind,
        keystone_id: id.to_string(),
        external_id,
        version: 1,
        deprovisioned_at: None,
        created_at: seconds(at),
        updated_at: seconds(at),
    }
}

/// The value of a step that may refuse (`Result<Result<T, ApplyError>, Fatal>`); a refusal
/// ends the command with it.
macro_rules! take {
    ($e:expr) => {
        match $e? {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        }
    };
}

/// A step that may refuse, for its effect only.
macro_rules! refuse_on {
    ($e:expr) => {
        let _ = take!($e);
    };
}

fn put_user(
    tx: &mut Tx<'_>,
    realm: &RealmRef,
    id: &str,
    f: UserFields,
    expect: Expect,
    at: i64,
) -> Result<ApplyResult, Fatal> {
    refuse_on!(check_realm(tx, realm));
    let d = &realm.domain_id;
    match expect {
        Expect::Create => {
            let (Some(name), Some(ext)) = (f.user_name.clone(), f.external_id.clone()) else {
                return Ok(Err(scim(400, "invalidValue", "userName and externalId are required.")));
            };
            if tx.user(id)?.is_some() || tx.get_raw(cf::SCIM, &keys::index(Kind::User, id))?.is_some() {
                return Ok(Err(uniqueness("externalId", &ext)));
            }
            if tx.id_by_name(names::USER_NAME, d, &name)?.is_some() {
                return Ok(Err(uniqueness("userName", &name)));
            }
            refuse_on!(set_external_id(tx, Kind::User, d, id, None, Some(&ext)));
            let mut u = User {
                id: id.to_string(),
                name,
                domain_id: d.clone(),
                enabled: true,
                password_hash: None,
                default_project_id: None,
                password_expires_at: None,
                extra: "{}".into(),
                options: "{}".into(),
                created_at: at,
                tokens_valid_after: 0,
                federated: Vec::new(),
            };
            merge_user(&mut u, &f, Cutoff::at(tx, at)?);
            refuse_on!(identity::create(tx, u));
            tx.put(cf::SCIM, keys::owned(d, &realm.provider_id, Kind::User, id), &())?;
            stored(tx, new_index(realm, Kind::User, id, Some(ext), at))
        }
        Expect::Change { if_match } => {
            let mut idx = take!(owned(tx, realm, Kind::User, id, if_match));
            let Some(mut u) = tx.user(id)? else { return Ok(Err(gone(Kind::User, id))) };
            let before = u.clone();
            if let Some(n) = &f.user_name {
                if n.to_lowercase() != u.name.to_lowercase() && tx.id_by_name(names::USER_NAME, d, n)?.is_some() {
                    return Ok(Err(uniqueness("userName", n)));
                }
            }
            if let Some(ext) = &f.external_id {
                refuse_on!(set_external_id(tx, Kind::User, d, id, idx.external_id.as_deref(), Some(ext)));
                idx.external_id = Some(ext.clone());
            }
            merge_user(&mut u, &f, Cutoff::at(tx, at)?);
            let after = take!(identity::update(tx, u));
            if let Applied::User(after) = &after {
                user_updated::record(tx, &before, after, at)?;
            }
            idx.version += 1;
            idx.updated_at = seconds(at);
            stored(tx, idx)
        }
    }
}

fn put_group(
    tx: &mut Tx<'_>,
    realm: &RealmRef,
    id: &str,
    f: GroupFields,
    expect: Expect,
    at: i64,
) -> Result<ApplyResult, Fatal> {
    refuse_on!(check_realm(tx, realm));
    let d = &realm.domain_id;
    let mut idx = match expect {
        Expect::Create => {
            let Some(name) = f.display_name.clone() else {
                return Ok(Err(scim(400, "invalidValue", "displayName is required.")));
            };
            if tx.group(id)?.is_some() || tx.get_raw(cf::SCIM, &keys::index(Kind::Group, id))?.is_some() {
                return Ok(Err(ApplyError::Conflict(format!("A group with id {id} already exists."))));
            }
            if tx.id_by_name(names::GROUP_NAME, d, &name)?.is_some() {
                return Ok(Err(uniqueness("displayName", &name)));
            }
            let ext = f.external_id.clone().flatten();
            refuse_on!(set_external_id(tx, Kind::Group, d, id, None, ext.as_deref()));
            let g = Group { id: id.to_string(), name, domain_id: d.clone(), description: None, extra: "{}".into() };
            refuse_on!(group::create(tx, g));
            tx.put(cf::SCIM, keys::owned(d, &realm.provider_id, Kind::Group, id), &())?;
            let mut idx = new_index(realm, Kind::Group, id, ext, at);
            idx.version = 0;
            idx
        }
        Expect::Change { if_match } => {
            let mut idx = take!(owned(tx, realm, Kind::Group, id, if_match));
            let Some(mut g) = tx.group(id)? else { return Ok(Err(gone(Kind::Group, id))) };
            if let Some(n) = &f.display_name {
                if n.to_lowercase() != g.name.to_lowercase() && tx.id_by_name(names::GROUP_NAME, d, n)?.is_some() {
                    return Ok(Err(uniqueness("displayName", n)));
                }
                g.name = n.clone();
                refuse_on!(group::update(tx, g));
            }
            if let Some(ext) = &f.external_id {
                refuse_on!(set_external_id(tx, Kind::Group, d, id, idx.external_id.as_deref(), ext.as_deref()));
                idx.external_id = ext.clone();
            }
            idx
        }
    };
    refuse_on!(change_members(tx, realm, id, &f.members));
    idx.version += 1;
    idx.updated_at = seconds(at);
    stored(tx, idx)
}

fn change_members(
    tx: &mut Tx<'_>,
    realm: &RealmRef,
    group_id: &str,
    members: &Members,
) -> Result<Result<(), ApplyError>, Fatal> {
    let (add, remove): (Vec<String>, Vec<String>) = match members {
        Members::Keep => return Ok(Ok(())),
        Members::Set(want) => {
            let mut drop = Vec::new();
            for uid in tx.member_user_ids(group_id)? {
                if !want.contains(&uid) && realm_user(tx, realm, &uid)? {
                    drop.push(uid);
                }
            }
            (want.clone(), drop)
        }
        Members::Change { add, remove } => (add.clone(), remove.clone()),
    };
    if add.len() + remove.len() > MAX_MEMBERS_PER_WRITE * 2 {
        return Ok(Err(scim(400, "invalidValue", format!("At most {MAX_MEMBERS_PER_WRITE} members per request."))));
    }
    for uid in add.iter().chain(remove.iter()) {
        if !realm_user(tx, realm, uid)? {
            return Ok(Err(scim(400, "invalidValue", format!("Member {uid:?} is not a user of this SCIM realm."))));
        }
    }
    for uid in &add {
        refuse_on!(group::add_member(tx, group_id, uid));
    }
    for uid in &remove {
        if tx.is_member(group_id, uid)? {
            refuse_on!(group::remove_member(tx, group_id, uid));
        }
    }
    Ok(Ok(()))
}

fn deprovision(tx: &mut Tx<'_>, realm: &RealmRef, kind: Kind, id: &str, at: i64) -> Result<ApplyResult, Fatal> {
    refuse_on!(check_realm(tx, realm));
    let mut idx = take!(owned(tx, realm, kind, id, None));
    match kind {
        Kind::User => {
            let Some(mut u) = tx.user(id)? else { return Ok(Err(gone(kind, id))) };
            let before = u.clone();
            u.enabled = false;
            Cutoff::at(tx, at)?.apply(&mut u);
            tx.put(cf::USERS, u.id.clone().into_bytes(), &u)?;
            user_updated::record(tx, &before, &u, at)?;
        }
        Kind::Group => super::assignment::remove_for_actor(tx, super::super::model::ActorKind::Group, id)?,
    }
    tx.delete(cf::SCIM, keys::owned(&realm.domain_id, &realm.provider_id, kind, id));
    tx.put(cf::SCIM, keys::deprovisioned(kind, id), &seconds(at))?;
    idx.deprovisioned_at = Some(seconds(at));
    idx.version += 1;
    idx.updated_at = seconds(at);
    stored(tx, idx)
}

fn purge(
    tx: &mut Tx<'_>,
    realm: &RealmRef,
    kind: Kind,
    id: &str,
    deprovisioned_by: Option<i64>,
) -> Result<ApplyResult, Fatal> {
    let Some(idx) = tx
        .get::<ScimResourceIndex>(cf::SCIM, &keys::index(kind, id))?
        .filter(|i| i.domain_id == realm.domain_id && i.provider_id == realm.provider_id)
    else {
        return Ok(Err(gone(kind, id)));
    };
    let Some(when) = idx.deprovisioned_at else {
        return Ok(Err(ApplyError::Conflict(format!("The SCIM {} {id} is not deprovisioned.", kind.tag()))));
    };
    if deprovisioned_by.is_some_and(|cut| when > cut) {
        return Ok(Err(ApplyError::Invalid(format!("The SCIM {} {id} is not due for purging yet.", kind.tag()))));
    }
    match kind {
        Kind::User => match tx.user(id)? {
            Some(u) => identity::remove_user(tx, &u)?,
            None => scim_ownership::forget(tx, kind, id)?,
        },
        Kind::Group => match tx.group(id)? {
            Some(g) => group::remove_group(tx, &g)?,
            None => scim_ownership::forget(tx, kind, id)?,
        },
    }
    Ok(Ok(Applied::Scim(ScimApplied::Resource(Box::new(idx)))))
}
