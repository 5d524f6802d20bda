//! How a Keystone grant is spelled as a relationship: the actor as the tuple's user
//! (`user:<id>`, or the userset `group:<id>#member`), the target as its object (`project:<id>`,
//! `domain:<id>`, `system:all`), the role as its relation. Every kind may have several store
//! types: the first is where writes go, all of them are read, checked and deleted. What the
//! store holds that no mapping explains (other types, unmapped relations) is not ours and is
//! skipped, never misread as a grant.

use std::collections::BTreeMap;

use super::mapping::RoleTable;
use super::settings::{IdTransform, Kind, OpenFgaSettings};
use crate::state::model::{ActorKind, Assignment, Role, Target};

/// The system target's object id (Keystone's only system scope is `all`).
const SYSTEM_ID: &str = "all";

/// A relationship as the store names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tuple {
    pub user: String,
    pub relation: String,
    pub object: String,
}

/// The role table as the store sees it: each role's relation and each relation's roles.
pub struct Vocabulary<'a> {
    settings: &'a OpenFgaSettings,
    relation_of: BTreeMap<String, String>,
    roles_of: BTreeMap<String, Vec<String>>,
    /// Roles the table puts on a guarded role's relation, refused (see [`Vocabulary::new`]).
    refused: BTreeMap<String, Unmapped>,
}

/// A role the table does not map to a relation it may use: the spec says it fails at once,
/// before any call (a 400: the request, not the store, is at fault).
#[derive(Debug, Clone, PartialEq)]
pub enum Unmapped {
    /// The table names no relation for the role.
    Missing(String),
    /// The table gives the role the relation of a guarded role (`admin`, `service`): a grant
    /// of it, which a domain manager may make, would write that relation.
    Guarded { role: String, relation: String, guarded: String },
}

impl std::fmt::Display for Unmapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unmapped::Missing(role) => {
                write!(f, "Role {role} has no relation in [openfga] role_to_relation: map it there before granting it.")
            }
            Unmapped::Guarded { role, relation, guarded } => write!(
                f,
                "Role {role} is mapped in [openfga] role_to_relation to {relation}, the relation of the {guarded} \
                 role: a grant of it would make an {guarded}, so it is refused. Map it to a relation of its own."
            ),
        }
    }
}

/// Why a grant has no tuple: its role maps to no relation we may write, or an id the store
/// cannot hold. Kept here, not in the driver's error, so this file needs nothing above it.
#[derive(Debug)]
pub enum Unusable {
    Unmapped(Unmapped),
    BadId(BadId),
}

impl From<Unmapped> for Unusable {
    fn from(e: Unmapped) -> Self {
        Unusable::Unmapped(e)
    }
}

impl From<BadId> for Unusable {
    fn from(e: BadId) -> Self {
        Unusable::BadId(e)
    }
}

/// An id the store cannot hold as a tuple's id: `*` is its wildcard (every user), `:` and `#`
/// separate a tuple's type, id and relation, whitespace is refused. Such an id would name
/// something else in the store, so it is refused before it reaches a tuple.
#[derive(Debug, Clone, PartialEq)]
pub struct BadId(pub String);

impl std::fmt::Display for BadId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} is not an id the relationship store can hold (empty, or with *, :, # or whitespace).", self.0)
    }
}

/// `id` when it is one the store can hold (see [`BadId`]).
pub fn store_id(id: &str) -> Result<&str, BadId> {
    let bad = |c: char| c.is_whitespace() || c.is_control() || matches!(c, '*' | ':' | '#');
    if id.is_empty() || id.contains(bad) {
        return Err(BadId(id.to_string()));
    }
    Ok(id)
}

impl<'a> Vocabulary<'a> {
    /// `roles` are every role the node knows. A mapping key is a role id, or failing that the
    /// name of a global role (so the bootstrap roles can be mapped before their ids exist).
    /// A relation a guarded role (`admin`, `service`) maps to is kept to the guarded roles:
    /// any other role the table puts there is refused (not granted, not read back), since the
    /// guard rails let a domain manager grant it and the store would resolve an administrator.
    /// The table's parser refuses what it can tell by name; ids need the roles, known here.
    pub fn new(settings: &'a OpenFgaSettings, table: &RoleTable, roles: &[Role]) -> Self {
        let mapped: Vec<(&Role, &String)> = roles
            .iter()
            .filter_map(|role| {
                let by_name = || role.domain_id.is_none().then(|| table.get(&role.name)).flatten();
                table.get(&role.id).or_else(by_name).map(|rel| (role, rel))
            })
            .collect();
        let guarded: BTreeMap<&str, &str> = mapped
            .iter()
            .filter(|(role, _)| role.is_guarded())
            .map(|(role, rel)| (rel.as_str(), role.name.as_str()))
            .collect();
        let (mut relation_of, mut refused) = (BTreeMap::new(), BTreeMap::new());
        let mut roles_of: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (role, rel) in mapped {
            if let Some(name) = guarded.get(rel.as_str()).filter(|_| !role.is_guarded()) {
                let why = Unmapped::Guarded { role: role.id.clone(), relation: rel.clone(), guarded: name.to_string() };
                refused.insert(role.id.clone(), why);
                continue;
            }
            relation_of.insert(role.id.clone(), rel.clone());
            roles_of.entry(rel.clone()).or_default().push(role.id.clone());
        }
        Vocabulary { settings, relation_of, roles_of, refused }
    }

    pub fn relation(&self, role_id: &str) -> Result<&str, Unmapped> {
        match self.relation_of.get(role_id) {
            Some(rel) => Ok(rel),
            None => Err(self.refused.get(role_id).cloned().unwrap_or_else(|| Unmapped::Missing(role_id.to_string()))),
        }
    }

    /// The roles a relation stands for (none for a relation that is not ours).
    pub fn roles(&self, relation: &str) -> &[String] {
        self.roles_of.get(relation).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Every relation some known role maps to.
    pub fn relations(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.roles_of.keys().map(String::as_str).collect();
        out.dedup();
        out
    }

    /// The actor as a tuple user in each of its kind's types, canonical first.
    pub fn actors(&self, kind: ActorKind, id: &str) -> Result<Vec<String>, BadId> {
        let id = self.to_store(store_id(id)?);
        Ok(match kind {
            ActorKind::User => self.settings.types(Kind::User).iter().map(|t| format!("{t}:{id}")).collect(),
            ActorKind::Group => {
                let rel = &self.settings.group_member_relation;
                self.settings.types(Kind::Group).iter().map(|t| format!("{t}:{id}#{rel}")).collect()
            }
        })
    }

    /// The target as a store object in each of its kind's types, canonical first.
    pub fn objects(&self, target: &Target) -> Result<Vec<String>, BadId> {
        let (kind, id) = target_parts(target);
        let id = self.to_store(store_id(id)?);
        Ok(self.settings.types(kind).iter().map(|t| format!("{t}:{id}")).collect())
    }

    /// The store types of the target kinds an actor can hold roles on.
    pub fn target_types(&self) -> Vec<(Kind, &str)> {
        [Kind::Project, Kind::Domain, Kind::System]
            .into_iter()
            .flat_map(|k| self.settings.types(k).iter().map(move |t| (k, t.as_str())))
            .collect()
    }

    /// The grant's canonical tuple (where a write goes).
    pub fn canonical(&self, a: &Assignment) -> Result<Tuple, Unusable> {
        let relation = self.relation(&a.role_id)?.to_string();
        let user = self.actors(a.actor_kind, &a.actor_id)?.swap_remove(0);
        let object = self.objects(&a.target)?.swap_remove(0);
        Ok(Tuple { user, relation, object })
    }

    /// Every spelling of the grant (what a check or a delete looks at).
    pub fn spellings(&self, a: &Assignment) -> Result<Vec<Tuple>, Unusable> {
        let relation = self.relation(&a.role_id)?;
        let objects = self.objects(&a.target)?;
        Ok(self
            .actors(a.actor_kind, &a.actor_id)?
            .into_iter()
            .flat_map(|user| {
                objects.iter().map(move |object| Tuple {
                    user: user.clone(),
                    relation: relation.into(),
                    object: object.clone(),
                })
            })
            .collect())
    }

    /// The grants a stored tuple stands for: one per role of its relation; none when the
    /// tuple is not one of ours.
    pub fn grants(&self, t: &Tuple) -> Vec<Assignment> {
        let (Some((actor_kind, actor_id)), Some(target)) = (self.actor_of(&t.user), self.target_of(&t.object)) else {
            return Vec::new();
        };
        self.roles(&t.relation)
            .iter()
            .map(|role_id| Assignment {
                actor_kind,
                actor_id: actor_id.clone(),
                target: target.clone(),
                role_id: role_id.clone(),
                inherited: false,
            })
            .collect()
    }

    /// `user:<id>` or `group:<id>#member` back to the actor.
    pub fn actor_of(&self, user: &str) -> Option<(ActorKind, String)> {
        let (ty, rest) = user.split_once(':')?;
        match rest.split_once('#') {
            None if self.has_type(Kind::User, ty) => Some((ActorKind::User, self.keystone_id(rest))),
            Some((id, rel)) if rel == self.settings.group_member_relation && self.has_type(Kind::Group, ty) => {
                Some((ActorKind::Group, self.keystone_id(id)))
            }
            _ => None,
        }
    }

    /// `project:<id>`, `domain:<id>` or `system:all` back to the target.
    pub fn target_of(&self, object: &str) -> Option<Target> {
        let (ty, id) = object.split_once(':')?;
        if self.has_type(Kind::Project, ty) {
            Some(Target::Project(self.keystone_id(id)))
        } else if self.has_type(Kind::Domain, ty) {
            Some(Target::Domain(self.keystone_id(id)))
        } else if self.has_type(Kind::System, ty) && id == SYSTEM_ID {
            Some(Target::System)
        } else {
            None
        }
    }

    fn has_type(&self, kind: Kind, ty: &str) -> bool {
        self.settings.types(kind).iter().any(|t| t == ty)
    }

    fn to_store(&self, id: &str) -> String {
        match self.settings.id_transform {
            IdTransform::UuidDashes if id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) => {
                format!("{}-{}-{}-{}-{}", &id[..8], &id[8..12], &id[12..16], &id[16..20], &id[20..])
            }
            _ => id.to_string(),
        }
    }

    fn keystone_id(&self, id: &str) -> String {
        let dashed = id.len() == 36
            && id
                .char_indices()
                .all(|(i, c)| if [8, 13, 18, 23].contains(&i) { c == '-' } else { c.is_ascii_hexdigit() });
        match self.settings.id_transform {
            IdTransform::UuidDashes if dashed => id.replace('-', ""),
            _ => id.to_string(),
        }
    }
}

fn target_parts(target: &Target) -> (Kind, &str) {
    match target {
        Target::Project(id) => (Kind::Project, id),
        Target::Domain(id) => (Kind::Domain, id),
        Target::System => (Kind::System, SYSTEM_ID),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openfga::settings::AssignmentDriver;
    use crate::testkit::fixtures::role;

    fn settings(extra: &[(&str, &str)]) -> OpenFgaSettings {
        let mut o: BTreeMap<&str, &str> = [
            ("api_url", "http://127.0.0.1:1"),
            ("store_id", "s"),
            ("role_to_relation", "r-admin:admin, member:member, r-twin:member"),
        ]
        .into();
        o.extend(extra.iter().copied());
        match AssignmentDriver::from_sections(|_| Some("openfga"), |k| o.get(k).copied(), true, |_| Ok(String::new()))
            .unwrap()
        {
            AssignmentDriver::OpenFga(s) => *s,
            AssignmentDriver::Raft => unreachable!(),
        }
    }

    fn roles() -> Vec<Role> {
        let local = Role { domain_id: Some("d1".into()), ..role("r-local", "member") };
        vec![
            role("r-admin", "admin"),
            role("r-member", "member"),
            role("r-twin", "twin"),
            local,
            role("r-none", "reader"),
        ]
    }

    fn grant(kind: ActorKind, actor: &str, target: Target, role: &str) -> Assignment {
        Assignment { actor_kind: kind, actor_id: actor.into(), target, role_id: role.into(), inherited: false }
    }

    #[test]
    fn roles_map_by_id_then_by_a_global_roles_name() {
        let s = settings(&[]);
        let v = Vocabulary::new(&s, &s.role_to_relation, &roles());
        assert_eq!(v.relation("r-admin"), Ok("admin"));
        assert_eq!(v.relation("r-member"), Ok("member"), "by its name");
        assert_eq!(
            v.relation("r-local"),
            Err(Unmapped::Missing("r-local".into())),
            "a domain role's name does not count"
        );
        assert_eq!(v.relation("r-none"), Err(Unmapped::Missing("r-none".into())));
        assert_eq!(v.roles("member"), ["r-member", "r-twin"]);
        assert_eq!(v.relations(), ["admin", "member"]);
    }

    #[test]
    fn grants_round_trip_through_every_spelling() {
        let s = settings(&[("kinds_user", "user, legacy_user"), ("id_transform", "uuid-dashes")]);
        let v = Vocabulary::new(&s, &s.role_to_relation, &roles());
        let id = "0123456789abcdef0123456789abcdef";
        let a = grant(ActorKind::User, id, Target::Project(id.into()), "r-admin");
        let c = v.canonical(&a).unwrap();
        let dashed = "01234567-89ab-cdef-0123-456789abcdef";
        assert_eq!(c.user, format!("user:{dashed}"));
        assert_eq!(c.object, format!("project:{dashed}"));
        assert_eq!(v.spellings(&a).unwrap().len(), 2);
        assert_eq!(v.grants(&c), vec![a.clone()]);
        let legacy = Tuple { user: format!("legacy_user:{dashed}"), ..c };
        assert_eq!(v.grants(&legacy), vec![a]);
        let g = grant(ActorKind::Group, "g1", Target::System, "r-admin");
        let t = v.canonical(&g).unwrap();
        assert_eq!((t.user.as_str(), t.object.as_str()), ("group:g1#member", "system:all"));
        assert_eq!(v.grants(&t), vec![g]);
    }

    /// A role the table puts on the relation of `admin` (here mapped by id, which only the
    /// roles can tell) is refused: neither written nor read back as a grant.
    #[test]
    fn no_role_shares_a_guarded_roles_relation() {
        let s = settings(&[("role_to_relation", "r-admin:admin, r-twin:admin, member:member")]);
        let v = Vocabulary::new(&s, &s.role_to_relation, &roles());
        assert_eq!(v.relation("r-admin"), Ok("admin"));
        let refused = v.relation("r-twin").unwrap_err();
        assert_eq!(
            refused,
            Unmapped::Guarded { role: "r-twin".into(), relation: "admin".into(), guarded: "admin".into() }
        );
        let text = refused.to_string();
        assert!(text.contains("r-twin") && text.contains("[openfga] role_to_relation"), "{text}");
        assert_eq!(v.roles("admin"), ["r-admin"], "an admin tuple reads back as admin only");
        let a = grant(ActorKind::User, "u1", Target::Project("p1".into()), "r-twin");
        assert!(matches!(v.canonical(&a), Err(Unusable::Unmapped(Unmapped::Guarded { .. }))));
        // A domain's role named admin is not the guarded one: it may not claim the relation.
        let local_admin = Role { domain_id: Some("d1".into()), ..role("r-dadmin", "admin") };
        let s = settings(&[("role_to_relation", "r-dadmin:admin, member:member")]);
        let v = Vocabulary::new(&s, &s.role_to_relation, &[local_admin]);
        assert_eq!(v.relation("r-dadmin"), Ok("admin"), "no guarded role on it: nothing to protect");
    }

    #[test]
    fn ids_the_store_cannot_hold_never_reach_a_tuple() {
        let s = settings(&[]);
        let v = Vocabulary::new(&s, &s.role_to_relation, &roles());
        for bad in ["*", "a:b", "g#member", "a b", "tab\t", "", "new\nline"] {
            assert_eq!(v.actors(ActorKind::User, bad), Err(BadId(bad.into())), "{bad:?}");
            assert_eq!(v.actors(ActorKind::Group, bad), Err(BadId(bad.into())), "{bad:?}");
            assert_eq!(v.objects(&Target::Project(bad.into())), Err(BadId(bad.into())), "{bad:?}");
            assert_eq!(v.objects(&Target::Domain(bad.into())), Err(BadId(bad.into())), "{bad:?}");
            let a = grant(ActorKind::User, bad, Target::Project("p1".into()), "r-admin");
            assert!(matches!(v.canonical(&a), Err(Unusable::BadId(_))), "{bad:?}");
            let a = grant(ActorKind::User, "u1", Target::Domain(bad.into()), "r-admin");
            assert!(matches!(v.spellings(&a), Err(Unusable::BadId(_))), "{bad:?}");
        }
        for good in ["0123456789abcdef0123456789abcdef", "default", "a-b_c.d@e|f+g"] {
            assert_eq!(v.actors(ActorKind::User, good), Ok(vec![format!("user:{good}")]));
        }
        assert_eq!(v.objects(&Target::System), Ok(vec!["system:all".to_string()]));
    }

    #[test]
    fn tuples_that_are_not_ours_are_skipped() {
        let s = settings(&[]);
        let v = Vocabulary::new(&s, &s.role_to_relation, &roles());
        for (user, relation, object) in [
            ("user:u", "owner", "project:p"),
            ("group:g#owner", "admin", "project:p"),
            ("group:g", "admin", "project:p"),
            ("user:u", "admin", "document:p"),
            ("user:u", "admin", "system:other"),
            ("nocolon", "admin", "project:p"),
        ] {
            let t = Tuple { user: user.into(), relation: relation.into(), object: object.into() };
            assert!(v.grants(&t).is_empty(), "{t:?}");
        }
    }
}
