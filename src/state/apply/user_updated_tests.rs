//! When a user's information last changed, as apply records it: from the entry's own time,
//! alike on every replica, only for changes that show, never for a refusal.

use super::USER_UPDATED_VERSION;
use crate::state::apply::tests::{project, user, World};
use crate::state::cf;
use crate::state::command::{ApplyError, Command, UserPatch};
use crate::state::keys;
use crate::state::providers::{keys as provider_keys, ProviderKind};
use crate::state::read::IdentityReads;
use crate::state::scim::{Expect, Kind, RealmRef, ScimCommand, ScimRealm, UserFields};
use crate::state::Reader;

/// Domain `d` with user `u` (`alice`, created at 1), applying at cluster `version`.
fn world(version: u32) -> World {
    let w = World::new();
    w.at_cluster_version(version);
    w.apply(Command::CreateProject(project("d", "D", "d", true))).unwrap();
    w.apply(Command::CreateUser(user("u", "alice", "d"))).unwrap();
    w
}

/// The update time as readers see it.
fn updated(w: &World, id: &str) -> i64 {
    let v = w.engine.read();
    let u = v.user(id).unwrap().expect("the user");
    v.user_updated_at(&u).unwrap()
}

/// The recorded time, if any.
fn stored(w: &World, id: &str) -> Option<i64> {
    Reader::get(&w.engine.read(), cf::PASSWORDS, &keys::user_updated(id)).unwrap()
}

fn patch(p: UserPatch) -> Command {
    Command::PatchUser(UserPatch { id: "u".into(), ..p })
}

fn rename(name: &str, now: i64) -> Command {
    patch(UserPatch { name: Some(name.into()), now, ..UserPatch::default() })
}

#[test]
fn a_rename_records_the_entrys_time_alike_on_every_replica() {
    let (a, b) = (world(USER_UPDATED_VERSION), world(USER_UPDATED_VERSION));
    assert_eq!((stored(&a, "u"), updated(&a, "u")), (None, 1), "never changed: the creation time");
    for w in [&a, &b] {
        w.apply(rename("alicia", 5_000_000)).unwrap();
    }
    assert_eq!((updated(&a, "u"), updated(&b, "u")), (5_000_000, 5_000_000), "the command's time on both");
    assert_eq!(a.engine.read().user("u").unwrap().map(|u| u.created_at), Some(1), "the creation time stays");
    let email = Some(r#"{"email":"a@example.org"}"#.to_string());
    a.apply(patch(UserPatch { extra: email, now: 7_000_000, ..UserPatch::default() })).unwrap();
    assert_eq!(updated(&a, "u"), 7_000_000, "a new e-mail address");
    a.apply(rename("ali", 6_000_000)).unwrap();
    assert_eq!(updated(&a, "u"), 7_000_000, "a command stamped earlier never moves it back");
    a.apply(Command::DeleteUser { id: "u".into(), now: 8_000_000 }).unwrap();
    assert_eq!(stored(&a, "u"), None, "it goes with the user");
}

#[test]
fn a_refused_or_invisible_change_records_nothing() {
    let w = world(USER_UPDATED_VERSION);
    w.apply(Command::CreateUser(user("v", "bob", "d"))).unwrap();
    let taken = w.apply(rename("BOB", 5_000_000));
    assert!(matches!(taken, Err(ApplyError::Conflict(_))), "{taken:?}");
    let later_refused = w.apply(Command::All(vec![rename("alicia", 5_000_000), rename("BOB", 5_000_000)]));
    assert!(later_refused.is_err(), "{later_refused:?}");
    assert_eq!(stored(&w, "u"), None, "a refusal writes nothing");
    w.apply(rename("alice", 6_000_000)).unwrap();
    assert_eq!(stored(&w, "u"), None, "the same name is no change");
    w.apply(patch(UserPatch { password_hash: Some(Some("h".into())), now: 7_000_000, ..UserPatch::default() }))
        .unwrap();
    assert_eq!(stored(&w, "u"), None, "a password is not the user's information");
}

#[test]
fn before_cluster_version_16_nothing_is_recorded() {
    let w = world(USER_UPDATED_VERSION - 1);
    w.apply(rename("alicia", 5_000_000)).unwrap();
    assert_eq!((stored(&w, "u"), updated(&w, "u")), (None, 1), "an older member records nothing either");
}

#[test]
fn scim_writes_record_their_time() {
    let w = world(USER_UPDATED_VERSION);
    // The realm's identity provider (apply only checks that it is registered).
    let mut batch = w.engine.batch();
    batch.put(cf::PROVIDERS, provider_keys::record(ProviderKind::Oidc, "idp"), &[]);
    w.engine.write(batch, false).unwrap();
    let realm = ScimRealm {
        domain_id: "d".into(),
        provider_id: "corp".into(),
        idp_id: "idp".into(),
        display_name: "Corp".into(),
        enabled: true,
        created_at: 1,
        updated_at: 1,
    };
    w.apply(Command::Scim(ScimCommand::PutRealm { realm: Box::new(realm), create: true })).unwrap();
    let r = RealmRef { domain_id: "d".into(), provider_id: "corp".into() };
    let put = |fields: UserFields, expect: Expect, at: i64| {
        Command::Scim(ScimCommand::PutUser { realm: r.clone(), id: "s".into(), fields: Box::new(fields), expect, at })
    };
    let sam = UserFields { user_name: Some("sam".into()), external_id: Some("x".into()), ..UserFields::default() };
    w.apply(put(sam, Expect::Create, 2_000_000)).unwrap();
    assert_eq!((stored(&w, "s"), updated(&w, "s")), (None, 2_000_000), "created: the creation time");
    let change = Expect::Change { if_match: None };
    let email = UserFields { email: Some(Some("sam@example.org".into())), ..UserFields::default() };
    w.apply(put(email.clone(), change, 3_000_000)).unwrap();
    assert_eq!(updated(&w, "s"), 3_000_000, "a PATCH");
    w.apply(put(email, change, 4_000_000)).unwrap();
    assert_eq!(updated(&w, "s"), 3_000_000, "the same values again show no change");
    let gone = ScimCommand::Deprovision { realm: r.clone(), kind: Kind::User, id: "s".into(), at: 5_000_000 };
    w.apply(Command::Scim(gone)).unwrap();
    assert_eq!(updated(&w, "s"), 5_000_000, "deprovisioned: disabled");
}
