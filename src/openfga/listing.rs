//! The role assignment listing on the store, by the shape of the query:
//!
//! | query shape                       | effective                     | otherwise            |
//! |-----------------------------------|-------------------------------|----------------------|
//! | actor + target + role             | model-resolved check          | exact read           |
//! | actor + target                    | batch check, every relation   | read, mapped back    |
//! | actor only                        | streamed listing per relation | 501                  |
//! | target (role optional), no actor  | read                          | read                 |
//! | role only, or nothing             | 501                           | 501                  |
//!
//! Every assignment is direct (`inherited` false, no `implied_via`); a target's listing never
//! resolves groups nor walks the project tree. Results are whole, de-duplicated and sorted.

use super::client::AtBound;
use super::driver::{DriverError, DriverResult, OpenFga};
use super::wire::ReadKey;
use crate::state::model::{ActorKind, Assignment, Target};
use crate::state::Reader;

/// What the listing asks for.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pub actor: Option<(ActorKind, String)>,
    pub target: Option<Target>,
    pub role: Option<String>,
    pub effective: bool,
}

impl OpenFga {
    pub async fn list(&self, r: &impl Reader, q: &Query) -> DriverResult<Vec<Assignment>> {
        let v = self.vocabulary(r)?;
        let relation = q.role.as_deref().map(|id| v.relation(id)).transpose()?.map(str::to_string);
        let found: Vec<Assignment> = match (&q.actor, &q.target) {
            (Some((kind, id)), Some(target)) if q.effective => {
                let relations = match &relation {
                    Some(rel) => vec![rel.as_str()],
                    None => v.relations(),
                };
                let held = self.resolved_relations(&v, (*kind, id), target, &relations).await?;
                held.iter()
                    .flat_map(|rel| v.roles(rel).iter())
                    .filter(|role_id| q.role.as_ref().is_none_or(|want| want == *role_id))
                    .map(|role_id| Assignment {
                        actor_kind: *kind,
                        actor_id: id.clone(),
                        target: target.clone(),
                        role_id: role_id.clone(),
                        inherited: false,
                    })
                    .collect()
            }
            (Some((kind, id)), Some(target)) => {
                let mut keys = Vec::new();
                for u in v.actors(*kind, id)? {
                    for o in v.objects(target)? {
                        keys.push(ReadKey { user: Some(u.clone()), relation: relation.clone(), object: Some(o) });
                    }
                }
                self.read_grants(&v, keys, AtBound::Cut).await?
            }
            (Some((ActorKind::User, id)), None) if q.effective => {
                self.resolved_for_user(r, id, q.role.as_deref()).await?
            }
            (Some(_), None) => {
                return Err(DriverError::NotImplemented("Listing an actor's assignments on every target"))
            }
            (None, Some(target)) => {
                let keys = v
                    .objects(target)?
                    .into_iter()
                    .map(|o| ReadKey { user: None, relation: relation.clone(), object: Some(o) })
                    .collect();
                self.read_grants(&v, keys, AtBound::Cut).await?
            }
            (None, None) => {
                return Err(DriverError::NotImplemented("Listing assignments without an actor or a target"))
            }
        };
        // A relation shared by several roles reads back as each of them: keep the asked one.
        let mut out: Vec<Assignment> =
            found.into_iter().filter(|a| q.role.as_ref().is_none_or(|want| *want == a.role_id)).collect();
        out.sort();
        out.dedup();
        Ok(out)
    }
}

/// One page of a listing (rule 6): after (or, reversed, before) `marker`, at most `limit`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    pub marker: Option<String>,
    pub limit: Option<usize>,
    pub reverse: bool,
}

/// An assignment's place in the listing order: unique per grant, stable across calls, and
/// safe to carry in a URL (ids and the fixed words only).
pub fn marker(a: &Assignment) -> String {
    let actor = match a.actor_kind {
        ActorKind::User => "user",
        ActorKind::Group => "group",
    };
    let target = match &a.target {
        Target::Project(id) => format!("project:{id}"),
        Target::Domain(id) => format!("domain:{id}"),
        Target::System => "system:all".to_string(),
    };
    format!("{actor}:{}:{target}:{}", a.actor_id, a.role_id)
}

/// Sorts by marker and slices: the assignments strictly after the marker (before it when
/// reversed, the nearest `limit` of them, still in order), and whether more lie beyond the
/// page in its direction. A marker need not be one of the results: the listing is computed
/// afresh on every call, and a grant revoked between two pages must not break the walk.
pub fn slice(mut found: Vec<Assignment>, page: &Page) -> (Vec<Assignment>, bool) {
    found.sort_by_cached_key(marker);
    if let Some(m) = &page.marker {
        found.retain(|a| if page.reverse { marker(a) < *m } else { marker(a) > *m });
    }
    let Some(limit) = page.limit.filter(|l| found.len() > *l) else { return (found, false) };
    if page.reverse {
        found.drain(..found.len() - limit);
    } else {
        found.truncate(limit);
    }
    (found, true)
}
