//! The first step of lists: the records an index names (the members of a domain, of a group,
//! ...), and for records a domain owns under unique names (users, groups, projects) the ones a
//! query's `domain_id` and `name` select.

use idnode_storage::Result;

use crate::state::read::reader::Reader;

/// With a domain, the record named `name` in it (the `names` index) or every record of it (the
/// `members` index); with none, `all()`. `get` reads a record by id.
pub fn of_domain<T>(
    view: &impl Reader,
    (names, members): (&str, &str),
    (domain, name): (Option<&String>, Option<&String>),
    get: impl Fn(&str) -> Result<Option<T>>,
    all: impl FnOnce() -> Result<Vec<T>>,
) -> Result<Vec<T>> {
    let Some(domain) = domain else { return all() };
    if let Some(name) = name {
        return Ok(view
            .id_by_name(names, domain, name)?
            .map(|id| get(&id))
            .transpose()?
            .flatten()
            .into_iter()
            .collect());
    }
    found(view.member_ids(members, domain)?, get)
}

/// The records `ids` name that exist, in that order (`get` reads one by id).
pub fn found<T>(ids: Vec<String>, get: impl Fn(&str) -> Result<Option<T>>) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for id in ids {
        out.extend(get(&id)?);
    }
    Ok(out)
}
