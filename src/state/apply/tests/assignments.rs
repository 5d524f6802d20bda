//! Apply-level invariants of groups, memberships, roles, implication rules, grants and
//! password changes, and their cascades.

use super::{project, user, World};
use crate::state::command::{ApplyError, Command};
use crate::state::keys::ns;
use crate::state::model::*;
use crate::state::Reader;

fn group(id: &str, name: &str, domain: &str) -> Group {
    Group { id: id.into(), name: name.into(), domain_id: domain.into(), description: None, extra: "{}".into() }
}

fn role(id: &str, name: &str, domain: Option<&str>) -> Role {
    Role {
        id: id.into(),
        name: name.into(),
        domain_id: domain.map(str::to_string),
        description: None,
        extra: "{}".into(),
        options: "{}".into(),
    }
}

fn grant(kind: ActorKind, actor: &str, target: Target, role: &str) -> Assignment {
    Assignment { actor_kind: kind, actor_id: actor.into(), target, role_id: role.into(), inherited: false }
}

fn imply(prior: &str, implied: &str) -> Command {
    Command::CreateImpliedRole { prior_role_id: prior.into(), implied_role_id: implied.into() }
}

fn member(g: &str, u: &str) -> Command {
    Command::AddGroupMember { group_id: g.into(), user_id: u.into() }
}

fn not_found<T: std::fmt::Debug>(r: Result<T, ApplyError>) -> bool {
    matches!(r, Err(ApplyError::NotFound { .. }))
}
fn conflict<T: std::fmt::Debug>(r: Result<T, ApplyError>) -> bool {
    matches!(r, Err(ApplyError::Conflict(_)))
}
fn forbidden<T: std::fmt::Debug>(r: Result<T, ApplyError>) -> bool {
    matches!(r, Err(ApplyError::Forbidden(_)))
}

/// Two domains, a project, two users, a group and roles a, b, c (global) and d (domain d1).
fn world() -> World {
    let w = World::new();
    for cmd in [
        Command::CreateProject(project("d1", "Dom", "d1", true)),
        Command::CreateProject(project("d2", "Other", "d2", true)),
        Command::CreateProject(project("p1", "Web", "d1", false)),
        Command::CreateUser(user("u1", "alice", "d1")),
        Command::CreateUser(user("u2", "bob", "d2")),
        Command::CreateGroup(group("g1", "ops", "d1")),
        Command::CreateRole(role("a", "ra", None)),
        Command::CreateRole(role("b", "rb", None)),
        Command::CreateRole(role("c", "rc", None)),
        Command::CreateRole(role("d", "rd", Some("d1"))),
    ] {
        w.apply(cmd).unwrap();
    }
    w
}

#[test]
fn group_names_are_unique_per_domain() {
    let w = world();
    assert!(conflict(w.apply(Command::CreateGroup(group("g2", "OPS", "d1")))));
    assert!(w.engine.read().group("g2").unwrap().is_none(), "refused command wrote nothing");
    assert!(w.apply(Command::CreateGroup(group("g3", "ops", "d2"))).is_ok(), "other domain is fine");
    assert!(not_found(w.apply(Command::CreateGroup(group("g4", "x", "nope")))));
    assert!(conflict(w.apply(Command::CreateGroup(group("g1", "again", "d1")))), "duplicate id");
    w.apply(Command::CreateGroup(group("g5", "dev", "d1"))).unwrap();
    assert!(conflict(w.apply(Command::UpdateGroup(group("g5", "Ops", "d1")))), "rename onto a taken name");
    let mut moved = group("g5", "devs", "d2");
    moved.description = Some("x".into());
    w.apply(Command::UpdateGroup(moved)).unwrap();
    let v = w.engine.read();
    assert_eq!(v.group("g5").unwrap().unwrap().domain_id, "d1", "domain_id is immutable");
    assert_eq!(v.id_by_name(ns::GROUP_NAME, "d1", "devs").unwrap().as_deref(), Some("g5"));
    assert_eq!(v.id_by_name(ns::GROUP_NAME, "d1", "dev").unwrap(), None, "old name freed");
}

#[test]
fn memberships_need_both_ends_and_go_with_them() {
    let w = world();
    assert!(not_found(w.apply(member("nope", "u1"))));
    assert!(not_found(w.apply(member("g1", "nope"))));
    w.apply(member("g1", "u1")).unwrap();
    w.apply(member("g1", "u1")).unwrap();
    w.apply(member("g1", "u2")).unwrap();
    let v = w.engine.read();
    assert_eq!(v.member_user_ids("g1").unwrap(), vec!["u1".to_string(), "u2".to_string()]);
    assert_eq!(v.group_ids_of_user("u2").unwrap(), vec!["g1".to_string()]);
    drop(v);
    w.apply(Command::RemoveGroupMember { group_id: "g1".into(), user_id: "u2".into() }).unwrap();
    assert!(not_found(w.apply(Command::RemoveGroupMember { group_id: "g1".into(), user_id: "u2".into() })));
    assert!(!w.engine.read().is_member("g1", "u2").unwrap());
    // Deleting the user drops its memberships; deleting the group drops the rest.
    w.apply(Command::DeleteUser { id: "u1".into(), now: 1 }).unwrap();
    assert!(w.engine.read().member_user_ids("g1").unwrap().is_empty());
    w.apply(Command::CreateUser(user("u3", "carol", "d1"))).unwrap();
    w.apply(member("g1", "u3")).unwrap();
    w.apply(Command::CreateGrant(grant(ActorKind::Group, "g1", Target::Project("p1".into()), "a"))).unwrap();
    w.apply(Command::DeleteGroup { id: "g1".into() }).unwrap();
    let v = w.engine.read();
    assert!(v.group_ids_of_user("u3").unwrap().is_empty());
    assert!(v.group("g1").unwrap().is_none());
    assert!(v.id_by_name(ns::GROUP_NAME, "d1", "ops").unwrap().is_none());
    let f = crate::reads::listing::Filter::default();
    assert!(crate::reads::listing::list(&v, &f).unwrap().is_empty(), "group grants went with the group");
    drop(v);
    assert!(not_found(w.apply(Command::DeleteGroup { id: "g1".into() })));
}

#[test]
fn role_names_are_unique_per_scope() {
    let w = world();
    assert!(conflict(w.apply(Command::CreateRole(role("x", "RA", None)))), "global names are unique");
    assert!(w.apply(Command::CreateRole(role("y", "ra", Some("d1")))).is_ok(), "a domain role may reuse it");
    assert!(conflict(w.apply(Command::CreateRole(role("z", "RD", Some("d1"))))), "unique within the domain");
    assert!(w.apply(Command::CreateRole(role("z2", "rd", Some("d2")))).is_ok());
    assert!(not_found(w.apply(Command::CreateRole(role("q", "rq", Some("nope"))))));
    assert!(conflict(w.apply(Command::UpdateRole(role("b", "ra", None)))));
    w.apply(Command::UpdateRole(role("b", "rb2", Some("d2")))).unwrap();
    let v = w.engine.read();
    assert_eq!(v.role("b").unwrap().unwrap().domain_id, None, "domain_id is immutable");
    assert_eq!(v.id_by_name(ns::ROLE_NAME, "", "rb2").unwrap().as_deref(), Some("b"));
    assert!(v.id_by_name(ns::ROLE_NAME, "", "rb").unwrap().is_none());
}

#[test]
fn implication_rules_are_checked() {
    let w = world();
    w.apply(Command::CreateRole(role("adm", "admin", None))).unwrap();
    assert!(not_found(w.apply(imply("a", "nope"))));
    assert!(not_found(w.apply(imply("nope", "a"))));
    assert!(forbidden(w.apply(imply("a", "adm"))), "admin is never implied");
    assert!(forbidden(w.apply(imply("a", "d"))), "a global role cannot imply a domain role");
    w.apply(imply("d", "a")).unwrap();
    w.apply(imply("a", "b")).unwrap();
    assert!(conflict(w.apply(imply("a", "b"))), "duplicate rule");
    w.apply(imply("b", "c")).unwrap();
    assert!(forbidden(w.apply(imply("a", "a"))), "self cycle");
    assert!(forbidden(w.apply(imply("b", "a"))), "two-step cycle");
    assert!(forbidden(w.apply(imply("c", "a"))), "three-step cycle");
    assert!(!w.engine.read().implied_rule_exists("c", "a").unwrap(), "refused rule not written");
    w.apply(imply("a", "c")).unwrap();
    assert!(not_found(w.apply(Command::DeleteImpliedRole { prior_role_id: "c".into(), implied_role_id: "b".into() })));
    w.apply(Command::DeleteImpliedRole { prior_role_id: "a".into(), implied_role_id: "c".into() }).unwrap();
    assert!(!w.engine.read().implied_rule_exists("a", "c").unwrap());
}

#[test]
fn deleting_a_role_removes_its_grants_and_rules() {
    let w = world();
    w.apply(imply("a", "b")).unwrap();
    w.apply(imply("b", "c")).unwrap();
    w.apply(Command::CreateGrant(grant(ActorKind::User, "u1", Target::Project("p1".into()), "b"))).unwrap();
    w.apply(Command::CreateGrant(grant(ActorKind::User, "u1", Target::System, "a"))).unwrap();
    w.apply(Command::DeleteRole { id: "b".into() }).unwrap();
    let v = w.engine.read();
    assert!(v.role("b").unwrap().is_none());
    assert!(v.implied_rules().unwrap().is_empty(), "rules with b on either side are gone");
    assert!(v.id_by_name(ns::ROLE_NAME, "", "rb").unwrap().is_none());
    let all = crate::reads::listing::list(&v, &Default::default()).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].role_id, "a");
    drop(v);
    assert!(not_found(w.apply(Command::DeleteRole { id: "b".into() })));
}

#[test]
fn grants_need_existing_references() {
    let w = world();
    let p1 = || Target::Project("p1".into());
    let cases = [
        grant(ActorKind::User, "u1", p1(), "nope"),
        grant(ActorKind::User, "nope", p1(), "a"),
        grant(ActorKind::Group, "nope", p1(), "a"),
        grant(ActorKind::Group, "u1", p1(), "a"),
        grant(ActorKind::User, "u1", Target::Project("nope".into()), "a"),
        grant(ActorKind::User, "u1", Target::Project("d1".into()), "a"),
        grant(ActorKind::User, "u1", Target::Domain("nope".into()), "a"),
        grant(ActorKind::User, "u1", Target::Domain("p1".into()), "a"),
    ];
    for g in cases {
        assert!(not_found(w.apply(Command::CreateGrant(g.clone()))), "{g:?}");
    }
    let d1_role_on_d2 = {
        w.apply(Command::CreateProject(project("p2", "Api", "d2", false))).unwrap();
        grant(ActorKind::User, "u1", Target::Project("p2".into()), "d")
    };
    assert!(forbidden(w.apply(Command::CreateGrant(d1_role_on_d2))), "domain role outside its domain");
    let sys = w.apply(Command::CreateGrant(grant(ActorKind::User, "u1", Target::System, "d")));
    assert!(matches!(sys, Err(ApplyError::Invalid(_))), "domain role on the system");
    let mut inherited = grant(ActorKind::User, "u1", Target::System, "a");
    inherited.inherited = true;
    assert!(matches!(w.apply(Command::CreateGrant(inherited)), Err(ApplyError::Invalid(_))), "system inherits not");
    assert!(crate::reads::listing::list(&w.engine.read(), &Default::default()).unwrap().is_empty());
    w.apply(Command::CreateGrant(grant(ActorKind::User, "u1", p1(), "d"))).unwrap();
    w.apply(Command::CreateGrant(grant(ActorKind::Group, "g1", Target::Domain("d2".into()), "a"))).unwrap();
    w.apply(Command::CreateGrant(grant(ActorKind::Group, "g1", Target::Domain("d2".into()), "a"))).unwrap();
    assert_eq!(crate::reads::listing::list(&w.engine.read(), &Default::default()).unwrap().len(), 2);
    assert!(not_found(w.apply(Command::DeleteGrant(grant(ActorKind::User, "u1", p1(), "a")))), "absent grant");
    w.apply(Command::DeleteGrant(grant(ActorKind::User, "u1", p1(), "d"))).unwrap();
    assert_eq!(crate::reads::listing::list(&w.engine.read(), &Default::default()).unwrap().len(), 1);
}

#[test]
fn deleting_a_domain_removes_its_groups_roles_and_grants() {
    let w = world();
    w.apply(imply("d", "a")).unwrap();
    w.apply(member("g1", "u2")).unwrap();
    w.apply(Command::CreateGrant(grant(ActorKind::User, "u2", Target::Domain("d1".into()), "a"))).unwrap();
    w.apply(Command::CreateGrant(grant(ActorKind::User, "u2", Target::Project("p1".into()), "d"))).unwrap();
    w.apply(Command::CreateGrant(grant(ActorKind::Group, "g1", Target::Domain("d2".into()), "b"))).unwrap();
    w.apply(Command::CreateGrant(grant(ActorKind::User, "u2", Target::Domain("d2".into()), "c"))).unwrap();
    w.delete_domain("d1").unwrap();
    let v = w.engine.read();
    assert!(v.group("g1").unwrap().is_none());
    assert!(v.group_ids_of_user("u2").unwrap().is_empty());
    assert!(v.role("d").unwrap().is_none());
    assert!(v.id_by_name(ns::ROLE_NAME, "d1", "rd").unwrap().is_none(), "domain role name freed");
    assert!(v.implied_rules().unwrap().is_empty());
    let left = crate::reads::listing::list(&v, &Default::default()).unwrap();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!((left[0].actor_id.as_str(), left[0].role_id.as_str()), ("u2", "c"));
}

#[test]
fn password_changes_compare_and_set() {
    let w = world();
    let mut local = user("u9", "dave", "d1");
    local.password_hash = Some("h1".into());
    w.apply(Command::CreateUser(local)).unwrap();
    let change = |user: &str, expected: &str, new: &str, now| Command::ChangePassword {
        user_id: user.into(),
        expected_hash: expected.into(),
        new_hash: new.into(),
        now,
    };
    assert!(not_found(w.apply(change("nope", "h1", "h2", 5))));
    assert!(conflict(w.apply(change("u1", "h1", "h2", 5))), "a non-local user has no password");
    assert!(conflict(w.apply(change("u9", "stale", "h2", 5))), "the hash moved on since it was verified");
    assert_eq!(w.engine.read().user("u9").unwrap().unwrap().password_hash.as_deref(), Some("h1"));
    w.apply(change("u9", "h1", "h2", 5)).unwrap();
    let u = w.engine.read().user("u9").unwrap().unwrap();
    assert_eq!((u.password_hash.as_deref(), u.tokens_valid_after), (Some("h2"), 5));
}

#[test]
fn federated_unique_ids_are_indexed() {
    let w = world();
    let mut fed = user("u7", "fed", "d1");
    let proto = |u: &str| FederatedProtocol { protocol_id: "oidc".into(), unique_id: u.into() };
    fed.federated = vec![FederatedIdentity { idp_id: "idp".into(), protocols: vec![proto("sub-1"), proto("sub-2")] }];
    w.apply(Command::CreateUser(fed.clone())).unwrap();
    let ids = |u: &str| w.engine.read().member_ids(ns::USER_UNIQUE_ID, u).unwrap();
    assert_eq!(ids("sub-2"), vec!["u7".to_string()]);
    assert!(ids("SUB-2").is_empty(), "unique ids match exactly");
    fed.federated[0].protocols = vec![proto("sub-3")];
    w.apply(Command::UpdateUser(fed)).unwrap();
    assert!(ids("sub-1").is_empty());
    assert_eq!(ids("sub-3"), vec!["u7".to_string()]);
    w.apply(Command::DeleteUser { id: "u7".into(), now: 1 }).unwrap();
    assert!(ids("sub-3").is_empty());
}
