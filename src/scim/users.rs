//! `/SCIM/v2/{domain_id}/Users` (spec "SCIM user attribute mapping", api-shapes §11.2): a
//! SCIM user is a non-local user of the realm's domain (no password). `id` is derived from
//! `externalId` (`state::scim::derived_user_id`), `userName` is the user's name (unique in the
//! domain, case-insensitively), `active` its `enabled`; `name`, `displayName` and the primary
//! email sit in `extra` under `scim_*` keys. Only one email is kept: the primary one, else the
//! first.

use serde_json::{json, Map, Value};

use super::patch::{self, OpKind};
use super::resource::{self, meta, Record, Resource};
use super::values::{boolean, require_schema, text};
use super::wire::{ScimError, ScimResult, USER_URN};
use super::{filter, schemas as S};
use crate::state::keys::ns;
use crate::state::model::User;
use crate::state::read::IdentityReads;
use crate::state::scim::{derived_user_id, DerivedBy, Expect, RealmRef, ScimCommand, ScimResourceIndex, UserFields};
use crate::state::Reader;

pub struct UserResource;

/// The primary email (else the first) of an `emails` value, and whether it was flagged
/// primary.
fn primary_email(v: &Value) -> ScimResult<(Option<String>, bool)> {
    let list = match v {
        Value::Null => return Ok((None, true)),
        Value::Array(l) => l,
        _ => return Err(ScimError::bad("invalidValue", "emails takes a list of {value, primary}.")),
    };
    let chosen = list.iter().find(|e| e["primary"] == json!(true)).or_else(|| list.first());
    match chosen {
        None => Ok((None, true)),
        Some(e) => Ok((text("emails.value", &e["value"], true)?, e["primary"] == json!(true))),
    }
}

/// Every attribute of a POST or PUT body (absent optional ones clear; `active` defaults to
/// true). `externalId` is required on create; a PUT without it keeps the stored one.
fn body_fields(body: &Value, create: bool) -> ScimResult<UserFields> {
    require_schema(body, USER_URN)?;
    let external_id = match (&body["externalId"], create) {
        (Value::Null, false) => None,
        (v, _) => text("externalId", v, true)?,
    };
    let active = match &body["active"] {
        Value::Null => true,
        v => boolean("active", v)?,
    };
    let (email, email_primary) = primary_email(&body["emails"])?;
    Ok(UserFields {
        user_name: text("userName", &body["userName"], true)?,
        external_id,
        active: Some(active),
        given_name: Some(text("name.givenName", &body["name"]["givenName"], false)?),
        family_name: Some(text("name.familyName", &body["name"]["familyName"], false)?),
        display_name: Some(text("displayName", &body["displayName"], false)?),
        email: Some(email),
        email_primary: Some(email_primary),
    })
}

/// One attribute a PATCH names (path lower-cased) set to `v` (`None`: removed).
fn patch_one(f: &mut UserFields, path: &str, v: Option<&Value>) -> ScimResult<()> {
    let required = |name: &str| ScimError::bad("invalidValue", format!("{name} is required and cannot be removed."));
    match path {
        "username" => {
            f.user_name = Some(text("userName", v.ok_or_else(|| required("userName"))?, true)?.unwrap_or_default())
        }
        "externalid" => f.external_id = text("externalId", v.ok_or_else(|| required("externalId"))?, true)?,
        "active" => f.active = Some(boolean("active", v.ok_or_else(|| required("active"))?)?),
        "displayname" => f.display_name = Some(text("displayName", v.unwrap_or(&Value::Null), false)?),
        "name.givenname" => f.given_name = Some(text("name.givenName", v.unwrap_or(&Value::Null), false)?),
        "name.familyname" => f.family_name = Some(text("name.familyName", v.unwrap_or(&Value::Null), false)?),
        other => return Err(patch::refused_path(other)),
    }
    Ok(())
}

/// The fields a PATCH's operations set, in order. A value-object operation (no path) names
/// attributes by key; `name` there is the object of `givenName` and `familyName`.
pub fn patch_fields(ops: &[patch::Op]) -> ScimResult<UserFields> {
    let mut f = UserFields::default();
    for op in ops {
        match (&op.path, op.kind) {
            (Some(p), OpKind::Remove) => patch_one(&mut f, p, None)?,
            (Some(p), _) => patch_one(&mut f, p, op.value.as_ref())?,
            (None, _) => {
                let Some(Value::Object(attrs)) = &op.value else { continue };
                for (k, v) in attrs {
                    match k.to_ascii_lowercase().as_str() {
                        "schemas" => {}
                        "name" => match v {
                            Value::Object(parts) => {
                                for (pk, pv) in parts {
                                    patch_one(&mut f, &format!("name.{}", pk.to_ascii_lowercase()), Some(pv))?;
                                }
                            }
                            _ => return Err(ScimError::bad("invalidValue", "name takes an object.")),
                        },
                        key => patch_one(&mut f, key, Some(v))?,
                    }
                }
            }
        }
    }
    Ok(f)
}

impl Resource for UserResource {
    const KIND: crate::state::scim::Kind = crate::state::scim::Kind::User;
    const ENDPOINT: &'static str = "Users";
    const SCHEMA: &'static str = USER_URN;
    const FILTER: filter::Resource = filter::Resource::User;
    const NAME_NS: &'static str = ns::USER_NAME;
    type Item = User;

    fn load(view: &impl Reader, id: &str) -> idnode_storage::Result<Option<User>> {
        view.user(id)
    }
    fn name(item: &User) -> &str {
        &item.name
    }
    fn enabled(item: &User) -> Option<bool> {
        Some(item.enabled)
    }

    fn render(view: &impl Reader, realm: &RealmRef, base: &str, rec: &Record<User>) -> ScimResult<Value> {
        let u = &rec.item;
        // A change made outside SCIM (a Keystone update) is a modification too.
        let changed = view.user_updated_at(u)?.div_euclid(1_000_000);
        let idx = ScimResourceIndex { updated_at: rec.idx.updated_at.max(changed), ..rec.idx.clone() };
        let extra: Map<String, Value> = serde_json::from_str(&u.extra).unwrap_or_default();
        let name = S::Name {
            given_name: extra.get("scim_given_name").cloned(),
            family_name: extra.get("scim_family_name").cloned(),
        };
        let emails = extra.get("scim_primary_email").map(|v| {
            let primary = extra.get("scim_email_primary").and_then(Value::as_bool).unwrap_or(true);
            vec![S::Email { value: v.clone(), primary: Some(primary) }]
        });
        Ok(json!(S::User {
            schemas: vec![USER_URN.into()],
            id: Some(u.id.clone()),
            external_id: rec.idx.external_id.clone().unwrap_or_default(),
            user_name: u.name.clone(),
            name: (name.given_name.is_some() || name.family_name.is_some()).then_some(name),
            display_name: extra.get("scim_display_name").cloned(),
            emails,
            active: Some(u.enabled),
            meta: Some(meta::<Self>(base, realm, &idx, "User")),
        }))
    }

    fn create(realm: &RealmRef, body: &Value, at: i64) -> ScimResult<(String, ScimCommand)> {
        let fields = body_fields(body, true)?;
        let external_id = fields.external_id.as_deref().unwrap_or_default();
        let id = derived_user_id(DerivedBy::Scim, &realm.domain_id, &realm.provider_id, external_id);
        let cmd = ScimCommand::PutUser {
            realm: realm.clone(),
            id: id.clone(),
            fields: Box::new(fields),
            expect: Expect::Create,
            at,
        };
        Ok((id, cmd))
    }

    fn replace(realm: &RealmRef, id: &str, body: &Value, expect: Expect, at: i64) -> ScimResult<ScimCommand> {
        let fields = Box::new(body_fields(body, false)?);
        Ok(ScimCommand::PutUser { realm: realm.clone(), id: id.to_string(), fields, expect, at })
    }

    fn patch(realm: &RealmRef, id: &str, ops: &[patch::Op], expect: Expect, at: i64) -> ScimResult<ScimCommand> {
        let fields = Box::new(patch_fields(ops)?);
        Ok(ScimCommand::PutUser { realm: realm.clone(), id: id.to_string(), fields, expect, at })
    }
}

resource::resource_handlers! {
    resource = UserResource, body = S::User,
    paths = ["/SCIM/v2/{domain_id}/Users", "/SCIM/v2/{domain_id}/Users/{id}"], id = "The user's id.",
    ops = ["scim_users_list", "scim_users_create", "scim_users_get", "scim_users_replace", "scim_users_patch", "scim_users_delete"],
    said = [
        "A ListResponse of the realm's live users.",
        "The user; ETag and Location headers.",
        "The user; ETag header.",
        "The user as replaced; ETag header.",
        "The user as changed; ETag header.",
        "Deprovisioned: disabled, its tokens refused on every node, hidden from SCIM.",
    ],
}
