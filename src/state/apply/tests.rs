//! Apply-level invariants, run directly against a real engine.

use std::sync::Arc;

use idnode_keys::{DataKeys, IndexKey};
use idnode_storage::Engine;

use super::apply_to;
use crate::state::cf::STATE_CFS;
use crate::state::command::{Applied, ApplyError, ApplyResult, Command, UserPatch};
use crate::state::keys::ns;
use crate::state::model::*;
use crate::state::Reader;
pub(crate) use crate::testkit::fixtures::{project, role, user};

pub(crate) struct World {
    _dir: tempfile::TempDir,
    pub(crate) engine: Engine,
}

impl World {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        // The raft families too: apply reads the replicated cluster version there.
        let cfs: Vec<&'static str> = idnode_raft::COLUMN_FAMILIES.iter().chain(STATE_CFS).copied().collect();
        let engine = Engine::open(dir.path(), &cfs, Arc::new(DataKeys::ephemeral())).unwrap();
        // The cluster's index key, as bootstrap would have installed it.
        let mut batch = engine.batch();
        crate::state::index_key::put(&mut batch, &IndexKey::generate());
        engine.write(batch, false).unwrap();
        World { _dir: dir, engine }
    }

    /// Disables, then deletes a domain (an enabled domain cannot be deleted).
    fn delete_domain(&self, id: &str) -> ApplyResult {
        let mut d = self.engine.read().domain(id).unwrap().expect("domain exists");
        d.enabled = false;
        self.apply(Command::UpdateProject(d))?;
        self.apply(Command::DeleteProject { id: id.into() })
    }

    /// Sets the replicated cluster version the next entries apply under, as a
    /// `Request::ClusterVersion` entry would (the raft crate's key in its dedup family).
    pub(crate) fn at_cluster_version(&self, version: u32) {
        let mut batch = self.engine.batch();
        batch.put_t(idnode_raft::DEDUP_FAMILY, b"cluster_version", &version).unwrap();
        self.engine.write(batch, false).unwrap();
        let read_back = idnode_raft::applied_cluster_version(&self.engine, &self.engine.batch()).unwrap();
        assert_eq!(read_back, version, "the raft crate keeps the cluster version under another key now");
    }

    pub(crate) fn apply(&self, cmd: Command) -> ApplyResult {
        let mut batch = self.engine.batch();
        let out = apply_to(&self.engine, &mut batch, cmd).unwrap();
        self.engine.write(batch, false).unwrap();
        out
    }
}

#[test]
fn names_are_unique_per_domain_case_insensitively() {
    let w = World::new();
    assert!(w.apply(Command::CreateProject(project("d1", "Dom", "d1", true))).is_ok());
    assert!(w.apply(Command::CreateProject(project("d2", "Other", "d2", true))).is_ok());
    assert!(w.apply(Command::CreateProject(project("p1", "Web", "d1", false))).is_ok());
    let dup = w.apply(Command::CreateProject(project("p2", "WEB", "d1", false)));
    assert!(matches!(dup, Err(ApplyError::Conflict(_))), "{dup:?}");
    assert!(w.apply(Command::CreateProject(project("p3", "web", "d2", false))).is_ok(), "other domain is fine");
    let orphan = w.apply(Command::CreateProject(project("p4", "x", "nope", false)));
    assert!(matches!(orphan, Err(ApplyError::NotFound { .. })));
    assert!(w.engine.read().project("p4").unwrap().is_none(), "refused command wrote nothing");
    assert!(matches!(w.apply(Command::CreateProject(project("d3", "dom", "d3", true))), Err(ApplyError::Conflict(_))));
}

#[test]
fn rename_moves_the_name_index() {
    let w = World::new();
    w.apply(Command::CreateProject(project("d1", "Dom", "d1", true))).unwrap();
    w.apply(Command::CreateUser(user("u1", "alice", "d1"))).unwrap();
    let mut renamed = user("u1", "alicia", "d1");
    renamed.created_at = 99;
    let Ok(Applied::User(u)) = w.apply(Command::UpdateUser(renamed)) else { panic!() };
    assert_eq!(u.created_at, 1, "immutable fields keep their stored value");
    let v = w.engine.read();
    assert_eq!(v.id_by_name(ns::USER_NAME, "d1", "alicia").unwrap().as_deref(), Some("u1"));
    assert_eq!(v.id_by_name(ns::USER_NAME, "d1", "alice").unwrap(), None);
    assert!(w.apply(Command::CreateUser(user("u2", "alice", "d1"))).is_ok(), "old name is free again");
}

#[test]
fn deleting_a_domain_cascades() {
    let w = World::new();
    w.apply(Command::CreateProject(project("d1", "Dom", "d1", true))).unwrap();
    w.apply(Command::CreateProject(project("p1", "Web", "d1", false))).unwrap();
    w.apply(Command::CreateUser(user("u1", "alice", "d1"))).unwrap();
    let enabled = w.apply(Command::DeleteProject { id: "d1".into() });
    assert!(matches!(enabled, Err(ApplyError::Forbidden(_))), "an enabled domain is not deleted: {enabled:?}");
    assert!(w.engine.read().project("p1").unwrap().is_some(), "refused delete wrote nothing");
    w.delete_domain("d1").unwrap();
    let v = w.engine.read();
    assert!(v.project("p1").unwrap().is_none());
    assert!(v.user("u1").unwrap().is_none());
    assert!(v.id_by_name(ns::USER_NAME, "d1", "alice").unwrap().is_none());
    assert!(matches!(w.apply(Command::DeleteProject { id: "d1".into() }), Err(ApplyError::NotFound { .. })));
}

#[test]
fn a_project_with_children_is_not_deleted() {
    let w = World::new();
    w.apply(Command::CreateProject(project("d1", "Dom", "d1", true))).unwrap();
    w.apply(Command::CreateProject(project("p1", "Parent", "d1", false))).unwrap();
    let mut child = project("p2", "Child", "d1", false);
    child.parent_id = Some("p1".into());
    w.apply(Command::CreateProject(child)).unwrap();
    assert!(matches!(w.apply(Command::DeleteProject { id: "p1".into() }), Err(ApplyError::Forbidden(_))));
    w.apply(Command::DeleteProject { id: "p2".into() }).unwrap();
    w.apply(Command::DeleteProject { id: "p1".into() }).unwrap();
}

#[test]
fn revocations_expire() {
    let w = World::new();
    w.apply(Command::RevokeToken { audit_ids: vec!["a".into()], expires_at: 10, now: 5 }).unwrap();
    assert!(w.engine.read().exists(crate::state::cf::REVOCATIONS, b"a").unwrap());
    w.apply(Command::RevokeToken { audit_ids: vec!["b".into()], expires_at: 30, now: 20 }).unwrap();
    assert!(!w.engine.read().exists(crate::state::cf::REVOCATIONS, b"a").unwrap(), "expired entry pruned");
    assert!(w.engine.read().exists(crate::state::cf::REVOCATIONS, b"b").unwrap());
}

/// Keys of the revocations column family: (audit ids, expiry index entries).
fn revocation_keys(w: &World) -> (Vec<String>, usize) {
    let all = w.engine.read().scan_prefix(crate::state::cf::REVOCATIONS, b"", usize::MAX).unwrap();
    let index = all.iter().filter(|(k, _)| k.starts_with(crate::state::keys::REVOCATION_EXPIRY)).count();
    let ids = all
        .iter()
        .filter(|(k, _)| !k.starts_with(crate::state::keys::REVOCATION_EXPIRY))
        .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
        .collect();
    (ids, index)
}

#[test]
fn revocations_are_pruned_earliest_expiry_first_in_bounded_steps() {
    let w = World::new();
    // Audit ids in the opposite order of their expiry: a scan in key order would prune the
    // latest expiries first.
    for i in 0..100i64 {
        let id = format!("id{:03}", 999 - i);
        w.apply(Command::RevokeToken { audit_ids: vec![id], expires_at: 1_000 + i, now: 0 }).unwrap();
    }
    // Re-revoking moves the entry's expiry; its old index entry goes.
    w.apply(Command::RevokeToken { audit_ids: vec!["id999".into()], expires_at: 5_000, now: 0 }).unwrap();
    assert_eq!(revocation_keys(&w).1, 100, "one index entry per revocation");
    // At 1_070 the entries expiring 1_001..=1_069 are due (69 of them), at most 64 go.
    w.apply(Command::RevokeToken { audit_ids: vec!["late".into()], expires_at: 9_000, now: 1_070 }).unwrap();
    let (ids, index) = revocation_keys(&w);
    assert_eq!(ids.len(), 101 - 64);
    assert_eq!(index, ids.len(), "records and index entries go together");
    for i in 1..=64 {
        assert!(!ids.contains(&format!("id{:03}", 999 - i)), "expiry {} should be pruned first", 1_000 + i);
    }
    for i in 65..100 {
        assert!(ids.contains(&format!("id{:03}", 999 - i)), "expiry {} is not due", 1_000 + i);
    }
    assert!(ids.contains(&"id999".to_string()), "its expiry moved to 5000");
}

#[test]
fn revocation_pruning_does_not_depend_on_how_entries_are_batched() {
    let cmds: Vec<Command> = (0..80i64)
        .map(|i| Command::RevokeToken { audit_ids: vec![format!("t{i:02}")], expires_at: 100 + i, now: 90 + 2 * i })
        .collect();
    let one_by_one = World::new();
    for c in cmds.clone() {
        one_by_one.apply(c).unwrap();
    }
    let batched = World::new();
    let mut batch = batched.engine.batch();
    for c in cmds {
        apply_to(&batched.engine, &mut batch, c).unwrap().unwrap();
    }
    batched.engine.write(batch, false).unwrap();
    assert_eq!(revocation_keys(&one_by_one), revocation_keys(&batched));
}

#[test]
fn a_user_patch_keeps_what_it_does_not_name() {
    let w = World::new();
    w.apply(Command::CreateProject(project("d1", "Dom", "d1", true))).unwrap();
    let mut u = user("u1", "alice", "d1");
    u.password_hash = Some("old-hash".into());
    w.apply(Command::CreateUser(u)).unwrap();
    // An update built while the old hash was stored, applied after a password change.
    let patch = UserPatch { id: "u1".into(), name: Some("alicia".into()), now: 50, ..UserPatch::default() };
    w.apply(Command::ChangePassword {
        user_id: "u1".into(),
        expected_hash: "old-hash".into(),
        new_hash: "new-hash".into(),
        now: 40,
    })
    .unwrap();
    let Ok(Applied::User(after)) = w.apply(Command::PatchUser(patch)) else { panic!("patch refused") };
    assert_eq!(after.name, "alicia");
    assert_eq!(after.password_hash.as_deref(), Some("new-hash"), "the patch must not restore the old hash");
    assert_eq!(after.tokens_valid_after, 40, "only the password change moved it");
    // Disabling moves tokens_valid_after; extra attributes merge.
    let patch = UserPatch {
        id: "u1".into(),
        enabled: Some(false),
        extra: Some(r#"{"team":"blue"}"#.into()),
        now: 60,
        ..UserPatch::default()
    };
    let Ok(Applied::User(after)) = w.apply(Command::PatchUser(patch)) else { panic!("patch refused") };
    assert!(!after.enabled);
    assert_eq!(after.tokens_valid_after, 60);
    assert_eq!(after.extra, r#"{"team":"blue"}"#);
    assert_eq!(after.password_hash.as_deref(), Some("new-hash"));
    let missing = w.apply(Command::PatchUser(UserPatch { id: "nobody".into(), ..UserPatch::default() }));
    assert!(matches!(missing, Err(ApplyError::NotFound { .. })), "{missing:?}");
}

mod assignments;
mod batch_property;
mod effective_property;
mod inherit_property;
mod snapshot_property;
fn region(id: &str, parent: Option<&str>) -> Region {
    Region { id: id.into(), description: None, parent_region_id: parent.map(str::to_string), extra: "{}".into() }
}

fn service(id: &str) -> Service {
    Service {
        id: id.into(),
        service_type: "compute".into(),
        name: None,
        enabled: true,
        description: None,
        extra: "{}".into(),
    }
}

fn endpoint(id: &str, service: &str, region: Option<&str>) -> Endpoint {
    Endpoint {
        id: id.into(),
        interface: "public".into(),
        service_id: service.into(),
        region_id: region.map(str::to_string),
        url: "http://x".into(),
        enabled: true,
        extra: "{}".into(),
    }
}

fn credential(id: &str, user: &str, project: Option<&str>, kind: &str) -> Credential {
    Credential {
        id: id.into(),
        user_id: user.into(),
        project_id: project.map(str::to_string),
        cred_type: kind.into(),
        blob: "{}".into(),
        extra: "{}".into(),
    }
}

#[test]
fn region_trees_stay_acyclic_and_keep_their_endpoints() {
    let w = World::new();
    assert!(matches!(w.apply(Command::CreateRegion(region("b", Some("a")))), Err(ApplyError::NotFound { .. })));
    w.apply(Command::CreateRegion(region("a", None))).unwrap();
    w.apply(Command::CreateRegion(region("b", Some("a")))).unwrap();
    w.apply(Command::CreateRegion(region("c", Some("b")))).unwrap();
    assert!(matches!(w.apply(Command::CreateRegion(region("a", None))), Err(ApplyError::Conflict(_))));
    let cycle = w.apply(Command::UpdateRegion(region("a", Some("c"))));
    assert!(matches!(cycle, Err(ApplyError::Invalid(_))), "{cycle:?}");
    assert!(matches!(w.apply(Command::UpdateRegion(region("a", Some("a")))), Err(ApplyError::Invalid(_))));
    w.apply(Command::CreateService(service("s1"))).unwrap();
    w.apply(Command::CreateEndpoint(endpoint("e1", "s1", Some("c")))).unwrap();
    assert!(matches!(w.apply(Command::DeleteRegion { id: "a".into() }), Err(ApplyError::Forbidden(_))));
    assert!(w.engine.read().region("c").unwrap().is_some(), "refused delete wrote nothing");
    w.apply(Command::DeleteEndpoint { id: "e1".into() }).unwrap();
    w.apply(Command::DeleteRegion { id: "a".into() }).unwrap();
    let v = w.engine.read();
    assert!(v.region("b").unwrap().is_none() && v.region("c").unwrap().is_none(), "children go with their parent");
}

#[test]
fn endpoints_need_their_service_and_region_and_go_with_the_service() {
    let w = World::new();
    w.apply(Command::CreateRegion(region("r1", None))).unwrap();
    let orphan = w.apply(Command::CreateEndpoint(endpoint("e1", "nope", None)));
    assert!(matches!(orphan, Err(ApplyError::NotFound { ref kind, .. }) if kind == "service"), "{orphan:?}");
    w.apply(Command::CreateService(service("s1"))).unwrap();
    let bad_region = w.apply(Command::CreateEndpoint(endpoint("e1", "s1", Some("nowhere"))));
    assert!(matches!(bad_region, Err(ApplyError::Invalid(_))), "{bad_region:?}");
    w.apply(Command::CreateEndpoint(endpoint("e1", "s1", Some("r1")))).unwrap();
    w.apply(Command::CreateEndpoint(endpoint("e2", "s1", None))).unwrap();
    w.apply(Command::DeleteService { id: "s1".into() }).unwrap();
    let v = w.engine.read();
    assert!(v.endpoint("e1").unwrap().is_none() && v.endpoint("e2").unwrap().is_none());
    assert!(matches!(w.apply(Command::DeleteService { id: "s1".into() }), Err(ApplyError::NotFound { .. })));
}

#[test]
fn credentials_need_their_owner_and_go_with_user_or_project() {
    let w = World::new();
    w.apply(Command::CreateProject(project("d1", "Dom", "d1", true))).unwrap();
    w.apply(Command::CreateProject(project("p1", "Web", "d1", false))).unwrap();
    w.apply(Command::CreateProject(project("p2", "Db", "d1", false))).unwrap();
    w.apply(Command::CreateUser(user("u1", "alice", "d1"))).unwrap();
    w.apply(Command::CreateUser(user("u2", "bob", "d1"))).unwrap();
    let nobody = w.apply(Command::CreateCredential(credential("c0", "ghost", None, "totp")));
    assert!(matches!(nobody, Err(ApplyError::Invalid(_))), "{nobody:?}");
    let no_project = w.apply(Command::CreateCredential(credential("c0", "u1", None, "ec2")));
    assert!(matches!(no_project, Err(ApplyError::Invalid(_))), "{no_project:?}");
    w.apply(Command::CreateCredential(credential("c1", "u1", Some("p1"), "ec2"))).unwrap();
    w.apply(Command::CreateCredential(credential("c2", "u1", None, "totp"))).unwrap();
    w.apply(Command::CreateCredential(credential("c3", "u2", Some("p1"), "ec2"))).unwrap();
    w.apply(Command::CreateCredential(credential("c4", "u2", Some("p2"), "ec2"))).unwrap();
    assert!(matches!(
        w.apply(Command::CreateCredential(credential("c1", "u2", Some("p2"), "ec2"))),
        Err(ApplyError::Conflict(_))
    ));
    w.apply(Command::DeleteProject { id: "p1".into() }).unwrap();
    let v = w.engine.read();
    assert!(v.credential("c1").unwrap().is_none() && v.credential("c3").unwrap().is_none(), "project's go");
    assert!(v.credential("c2").unwrap().is_some() && v.credential("c4").unwrap().is_some());
    w.apply(Command::DeleteUser { id: "u2".into(), now: 2 }).unwrap();
    let v = w.engine.read();
    assert!(v.credential("c4").unwrap().is_none(), "user's go");
    assert_eq!(v.member_ids(ns::CREDENTIALS_OF_USER, "u2").unwrap(), Vec::<String>::new());
    assert_eq!(v.member_ids(ns::CREDENTIALS_OF_USER, "u1").unwrap(), vec!["c2".to_string()]);
    assert!(matches!(w.apply(Command::DeleteCredential { id: "c4".into() }), Err(ApplyError::NotFound { .. })));
}

/// A command refused after some of its steps wrote leaves exactly what the batch held before
/// it: the domain and project the first steps staged are gone, the write staged before the
/// command is kept, and nothing else reaches the engine.
#[test]
fn a_refusal_after_partial_writes_leaves_the_batch_as_it_was() {
    let w = World::new();
    assert!(w.apply(Command::CreateProject(project("d0", "Zero", "d0", true))).is_ok());
    let digest = |w: &World| idnode_storage::digest_view(&w.engine.read(), STATE_CFS).unwrap().hex();
    let before = digest(&w);
    let mut batch = w.engine.batch();
    batch.put(crate::state::cf::DOCS, b"staged-before".to_vec(), b"kept");
    let staged = batch.len();
    let cmd = Command::All(vec![
        Command::CreateProject(project("d1", "One", "d1", true)),
        Command::CreateProject(project("p1", "Web", "d1", false)),
        Command::CreateProject(project("p2", "WEB", "d1", false)),
    ]);
    let out = apply_to(&w.engine, &mut batch, cmd).unwrap();
    assert!(matches!(out, Err(ApplyError::Conflict(_))), "{out:?}");
    assert_eq!(batch.len(), staged, "only the write staged before the command is left");
    assert_eq!(batch.get(crate::state::cf::DOCS, b"staged-before"), Some(Some(&b"kept"[..])));
    drop(batch);
    assert_eq!(digest(&w), before, "nothing of the refused command reached the engine");
    assert!(w.engine.read().project("d1").unwrap().is_none());
}

/// A TOTP step is used once per user: the same or an older step is refused and writes
/// nothing; another user, or a later step, is not affected; the record goes with the user.
#[test]
fn a_totp_step_is_used_once_per_user() {
    let w = World::new();
    w.apply(Command::CreateProject(project("d1", "Dom", "d1", true))).unwrap();
    w.apply(Command::CreateUser(user("u1", "alice", "d1"))).unwrap();
    w.apply(Command::CreateUser(user("u2", "bob", "d1"))).unwrap();
    let used = |u: &str, step: u64| w.apply(Command::UseTotpStep { user_id: u.into(), step });
    used("u1", 100).unwrap();
    assert!(matches!(used("u1", 100), Err(ApplyError::Conflict(_))), "replayed");
    assert!(matches!(used("u1", 99), Err(ApplyError::Conflict(_))), "older");
    assert_eq!(w.engine.read().totp_step("u1").unwrap(), Some(100), "a refusal writes nothing");
    used("u2", 100).unwrap();
    used("u1", 101).unwrap();
    assert!(matches!(used("ghost", 1), Err(ApplyError::NotFound { .. })));
    w.apply(Command::DeleteUser { id: "u1".into(), now: 2 }).unwrap();
    assert_eq!(w.engine.read().totp_step("u1").unwrap(), None, "goes with the user");
}
