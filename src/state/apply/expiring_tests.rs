//! Expiring group memberships as apply writes them (`ShadowCommand::ExpiringLogin`): what a
//! login grants, ends and leaves, the cascades that take them along, and a refusal that
//! writes nothing. Whether one still counts is the readers' question (`reads::groups`),
//! checked here with explicit clocks.

use crate::reads::groups;
use crate::state::apply::tests::{project, user, World};
use crate::state::cf;
use crate::state::command::{ApplyError, Command};
use crate::state::model::{ExpiringMembership, Group};
use crate::state::read::{IdentityReads, ShadowReads};
use crate::state::ruleset::GroupStrategy;
use crate::state::shadow::{GroupRequest, ShadowCommand};
use crate::state::Reader;

/// A domain `d` with groups `g1`, `g2`, `g3`.
fn world() -> World {
    let w = World::new();
    w.apply(Command::CreateProject(project("d", "D", "d", true))).unwrap();
    for g in ["g1", "g2", "g3"] {
        let group =
            Group { id: g.into(), name: g.into(), domain_id: "d".into(), description: None, extra: "{}".into() };
        w.apply(Command::CreateGroup(group)).unwrap();
    }
    w
}

fn get(id: &str) -> GroupRequest {
    GroupRequest {
        group_id: Some(id.into()),
        name: id.into(),
        domain_id: "d".into(),
        strategy: GroupStrategy::Get,
        new_id: "unused".into(),
    }
}

fn expiring(groups: &[&str], idp: &str, at: i64, until: i64) -> Command {
    Command::Shadow(ShadowCommand::ExpiringLogin {
        user: Box::new(user("u", "alice", "d")),
        groups: groups.iter().map(|g| get(g)).collect(),
        idp_id: idp.into(),
        at,
        expires_at: until,
    })
}

fn permanent(groups: &[&str]) -> Command {
    Command::Shadow(ShadowCommand::LocalLogin {
        user: Box::new(user("u", "alice", "d")),
        groups: groups.iter().map(|g| get(g)).collect(),
    })
}

fn held(w: &World) -> Vec<(String, String, i64)> {
    let mut v: Vec<_> = w
        .engine
        .read()
        .expiring_memberships_of_user("u")
        .unwrap()
        .into_iter()
        .map(|m| (m.group_id, m.idp_id, m.expires_at))
        .collect();
    v.sort();
    v
}

fn by_group(w: &World, g: &str) -> Vec<ExpiringMembership> {
    w.engine.read().expiring_members_of_group(g).unwrap()
}

#[test]
fn a_login_grants_memberships_until_its_end_and_no_permanent_one() {
    let w = world();
    w.apply(expiring(&["g1", "g2"], "idp", 100, 1_000)).unwrap();
    let v = w.engine.read();
    assert!(v.user("u").unwrap().is_some(), "the user is created");
    assert_eq!(held(&w), vec![("g1".into(), "idp".into(), 1_000), ("g2".into(), "idp".into(), 1_000)]);
    assert_eq!(by_group(&w, "g1")[0].user_id, "u", "kept by group too");
    assert!(!v.is_member("g1", "u").unwrap() && v.synced_groups("u").unwrap().is_empty());
    // The readers count them until their end, and not from then on.
    assert_eq!(groups::ids_of_user(&v, "u", 999).unwrap(), vec!["g1".to_string(), "g2".into()]);
    assert_eq!(groups::of_user(&v, "u", 999).unwrap()[0].1, Some(1_000));
    assert!(groups::is_member(&v, "g2", "u", 999).unwrap());
    assert!(groups::ids_of_user(&v, "u", 1_000).unwrap().is_empty());
    assert!(!groups::is_member(&v, "g2", "u", 1_000).unwrap());
}

#[test]
fn a_later_login_moves_the_end_and_ends_what_the_provider_no_longer_grants() {
    let w = world();
    w.apply(expiring(&["g1", "g2"], "idp", 100, 1_000)).unwrap();
    // Another provider's membership is its own business, until it is over.
    w.apply(expiring(&["g3"], "other", 150, 1_100)).unwrap();
    w.apply(expiring(&["g1"], "idp", 200, 2_000)).unwrap();
    assert_eq!(held(&w), vec![("g1".into(), "idp".into(), 2_000), ("g3".into(), "other".into(), 1_100)]);
    assert!(by_group(&w, "g2").is_empty(), "both keys go");
    // Past its end, any login drops it.
    w.apply(expiring(&["g1"], "idp", 1_500, 3_000)).unwrap();
    assert_eq!(held(&w), vec![("g1".into(), "idp".into(), 3_000)]);
    assert!(by_group(&w, "g3").is_empty());
}

#[test]
fn permanent_and_expiring_syncs_replace_each_other_and_leave_an_administrators_membership() {
    let w = world();
    w.apply(permanent(&["g1"])).unwrap();
    w.apply(Command::AddGroupMember { group_id: "g3".into(), user_id: "u".into() }).unwrap();
    // The TTL comes: the permanent sync's membership ends, the administrator's stays.
    w.apply(expiring(&["g2"], "idp", 100, 1_000)).unwrap();
    let v = w.engine.read();
    assert!(!v.is_member("g1", "u").unwrap() && v.is_member("g3", "u").unwrap());
    assert!(v.synced_groups("u").unwrap().is_empty());
    assert_eq!(held(&w), vec![("g2".into(), "idp".into(), 1_000)]);
    // A group held both ways reads as permanent.
    w.apply(expiring(&["g2", "g3"], "idp", 200, 1_000)).unwrap();
    let v = w.engine.read();
    let mut listed = groups::of_user(&v, "u", 300).unwrap();
    listed.sort();
    assert_eq!(listed, vec![("g2".to_string(), Some(1_000)), ("g3".to_string(), None)]);
    // The TTL goes: the permanent sync takes over and the expiring memberships end.
    w.apply(permanent(&["g1"])).unwrap();
    let v = w.engine.read();
    assert!(held(&w).is_empty() && by_group(&w, "g2").is_empty());
    assert!(v.is_member("g1", "u").unwrap() && v.is_member("g3", "u").unwrap());
}

#[test]
fn deleting_the_group_or_the_user_takes_them_along() {
    let w = world();
    w.apply(expiring(&["g1", "g2"], "idp", 100, 1_000)).unwrap();
    w.apply(Command::DeleteGroup { id: "g1".into() }).unwrap();
    assert_eq!(held(&w), vec![("g2".into(), "idp".into(), 1_000)]);
    assert!(by_group(&w, "g1").is_empty());
    w.apply(Command::DeleteUser { id: "u".into(), now: 500 }).unwrap();
    assert!(held(&w).is_empty() && by_group(&w, "g2").is_empty());
    let left = w.engine.read().scan_raw(cf::GROUPS, b"x").unwrap();
    assert!(left.is_empty(), "no expiring entry is left: {left:?}");
}

#[test]
fn a_refused_login_writes_nothing() {
    let w = world();
    w.apply(expiring(&["g1"], "idp", 100, 1_000)).unwrap();
    let before = w.engine.read().scan_raw(cf::GROUPS, b"").unwrap();
    // An end not after the login, and a group that must exist and does not.
    assert!(matches!(w.apply(expiring(&["g2"], "idp", 200, 200)), Err(ApplyError::Invalid(_))));
    let r = w.apply(expiring(&["g2", "nope"], "idp", 200, 5_000));
    assert!(matches!(r, Err(ApplyError::Detailed { status: 403, .. })), "{r:?}");
    assert_eq!(w.engine.read().scan_raw(cf::GROUPS, b"").unwrap(), before);
}
