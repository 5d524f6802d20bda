//! `/SCIM/v2/{domain_id}/Groups` (spec "SCIM group attribute mapping", api-shapes §11.3): a
//! SCIM group is a group of the realm's domain with a server-assigned id; `displayName` is
//! its name (unique in the domain, case-insensitively) and `members` its memberships of the
//! realm's own live users (at most 1,000 named per request). PUT resyncs the membership;
//! PATCH adds and removes members (`replace` on `members` is refused, as the spec allows
//! add and remove only). Memberships an administrator gave users outside the realm are
//! neither shown nor touched.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::patch::{self, OpKind};
use super::resource::{self, location, meta, Record, Resource};
use super::users::UserResource;
use super::values::{require_schema, text};
use super::wire::{ScimError, ScimResult, GROUP_URN};
use super::{filter, schemas as S};
use crate::state::keys::ns;
use crate::state::model::Group;
use crate::state::read::ScimReads;
use crate::state::scim::{
    Expect, GroupFields, Kind, Members, RealmRef, ScimCommand, ScimResourceIndex, MAX_MEMBERS_PER_WRITE,
};
use crate::state::Reader;

pub struct GroupResource;

/// The user ids of a `members` value (`[{value}]`, or one `{value}`), deduplicated.
fn member_ids(v: Option<&Value>) -> ScimResult<Vec<String>> {
    let items: Vec<&Value> = match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.iter().collect(),
        Some(o @ Value::Object(_)) => vec![o],
        Some(_) => return Err(ScimError::bad("invalidValue", "members takes a list of {value: <user id>}.")),
    };
    if items.len() > MAX_MEMBERS_PER_WRITE {
        return Err(ScimError::bad("invalidValue", format!("At most {MAX_MEMBERS_PER_WRITE} members per request.")));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for m in items {
        let Some(id) = m["value"].as_str().filter(|s| !s.is_empty()) else {
            return Err(ScimError::bad("invalidValue", "Each member is {value: <user id>}."));
        };
        if seen.insert(id) {
            out.push(id.to_string());
        }
    }
    Ok(out)
}

fn body_fields(body: &Value) -> ScimResult<GroupFields> {
    require_schema(body, GROUP_URN)?;
    Ok(GroupFields {
        display_name: text("displayName", &body["displayName"], true)?,
        external_id: Some(text("externalId", &body["externalId"], false)?),
        members: Members::Set(member_ids(body.get("members"))?),
    })
}

/// Net membership change of a PATCH's operations, in order: the last word on a user wins;
/// removing `members` without a value empties the realm's part of the group.
#[derive(Default)]
struct MemberDelta {
    clear: bool,
    add: Vec<String>,
    remove: Vec<String>,
}

impl MemberDelta {
    fn add(&mut self, id: String) {
        self.remove.retain(|r| *r != id);
        if !self.add.contains(&id) {
            self.add.push(id);
        }
    }
    fn remove(&mut self, id: String) {
        self.add.retain(|a| *a != id);
        if !self.clear && !self.remove.contains(&id) {
            self.remove.push(id);
        }
    }
    fn into_members(self) -> ScimResult<Members> {
        if self.add.len() + self.remove.len() > MAX_MEMBERS_PER_WRITE {
            return Err(ScimError::bad(
                "invalidValue",
                format!("At most {MAX_MEMBERS_PER_WRITE} members per request."),
            ));
        }
        Ok(match (self.clear, self.add.is_empty() && self.remove.is_empty()) {
            (true, _) => Members::Set(self.add),
            (false, true) => Members::Keep,
            (false, false) => Members::Change { add: self.add, remove: self.remove },
        })
    }
}

fn patch_one(f: &mut GroupFields, d: &mut MemberDelta, kind: OpKind, path: &str, v: Option<&Value>) -> ScimResult<()> {
    match (path, kind) {
        ("displayname", OpKind::Remove) => {
            return Err(ScimError::bad("invalidValue", "displayName is required and cannot be removed."))
        }
        ("displayname", _) => f.display_name = text("displayName", v.unwrap_or(&Value::Null), true)?,
        ("externalid", OpKind::Remove) => f.external_id = Some(None),
        ("externalid", _) => f.external_id = Some(text("externalId", v.unwrap_or(&Value::Null), false)?),
        ("members", OpKind::Add) => member_ids(v)?.into_iter().for_each(|id| d.add(id)),
        ("members", OpKind::Remove) if v.is_none() => *d = MemberDelta { clear: true, ..MemberDelta::default() },
        ("members", OpKind::Remove) => member_ids(v)?.into_iter().for_each(|id| d.remove(id)),
        ("members", OpKind::Replace) => {
            return Err(ScimError::bad("invalidPath", "members takes add and remove operations only."))
        }
        (other, _) => return Err(patch::refused_path(other)),
    }
    Ok(())
}

pub fn patch_fields(ops: &[patch::Op]) -> ScimResult<GroupFields> {
    let mut f = GroupFields::default();
    let mut d = MemberDelta::default();
    for op in ops {
        match &op.path {
            Some(p) => patch_one(&mut f, &mut d, op.kind, p, op.value.as_ref())?,
            None => {
                let Some(Value::Object(attrs)) = &op.value else { continue };
                for (k, v) in attrs {
                    let key = k.to_ascii_lowercase();
                    if key != "schemas" {
                        patch_one(&mut f, &mut d, op.kind, &key, Some(v))?;
                    }
                }
            }
        }
    }
    f.members = d.into_members()?;
    Ok(f)
}

impl Resource for GroupResource {
    const KIND: Kind = Kind::Group;
    const ENDPOINT: &'static str = "Groups";
    const SCHEMA: &'static str = GROUP_URN;
    const FILTER: filter::Resource = filter::Resource::Group;
    const NAME_NS: &'static str = ns::GROUP_NAME;
    type Item = Group;

    fn load(view: &impl Reader, id: &str) -> idnode_storage::Result<Option<Group>> {
        view.group(id)
    }
    fn name(item: &Group) -> &str {
        &item.name
    }
    fn enabled(_: &Group) -> Option<bool> {
        None
    }

    fn render(view: &impl Reader, realm: &RealmRef, base: &str, rec: &Record<Group>) -> ScimResult<Value> {
        let mut members = Vec::new();
        for uid in view.member_user_ids(&rec.item.id)? {
            let idx: Option<ScimResourceIndex> = view.scim_index(Kind::User, &uid)?;
            if idx.is_some_and(|i| i.live_in(realm)) {
                let ref_ = Some(location::<UserResource>(base, realm, &uid));
                members.push(S::Member { value: uid, ref_, kind: Some("User".into()) });
            }
        }
        Ok(json!(S::Group {
            schemas: vec![GROUP_URN.into()],
            id: Some(rec.item.id.clone()),
            external_id: rec.idx.external_id.clone(),
            display_name: rec.item.name.clone(),
            members: Some(members),
            meta: Some(meta::<Self>(base, realm, &rec.idx, "Group")),
        }))
    }

    fn create(realm: &RealmRef, body: &Value, at: i64) -> ScimResult<(String, ScimCommand)> {
        let fields = Box::new(body_fields(body)?);
        let id = uuid::Uuid::new_v4().simple().to_string();
        Ok((id.clone(), ScimCommand::PutGroup { realm: realm.clone(), id, fields, expect: Expect::Create, at }))
    }

    fn replace(realm: &RealmRef, id: &str, body: &Value, expect: Expect, at: i64) -> ScimResult<ScimCommand> {
        let fields = Box::new(body_fields(body)?);
        Ok(ScimCommand::PutGroup { realm: realm.clone(), id: id.to_string(), fields, expect, at })
    }

    fn patch(realm: &RealmRef, id: &str, ops: &[patch::Op], expect: Expect, at: i64) -> ScimResult<ScimCommand> {
        let fields = Box::new(patch_fields(ops)?);
        Ok(ScimCommand::PutGroup { realm: realm.clone(), id: id.to_string(), fields, expect, at })
    }
}

resource::resource_handlers! {
    resource = GroupResource, body = S::Group,
    paths = ["/SCIM/v2/{domain_id}/Groups", "/SCIM/v2/{domain_id}/Groups/{id}"], id = "The group's id.",
    ops = ["scim_groups_list", "scim_groups_create", "scim_groups_get", "scim_groups_replace", "scim_groups_patch", "scim_groups_delete"],
    said = [
        "A ListResponse of the realm's live groups.",
        "The group; ETag and Location headers.",
        "The group; ETag header.",
        "The group as replaced (membership resynced); ETag header.",
        "The group as changed; ETag header.",
        "Deprovisioned: its role assignments cleared, its membership kept, hidden from SCIM.",
    ],
}
