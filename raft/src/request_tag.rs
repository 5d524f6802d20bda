//! The API request a proposal serves: the application scopes its request id over the work it
//! does for a request, and a follower sends the ids of the proposals it forwards along with
//! them (the `x-openstack-request-id` header, one id or a comma-separated group), so the
//! leader's log lines about them name the same request as the member's that took it.

use std::future::Future;
use std::sync::Arc;

/// The header a forwarded group's ids travel in.
pub const HEADER: &str = "x-openstack-request-id";

tokio::task_local! {
    static TAG: Arc<str>;
}

/// Runs `f` as the work of request `tag`.
pub async fn scope<F: Future>(tag: Arc<str>, f: F) -> F::Output {
    TAG.scope(tag, f).await
}

/// Runs `f` as the work of `tag`, if there is one.
pub(crate) async fn within<F: Future>(tag: Option<Arc<str>>, f: F) -> F::Output {
    match tag {
        Some(tag) => scope(tag, f).await,
        None => f.await,
    }
}

/// The request this task works for, if any (background jobs have none).
pub fn current() -> Option<Arc<str>> {
    TAG.try_with(Arc::clone).ok()
}

/// A group's ids as one tag (each once, in order).
pub(crate) fn joined<'a>(tags: impl Iterator<Item = &'a Option<Arc<str>>>) -> Option<Arc<str>> {
    let mut ids: Vec<&str> = Vec::new();
    for t in tags.flatten() {
        if !ids.contains(&&**t) {
            ids.push(t);
        }
    }
    (!ids.is_empty()).then(|| Arc::from(ids.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_scope_names_its_tag_and_ends_with_it() {
        assert_eq!(current(), None);
        let seen = scope(Arc::from("req-1"), async { current() }).await;
        assert_eq!(seen.as_deref(), Some("req-1"));
        assert_eq!(current(), None);
    }

    #[test]
    fn a_group_joins_distinct_ids_in_order() {
        let tags = [Some(Arc::from("a")), None, Some(Arc::from("b")), Some(Arc::from("a"))];
        assert_eq!(joined(tags.iter()).as_deref(), Some("a,b"));
        assert_eq!(joined([None, None].iter()), None);
    }
}
