//! `Command::Import`: each record of the batch judged alone, through the same create steps
//! the API's commands use (so an imported record keeps every invariant a created one does).
//! A refused record's writes are dropped on their own (a savepoint per record); the batch as
//! a whole is never refused, its answer says what became of each record.

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyResult};
use super::super::import::{ImportOutcome, ImportRecord};
use super::super::keys;
use super::super::limits::{keys as limit_keys, Limit, RegisteredLimit};
use super::super::model::{Ref, Revocation};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::super::read::{AssignmentReads, IdentityReads};
use super::fatal::Fatal;
use super::{assignment, catalog, credential, doc, expiring, group, identity, limits, resource, role};

/// Records one command may carry: bounds the raft entry and one apply's work.
pub const MAX_RECORDS: usize = 10_000;

pub fn apply(tx: &mut Tx<'_>, records: Vec<ImportRecord>) -> Result<ApplyResult, Fatal> {
    let mut outcomes = Vec::with_capacity(records.len());
    for record in records.into_iter().take(MAX_RECORDS) {
        outcomes.push(one(tx, record)?);
    }
    Ok(Ok(Applied::Imported(outcomes)))
}

fn one(tx: &mut Tx<'_>, record: ImportRecord) -> Result<ImportOutcome, Fatal> {
    match presence(tx, &record)? {
        Presence::Same => {
            // A user the bootstrap made from the source has no password bookkeeping yet.
            if let ImportRecord::User { user, password: Some(state) } = record {
                if tx.password_state(&user.id)?.is_none() {
                    tx.put(cf::PASSWORDS, user.id.into_bytes(), &state)?;
                }
            }
            return Ok(ImportOutcome::Present);
        }
        Presence::Other(why) => return Ok(ImportOutcome::Conflict(why)),
        Presence::Absent => {}
    }
    tx.batch.savepoint();
    let outcome = create(tx, record)?;
    match outcome {
        Ok(_) => {
            tx.batch.release();
            Ok(ImportOutcome::Imported)
        }
        Err(e) => {
            tx.batch.rollback();
            Ok(ImportOutcome::Conflict(e.to_string()))
        }
    }
}

enum Presence {
    Absent,
    /// Stored as the source has it (same id, same identity).
    Same,
    /// The id is taken by something else (why).
    Other(String),
}

fn same_or(same: bool, why: impl FnOnce() -> String) -> Presence {
    if same {
        Presence::Same
    } else {
        Presence::Other(why())
    }
}

/// Whether the record is already here. Identity, not every field: a user who logged in since
/// the last run (rehashed password, failures cleared) is still the same user.
fn presence(tx: &Tx<'_>, record: &ImportRecord) -> Result<Presence, Fatal> {
    let taken = |what: &str, id: &str| format!("the id {id} is already held by a different {what}");
    Ok(match record {
        ImportRecord::Project(p) => match tx.project(&p.id)? {
            None => Presence::Absent,
            Some(have) => same_or(
                have.name == p.name
                    && have.domain_id == p.domain_id
                    && have.is_domain == p.is_domain
                    && have.parent_id == p.parent_id,
                || taken(if have.is_domain { "domain" } else { "project" }, &p.id),
            ),
        },
        ImportRecord::User { user, .. } => match tx.user(&user.id)? {
            None => Presence::Absent,
            Some(have) => {
                same_or(have.name == user.name && have.domain_id == user.domain_id, || taken("user", &user.id))
            }
        },
        ImportRecord::Group(g) => match tx.group(&g.id)? {
            None => Presence::Absent,
            Some(have) => same_or(have.name == g.name && have.domain_id == g.domain_id, || taken("group", &g.id)),
        },
        ImportRecord::Member(m) => present_if(tx.is_member(&m.group_id, &m.user_id)?),
        ImportRecord::Role(r) => match tx.role(&r.id)? {
            None => Presence::Absent,
            Some(have) => same_or(have.name == r.name && have.domain_id == r.domain_id, || taken("role", &r.id)),
        },
        ImportRecord::Implied { prior, implied } => present_if(tx.implied_rule_exists(prior, implied)?),
        ImportRecord::Grant(a) => present_if(tx.grant_stored(a)?),
        ImportRecord::Region(r) => present_if(tx.region(&r.id)?.is_some()),
        ImportRecord::Service(s) => match tx.service(&s.id)? {
            None => Presence::Absent,
            Some(have) => same_or(have.service_type == s.service_type, || taken("service", &s.id)),
        },
        ImportRecord::Endpoint(e) => match tx.endpoint(&e.id)? {
            None => Presence::Absent,
            Some(have) => {
                same_or(have.service_id == e.service_id && have.interface == e.interface, || taken("endpoint", &e.id))
            }
        },
        ImportRecord::Credential(c) => match tx.credential(&c.id)? {
            None => Presence::Absent,
            Some(have) => {
                same_or(have.user_id == c.user_id && have.cred_type == c.cred_type, || taken("credential", &c.id))
            }
        },
        ImportRecord::Doc { doc, .. } => present_if(tx.exists(&Ref::Doc(doc.kind, doc.id.clone()))?),
        ImportRecord::Revocation { audit_id, .. } => {
            present_if(tx.get::<Revocation>(cf::REVOCATIONS, audit_id.as_bytes())?.is_some())
        }
        ImportRecord::RegisteredLimit(r) => {
            match tx.get::<RegisteredLimit>(cf::LIMITS, &limit_keys::registered(&r.id))? {
                None => Presence::Absent,
                Some(have) => same_or(have.slot() == r.slot(), || taken("registered limit", &r.id)),
            }
        }
        ImportRecord::ExpiringMember(m) => {
            present_if(tx.expiring_memberships_of_user(&m.user_id)?.iter().any(|have| have.group_id == m.group_id))
        }
        ImportRecord::Limit(l) => match tx.get::<Limit>(cf::LIMITS, &limit_keys::limit(&l.id))? {
            None => Presence::Absent,
            Some(have) => same_or(
                have.project_id == l.project_id
                    && have.domain_id == l.domain_id
                    && have.registered_limit_id == l.registered_limit_id,
                || taken("limit", &l.id),
            ),
        },
    })
}

fn present_if(stored: bool) -> Presence {
    if stored {
        Presence::Same
    } else {
        Presence::Absent
    }
}

fn create(tx: &mut Tx<'_>, record: ImportRecord) -> Result<ApplyResult, Fatal> {
    match record {
        ImportRecord::Project(p) => resource::create(tx, p),
        ImportRecord::User { user, password } => {
            let id = user.id.clone();
            let created = identity::create(tx, user)?;
            if let (Ok(_), Some(state)) = (&created, password) {
                tx.put(cf::PASSWORDS, id.into_bytes(), &state)?;
            }
            Ok(created)
        }
        ImportRecord::Group(g) => group::create(tx, g),
        ImportRecord::Member(m) => group::add_member(tx, &m.group_id, &m.user_id),
        ImportRecord::Role(r) => role::create(tx, r),
        ImportRecord::Implied { prior, implied } => role::create_implied(tx, &prior, &implied),
        ImportRecord::Grant(a) => assignment::create_grant(tx, a),
        ImportRecord::Region(r) => catalog::create_region(tx, r),
        ImportRecord::Service(s) => catalog::create_service(tx, s),
        ImportRecord::Endpoint(e) => catalog::create_endpoint(tx, e),
        ImportRecord::Credential(c) => credential::create(tx, c),
        ImportRecord::Doc { doc, requires } => doc::put(tx, doc, true, &requires),
        ImportRecord::RegisteredLimit(r) => limits::import_registered(tx, r),
        ImportRecord::Limit(l) => limits::import_limit(tx, l),
        ImportRecord::ExpiringMember(m) => {
            if tx.group(&m.group_id)?.is_none() {
                return Ok(Err(not_found("group", &m.group_id)));
            }
            if tx.user(&m.user_id)?.is_none() {
                return Ok(Err(not_found("user", &m.user_id)));
            }
            expiring::import(tx, &m)?;
            Ok(Ok(Applied::Done))
        }
        ImportRecord::Revocation { audit_id, revocation } => {
            tx.batch.put(cf::REVOCATIONS, keys::revocation_expiry(revocation.expires_at, &audit_id), &[]);
            tx.put(cf::REVOCATIONS, audit_id.into_bytes(), &revocation)?;
            Ok(Ok(Applied::Done))
        }
    }
}

#[cfg(test)]
#[path = "import_tests.rs"]
mod tests;
