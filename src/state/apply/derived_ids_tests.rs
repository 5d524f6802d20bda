//! The new derivation of user ids and the migration that keeps the old one's users reachable.

use idnode_storage::Engine;

use super::super::apply_to;
use super::super::tests::{project, user, World};
use crate::state::cf;
use crate::state::command::{Applied, Command};
use crate::state::derived_ids::{keys, progress, resolve_derived_user};
use crate::state::scim::{derived_user_id, legacy_derived_user_id, DerivedBy};
use crate::state::shadow::ShadowCommand;
use crate::state::Reader;
use crate::testkit::fixtures::legacy_login;

fn login_old_way(w: &World, domain: &str, idp: &str, subject: &str) -> String {
    let u = legacy_login(domain, idp, subject);
    let cmd = Command::Shadow(ShadowCommand::LocalLogin { user: Box::new(u.clone()), groups: vec![] });
    assert!(matches!(w.apply(cmd), Ok(Applied::User(_))));
    u.id
}

fn migrate(w: &World, batch: u32) -> usize {
    let mut n = 0;
    while !progress(&w.engine.read()).unwrap().done {
        w.apply(Command::MigrateDerivedUserIds { batch }).unwrap();
        n += 1;
        assert!(n < 100, "the migration does not end");
    }
    n
}

fn scim_cf(engine: &Engine) -> Vec<(Vec<u8>, Vec<u8>)> {
    engine.read().scan_range(cf::SCIM, b"", None, usize::MAX).unwrap()
}

fn resolve(w: &World, domain: &str, idp: &str, subject: &str) -> String {
    resolve_derived_user(&w.engine.read(), domain, idp, subject).unwrap()
}

#[test]
fn every_part_is_separated_and_the_provider_counts() {
    // The old derivation ran the parts together: "d" "user" "userx" = "duser" "user" "x".
    assert_eq!(legacy_derived_user_id("d", "userx"), legacy_derived_user_id("duser", "x"));
    assert_ne!(
        derived_user_id(DerivedBy::Mapped, "d", "p", "userx"),
        derived_user_id(DerivedBy::Mapped, "duser", "p", "x")
    );
    let d = |by, dom: &str, p: &str, s: &str| derived_user_id(by, dom, p, s);
    assert_ne!(d(DerivedBy::Mapped, "ab", "p", "c"), d(DerivedBy::Mapped, "a", "bp", "c"));
    assert_ne!(d(DerivedBy::Mapped, "d", "ab", "c"), d(DerivedBy::Mapped, "d", "a", "bc"));
    assert_ne!(d(DerivedBy::Mapped, "d", "idp1", "alice"), d(DerivedBy::Mapped, "d", "idp2", "alice"));
    assert_ne!(d(DerivedBy::Scim, "d", "okta", "alice"), d(DerivedBy::Mapped, "d", "okta", "alice"));
    let id = d(DerivedBy::Mapped, "d", "idp1", "alice");
    assert_eq!(id.len(), 64);
    assert_ne!(id, legacy_derived_user_id("d", "alice"));
}

#[test]
fn two_providers_with_one_subject_get_two_users() {
    let w = World::new();
    w.apply(Command::CreateProject(project("d", "corp", "d", true))).unwrap();
    let first = resolve(&w, "d", "idp1", "alice");
    let mut u = user(&first, "alice-1", "d");
    u.federated = legacy_login("d", "idp1", "alice").federated;
    w.apply(Command::CreateUser(u)).unwrap();
    assert_eq!(resolve(&w, "d", "idp1", "alice"), first, "found again");
    let second = resolve(&w, "d", "idp2", "alice");
    assert_ne!(second, first, "another provider's equal subject is another user");
    assert!(w.engine.read().user(&second).unwrap().is_none());
}

#[test]
fn users_of_the_old_derivation_stay_reachable_through_the_migration() {
    let w = World::new();
    w.apply(Command::CreateProject(project("d", "corp", "d", true))).unwrap();
    let alice = login_old_way(&w, "d", "idp1", "alice");
    let bob = login_old_way(&w, "d", "idp1", "bob");
    let carol = login_old_way(&w, "d", "idp2", "carol");
    // A user the old derivation did not make (an administrator's) gets no alias.
    w.apply(Command::CreateUser(user("admin-id", "admin", "d"))).unwrap();

    // Before the migration: found as the migration will find them.
    assert_eq!(resolve(&w, "d", "idp1", "alice"), alice);
    assert_eq!(resolve(&w, "d", "idp2", "carol"), carol);
    // The provider the user is not federated to never reached it through its subject alone.
    assert_ne!(resolve(&w, "d", "idp2", "alice"), alice);

    let batches = migrate(&w, 1);
    assert_eq!(batches, 5, "one user per batch, and the batch that finds the end");
    assert_eq!(resolve(&w, "d", "idp1", "alice"), alice);
    assert_eq!(resolve(&w, "d", "idp1", "bob"), bob);
    assert_eq!(resolve(&w, "d", "idp2", "carol"), carol);
    assert_ne!(resolve(&w, "d", "idp2", "alice"), alice);
    assert_ne!(resolve(&w, "d", "idp1", "carol"), carol);
    let new_alice = derived_user_id(DerivedBy::Mapped, "d", "idp1", "alice");
    let alias = Reader::get::<String>(&w.engine.read(), cf::SCIM, &keys::alias(&new_alice)).unwrap();
    assert_eq!(alias, Some(alice.clone()));

    // Idempotent: once done, another command changes nothing.
    let before = scim_cf(&w.engine);
    assert!(matches!(w.apply(Command::MigrateDerivedUserIds { batch: 1000 }), Ok(Applied::Done)));
    assert_eq!(scim_cf(&w.engine), before);

    // After the migration the old derivation is never consulted: a user written under it
    // now (as an old binary would) is not what a login finds.
    let dave = login_old_way(&w, "d", "idp1", "dave");
    assert_ne!(resolve(&w, "d", "idp1", "dave"), dave);
}

/// Replicas that group the same entries into batches differently end identical.
#[test]
fn replicas_batching_differently_end_identical() {
    let cmds = || {
        let mut v = vec![Command::CreateProject(project("d", "corp", "d", true))];
        for s in ["a", "b", "c", "e"] {
            let u = legacy_login("d", "idp1", s);
            v.push(Command::Shadow(ShadowCommand::LocalLogin { user: Box::new(u), groups: vec![] }));
        }
        v.push(Command::MigrateDerivedUserIds { batch: 2 });
        v.push(Command::Shadow(ShadowCommand::LocalLogin {
            user: Box::new(legacy_login("d", "idp1", "f")),
            groups: vec![],
        }));
        v.push(Command::MigrateDerivedUserIds { batch: 2 });
        v.push(Command::MigrateDerivedUserIds { batch: 2 });
        v.push(Command::MigrateDerivedUserIds { batch: 2 });
        v
    };
    // One entry per batch.
    let a = World::new();
    for c in cmds() {
        a.apply(c).unwrap();
    }
    // Every entry in one batch (as a replica catching up applies a run of entries).
    let b = World::new();
    let mut batch = b.engine.batch();
    for c in cmds() {
        apply_to(&b.engine, &mut batch, c).unwrap().unwrap();
    }
    b.engine.write(batch, false).unwrap();
    assert!(progress(&a.engine.read()).unwrap().done);
    assert_eq!(scim_cf(&a.engine), scim_cf(&b.engine));
    assert!(scim_cf(&a.engine).iter().filter(|(k, _)| k.starts_with(b"a/")).count() >= 4);
}
