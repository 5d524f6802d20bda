//! The OAuth2 provider's apply invariants, against a real engine.

use crate::state::apply::tests::{project, user, World};
use crate::state::command::{Applied, ApplyError, Command};
use crate::state::oauth2::*;
use crate::state::{cf, Reader};

fn key(kid: &str, state: SigningKeyState) -> SigningKey {
    SigningKey {
        kid: kid.into(),
        state,
        pkcs8: vec![1, 2, 3],
        x: "x".into(),
        y: "y".into(),
        created_at: 0,
        retire_at: None,
    }
}

fn client(id: &str) -> Client {
    Client {
        client_id: id.into(),
        domain_id: "d".into(),
        name: "app".into(),
        description: None,
        provider_id: None,
        confidential: true,
        token_endpoint_auth_method: "client_secret_basic".into(),
        grant_types: vec!["authorization_code".into(), "refresh_token".into()],
        redirect_uris: vec!["https://app.example/cb".into()],
        require_pkce: true,
        allowed_scopes: vec!["openid".into()],
        claims_template: Default::default(),
        pre_authorized: false,
        enabled: true,
        secret_hash: Some("h".into()),
        created_at: 0,
        updated_at: 0,
    }
}

fn family(id: &str, current: &str) -> RefreshFamily {
    RefreshFamily {
        id: id.into(),
        domain_id: "d".into(),
        client_id: "c".into(),
        user_id: "u".into(),
        scopes: vec!["openid".into()],
        auth_time: 10,
        created_at: 10,
        expires_at: 10_000,
        current: current.into(),
        spent: vec![],
        revoked_at: None,
    }
}

fn o(c: OAuth2Command) -> Command {
    Command::OAuth2(c)
}

/// A domain `d` with user `u` and client `c`.
fn world() -> World {
    let w = World::new();
    w.apply(Command::CreateProject(project("d", "D", "d", true))).unwrap();
    w.apply(Command::CreateUser(user("u", "alice", "d"))).unwrap();
    w.apply(o(OAuth2Command::PutClient { client: client("c"), create: true })).unwrap();
    w
}

fn code(expires_at: i64) -> AuthCode {
    AuthCode {
        domain_id: "d".into(),
        client_id: "c".into(),
        user_id: "u".into(),
        redirect_uri: "https://app.example/cb".into(),
        scopes: vec!["openid".into()],
        code_challenge: Some("chal".into()),
        nonce: None,
        auth_time: 10,
        expires_at,
        redeemed: None,
    }
}

fn issued(jti: &str, family: Option<&str>) -> Issued {
    Issued { jti: jti.into(), access_exp: 1000, family_id: family.map(str::to_string) }
}

fn revoked(w: &World, jti: &str) -> bool {
    w.engine.read().get_raw(cf::OAUTH2, &keys::revoked_jti("d", jti)).unwrap().is_some()
}

fn stored_family(w: &World, id: &str) -> RefreshFamily {
    Reader::get(&w.engine.read(), cf::OAUTH2, &keys::family(id)).unwrap().unwrap()
}

/// Issuing the code `hash` (`code(100)`), with `consent` recorded.
fn issue(hash: &str, consent: Option<Consent>) -> Command {
    o(OAuth2Command::IssueCode { hash: hash.into(), code: code(100), consent })
}

/// Redeeming the code `hash` as `client` at `at`, minting the access token `jti` and, with
/// `fam`, that refresh family.
fn redeem(hash: &str, client: &str, at: i64, jti: &str, fam: Option<RefreshFamily>) -> Command {
    let issued = issued(jti, fam.as_ref().map(|f| f.id.as_str()));
    o(OAuth2Command::RedeemCode { hash: hash.into(), client_id: client.into(), at, issued, family: fam })
}

/// Presenting `presented` of family `f` (client `c`) at `at` for `next`.
fn refresh(presented: &str, next: &str, at: i64) -> Command {
    let (presented, next) = (presented.into(), next.into());
    o(OAuth2Command::Refresh { family_id: "f".into(), client_id: "c".into(), presented, next, at })
}

/// Disables the user `u` of [`world`].
fn disable_alice(w: &World) {
    let mut u = user("u", "alice", "d");
    u.enabled = false;
    w.apply(Command::UpdateUser(u)).unwrap();
}

#[test]
fn first_key_set_wins_and_rotation_retires_the_primary() {
    let w = world();
    let first = o(OAuth2Command::InstallKeys {
        domain_id: "d".into(),
        primary: key("k1", SigningKeyState::Primary),
        staged: key("k2", SigningKeyState::Staged),
    });
    w.apply(first).unwrap();
    let racing = o(OAuth2Command::InstallKeys {
        domain_id: "d".into(),
        primary: key("k9", SigningKeyState::Primary),
        staged: key("k8", SigningKeyState::Staged),
    });
    let Applied::OAuth2(OAuth2Applied::Keys(set)) = w.apply(racing).unwrap() else { panic!() };
    assert_eq!(set.primary().unwrap().kid, "k1", "the first set stays");
    let rotate = |expected: &str, new: &str, at: i64| {
        o(OAuth2Command::RotateKeys {
            domain_id: "d".into(),
            expected_staged: expected.into(),
            staged: key(new, SigningKeyState::Staged),
            retire_at: at + 100,
            at,
        })
    };
    let Applied::OAuth2(OAuth2Applied::Keys(set)) = w.apply(rotate("k2", "k3", 50)).unwrap() else { panic!() };
    assert_eq!(set.primary().unwrap().kid, "k2");
    assert_eq!(set.staged().unwrap().kid, "k3");
    assert!(set.keys.iter().any(|k| k.kid == "k1" && k.state == SigningKeyState::Retired));
    assert_eq!(set.epoch, 2);
    // A rotation that lost a race changes nothing.
    assert!(matches!(w.apply(rotate("k2", "k4", 60)), Err(ApplyError::Conflict(_))));
    // Once its time is over, a retired key is no longer published.
    let Applied::OAuth2(OAuth2Applied::Keys(set)) = w.apply(rotate("k3", "k5", 500)).unwrap() else { panic!() };
    let kids: Vec<&str> = set.keys.iter().map(|k| k.kid.as_str()).collect();
    assert_eq!(kids, vec!["k2", "k3", "k5"]);
}

#[test]
fn a_code_redeems_once_and_a_replay_revokes_what_it_issued() {
    let w = world();
    w.apply(issue("h1", None)).unwrap();
    let redeem_h1 = |client: &str, at: i64, jti: &str, fam: Option<RefreshFamily>| redeem("h1", client, at, jti, fam);
    assert!(matches!(w.apply(redeem_h1("other", 20, "j0", None)), Err(ApplyError::Invalid(_))));
    let first = w.apply(redeem_h1("c", 20, "j1", Some(family("f1", "r1")))).unwrap();
    assert!(matches!(first, Applied::OAuth2(OAuth2Applied::Redeemed(_))));
    assert!(!revoked(&w, "j1"));
    let second = w.apply(redeem_h1("c", 21, "j2", Some(family("f2", "r2")))).unwrap();
    assert!(matches!(second, Applied::OAuth2(OAuth2Applied::CodeReplayed)));
    assert!(revoked(&w, "j1"), "the first access token is revoked");
    assert_eq!(stored_family(&w, "f1").revoked_at, Some(21), "and its refresh family");
    assert!(w.engine.read().get_raw(cf::OAUTH2, &keys::family("f2")).unwrap().is_none(), "nothing new issued");
}

#[test]
fn an_expired_code_or_a_disabled_user_redeems_nothing() {
    let w = world();
    w.apply(issue("h", None)).unwrap();
    let redeem_at = |at| redeem("h", "c", at, "j", None);
    assert!(matches!(w.apply(redeem_at(100)), Err(ApplyError::Invalid(_))));
    w.apply(issue("h2", None)).unwrap();
    disable_alice(&w);
    let r = redeem("h2", "c", 20, "j", None);
    assert!(matches!(w.apply(r), Err(ApplyError::Invalid(_))));
}

#[test]
fn refresh_rotates_and_a_spent_token_revokes_the_family() {
    let w = world();
    w.apply(redeem("none", "c", 1, "j", None)).unwrap_err();
    w.apply(issue("h", None)).unwrap();
    w.apply(redeem("h", "c", 20, "j1", Some(family("f", "r1")))).unwrap();
    // A guess that was never issued is refused and revokes nothing.
    assert!(matches!(w.apply(refresh("guess", "x", 30)), Err(ApplyError::Invalid(_))));
    let Applied::OAuth2(OAuth2Applied::Family(f)) = w.apply(refresh("r1", "r2", 30)).unwrap() else { panic!() };
    assert_eq!((f.current.as_str(), f.spent.clone()), ("r2", vec!["r1".to_string()]));
    let reused = w.apply(refresh("r1", "r3", 40)).unwrap();
    assert!(matches!(reused, Applied::OAuth2(OAuth2Applied::FamilyReused)));
    assert_eq!(stored_family(&w, "f").revoked_at, Some(40));
    // The current token of a revoked family is refused too.
    assert!(matches!(w.apply(refresh("r2", "r4", 41)), Err(ApplyError::Invalid(_))));
}

#[test]
fn refresh_after_the_absolute_lifetime_or_for_a_disabled_user_fails() {
    let w = world();
    w.apply(issue("h", None)).unwrap();
    w.apply(redeem("h", "c", 20, "j1", Some(family("f", "r1")))).unwrap();
    let refresh_at = |at: i64| refresh("r1", "r2", at);
    assert!(matches!(w.apply(refresh_at(10_000)), Err(ApplyError::Invalid(_))), "absolute lifetime over");
    disable_alice(&w);
    assert!(matches!(w.apply(refresh_at(50)).unwrap(), Applied::OAuth2(OAuth2Applied::FamilyRevoked)));
    assert_eq!(stored_family(&w, "f").revoked_at, Some(50));
}

#[test]
fn device_grant_pending_slow_down_approve_then_issue_once() {
    let w = world();
    let grant = DeviceGrant {
        domain_id: "d".into(),
        client_id: "c".into(),
        scopes: vec!["openid".into()],
        user_code: "BCDFGHJK".into(),
        expires_at: 600,
        interval: 5,
        last_poll: None,
        status: DeviceStatus::Pending,
    };
    w.apply(o(OAuth2Command::StartDevice { hash: "dh".into(), grant })).unwrap();
    let poll = |at: i64, minted: bool| {
        o(OAuth2Command::PollDevice {
            hash: "dh".into(),
            client_id: "c".into(),
            at,
            issued: minted.then(|| issued("j", None)),
            family: None,
        })
    };
    let polled = |at, minted| match w.apply(poll(at, minted)) {
        Ok(Applied::OAuth2(OAuth2Applied::Device(p))) => format!("{p:?}"),
        other => format!("{other:?}"),
    };
    let outcome = |at| polled(at, true);
    assert_eq!(outcome(10), "Pending");
    assert_eq!(outcome(12), "SlowDown { interval: 10 }");
    assert_eq!(outcome(30), "Pending");
    let decide = |approve: Option<(String, i64)>| {
        o(OAuth2Command::DecideDevice {
            domain_id: "d".into(),
            user_code: "BCDFGHJK".into(),
            approve,
            consent: None,
            at: 31,
        })
    };
    w.apply(decide(Some(("u".into(), 31)))).unwrap();
    assert!(w.apply(decide(None)).is_err(), "decided once");
    assert_eq!(polled(40, false), "Pending", "approved after the service read it: nothing minted, nothing spent");
    assert!(outcome(45).starts_with("Issued"));
    assert!(outcome(60).contains("used already"));
    assert_eq!(outcome(600), "Expired");
}

#[test]
fn consent_withdrawal_revokes_the_users_families_of_that_client() {
    let w = world();
    let consent = Consent {
        user_id: "u".into(),
        domain_id: "d".into(),
        client_id: "c".into(),
        scopes: vec!["openid".into()],
        granted_at: 5,
        updated_at: 5,
    };
    w.apply(issue("h", Some(consent.clone()))).unwrap();
    w.apply(o(OAuth2Command::PutConsent(Consent { granted_at: 9, updated_at: 9, ..consent }))).unwrap();
    let stored: Consent = Reader::get(&w.engine.read(), cf::OAUTH2, &keys::consent("u", "c")).unwrap().unwrap();
    assert_eq!((stored.granted_at, stored.updated_at), (5, 9), "granted_at stays");
    w.apply(redeem("h", "c", 20, "j1", Some(family("f", "r1")))).unwrap();
    let delete = || o(OAuth2Command::DeleteConsent { user_id: "u".into(), client_id: "c".into(), at: 30 });
    w.apply(delete()).unwrap();
    assert_eq!(stored_family(&w, "f").revoked_at, Some(30));
    assert!(matches!(w.apply(delete()), Err(ApplyError::NotFound { .. })), "neither left: 404");
}

#[test]
fn expired_records_are_pruned_through_the_expiry_index() {
    let w = world();
    w.apply(o(OAuth2Command::RevokeJti { domain_id: "d".into(), jti: "old".into(), exp: 50, family_id: None, at: 10 }))
        .unwrap();
    w.apply(o(OAuth2Command::RevokeJti {
        domain_id: "d".into(),
        jti: "new".into(),
        exp: 500,
        family_id: None,
        at: 10,
    }))
    .unwrap();
    assert!(revoked(&w, "old"));
    w.apply(o(OAuth2Command::RevokeFamily { family_id: "none".into(), client_id: "c".into(), at: 60 })).unwrap();
    assert!(!revoked(&w, "old"), "pruned after its exp");
    assert!(revoked(&w, "new"));
}

fn device_grant(user_code: &str, expires_at: i64) -> DeviceGrant {
    DeviceGrant {
        domain_id: "d".into(),
        client_id: "c".into(),
        scopes: vec!["openid".into()],
        user_code: user_code.into(),
        expires_at,
        interval: 5,
        last_poll: None,
        status: DeviceStatus::Pending,
    }
}

fn has(w: &World, key: &[u8]) -> bool {
    w.engine.read().get_raw(cf::OAUTH2, key).unwrap().is_some()
}

#[test]
fn starting_a_device_grant_prunes_expired_ones() {
    let w = world();
    w.apply(o(OAuth2Command::StartDevice { hash: "old".into(), grant: device_grant("AAAA2222", 50) })).unwrap();
    assert!(has(&w, &keys::device("old")) && has(&w, &keys::user_code("AAAA2222")));
    // Nothing but device starts arrive: each one still drops what has expired.
    let start = |hash: &str, code: &str, at: i64| {
        o(OAuth2Command::StartDeviceAt { hash: hash.into(), grant: device_grant(code, at + 600), at })
    };
    w.apply(start("mid", "BBBB3333", 40)).unwrap();
    assert!(has(&w, &keys::device("old")), "not expired yet at 40");
    w.apply(start("new", "CCCC4444", 100)).unwrap();
    assert!(!has(&w, &keys::device("old")), "the expired grant is gone");
    assert!(!has(&w, &keys::user_code("AAAA2222")), "its user code too");
    assert!(has(&w, &keys::device("mid")) && has(&w, &keys::device("new")));
    let index = w.engine.read().scan_prefix(cf::OAUTH2, keys::EXPIRY_PREFIX, usize::MAX).unwrap();
    assert_eq!(index.len(), 4, "two index entries per live grant, none left for the pruned one");
    // A start that collides is refused and writes nothing.
    assert!(matches!(w.apply(start("new", "DDDD5555", 110)), Err(ApplyError::Conflict(_))));
    assert!(!has(&w, &keys::user_code("DDDD5555")));
}

#[test]
fn a_client_write_computed_from_an_older_record_loses() {
    let w = world();
    let read = client("c");
    // A secret rotation and an update both read `read`; the rotation lands first.
    let mut rotated = read.clone();
    rotated.secret_hash = Some("h2".into());
    rotated.updated_at = 5;
    w.apply(o(OAuth2Command::ReplaceClient { expected: Box::new(read.clone()), client: Box::new(rotated.clone()) }))
        .unwrap();
    let mut renamed = read.clone();
    renamed.name = "renamed".into();
    renamed.updated_at = 6;
    let stale = o(OAuth2Command::ReplaceClient { expected: Box::new(read.clone()), client: Box::new(renamed.clone()) });
    assert!(matches!(w.apply(stale), Err(ApplyError::Conflict(_))), "the stale update is refused");
    let stored: Client = Reader::get(&w.engine.read(), cf::OAUTH2, &keys::client("d", "c")).unwrap().unwrap();
    assert_eq!(stored, rotated, "the rotated secret stays");
    // Retried from the record as it is now, the update goes through and keeps the new secret.
    let mut retried = rotated.clone();
    retried.name = "renamed".into();
    w.apply(o(OAuth2Command::ReplaceClient { expected: Box::new(rotated), client: Box::new(retried.clone()) }))
        .unwrap();
    let stored: Client = Reader::get(&w.engine.read(), cf::OAUTH2, &keys::client("d", "c")).unwrap().unwrap();
    assert_eq!((stored.name.as_str(), stored.secret_hash.as_deref()), ("renamed", Some("h2")));
    // Another client's record, or a missing one, is not replaced.
    let mut other = retried.clone();
    other.client_id = "other".into();
    let cross =
        o(OAuth2Command::ReplaceClient { expected: Box::new(retried.clone()), client: Box::new(other.clone()) });
    assert!(matches!(w.apply(cross), Err(ApplyError::Invalid(_))));
    let missing = o(OAuth2Command::ReplaceClient { expected: Box::new(other.clone()), client: Box::new(other) });
    assert!(matches!(w.apply(missing), Err(ApplyError::NotFound { .. })));
}

#[test]
fn a_revoked_jti_stays_refused_after_a_prune_on_a_clock_ahead() {
    let w = world();
    w.apply(o(OAuth2Command::RevokeJti { domain_id: "d".into(), jti: "j".into(), exp: 500, family_id: None, at: 10 }))
        .unwrap();
    let refused = |domain: &str, jti: &str, exp: i64| jti_revoked(&w.engine.read(), domain, jti, exp).unwrap();
    assert!(refused("d", "j", 500));
    assert!(!refused("d", "live", 500), "nothing pruned yet: only listed ids are refused");
    // A proposer whose clock is far ahead prunes the id while its token is still live by
    // every other clock: the token stays refused.
    w.apply(o(OAuth2Command::RevokeFamily { family_id: "none".into(), client_id: "c".into(), at: 100_000 })).unwrap();
    assert!(!revoked(&w, "j"), "the id itself was pruned");
    assert!(refused("d", "j", 500), "a still-valid revoked token is not valid again");
    // Tokens expiring later than anything pruned, and other domains, are unaffected.
    assert!(!refused("d", "later", 501));
    assert!(!refused("e", "j", 500));
    // The mark only moves forward.
    w.apply(o(OAuth2Command::RevokeJti { domain_id: "d".into(), jti: "k".into(), exp: 300, family_id: None, at: 10 }))
        .unwrap();
    w.apply(o(OAuth2Command::RevokeFamily { family_id: "none".into(), client_id: "c".into(), at: 100_001 })).unwrap();
    assert!(refused("d", "j", 500));
}

fn last_used(w: &World, id: &str) -> Option<i64> {
    Reader::get(&w.engine.read(), cf::OAUTH2, &keys::family_last_used(id)).unwrap()
}

#[test]
fn a_refresh_records_its_own_time_from_cluster_version_15() {
    let w = world();
    w.apply(issue("h", None)).unwrap();
    w.apply(redeem("h", "c", 20, "j1", Some(family("f", "r1")))).unwrap();
    w.apply(refresh("r1", "r2", 30)).unwrap();
    assert_eq!(last_used(&w, "f"), None, "an older member records nothing: neither does this one");
    w.at_cluster_version(crate::state::apply::SELF_SERVICE_VERSION);
    assert_eq!(last_used(&w, "f"), None, "never refreshed since");
    w.apply(refresh("r2", "r3", 40)).unwrap();
    assert_eq!(last_used(&w, "f"), Some(40), "the command's time");
    w.apply(refresh("r3", "r4", 55)).unwrap();
    assert_eq!(last_used(&w, "f"), Some(55));
    // A refused refresh moves nothing.
    assert!(w.apply(refresh("guess", "r5", 60)).is_err());
    assert_eq!(last_used(&w, "f"), Some(55));
    // Pruned with its family once the family's time is over.
    w.apply(o(OAuth2Command::RevokeFamily { family_id: "none".into(), client_id: "c".into(), at: 10_001 })).unwrap();
    assert!(!has(&w, &keys::family("f")));
    assert_eq!(last_used(&w, "f"), None);
}

/// [`world`] at cluster version 15 with user `v`, client `c2`, and redeemed families: `f`
/// (u, c), `g` (u, c2), `h` (v, c).
fn sessions_world() -> World {
    let w = world();
    w.at_cluster_version(crate::state::apply::SELF_SERVICE_VERSION);
    w.apply(Command::CreateUser(user("v", "bob", "d"))).unwrap();
    w.apply(o(OAuth2Command::PutClient { client: client("c2"), create: true })).unwrap();
    let families = [
        family("f", "rf"),
        RefreshFamily { client_id: "c2".into(), ..family("g", "rg") },
        RefreshFamily { user_id: "v".into(), ..family("h", "rh") },
    ];
    for (i, f) in families.into_iter().enumerate() {
        let hash = format!("code{i}");
        let mut code = code(100);
        (code.client_id, code.user_id) = (f.client_id.clone(), f.user_id.clone());
        w.apply(o(OAuth2Command::IssueCode { hash: hash.clone(), code, consent: None })).unwrap();
        let client = f.client_id.clone();
        w.apply(redeem(&hash, &client, 20, &format!("j{i}"), Some(f))).unwrap();
    }
    w
}

fn end_session(w: &World, user_id: &str, family_id: Option<&str>, at: i64) -> Result<Applied, ApplyError> {
    let family_id = family_id.map(str::to_string);
    w.apply(o(OAuth2Command::RevokeSessions { user_id: user_id.into(), family_id, at }))
}

#[test]
fn ending_a_session_revokes_only_a_live_family_of_that_user() {
    let w = sessions_world();
    let all = || w.engine.read().scan_prefix(cf::OAUTH2, b"", usize::MAX).unwrap();
    let before = all();
    for (user, id) in [("v", "f"), ("u", "h"), ("u", "nope")] {
        assert!(matches!(end_session(&w, user, Some(id), 30), Err(ApplyError::NotFound { .. })), "{user}/{id}");
    }
    assert_eq!(all(), before, "refusals write nothing");
    end_session(&w, "u", Some("f"), 30).unwrap();
    assert_eq!(stored_family(&w, "f").revoked_at, Some(30));
    assert!(w.apply(refresh("rf", "rf2", 31)).is_err(), "its refresh token is dead");
    assert!(matches!(end_session(&w, "u", Some("f"), 32), Err(ApplyError::NotFound { .. })), "ended already");
    assert_eq!(stored_family(&w, "g").revoked_at, None);
    // Past its absolute end a family is no session either.
    assert!(matches!(end_session(&w, "u", Some("g"), 10_000), Err(ApplyError::NotFound { .. })));
    // A family of a deleted client is not listed, nor found.
    w.apply(o(OAuth2Command::DeleteClient { domain_id: "d".into(), client_id: "c2".into() })).unwrap();
    assert!(matches!(end_session(&w, "u", Some("g"), 33), Err(ApplyError::NotFound { .. })));
}

#[test]
fn ending_every_session_leaves_other_users_alone() {
    let w = sessions_world();
    end_session(&w, "u", None, 30).unwrap();
    assert_eq!(stored_family(&w, "f").revoked_at, Some(30));
    assert_eq!(stored_family(&w, "g").revoked_at, Some(30));
    assert_eq!(stored_family(&w, "h").revoked_at, None, "bob's");
    // Nothing left to end is fine, and keeps the first revocation's time.
    end_session(&w, "u", None, 40).unwrap();
    assert_eq!(stored_family(&w, "f").revoked_at, Some(30));
    end_session(&w, "nobody", None, 40).unwrap();
    assert_eq!(
        crate::state::apply::required_version(&o(OAuth2Command::RevokeSessions {
            user_id: "u".into(),
            family_id: None,
            at: 0
        })),
        crate::state::apply::SELF_SERVICE_VERSION
    );
}
