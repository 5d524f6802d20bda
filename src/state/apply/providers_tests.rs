//! The provider registries' apply invariants, against a real engine.

use crate::state::apply::tests::{project, World};
use crate::state::command::{Applied, ApplyError, Command};
use crate::state::providers::*;
use crate::state::{cf, Reader};

fn oidc(id: &str, domain: Option<&str>, provider_id: &str) -> Provider {
    Provider {
        id: id.into(),
        domain_id: domain.map(str::to_string),
        provider_id: provider_id.into(),
        config: ProviderConfig::Oidc(OidcProvider {
            issuer: "https://idp.example".into(),
            client_id: "cid".into(),
            client_secret: Some(Secret("s3cret".into())),
            jwks_uri: "https://idp.example/jwks".into(),
            allowed_redirect_uris: vec![],
            oidc_scopes: vec!["openid".into()],
            token_endpoint_auth_method: None,
        }),
        created_at: 1,
        updated_at: 1,
    }
}

fn spiffe(id: &str, domain: Option<&str>, provider_id: &str) -> Provider {
    Provider {
        config: ProviderConfig::Spiffe(TrustDomain {
            trust_domain: "example.org".into(),
            trust_bundle_pem: "x".into(),
        }),
        ..oidc(id, domain, provider_id)
    }
}

fn put(w: &World, p: Provider, create: bool) -> Result<Applied, ApplyError> {
    w.apply(Command::Providers(ProviderCommand::Put { provider: Box::new(p), create }))
}

fn delete(w: &World, kind: ProviderKind, id: &str) -> Result<Applied, ApplyError> {
    w.apply(Command::Providers(ProviderCommand::Delete { kind, id: id.into() }))
}

fn stored(w: &World, kind: ProviderKind, id: &str) -> Option<Provider> {
    Reader::get(&w.engine.read(), cf::PROVIDERS, &keys::record(kind, id)).unwrap()
}

/// Domains `a` and `b`.
fn world() -> World {
    let w = World::new();
    w.apply(Command::CreateProject(project("a", "A", "a", true))).unwrap();
    w.apply(Command::CreateProject(project("b", "B", "b", true))).unwrap();
    w
}

#[test]
fn provider_id_is_unique_per_kind_and_domain() {
    let w = world();
    put(&w, oidc("1", Some("a"), "corp"), true).unwrap();
    assert_eq!(w.engine.read().id_by_name(ProviderKind::Oidc.handle_ns(), "a", "corp").unwrap().as_deref(), Some("1"));
    let again = put(&w, oidc("2", Some("a"), "corp"), true);
    assert!(matches!(again, Err(ApplyError::Conflict(ref m)) if m.contains("provider_id")), "{again:?}");
    assert!(stored(&w, ProviderKind::Oidc, "2").is_none(), "a refusal writes nothing");
    // Another domain, the global scope and another kind are other scopes.
    put(&w, oidc("3", Some("b"), "corp"), true).unwrap();
    put(&w, oidc("4", None, "corp"), true).unwrap();
    put(&w, spiffe("5", Some("a"), "corp"), true).unwrap();
    assert!(matches!(put(&w, oidc("6", None, "corp"), true), Err(ApplyError::Conflict(_))));
    // Handles compare case-insensitively, as names do.
    assert!(matches!(put(&w, oidc("7", Some("a"), "CORP"), true), Err(ApplyError::Conflict(_))));
    // The same id twice is a conflict too.
    assert!(matches!(put(&w, oidc("1", Some("a"), "other"), true), Err(ApplyError::Conflict(_))));
}

#[test]
fn renaming_frees_the_old_handle_and_takes_the_new_one() {
    let w = world();
    put(&w, oidc("1", Some("a"), "corp"), true).unwrap();
    put(&w, oidc("2", Some("a"), "partner"), true).unwrap();
    // An update keeping its own handle is fine; taking another's is not.
    put(&w, oidc("1", Some("a"), "corp"), false).unwrap();
    assert!(matches!(put(&w, oidc("1", Some("a"), "partner"), false), Err(ApplyError::Conflict(_))));
    put(&w, oidc("1", Some("a"), "renamed"), false).unwrap();
    put(&w, oidc("3", Some("a"), "corp"), true).expect("the old handle is free again");
    assert!(matches!(put(&w, oidc("4", Some("a"), "renamed"), true), Err(ApplyError::Conflict(_))));
}

#[test]
fn references_domain_must_exist_and_cannot_change() {
    let w = world();
    let r = put(&w, oidc("1", Some("nope"), "corp"), true);
    assert!(matches!(r, Err(ApplyError::NotFound { ref kind, .. }) if kind == "domain"), "{r:?}");
    put(&w, oidc("1", Some("a"), "corp"), true).unwrap();
    assert!(matches!(put(&w, oidc("1", Some("b"), "corp"), false), Err(ApplyError::Invalid(_))));
    assert!(matches!(put(&w, oidc("1", None, "corp"), false), Err(ApplyError::Invalid(_))));
    // An update of a record that does not exist (or of another kind) is 404.
    assert!(matches!(put(&w, oidc("9", Some("a"), "x"), false), Err(ApplyError::NotFound { .. })));
    assert!(matches!(put(&w, spiffe("1", Some("a"), "corp"), false), Err(ApplyError::NotFound { .. })));
}

#[test]
fn delete_removes_the_record_and_its_handle() {
    let w = world();
    put(&w, oidc("1", Some("a"), "corp"), true).unwrap();
    assert!(matches!(delete(&w, ProviderKind::Spiffe, "1"), Err(ApplyError::NotFound { .. })), "kinds are apart");
    delete(&w, ProviderKind::Oidc, "1").unwrap();
    assert!(stored(&w, ProviderKind::Oidc, "1").is_none());
    assert_eq!(w.engine.read().id_by_name(ProviderKind::Oidc.handle_ns(), "a", "corp").unwrap(), None);
    assert!(matches!(delete(&w, ProviderKind::Oidc, "1"), Err(ApplyError::NotFound { .. })));
    put(&w, oidc("2", Some("a"), "corp"), true).expect("the handle is free again");
}

#[test]
fn secrets_never_show_in_debug() {
    let p = oidc("1", Some("a"), "corp");
    assert!(!format!("{p:?}").contains("s3cret"));
    let cmd = Command::Providers(ProviderCommand::Put { provider: Box::new(p), create: true });
    assert!(!format!("{cmd:?}").contains("s3cret"));
}
