//! Model values for tests that write state directly: the fields a test does not care about are
//! set here once, so a test names only what it checks.

use crate::state::model::{FederatedIdentity, FederatedProtocol, Project, Role, User};
use crate::state::scim::legacy_derived_user_id;

/// A project, or a domain when `is_domain` (a project's parent is its domain).
pub(crate) fn project(id: &str, name: &str, domain: &str, is_domain: bool) -> Project {
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

/// A global role.
pub(crate) fn role(id: &str, name: &str) -> Role {
    Role {
        id: id.into(),
        name: name.into(),
        domain_id: None,
        description: None,
        extra: "{}".into(),
        options: "{}".into(),
    }
}

/// An enabled local user without a password.
pub(crate) fn user(id: &str, name: &str, domain: &str) -> User {
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

/// A user as the first release's mapped `local` login created it: the old derivation's id,
/// federated to `idp`.
pub(crate) fn legacy_login(domain: &str, idp: &str, subject: &str) -> User {
    let mut u = user(&legacy_derived_user_id(domain, subject), subject, domain);
    u.federated = vec![FederatedIdentity {
        idp_id: idp.into(),
        protocols: vec![FederatedProtocol { protocol_id: "mapped".into(), unique_id: subject.into() }],
    }];
    u
}
