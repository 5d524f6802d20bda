//! Unified limits' apply rules, against a real engine.

use crate::state::apply::tests::{project, World};
use crate::state::command::{Applied, ApplyError, Command};
use crate::state::limits::*;
use crate::state::model::{Region, Service};
use crate::state::read::LimitReads;
use crate::state::Reader;

fn l(c: LimitCommand) -> Command {
    Command::Limits(c)
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

fn reg(id: &str, service: &str, region: Option<&str>, resource: &str, default: i64) -> RegisteredLimit {
    RegisteredLimit {
        id: id.into(),
        service_id: service.into(),
        region_id: region.map(str::to_string),
        resource_name: resource.into(),
        default_limit: default,
        description: None,
    }
}

fn new(id: &str, project: Option<&str>, domain: Option<&str>, resource: &str, value: i64) -> NewLimit {
    NewLimit {
        id: id.into(),
        project_id: project.map(str::to_string),
        domain_id: domain.map(str::to_string),
        service_id: "s".into(),
        region_id: Some("r".into()),
        resource_name: resource.into(),
        resource_limit: value,
        description: None,
    }
}

/// Domain d with projects p (under d) and c (under p); service s, region r; registered
/// limit g for cores (default 10).
fn world() -> World {
    let w = World::new();
    w.apply(Command::CreateProject(project("d", "Dom", "d", true))).unwrap();
    w.apply(Command::CreateProject(project("p", "P", "d", false))).unwrap();
    let mut c = project("c", "C", "d", false);
    c.parent_id = Some("p".into());
    w.apply(Command::CreateProject(c)).unwrap();
    w.apply(Command::CreateService(service("s"))).unwrap();
    w.apply(Command::CreateRegion(Region {
        id: "r".into(),
        description: None,
        parent_region_id: None,
        extra: "{}".into(),
    }))
    .unwrap();
    w.apply(l(LimitCommand::CreateRegistered { limits: vec![reg("g", "s", Some("r"), "cores", 10)] })).unwrap();
    w
}

fn create(w: &World, limits: Vec<NewLimit>, model: Model) -> Result<Applied, ApplyError> {
    w.apply(l(LimitCommand::Create { limits, model }))
}

#[test]
fn registered_limits_are_unique_and_created_all_or_nothing() {
    let w = world();
    let twice = vec![reg("a", "s", None, "ram", 1), reg("b", "s", None, "ram", 2)];
    let r = w.apply(l(LimitCommand::CreateRegistered { limits: twice }));
    assert!(matches!(r, Err(ApplyError::Conflict(_))), "{r:?}");
    assert!(w.engine.read().registered_limit("a").unwrap().is_none(), "nothing of a refused batch is stored");
    let same_slot = vec![reg("a", "s", Some("r"), "cores", 1)];
    assert!(matches!(w.apply(l(LimitCommand::CreateRegistered { limits: same_slot })), Err(ApplyError::Conflict(_))));
    // Another region (or none) is another slot.
    w.apply(l(LimitCommand::CreateRegistered { limits: vec![reg("a", "s", None, "cores", 1)] })).unwrap();
    let unknown_service = vec![reg("x", "nope", None, "ram", 1)];
    let r = w.apply(l(LimitCommand::CreateRegistered { limits: unknown_service }));
    assert!(matches!(&r, Err(ApplyError::Invalid(m)) if m.contains("service_id")), "{r:?}");
    let unknown_region = vec![reg("x", "s", Some("nowhere"), "ram", 1)];
    let r = w.apply(l(LimitCommand::CreateRegistered { limits: unknown_region }));
    assert!(matches!(&r, Err(ApplyError::Invalid(m)) if m.contains("region_id")), "{r:?}");
}

#[test]
fn a_limit_needs_its_registered_limit_and_is_unique_per_owner() {
    let w = world();
    let r = create(&w, vec![new("x", Some("p"), None, "ram", 5)], Model::Flat);
    assert!(matches!(&r, Err(ApplyError::Forbidden(m)) if m.contains("no corresponding registered limit")), "{r:?}");
    create(&w, vec![new("x", Some("p"), None, "cores", 50)], Model::Flat).unwrap();
    let r = create(&w, vec![new("y", Some("p"), None, "cores", 5)], Model::Flat);
    assert!(matches!(r, Err(ApplyError::Conflict(_))), "{r:?}");
    // A project acting as a domain makes a domain limit.
    let Applied::Limits(LimitApplied::Limits(made)) =
        create(&w, vec![new("y", Some("d"), None, "cores", 60)], Model::Flat).unwrap()
    else {
        panic!("limits")
    };
    assert_eq!((made[0].project_id.as_deref(), made[0].domain_id.as_deref()), (None, Some("d")));
    let r = create(&w, vec![new("z", Some("nope"), None, "cores", 5)], Model::Flat);
    assert!(matches!(&r, Err(ApplyError::Invalid(m)) if m.contains("project_id")), "{r:?}");
    let r = create(&w, vec![new("z", None, Some("p"), "cores", 5)], Model::Flat);
    assert!(matches!(&r, Err(ApplyError::Invalid(m)) if m.contains("domain_id")), "{r:?}");
}

#[test]
fn a_referenced_registered_limit_neither_changes_nor_goes() {
    let w = world();
    create(&w, vec![new("x", Some("p"), None, "cores", 5)], Model::Flat).unwrap();
    let patch = RegisteredPatch { default_limit: Some(3), ..Default::default() };
    let r = w.apply(l(LimitCommand::UpdateRegistered { id: "g".into(), patch }));
    assert!(matches!(r, Err(ApplyError::Forbidden(_))), "{r:?}");
    let r = w.apply(l(LimitCommand::DeleteRegistered { id: "g".into() }));
    assert!(matches!(r, Err(ApplyError::Forbidden(_))), "{r:?}");
    w.apply(l(LimitCommand::Delete { id: "x".into() })).unwrap();
    let patch = RegisteredPatch { default_limit: Some(3), description: Some(Some("d".into())), ..Default::default() };
    w.apply(l(LimitCommand::UpdateRegistered { id: "g".into(), patch })).unwrap();
    let g = w.engine.read().registered_limit("g").unwrap().unwrap();
    assert_eq!((g.default_limit, g.description.as_deref()), (3, Some("d")));
    w.apply(l(LimitCommand::DeleteRegistered { id: "g".into() })).unwrap();
    let r = w.apply(l(LimitCommand::DeleteRegistered { id: "g".into() }));
    assert!(matches!(r, Err(ApplyError::NotFound { .. })), "{r:?}");
}

#[test]
fn moving_a_registered_limit_onto_a_taken_slot_conflicts() {
    let w = world();
    w.apply(l(LimitCommand::CreateRegistered { limits: vec![reg("h", "s", None, "cores", 1)] })).unwrap();
    let patch = RegisteredPatch { region_id: Some(Some("r".into())), ..Default::default() };
    let r = w.apply(l(LimitCommand::UpdateRegistered { id: "h".into(), patch }));
    assert!(matches!(r, Err(ApplyError::Conflict(_))), "{r:?}");
    let patch = RegisteredPatch { region_id: Some(Some("elsewhere".into())), ..Default::default() };
    let r = w.apply(l(LimitCommand::UpdateRegistered { id: "h".into(), patch }));
    assert!(matches!(r, Err(ApplyError::Invalid(_))), "{r:?}");
}

#[test]
fn strict_two_level_keeps_children_under_their_parent() {
    let w = world();
    let strict = Model::StrictTwoLevel;
    // Without a domain limit the registered default (10) is the parent's value.
    let r = create(&w, vec![new("x", Some("p"), None, "cores", 11)], strict);
    assert!(matches!(&r, Err(ApplyError::Forbidden(m)) if m.contains("doesn't satisfy")), "{r:?}");
    // Flat does not look.
    create(&w, vec![new("x", Some("p"), None, "cores", 11)], Model::Flat).unwrap();
    w.apply(l(LimitCommand::Delete { id: "x".into() })).unwrap();
    // A parent in the same request is the one compared with.
    let r = create(&w, vec![new("y", None, Some("d"), "cores", 20), new("x", Some("p"), None, "cores", 21)], strict);
    assert!(matches!(r, Err(ApplyError::Forbidden(_))), "{r:?}");
    create(&w, vec![new("y", None, Some("d"), "cores", 20), new("x", Some("p"), None, "cores", 15)], strict).unwrap();
    // The domain's limit cannot drop below a child's, nor the child's rise above it.
    let r =
        w.apply(l(LimitCommand::Update { id: "y".into(), resource_limit: Some(14), description: None, model: strict }));
    assert!(matches!(r, Err(ApplyError::Forbidden(_))), "{r:?}");
    let r =
        w.apply(l(LimitCommand::Update { id: "x".into(), resource_limit: Some(21), description: None, model: strict }));
    assert!(matches!(r, Err(ApplyError::Forbidden(_))), "{r:?}");
    w.apply(l(LimitCommand::Update { id: "x".into(), resource_limit: Some(20), description: None, model: strict }))
        .unwrap();
    assert_eq!(w.engine.read().limit("x").unwrap().unwrap().resource_limit, 20);
}

#[test]
fn strict_two_level_bounds_the_depth() {
    let w = world();
    // c sits at depth 3 (d, p, c): a project under p fits, one under c does not.
    let ok = w.apply(l(LimitCommand::CheckDepth { parent_id: "p".into(), max_depth: 3 }));
    assert!(matches!(ok, Ok(Applied::Done)), "{ok:?}");
    let mut deep = project("e", "E", "d", false);
    deep.parent_id = Some("c".into());
    let r = w.apply(Command::All(vec![
        l(LimitCommand::CheckDepth { parent_id: "c".into(), max_depth: 3 }),
        Command::CreateProject(deep),
    ]));
    assert!(matches!(&r, Err(ApplyError::Forbidden(m)) if m.contains("Max hierarchy depth")), "{r:?}");
    assert!(w.engine.read().project("e").unwrap().is_none(), "the refused project is not created");
}

#[test]
fn limits_go_with_their_owner_and_registered_limits_with_their_service() {
    let w = world();
    create(&w, vec![new("x", Some("c"), None, "cores", 1), new("y", None, Some("d"), "cores", 2)], Model::Flat)
        .unwrap();
    w.apply(Command::DeleteProject { id: "c".into() }).unwrap();
    assert!(w.engine.read().limit("x").unwrap().is_none());
    assert!(w.engine.read().limit("y").unwrap().is_some());
    create(&w, vec![new("z", Some("p"), None, "cores", 1)], Model::Flat).unwrap();
    w.apply(Command::DeleteService { id: "s".into() }).unwrap();
    let view = w.engine.read();
    assert!(view.registered_limits().unwrap().is_empty() && view.limits().unwrap().is_empty());
}
