//! Passkeys' apply invariants, against a real engine.

use crate::state::apply::tests::{project, user, World};
use crate::state::command::{Applied, ApplyError, Command};
use crate::state::passkeys::*;
use crate::state::read::PasskeyReads;
use crate::state::{cf, Reader};

fn p(c: PasskeyCommand) -> Command {
    Command::Passkeys(c)
}

fn world() -> World {
    let w = World::new();
    w.apply(Command::CreateProject(project("d", "Dom", "d", true))).unwrap();
    w.apply(Command::CreateUser(user("u", "alice", "d"))).unwrap();
    w.apply(Command::CreateUser(user("v", "bob", "d"))).unwrap();
    w
}

fn start(w: &World, challenge: &str, user_id: &str, purpose: Purpose, expires_at: i64) {
    let ceremony =
        Ceremony { user_id: user_id.into(), purpose, state: "{}".into(), decoy: false, description: None, expires_at };
    w.apply(p(PasskeyCommand::Start { challenge: challenge.into(), ceremony, at: 0 })).unwrap();
}

fn passkey(id: &str, user_id: &str, cred: &str) -> Box<StoredPasskey> {
    Box::new(StoredPasskey {
        id: id.into(),
        user_id: user_id.into(),
        description: None,
        credential_id: cred.into(),
        credential: "{}".into(),
        counter: 0,
        backup_eligible: false,
        backup_state: false,
        created_at: 1,
        last_used_at: None,
    })
}

fn proof(passkey_id: &str, counter: u32) -> LoginProof {
    LoginProof {
        passkey_id: passkey_id.into(),
        counter,
        backup_eligible: false,
        backup_state: false,
        credential: format!("{{\"counter\":{counter}}}"),
    }
}

fn login(w: &World, challenge: &str, user_id: &str, proof: LoginProof, at: i64) -> Result<Applied, ApplyError> {
    w.apply(p(PasskeyCommand::Login { challenge: challenge.into(), user_id: user_id.into(), proof, at }))
}

fn all_keys(w: &World) -> Vec<Vec<u8>> {
    w.engine.read().scan_prefix(cf::PASSKEYS, b"", usize::MAX).unwrap().into_iter().map(|(k, _)| k).collect()
}

fn register(w: &World) {
    start(w, "r1", "u", Purpose::Register, 100);
    w.apply(p(PasskeyCommand::Register { challenge: "r1".into(), passkey: passkey("k1", "u", "cred1"), at: 5 }))
        .unwrap();
}

#[test]
fn a_registration_spends_its_ceremony_and_claims_the_credential_id() {
    let w = world();
    register(&w);
    assert!(w.engine.read().get_raw(cf::PASSKEYS, &keys::ceremony("r1")).unwrap().is_none(), "spent");
    // The same ceremony again, another user's ceremony, a login ceremony: all refused.
    let again =
        w.apply(p(PasskeyCommand::Register { challenge: "r1".into(), passkey: passkey("k2", "u", "c2"), at: 6 }));
    assert!(matches!(again, Err(ApplyError::Invalid(_))), "{again:?}");
    start(&w, "r2", "v", Purpose::Register, 100);
    let other =
        w.apply(p(PasskeyCommand::Register { challenge: "r2".into(), passkey: passkey("k2", "u", "c2"), at: 6 }));
    assert!(matches!(other, Err(ApplyError::Invalid(_))), "bound to v: {other:?}");
    // A credential id registered already (to anyone) is refused, and the ceremony survives.
    let before = all_keys(&w);
    let dup =
        w.apply(p(PasskeyCommand::Register { challenge: "r2".into(), passkey: passkey("k3", "v", "cred1"), at: 6 }));
    assert!(matches!(dup, Err(ApplyError::Conflict(_))), "{dup:?}");
    assert_eq!(all_keys(&w), before, "a refusal writes nothing");
}

#[test]
fn logins_need_a_live_ceremony_the_passkey_and_a_growing_counter() {
    let w = world();
    register(&w);
    start(&w, "l1", "u", Purpose::Login, 100);
    start(&w, "l2", "u", Purpose::Login, 100);
    start(&w, "l3", "u", Purpose::Login, 100);
    assert!(login(&w, "l1", "u", proof("k1", 3), 10).is_ok());
    // Replayed challenge.
    assert!(login(&w, "l1", "u", proof("k1", 4), 10).is_err());
    // Counter regression (and standing still) is refused with the cloning reason, writing nothing.
    let before = all_keys(&w);
    for c in [3, 2] {
        match login(&w, "l2", "u", proof("k1", c), 11) {
            Err(ApplyError::Invalid(m)) => assert_eq!(m, CLONED),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(all_keys(&w), before);
    let stored: StoredPasskey = w.engine.read().get_t(cf::PASSKEYS, &keys::passkey("u", "k1")).unwrap().unwrap();
    assert_eq!((stored.counter, stored.last_used_at), (3, Some(10)));
    // Expired, or for another user.
    assert!(login(&w, "l2", "u", proof("k1", 5), 100).is_err(), "expired");
    assert!(login(&w, "l2", "v", proof("k1", 5), 11).is_err(), "bound to u");
    // Backup eligibility must not change.
    let mut be = proof("k1", 5);
    be.backup_eligible = true;
    assert!(login(&w, "l2", "u", be, 11).is_err());
    assert!(login(&w, "l2", "u", proof("k1", 5), 11).is_ok());
    // A disabled user, then a removed passkey.
    let mut u = w.engine.read().user("u").unwrap().unwrap();
    u.enabled = false;
    w.apply(Command::UpdateUser(u.clone())).unwrap();
    assert!(login(&w, "l3", "u", proof("k1", 9), 12).is_err(), "disabled");
    u.enabled = true;
    w.apply(Command::UpdateUser(u)).unwrap();
    w.apply(p(PasskeyCommand::Delete { user_id: "u".into(), passkey_id: "k1".into() })).unwrap();
    assert!(login(&w, "l3", "u", proof("k1", 9), 12).is_err(), "removed");
    assert!(w.engine.read().get_raw(cf::PASSKEYS, &keys::credential("cred1")).unwrap().is_none());
}

#[test]
fn counters_that_stay_zero_are_accepted_and_decoys_never_finish() {
    let w = world();
    register(&w);
    start(&w, "l1", "u", Purpose::Login, 100);
    start(&w, "l2", "u", Purpose::Login, 100);
    assert!(login(&w, "l1", "u", proof("k1", 0), 10).is_ok());
    assert!(login(&w, "l2", "u", proof("k1", 0), 10).is_ok(), "an authenticator without a counter");
    // A decoy (what a user without passkeys gets) never finishes, even naming a real passkey.
    let decoy = Ceremony {
        user_id: "u".into(),
        purpose: Purpose::Login,
        state: "{}".into(),
        decoy: true,
        description: None,
        expires_at: 100,
    };
    w.apply(p(PasskeyCommand::Start { challenge: "d1".into(), ceremony: decoy, at: 0 })).unwrap();
    assert!(login(&w, "d1", "u", proof("k1", 1), 10).is_err());
}

#[test]
fn expired_ceremonies_are_pruned_and_a_deleted_user_takes_its_passkeys() {
    let w = world();
    register(&w);
    start(&w, "old", "u", Purpose::Login, 50);
    let c = Ceremony {
        user_id: "u".into(),
        purpose: Purpose::Login,
        state: "{}".into(),
        decoy: false,
        description: None,
        expires_at: 500,
    };
    w.apply(p(PasskeyCommand::Start { challenge: "new".into(), ceremony: c, at: 60 })).unwrap();
    let read = w.engine.read();
    assert!(read.get_raw(cf::PASSKEYS, &keys::ceremony("old")).unwrap().is_none());
    assert!(read.get_raw(cf::PASSKEYS, &keys::expiry(50, "old")).unwrap().is_none());
    assert!(read.get_raw(cf::PASSKEYS, &keys::ceremony("new")).unwrap().is_some());
    drop(read);
    w.apply(Command::DeleteUser { id: "u".into(), now: 70 }).unwrap();
    let left: Vec<_> = all_keys(&w).into_iter().filter(|k| !k.starts_with(b"w/") && !k.starts_with(b"x/")).collect();
    assert!(left.is_empty(), "{left:?}");
}

fn delete(w: &World, user_id: &str, passkey_id: &str) -> Result<Applied, ApplyError> {
    w.apply(p(PasskeyCommand::Delete { user_id: user_id.into(), passkey_id: passkey_id.into() }))
}

/// `u` (no password) with passkeys `k1` and `k2`, at cluster version 15.
fn two_passkeys() -> World {
    let w = world();
    w.at_cluster_version(crate::state::apply::SELF_SERVICE_VERSION);
    register(&w);
    start(&w, "r2", "u", Purpose::Register, 100);
    w.apply(p(PasskeyCommand::Register { challenge: "r2".into(), passkey: passkey("k2", "u", "cred2"), at: 6 }))
        .unwrap();
    w
}

#[test]
fn the_last_passkey_of_a_user_without_a_password_stays() {
    let w = two_passkeys();
    // Two removals, as two members would propose them at once: apply takes them in log
    // order, and only the first passes.
    assert!(delete(&w, "u", "k1").is_ok());
    let before = all_keys(&w);
    match delete(&w, "u", "k2") {
        Err(ApplyError::Conflict(m)) => assert_eq!(m, LAST_PASSKEY),
        other => panic!("{other:?}"),
    }
    assert_eq!(all_keys(&w), before, "a refusal writes nothing");
    // With a password the last one goes.
    let mut u = w.engine.read().user("u").unwrap().unwrap();
    u.password_hash = Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into());
    w.apply(Command::UpdateUser(u)).unwrap();
    assert!(delete(&w, "u", "k2").is_ok());
    assert!(w.engine.read().passkeys_of_user("u").unwrap().is_empty());
}

#[test]
fn before_cluster_version_15_the_last_passkey_goes_as_it_did() {
    let w = world();
    register(&w);
    assert!(delete(&w, "u", "k1").is_ok(), "older members remove it: every replica must too");
}

#[test]
fn a_rename_changes_only_the_description_of_the_users_own_passkey() {
    let w = two_passkeys();
    let rename = |user_id: &str, passkey_id: &str, d: &str| {
        w.apply(p(PasskeyCommand::Rename {
            user_id: user_id.into(),
            passkey_id: passkey_id.into(),
            description: d.into(),
        }))
    };
    let before: StoredPasskey = w.engine.read().passkey("u", "k1").unwrap().unwrap();
    let Ok(Applied::Passkeys(PasskeyApplied::Passkey(after))) = rename("u", "k1", "Work laptop") else { panic!() };
    assert_eq!(after.description.as_deref(), Some("Work laptop"));
    assert_eq!(
        StoredPasskey { description: before.description.clone(), ..*after.clone() },
        before,
        "nothing else moves"
    );
    assert_eq!(w.engine.read().passkey("u", "k1").unwrap().unwrap(), *after);
    let pairs = || w.engine.read().scan_prefix(cf::PASSKEYS, b"", usize::MAX).unwrap();
    let stored = pairs();
    assert!(matches!(rename("v", "k1", "x"), Err(ApplyError::NotFound { .. })), "another user's");
    assert!(matches!(rename("u", "nope", "x"), Err(ApplyError::NotFound { .. })));
    for bad in ["", " padded ", &"x".repeat(256)] {
        assert!(matches!(rename("u", "k1", bad), Err(ApplyError::Invalid(_))), "{bad:?}");
    }
    assert_eq!(pairs(), stored, "refusals write nothing");
    assert!(rename("u", "k1", &"é".repeat(255)).is_ok(), "255 characters, not bytes");
}

#[test]
fn renames_need_cluster_version_15() {
    let cmd = p(PasskeyCommand::Rename { user_id: "u".into(), passkey_id: "k".into(), description: "d".into() });
    assert_eq!(crate::state::apply::required_version(&cmd), crate::state::apply::SELF_SERVICE_VERSION);
    let delete = p(PasskeyCommand::Delete { user_id: "u".into(), passkey_id: "k".into() });
    assert_eq!(crate::state::apply::required_version(&delete), 3);
}
