//! `Command::Import` as apply judges it: each record alone, a refusal writing nothing of its
//! own while the rest of the batch lands, nothing stored ever overwritten, and a second run of
//! the same records changing nothing.

use crate::state::apply::tests::{project, role, user, World};
use crate::state::command::{Applied, Command};
use crate::state::import::{ImportOutcome, ImportRecord};
use crate::state::keys::ns;
use crate::state::model::{ActorKind, Assignment, PasswordState, Revocation, Target};
use crate::state::read::{AssignmentReads, IdentityReads, TokenReads};
use crate::state::Reader;

fn outcomes(w: &World, records: Vec<ImportRecord>) -> Vec<ImportOutcome> {
    match w.apply(Command::Import { records }) {
        Ok(Applied::Imported(o)) => o,
        other => panic!("an import batch is never refused as a whole: {other:?}"),
    }
}

fn conflict(o: &ImportOutcome) -> &str {
    match o {
        ImportOutcome::Conflict(why) => why,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

fn source() -> Vec<ImportRecord> {
    let history = PasswordState {
        history: vec!["$2b$04$old".into(), "$2b$04$new".into()],
        set_at: 5,
        self_service: false,
        failures: 2,
        last_failure_at: 7,
    };
    vec![
        ImportRecord::Project(project("d", "D", "d", true)),
        ImportRecord::Project(project("p", "P", "d", false)),
        ImportRecord::User { user: user("u", "alice", "d"), password: Some(history) },
        ImportRecord::Role(role("r", "member")),
        ImportRecord::Grant(Assignment {
            actor_kind: ActorKind::User,
            actor_id: "u".into(),
            target: Target::Project("p".into()),
            role_id: "r".into(),
            inherited: false,
        }),
        ImportRecord::Revocation {
            audit_id: "audit-1".into(),
            revocation: Revocation { expires_at: 99, revoked_at: 1 },
        },
    ]
}

#[test]
fn records_move_with_their_ids_and_a_second_run_changes_nothing() {
    let w = World::new();
    assert!(outcomes(&w, source()).iter().all(|o| *o == ImportOutcome::Imported));
    let view = w.engine.read();
    assert_eq!(view.user("u").unwrap().unwrap().name, "alice");
    assert_eq!(view.password_state("u").unwrap().unwrap().failures, 2);
    assert_eq!(view.id_by_name(ns::USER_NAME, "d", "alice").unwrap().as_deref(), Some("u"));
    assert_eq!(view.assignments_of_actor(ActorKind::User, "u").unwrap().len(), 1);
    assert!(view.audit_id_revoked("audit-1").unwrap());
    drop(view);
    // The user changed since (a login replaced its hash): still the same user, left alone.
    let mut changed = w.engine.read().user("u").unwrap().unwrap();
    changed.password_hash = Some("$argon2id$now".into());
    w.apply(Command::UpdateUser(changed)).unwrap();
    assert!(outcomes(&w, source()).iter().all(|o| *o == ImportOutcome::Present));
    assert_eq!(w.engine.read().user("u").unwrap().unwrap().password_hash.as_deref(), Some("$argon2id$now"));
}

#[test]
fn a_conflict_writes_nothing_of_its_own_and_the_batch_goes_on() {
    let w = World::new();
    w.apply(Command::CreateProject(project("d", "D", "d", true))).unwrap();
    w.apply(Command::CreateUser(user("mine", "alice", "d"))).unwrap();
    let records = vec![
        // The name is taken by another id.
        ImportRecord::User { user: user("theirs", "alice", "d"), password: None },
        // The id is held by a different user.
        ImportRecord::User { user: user("mine", "bob", "d"), password: None },
        // A reference is missing.
        ImportRecord::User { user: user("lost", "carol", "nowhere"), password: None },
        ImportRecord::User { user: user("fine", "dave", "d"), password: None },
    ];
    let o = outcomes(&w, records);
    assert!(conflict(&o[0]).contains("Duplicate entry found with name alice"), "{o:?}");
    assert!(conflict(&o[1]).contains("already held by a different user"), "{o:?}");
    assert!(conflict(&o[2]).contains("nowhere"), "{o:?}");
    assert_eq!(o[3], ImportOutcome::Imported);
    let view = w.engine.read();
    assert!(view.user("theirs").unwrap().is_none() && view.user("lost").unwrap().is_none());
    assert_eq!(view.user("mine").unwrap().unwrap().name, "alice", "never overwritten");
    assert_eq!(view.id_by_name(ns::USER_NAME, "d", "bob").unwrap(), None, "a refused record left no index entry");
    assert!(view.user("fine").unwrap().is_some());
}

#[test]
fn an_import_is_not_part_of_a_compound_command() {
    let w = World::new();
    let all = Command::All(vec![Command::Import { records: source() }]);
    assert!(w.apply(all).is_err());
    assert!(w.engine.read().domain("d").unwrap().is_none());
}

#[test]
fn an_expiring_membership_moves_as_it_was_and_needs_its_group_and_user() {
    use crate::state::model::{ExpiringMembership, Group};
    let w = World::new();
    let mut records = source();
    let group =
        Group { id: "g".into(), name: "g".into(), domain_id: "d".into(), description: None, extra: "{}".into() };
    records.push(ImportRecord::Group(group));
    let m = |group: &str| ExpiringMembership {
        group_id: group.into(),
        user_id: "u".into(),
        idp_id: "idp".into(),
        last_verified: 10,
        expires_at: 20,
    };
    records.push(ImportRecord::ExpiringMember(m("g")));
    records.push(ImportRecord::ExpiringMember(m("missing")));
    let o = outcomes(&w, records.clone());
    assert_eq!(o[o.len() - 2], ImportOutcome::Imported);
    assert!(conflict(&o[o.len() - 1]).contains("missing"), "{o:?}");
    assert_eq!(w.engine.read().expiring_memberships_of_user("u").unwrap(), vec![m("g")]);
    assert_eq!(outcomes(&w, records)[o.len() - 2], ImportOutcome::Present);
}
