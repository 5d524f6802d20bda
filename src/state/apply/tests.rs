//! Apply-level invariants, run directly against a real engine.

use std::sync::Arc;

use idnode_keys::DataKeys;
use idnode_storage::Engine;

use super::apply_command;
use crate::state::command::{Applied, ApplyError, ApplyResult, Command};
use crate::state::keys::ns;
use crate::state::model::*;
use crate::state::{Reader, Tx, STATE_CFS};

struct World {
    _dir: tempfile::TempDir,
    engine: Engine,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path(), STATE_CFS, Arc::new(DataKeys::ephemeral())).unwrap();
        World { _dir: dir, engine }
    }

    fn apply(&self, cmd: Command) -> ApplyResult {
        let mut batch = self.engine.batch();
        let out = apply_command(&mut Tx { engine: &self.engine, batch: &mut batch }, cmd).unwrap();
        self.engine.write(batch, false).unwrap();
        out
    }
}

fn project(id: &str, name: &str, domain: &str, is_domain: bool) -> Project {
    Project {
        id: id.into(),
        name: name.into(),
        domain_id: domain.into(),
        description: None,
        enabled: true,
        is_domain,
        parent_id: (!is_domain).then(|| domain.to_string()),
        tags: vec![],
        extra: "{}".into(),
        options: "{}".into(),
        created_at: 1,
    }
}

fn user(id: &str, name: &str, domain: &str) -> User {
    User {
        id: id.into(),
        name: name.into(),
        domain_id: domain.into(),
        enabled: true,
        password_hash: None,
        default_project_id: None,
        password_expires_at: None,
        extra: "{}".into(),
        options: "{}".into(),
        created_at: 1,
        tokens_valid_after: 0,
        federated: Vec::new(),
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
    w.apply(Command::DeleteProject { id: "d1".into() }).unwrap();
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

mod assignments;
mod effective_property;
