//! Property test: random worlds of users, groups, roles (global and domain-specific),
//! implication rules, grants and memberships, built and torn at through `apply`. Apply's
//! verdicts, `assignment::effective` and the role assignment listing are compared with a
//! brute-force model written independently here.

use std::collections::{BTreeMap, BTreeSet};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{project, user, World};
use crate::reads::effective::roles_of_user;
use crate::reads::listing::{self, Entry, Filter};
use crate::state::command::{ApplyError, Command};
use crate::state::model::*;

const CASES: u64 = 200;
const OPS: usize = 40;

type Grant = (ActorKind, String, Target, String);
/// (user, target, role, via group, prior role, grant)
type Effective = (String, Target, String, Option<String>, Option<String>, Grant);

#[derive(Default)]
struct Model {
    users: BTreeSet<String>,
    groups: BTreeSet<String>,
    /// role id -> its domain (None: global)
    roles: BTreeMap<String, Option<String>>,
    /// project id -> its domain
    projects: BTreeMap<String, String>,
    rules: BTreeSet<(String, String)>,
    grants: BTreeSet<Grant>,
    /// (group, user)
    members: BTreeSet<(String, String)>,
}

/// What apply should decide: Ok, or the kind of refusal.
#[derive(Debug, PartialEq)]
enum Verdict {
    Ok,
    NotFound,
    Conflict,
    Forbidden,
    Invalid,
}

fn verdict<T>(r: Result<T, ApplyError>) -> Verdict {
    match r {
        Ok(_) => Verdict::Ok,
        Err(ApplyError::NotFound { .. }) => Verdict::NotFound,
        Err(ApplyError::Conflict(_)) => Verdict::Conflict,
        Err(ApplyError::Forbidden(_)) => Verdict::Forbidden,
        Err(ApplyError::Invalid(_) | ApplyError::Detailed { .. }) => Verdict::Invalid,
    }
}

impl Model {
    /// Roles reachable from `from` (itself included), by fixpoint iteration.
    fn reach(&self, from: &str) -> BTreeSet<String> {
        let mut set = BTreeSet::from([from.to_string()]);
        loop {
            let before = set.len();
            for (p, i) in &self.rules {
                if set.contains(p) {
                    set.insert(i.clone());
                }
            }
            if set.len() == before {
                return set;
            }
        }
    }

    fn global(&self, role: &str) -> bool {
        matches!(self.roles.get(role), Some(None))
    }

    fn target_exists(&self, t: &Target) -> bool {
        match t {
            Target::Project(p) => self.projects.contains_key(p),
            Target::Domain(d) => d == "D0" || d == "D1",
            Target::System => true,
        }
    }

    fn actor_exists(&self, kind: ActorKind, id: &str) -> bool {
        match kind {
            ActorKind::User => self.users.contains(id),
            ActorKind::Group => self.groups.contains(id),
        }
    }

    fn predict_imply(&self, p: &str, i: &str) -> Verdict {
        match (self.roles.get(p), self.roles.get(i)) {
            (Some(pd), Some(id)) if pd.is_none() && id.is_some() => Verdict::Forbidden,
            (Some(_), Some(_)) if self.rules.contains(&(p.to_string(), i.to_string())) => Verdict::Conflict,
            (Some(_), Some(_)) if self.reach(i).contains(p) => Verdict::Forbidden,
            (Some(_), Some(_)) => Verdict::Ok,
            _ => Verdict::NotFound,
        }
    }

    fn predict_grant(&self, g: &Grant) -> Verdict {
        let (kind, actor, target, role) = g;
        let Some(role_domain) = self.roles.get(role) else { return Verdict::NotFound };
        if !self.actor_exists(*kind, actor) || !self.target_exists(target) {
            return Verdict::NotFound;
        }
        match (role_domain, target) {
            (Some(d), Target::Project(p)) if &self.projects[p] != d => Verdict::Forbidden,
            (Some(_), Target::System) => Verdict::Invalid,
            _ => Verdict::Ok,
        }
    }

    fn predict_revoke(&self, g: &Grant) -> Verdict {
        let (kind, actor, target, role) = g;
        let refs = self.roles.contains_key(role) && self.actor_exists(*kind, actor) && self.target_exists(target);
        if refs && self.grants.contains(g) {
            Verdict::Ok
        } else {
            Verdict::NotFound
        }
    }

    fn delete_role(&mut self, r: &str) {
        self.roles.remove(r);
        self.rules.retain(|(p, i)| p != r && i != r);
        self.grants.retain(|g| g.3 != r);
    }

    fn delete_actor(&mut self, kind: ActorKind, id: &str) {
        match kind {
            ActorKind::User => {
                self.users.remove(id);
                self.members.retain(|(_, u)| u != id);
            }
            ActorKind::Group => {
                self.groups.remove(id);
                self.members.retain(|(g, _)| g != id);
            }
        }
        self.grants.retain(|g| !(g.0 == kind && g.1 == id));
    }

    /// Effective entries, brute force.
    fn effective(&self) -> BTreeSet<Effective> {
        let mut out = BTreeSet::new();
        for g in &self.grants {
            let (kind, actor, target, granted) = g;
            let users: Vec<(String, Option<String>)> = match kind {
                ActorKind::User => vec![(actor.clone(), None)],
                ActorKind::Group => self
                    .members
                    .iter()
                    .filter(|(gr, _)| gr == actor)
                    .map(|(_, u)| (u.clone(), Some(actor.clone())))
                    .collect(),
            };
            let mut roles = vec![(granted.clone(), None)];
            for prior in self.reach(granted) {
                for (p, i) in self.rules.iter().filter(|(p, _)| *p == prior) {
                    roles.push((i.clone(), Some(p.clone())));
                }
            }
            for (role, prior) in roles.into_iter().filter(|(r, _)| self.global(r)) {
                for (u, via) in &users {
                    out.insert((u.clone(), target.clone(), role.clone(), via.clone(), prior.clone(), g.clone()));
                }
            }
        }
        out
    }

    /// The global roles a user holds on a target.
    fn roles_of(&self, user: &str, target: &Target) -> BTreeSet<String> {
        let groups: BTreeSet<&String> = self.members.iter().filter(|(_, u)| u == user).map(|(g, _)| g).collect();
        let mut held = BTreeSet::new();
        for (kind, actor, t, role) in &self.grants {
            let mine = match kind {
                ActorKind::User => actor == user,
                ActorKind::Group => groups.contains(actor),
            };
            if mine && t == target {
                held.extend(self.reach(role));
            }
        }
        held.into_iter().filter(|r| self.global(r)).collect()
    }
}

fn tuple(e: &Entry) -> Effective {
    assert_eq!(e.actor_kind, ActorKind::User, "effective entries name users");
    let g = &e.grant;
    (
        e.actor_id.clone(),
        e.target.clone(),
        e.role_id.clone(),
        e.via_group.clone(),
        e.prior_role.clone(),
        (g.actor_kind, g.actor_id.clone(), g.target.clone(), g.role_id.clone()),
    )
}

fn role(id: &str, domain: Option<&str>) -> Role {
    Role {
        id: id.into(),
        name: format!("name-{id}"),
        domain_id: domain.map(str::to_string),
        description: None,
        extra: "{}".into(),
        options: "{}".into(),
    }
}

fn pick<'a>(rng: &mut StdRng, items: &'a [String]) -> &'a String {
    &items[rng.gen_range(0..items.len())]
}

fn setup(w: &World, m: &mut Model, rng: &mut StdRng) {
    for d in ["D0", "D1"] {
        w.apply(Command::CreateProject(project(d, d, d, true))).unwrap();
    }
    for (p, d) in [("P0", "D0"), ("P1", "D0"), ("P2", "D1")] {
        w.apply(Command::CreateProject(project(p, p, d, false))).unwrap();
        m.projects.insert(p.into(), d.into());
    }
    for i in 0..5 {
        let id = format!("U{i}");
        w.apply(Command::CreateUser(user(&id, &id, if rng.gen_bool(0.5) { "D0" } else { "D1" }))).unwrap();
        m.users.insert(id);
    }
    for i in 0..3 {
        let id = format!("G{i}");
        let g =
            Group { id: id.clone(), name: id.clone(), domain_id: "D0".into(), description: None, extra: "{}".into() };
        w.apply(Command::CreateGroup(g)).unwrap();
        m.groups.insert(id);
    }
    for (id, d) in
        [("R0", None), ("R1", None), ("R2", None), ("R3", None), ("R4", None), ("R5", Some("D0")), ("R6", Some("D1"))]
    {
        w.apply(Command::CreateRole(role(id, d))).unwrap();
        m.roles.insert(id.into(), d.map(str::to_string));
    }
}

fn random_grant(rng: &mut StdRng, users: &[String], groups: &[String], roles: &[String]) -> Grant {
    let (kind, actor) =
        if rng.gen_bool(0.6) { (ActorKind::User, pick(rng, users)) } else { (ActorKind::Group, pick(rng, groups)) };
    let target = match rng.gen_range(0..6) {
        0 => Target::Project("P0".into()),
        1 => Target::Project("P1".into()),
        2 => Target::Project("P2".into()),
        3 => Target::Domain("D0".into()),
        4 => Target::Domain("D1".into()),
        _ => Target::System,
    };
    (kind, actor.clone(), target, pick(rng, roles).clone())
}

fn assignment(g: &Grant) -> Assignment {
    Assignment { actor_kind: g.0, actor_id: g.1.clone(), target: g.2.clone(), role_id: g.3.clone(), inherited: false }
}

/// Returns how many operations apply refused (as predicted).
fn run_ops(w: &World, m: &mut Model, rng: &mut StdRng) -> usize {
    let mut refused = 0;
    // Ids stay drawable after deletion, so operations on deleted entities are exercised.
    let users: Vec<String> = m.users.iter().cloned().collect();
    let groups: Vec<String> = m.groups.iter().cloned().collect();
    let roles: Vec<String> = m.roles.keys().cloned().collect();
    for _ in 0..OPS {
        match rng.gen_range(0..100) {
            0..=24 => {
                let (p, i) = (pick(rng, &roles).clone(), pick(rng, &roles).clone());
                let expected = m.predict_imply(&p, &i);
                let got = verdict(
                    w.apply(Command::CreateImpliedRole { prior_role_id: p.clone(), implied_role_id: i.clone() }),
                );
                assert_eq!(got, expected, "imply {p} -> {i}");
                if got == Verdict::Ok {
                    m.rules.insert((p, i));
                } else {
                    refused += 1;
                }
            }
            25..=59 => {
                let g = random_grant(rng, &users, &groups, &roles);
                assert_eq!(verdict(w.apply(Command::CreateGrant(assignment(&g)))), m.predict_grant(&g), "grant {g:?}");
                if m.predict_grant(&g) == Verdict::Ok {
                    m.grants.insert(g);
                } else {
                    refused += 1;
                }
            }
            60..=77 => {
                let (g, u) = (pick(rng, &groups).clone(), pick(rng, &users).clone());
                let ok = m.groups.contains(&g) && m.users.contains(&u);
                let got = verdict(w.apply(Command::AddGroupMember { group_id: g.clone(), user_id: u.clone() }));
                assert_eq!(got == Verdict::Ok, ok, "add {u} to {g}");
                if ok {
                    m.members.insert((g, u));
                }
            }
            78..=85 => {
                let (g, u) = (pick(rng, &groups).clone(), pick(rng, &users).clone());
                let present = m.members.remove(&(g.clone(), u.clone()));
                let got = verdict(w.apply(Command::RemoveGroupMember { group_id: g.clone(), user_id: u.clone() }));
                assert_eq!(got == Verdict::Ok, present, "remove {u} from {g}");
            }
            86..=93 => {
                let g = match m.grants.iter().nth(rng.gen_range(0..m.grants.len().max(1))) {
                    Some(existing) if rng.gen_bool(0.7) => existing.clone(),
                    _ => random_grant(rng, &users, &groups, &roles),
                };
                let expected = m.predict_revoke(&g);
                assert_eq!(verdict(w.apply(Command::DeleteGrant(assignment(&g)))), expected, "revoke {g:?}");
                m.grants.remove(&g);
            }
            94..=95 => {
                let r = pick(rng, &roles).clone();
                let existed = m.roles.contains_key(&r);
                assert_eq!(verdict(w.apply(Command::DeleteRole { id: r.clone() })) == Verdict::Ok, existed);
                m.delete_role(&r);
            }
            96..=97 => {
                let u = pick(rng, &users).clone();
                let existed = m.users.contains(&u);
                assert_eq!(verdict(w.apply(Command::DeleteUser { id: u.clone(), now: 1 })) == Verdict::Ok, existed);
                m.delete_actor(ActorKind::User, &u);
            }
            _ => {
                let g = pick(rng, &groups).clone();
                let existed = m.groups.contains(&g);
                assert_eq!(verdict(w.apply(Command::DeleteGroup { id: g.clone() })) == Verdict::Ok, existed);
                m.delete_actor(ActorKind::Group, &g);
            }
        }
    }
    refused
}

fn targets() -> Vec<Target> {
    vec![
        Target::Project("P0".into()),
        Target::Project("P1".into()),
        Target::Project("P2".into()),
        Target::Domain("D0".into()),
        Target::Domain("D1".into()),
        Target::System,
    ]
}

fn check(w: &World, m: &Model, case: u64) {
    let v = w.engine.read();
    let all_effective = m.effective();
    let list = |f: Filter| listing::list(&v, &f).unwrap();
    let got: BTreeSet<_> = list(Filter { effective: true, ..Filter::default() }).iter().map(tuple).collect();
    assert_eq!(got, all_effective, "case {case}: effective listing");
    let direct: BTreeSet<Grant> = list(Filter::default())
        .iter()
        .map(|e| (e.actor_kind, e.actor_id.clone(), e.target.clone(), e.role_id.clone()))
        .collect();
    assert_eq!(direct, m.grants, "case {case}: direct listing");
    for u in &m.users {
        let mine: BTreeSet<_> = all_effective.iter().filter(|e| &e.0 == u).cloned().collect();
        let f = Filter { user: Some(u.clone()), effective: true, ..Filter::default() };
        assert_eq!(list(f).iter().map(tuple).collect::<BTreeSet<_>>(), mine, "case {case}: effective for {u}");
        for t in targets() {
            let roles: BTreeSet<String> = roles_of_user(&v, u, &t).unwrap().into_iter().map(|r| r.id).collect();
            assert_eq!(roles, m.roles_of(u, &t), "case {case}: roles of {u} on {t:?}");
        }
    }
    for t in targets() {
        let f = Filter { target: Some(t.clone()), effective: true, ..Filter::default() };
        let expected: BTreeSet<_> = all_effective.iter().filter(|e| e.1 == t).cloned().collect();
        assert_eq!(list(f).iter().map(tuple).collect::<BTreeSet<_>>(), expected, "case {case}: effective on {t:?}");
        let f = Filter { target: Some(t.clone()), ..Filter::default() };
        let expected: BTreeSet<Grant> = m.grants.iter().filter(|g| g.2 == t).cloned().collect();
        let got: BTreeSet<Grant> =
            list(f).iter().map(|e| (e.actor_kind, e.actor_id.clone(), e.target.clone(), e.role_id.clone())).collect();
        assert_eq!(got, expected, "case {case}: direct on {t:?}");
    }
    for r in m.roles.keys() {
        let f = Filter { role: Some(r.clone()), effective: true, ..Filter::default() };
        let expected: BTreeSet<_> = all_effective.iter().filter(|e| &e.2 == r).cloned().collect();
        assert_eq!(list(f).iter().map(tuple).collect::<BTreeSet<_>>(), expected, "case {case}: effective role {r}");
    }
    for g in &m.groups {
        let f = Filter { group: Some(g.clone()), ..Filter::default() };
        let expected: BTreeSet<Grant> =
            m.grants.iter().filter(|x| x.0 == ActorKind::Group && &x.1 == g).cloned().collect();
        let got: BTreeSet<Grant> =
            list(f).iter().map(|e| (e.actor_kind, e.actor_id.clone(), e.target.clone(), e.role_id.clone())).collect();
        assert_eq!(got, expected, "case {case}: direct for group {g}");
    }
}

/// Deletes both domains and the global roles; the cascades must leave nothing behind, not
/// even an index entry, so the next case starts from an empty state.
fn teardown(w: &World, m: &Model, case: u64) {
    for r in m.roles.iter().filter(|(_, d)| d.is_none()).map(|(r, _)| r) {
        w.apply(Command::DeleteRole { id: r.clone() }).unwrap();
    }
    for d in ["D0", "D1"] {
        w.delete_domain(d).unwrap();
    }
    let v = w.engine.read();
    for cf in crate::state::cf::STATE_CFS {
        // The cluster's index key stays: it is the only thing teardown cannot remove.
        let left: Vec<_> = v.scan_prefix(cf, b"", 2).unwrap().into_iter().map(|(k, _)| k).collect();
        let expected: Vec<Vec<u8>> =
            if *cf == crate::state::cf::META { vec![crate::state::keys::META_INDEX_KEY.to_vec()] } else { vec![] };
        assert_eq!(left, expected, "case {case}: {cf} not empty after teardown");
    }
}

#[test]
fn effective_assignments_match_a_brute_force_model() {
    let w = World::new();
    let (mut via_group, mut implied, mut refused) = (0, 0, 0);
    for case in 0..CASES {
        let mut rng = StdRng::seed_from_u64(case);
        let mut m = Model::default();
        setup(&w, &mut m, &mut rng);
        refused += run_ops(&w, &mut m, &mut rng);
        check(&w, &m, case);
        let e = m.effective();
        via_group += e.iter().filter(|x| x.3.is_some()).count();
        implied += e.iter().filter(|x| x.4.is_some()).count();
        teardown(&w, &m, case);
    }
    // The generator must exercise what is being compared.
    assert!(
        via_group > CASES as usize && implied > CASES as usize && refused > CASES as usize,
        "{via_group} {implied} {refused}"
    );
}
