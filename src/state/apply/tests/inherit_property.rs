//! Property test of OS-INHERIT: random inherited and direct grants over a project tree, with
//! group memberships. Token roles are compared with a brute-force model written here (a
//! project gets the direct grants on it, and the inherited grants on its domain and on its
//! strict ancestors), and the listing with a project filter, with `include_subtree`, and
//! without any filter are checked to tell the same story.

use std::collections::BTreeSet;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{project, user, World};
use crate::reads::effective::roles_of_user;
use crate::reads::listing::{self, Entry, Filter};
use crate::state::command::Command;
use crate::state::model::*;

const CASES: u64 = 60;
const GRANTS: usize = 12;

/// P0 ⊃ P1 ⊃ P2 and P3 in D0; P4 in D1. (id, domain, parent)
const PROJECTS: [(&str, &str, &str); 5] =
    [("P0", "D0", "D0"), ("P1", "D0", "P0"), ("P2", "D0", "P1"), ("P3", "D0", "D0"), ("P4", "D1", "D1")];
const USERS: [&str; 3] = ["U0", "U1", "U2"];
const GROUPS: [&str; 2] = ["G0", "G1"];
const ROLES: [&str; 3] = ["R0", "R1", "R2"];

fn domain_of(p: &str) -> &'static str {
    PROJECTS.iter().find(|x| x.0 == p).map(|x| x.1).unwrap_or("")
}

/// Strict ancestors of a project, from the table.
fn ancestors(p: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut cur = p;
    while let Some((_, _, parent)) = PROJECTS.iter().find(|x| x.0 == cur) {
        if parent.starts_with('D') {
            break;
        }
        out.push(*parent);
        cur = parent;
    }
    out
}

fn setup(w: &World) {
    for d in ["D0", "D1"] {
        w.apply(Command::CreateProject(project(d, d, d, true))).unwrap();
    }
    for (id, d, parent) in PROJECTS {
        let mut p = project(id, id, d, false);
        p.parent_id = Some(parent.into());
        w.apply(Command::CreateProject(p)).unwrap();
    }
    for u in USERS {
        w.apply(Command::CreateUser(user(u, u, "D0"))).unwrap();
    }
    for g in GROUPS {
        let g = Group { id: g.into(), name: g.into(), domain_id: "D0".into(), description: None, extra: "{}".into() };
        w.apply(Command::CreateGroup(g)).unwrap();
    }
    for r in ROLES {
        let role = Role {
            id: r.into(),
            name: r.into(),
            domain_id: None,
            description: None,
            extra: "{}".into(),
            options: "{}".into(),
        };
        w.apply(Command::CreateRole(role)).unwrap();
    }
}

fn random_grant(rng: &mut StdRng) -> Assignment {
    let (actor_kind, actor_id) = if rng.gen_bool(0.6) {
        (ActorKind::User, USERS[rng.gen_range(0..USERS.len())])
    } else {
        (ActorKind::Group, GROUPS[rng.gen_range(0..GROUPS.len())])
    };
    let target = match rng.gen_range(0..7) {
        0 => Target::Domain("D0".into()),
        1 => Target::Domain("D1".into()),
        n => Target::Project(PROJECTS[n - 2].0.into()),
    };
    Assignment {
        actor_kind,
        actor_id: actor_id.into(),
        target,
        role_id: ROLES[rng.gen_range(0..ROLES.len())].into(),
        inherited: rng.gen_bool(0.6),
    }
}

/// The model: the roles a user holds on a project.
fn roles_of(grants: &BTreeSet<Assignment>, members: &BTreeSet<(String, String)>, u: &str, p: &str) -> BTreeSet<String> {
    let mine = |a: &Assignment| match a.actor_kind {
        ActorKind::User => a.actor_id == u,
        ActorKind::Group => members.contains(&(a.actor_id.clone(), u.to_string())),
    };
    let applies = |a: &Assignment| match (&a.target, a.inherited) {
        (Target::Project(t), false) => t == p,
        (Target::Project(t), true) => ancestors(p).contains(&t.as_str()),
        (Target::Domain(d), true) => d == domain_of(p),
        _ => false,
    };
    grants.iter().filter(|a| mine(a) && applies(a)).map(|a| a.role_id.clone()).collect()
}

fn key(e: &Entry) -> (String, Target, String, Option<String>, Assignment) {
    (e.actor_id.clone(), e.target.clone(), e.role_id.clone(), e.via_group.clone(), e.grant.clone())
}

#[test]
fn inherited_roles_match_a_brute_force_model() {
    let mut reached_below = 0;
    for case in 0..CASES {
        let w = World::new();
        setup(&w);
        let mut rng = StdRng::seed_from_u64(case);
        let mut grants = BTreeSet::new();
        let mut members = BTreeSet::new();
        for _ in 0..GRANTS {
            let a = random_grant(&mut rng);
            w.apply(Command::CreateGrant(a.clone())).unwrap();
            grants.insert(a);
            let (g, u) = (GROUPS[rng.gen_range(0..GROUPS.len())], USERS[rng.gen_range(0..USERS.len())]);
            w.apply(Command::AddGroupMember { group_id: g.into(), user_id: u.into() }).unwrap();
            members.insert((g.to_string(), u.to_string()));
        }
        // Revoke a few, to see the reach go away too.
        for a in grants.clone().iter().filter(|_| rng.gen_bool(0.2)) {
            w.apply(Command::DeleteGrant(a.clone())).unwrap();
            grants.remove(a);
        }
        let v = w.engine.read();
        let all: BTreeSet<_> =
            listing::list(&v, &Filter { effective: true, ..Filter::default() }).unwrap().iter().map(key).collect();
        for (p, _, _) in PROJECTS {
            let t = Target::Project(p.into());
            for u in USERS {
                let got: BTreeSet<String> = roles_of_user(&v, u, &t).unwrap().into_iter().map(|r| r.id).collect();
                assert_eq!(got, roles_of(&grants, &members, u, p), "case {case}: roles of {u} on {p}");
                reached_below += got.len();
            }
            let on_p = Filter { target: Some(t.clone()), effective: true, ..Filter::default() };
            let on_p: BTreeSet<_> = listing::list(&v, &on_p).unwrap().iter().map(key).collect();
            let expected: BTreeSet<_> = all.iter().filter(|e| e.1 == t).cloned().collect();
            assert_eq!(on_p, expected, "case {case}: effective on {p}");
            let subtree = Filter { target: Some(t.clone()), effective: true, subtree: true, ..Filter::default() };
            let subtree: BTreeSet<_> = listing::list(&v, &subtree).unwrap().iter().map(key).collect();
            let below: Vec<Target> = PROJECTS
                .iter()
                .filter(|x| x.0 == p || ancestors(x.0).contains(&p))
                .map(|x| Target::Project(x.0.into()))
                .collect();
            let expected: BTreeSet<_> = all.iter().filter(|e| below.contains(&e.1)).cloned().collect();
            assert_eq!(subtree, expected, "case {case}: effective on the tree of {p}");
        }
        for d in ["D0", "D1"] {
            let f = Filter { target: Some(Target::Domain(d.into())), effective: true, ..Filter::default() };
            assert!(listing::list(&v, &f).unwrap().iter().all(|e| !e.grant.inherited), "case {case}: {d} inherits");
        }
    }
    assert!(reached_below > CASES as usize, "the generator must exercise inheritance: {reached_below}");
}
