//! Typed replies: what a command's apply answers, taken out of [`Applied`].
//!
//! `Applied` is one enum because it travels as bytes (the raft reply and the dedup record), so
//! its shape is part of the wire format and stays as it is. A caller knows which shape its
//! command answers; it names that type (`node.propose_as::<Region>(…)`) and [`expect`] is the
//! one place where a different shape (a bug, never the client's fault) becomes an error.

use super::api_keys::{ApiKey, ApiKeyApplied, ApiKeyCommand};
use super::command::{Applied, Command};
use super::import::ImportOutcome;
use super::limits::{Limit, LimitApplied, LimitCommand, RegisteredLimit};
use super::mapping::{MappingApplied, MappingCommand, MappingRecord};
use super::model::{Credential, Doc, Endpoint, Group, Project, Region, Role, Service, User};
use super::oauth2::{Client, DevicePoll, OAuth2Applied, OAuth2Command, RefreshFamily, SigningKeys};
use super::passkeys::{PasskeyApplied, PasskeyCommand, StoredPasskey};
use super::providers::{Provider, ProviderApplied, ProviderCommand};
use super::restrictions::{RestrictionApplied, RestrictionCommand, TokenRestriction};
use super::scim::{ScimApplied, ScimCommand, ScimRealm, ScimResourceIndex};
use super::shadow::{ShadowApplied, ShadowCommand, VirtualUserMetadata};

/// A type one kind of command answers.
pub trait Reply: Sized {
    /// `applied` as this type, or the name of the shape apply answered instead.
    fn from_applied(applied: Applied) -> Result<Self, &'static str>;
}

/// Apply answered another shape than the caller's reply type.
#[derive(Debug, thiserror::Error)]
#[error("unexpected outcome: apply answered {got} where the caller expected {expected}")]
pub struct Unexpected {
    pub expected: &'static str,
    /// The variant only: records carry secrets (credential blobs, hashes) that logs must not.
    pub got: &'static str,
}

/// `applied` as `R`: the one place a mismatch is detected.
pub fn expect<R: Reply>(applied: Applied) -> Result<R, Unexpected> {
    R::from_applied(applied).map_err(|got| Unexpected { expected: std::any::type_name::<R>(), got })
}

impl Applied {
    /// The variant's name, without its contents.
    pub fn shape(&self) -> &'static str {
        match self {
            Applied::Done => "Done",
            Applied::Project(_) => "Project",
            Applied::User(_) => "User",
            Applied::Bootstrapped { .. } => "Bootstrapped",
            Applied::Group(_) => "Group",
            Applied::Role(_) => "Role",
            Applied::Region(_) => "Region",
            Applied::Service(_) => "Service",
            Applied::Endpoint(_) => "Endpoint",
            Applied::Credential(_) => "Credential",
            Applied::Doc(_) => "Doc",
            Applied::OAuth2(_) => "OAuth2",
            Applied::Providers(_) => "Providers",
            Applied::Mapping(_) => "Mapping",
            Applied::Shadow(_) => "Shadow",
            Applied::ApiKeys(_) => "ApiKeys",
            Applied::Scim(_) => "Scim",
            Applied::Passkeys(_) => "Passkeys",
            Applied::Restrictions(_) => "Restrictions",
            Applied::Limits(_) => "Limits",
            Applied::Imported(_) => "Imported",
        }
    }
}

/// Any outcome, for callers that do not look at it.
impl Reply for Applied {
    fn from_applied(applied: Applied) -> Result<Self, &'static str> {
        Ok(applied)
    }
}

/// `impl Reply for $ty`: the patterns that hold it, each with the value taken out.
macro_rules! reply {
    ($($ty:ty { $($pat:pat => $out:expr),+ $(,)? })*) => {$(
        impl Reply for $ty {
            fn from_applied(applied: Applied) -> Result<Self, &'static str> {
                match applied {
                    $($pat => Ok($out),)+
                    other => Err(other.shape()),
                }
            }
        }
    )*};
}

/// What `Command::BootstrapCluster` answers.
#[derive(Debug)]
pub struct Bootstrapped {
    /// False when the cluster had already been bootstrapped.
    pub fresh: bool,
}

/// Ids of the virtual users `ShadowCommand::DisableInactive` disabled.
#[derive(Debug)]
pub struct DisabledUsers(pub Vec<String>);

/// The `client_id`s of the keys `ApiKeyCommand::Reclaim` deleted.
#[derive(Debug)]
pub struct ReclaimedKeys(pub Vec<String>);

/// What `OAuth2Command::RedeemCode` answers.
#[derive(Debug)]
pub enum Redemption {
    /// The first redemption: the tokens the service minted stand.
    Redeemed,
    /// A second redemption: what the first one issued is revoked now.
    Replayed,
}

/// What `OAuth2Command::Refresh` answers.
#[derive(Debug)]
pub enum Refreshed {
    /// The family with its new current token.
    Family(Box<RefreshFamily>),
    /// A spent refresh token came back: the family is revoked now.
    Reused,
    /// The user, the client or the domain is gone or disabled: the family is revoked now.
    Revoked,
}

reply! {
    () { Applied::Done => () }
    Bootstrapped { Applied::Bootstrapped { fresh } => Bootstrapped { fresh } }
    Project { Applied::Project(p) => p }
    User { Applied::User(u) => u }
    Group { Applied::Group(g) => g }
    Role { Applied::Role(r) => r }
    Region { Applied::Region(r) => r }
    Service { Applied::Service(s) => s }
    Endpoint { Applied::Endpoint(e) => e }
    Credential { Applied::Credential(c) => c }
    Doc { Applied::Doc(d) => d }
    Vec<ImportOutcome> { Applied::Imported(o) => o }

    OAuth2Applied { Applied::OAuth2(a) => a }
    SigningKeys { Applied::OAuth2(OAuth2Applied::Keys(k)) => k }
    Client { Applied::OAuth2(OAuth2Applied::Client(c)) => c }
    DevicePoll { Applied::OAuth2(OAuth2Applied::Device(p)) => p }
    Redemption {
        Applied::OAuth2(OAuth2Applied::Redeemed(_)) => Redemption::Redeemed,
        Applied::OAuth2(OAuth2Applied::CodeReplayed) => Redemption::Replayed,
    }
    Refreshed {
        Applied::OAuth2(OAuth2Applied::Family(f)) => Refreshed::Family(Box::new(f)),
        Applied::OAuth2(OAuth2Applied::FamilyReused) => Refreshed::Reused,
        Applied::OAuth2(OAuth2Applied::FamilyRevoked) => Refreshed::Revoked,
    }

    ProviderApplied { Applied::Providers(a) => a }
    Provider { Applied::Providers(ProviderApplied::Provider(p)) => *p }

    MappingApplied { Applied::Mapping(a) => a }
    MappingRecord { Applied::Mapping(MappingApplied::Ruleset(r)) => r }

    ShadowApplied { Applied::Shadow(a) => a }
    VirtualUserMetadata { Applied::Shadow(ShadowApplied::Record(r)) => *r }
    DisabledUsers { Applied::Shadow(ShadowApplied::Disabled(ids)) => DisabledUsers(ids) }
    Vec<VirtualUserMetadata> { Applied::Shadow(ShadowApplied::Deleted(records)) => records }

    ApiKeyApplied { Applied::ApiKeys(a) => a }
    ApiKey { Applied::ApiKeys(ApiKeyApplied::Key(k)) => *k }
    ReclaimedKeys { Applied::ApiKeys(ApiKeyApplied::Reclaimed(ids)) => ReclaimedKeys(ids) }

    ScimApplied { Applied::Scim(a) => a }
    ScimRealm { Applied::Scim(ScimApplied::Realm(r)) => *r }
    ScimResourceIndex { Applied::Scim(ScimApplied::Resource(r)) => *r }

    PasskeyApplied { Applied::Passkeys(a) => a }
    StoredPasskey { Applied::Passkeys(PasskeyApplied::Passkey(p)) => *p }

    TokenRestriction { Applied::Restrictions(RestrictionApplied::Restriction(r)) => *r }

    Vec<RegisteredLimit> { Applied::Limits(LimitApplied::Registered(r)) => r }
    Vec<Limit> { Applied::Limits(LimitApplied::Limits(l)) => l }
}

/// A subsystem's command as the replicated [`Command`] that carries it, so a caller proposes
/// `OAuth2Command::PutClient { … }` without wrapping it.
macro_rules! carried {
    ($($sub:ty => $variant:ident;)*) => {$(
        impl From<$sub> for Command {
            fn from(c: $sub) -> Self {
                Command::$variant(c)
            }
        }
    )*};
}

carried! {
    OAuth2Command => OAuth2;
    ProviderCommand => Providers;
    MappingCommand => Mapping;
    ShadowCommand => Shadow;
    ApiKeyCommand => ApiKeys;
    ScimCommand => Scim;
    PasskeyCommand => Passkeys;
    RestrictionCommand => Restrictions;
    LimitCommand => Limits;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expected_shape_comes_out() {
        let keys = ReclaimedKeys::from_applied(Applied::ApiKeys(ApiKeyApplied::Reclaimed(vec!["k".into()])));
        assert_eq!(keys.map(|k| k.0).ok(), Some(vec!["k".to_string()]));
        assert!(matches!(expect::<()>(Applied::Done), Ok(())));
        assert!(matches!(expect::<Applied>(Applied::Done), Ok(Applied::Done)));
        let replayed = expect::<Redemption>(Applied::OAuth2(OAuth2Applied::CodeReplayed));
        assert!(matches!(replayed, Ok(Redemption::Replayed)));
        let reused = expect::<Refreshed>(Applied::OAuth2(OAuth2Applied::FamilyReused));
        assert!(matches!(reused, Ok(Refreshed::Reused)));
    }

    #[test]
    fn another_shape_is_unexpected_and_names_no_contents() {
        let e = expect::<ReclaimedKeys>(Applied::ApiKeys(ApiKeyApplied::Done)).unwrap_err();
        assert_eq!(e.got, "ApiKeys");
        assert!(e.expected.ends_with("ReclaimedKeys"), "{}", e.expected);
        let e = expect::<Redemption>(Applied::OAuth2(OAuth2Applied::FamilyReused)).unwrap_err();
        assert!(e.to_string().starts_with("unexpected outcome: apply answered OAuth2 where"), "{e}");
        assert!(expect::<DisabledUsers>(Applied::Shadow(ShadowApplied::Deleted(vec![]))).is_err());
    }
}
