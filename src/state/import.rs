//! Records moved in from another identity service (`idnode import keystone`), ids unchanged.
//!
//! One `Command::Import` carries a batch of them; apply judges each alone (see
//! `apply::import`): a record already here as it is in the source is `Present`, one that
//! clashes with what is here (same id, different identity; a name taken; a reference missing)
//! is a `Conflict` and writes nothing, the rest are `Imported`. Nothing stored is overwritten,
//! so a second run of the same source changes nothing.

use serde::{Deserialize, Serialize};

use super::limits::{Limit, RegisteredLimit};
use super::model::*;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ImportRecord {
    /// A domain (`is_domain`) or a project.
    Project(Project),
    /// A user with, for a local one, its password bookkeeping (history in the source's hash
    /// formats, failed attempts).
    User {
        user: User,
        password: Option<PasswordState>,
    },
    Group(Group),
    Member(Membership),
    Role(Role),
    Implied {
        prior: String,
        implied: String,
    },
    Grant(Assignment),
    Region(Region),
    Service(Service),
    Endpoint(Endpoint),
    Credential(Credential),
    /// A document record (policies, endpoint groups, federation, ...) once `requires` exist.
    Doc {
        doc: Doc,
        requires: Vec<Ref>,
    },
    /// A revoked token's audit id: it stays revoked until `expires_at`.
    Revocation {
        audit_id: String,
        revocation: Revocation,
    },
    /// A registered limit (a service's default for a resource).
    RegisteredLimit(RegisteredLimit),
    /// A project's or domain's limit, onto the registered limit it names.
    Limit(Limit),
    /// A group membership a federated login granted for a while.
    ExpiringMember(ExpiringMembership),
}

impl ImportRecord {
    /// The kind, as reports name it.
    pub fn kind(&self) -> &'static str {
        match self {
            ImportRecord::Project(p) if p.is_domain => "domains",
            ImportRecord::Project(_) => "projects",
            ImportRecord::User { .. } => "users",
            ImportRecord::Group(_) => "groups",
            ImportRecord::Member(_) => "group memberships",
            ImportRecord::Role(_) => "roles",
            ImportRecord::Implied { .. } => "implied roles",
            ImportRecord::Grant(_) => "role assignments",
            ImportRecord::Region(_) => "regions",
            ImportRecord::Service(_) => "services",
            ImportRecord::Endpoint(_) => "endpoints",
            ImportRecord::Credential(_) => "credentials",
            ImportRecord::Doc { doc, .. } => doc_kind_plural(doc.kind),
            ImportRecord::Revocation { .. } => "revocation events",
            ImportRecord::RegisteredLimit(_) => "registered limits",
            ImportRecord::Limit(_) => "limits",
            ImportRecord::ExpiringMember(_) => "expiring group memberships",
        }
    }

    /// What the record is, for a report line: its id, or what identifies a relation.
    pub fn label(&self) -> String {
        match self {
            ImportRecord::Project(p) => format!("{} ({})", p.id, p.name),
            ImportRecord::User { user, .. } => format!("{} ({})", user.id, user.name),
            ImportRecord::Group(g) => format!("{} ({})", g.id, g.name),
            ImportRecord::Member(m) => format!("user {} in group {}", m.user_id, m.group_id),
            ImportRecord::Role(r) => format!("{} ({})", r.id, r.name),
            ImportRecord::Implied { prior, implied } => format!("{prior} implies {implied}"),
            ImportRecord::Grant(a) => {
                let target = match &a.target {
                    Target::Project(id) => format!("project {id}"),
                    Target::Domain(id) => format!("domain {id}"),
                    Target::System => "system".to_string(),
                };
                let inherited = if a.inherited { " (inherited)" } else { "" };
                format!("role {} to {:?} {} on {target}{inherited}", a.role_id, a.actor_kind, a.actor_id)
            }
            ImportRecord::Region(r) => r.id.clone(),
            ImportRecord::Service(s) => format!("{} ({})", s.id, s.service_type),
            ImportRecord::Endpoint(e) => format!("{} ({} {})", e.id, e.interface, e.url),
            ImportRecord::Credential(c) => format!("{} ({})", c.id, c.cred_type),
            ImportRecord::Doc { doc, .. } => doc.id.clone(),
            ImportRecord::Revocation { audit_id, .. } => audit_id.clone(),
            ImportRecord::RegisteredLimit(r) => format!("{} ({} of service {})", r.id, r.resource_name, r.service_id),
            ImportRecord::Limit(l) => {
                let owner = l.project_id.as_deref().or(l.domain_id.as_deref()).unwrap_or_default();
                format!("{} ({} for {owner})", l.id, l.resource_name)
            }
            ImportRecord::ExpiringMember(m) => {
                format!("user {} in group {} (through {})", m.user_id, m.group_id, m.idp_id)
            }
        }
    }
}

fn doc_kind_plural(kind: DocKind) -> &'static str {
    match kind {
        DocKind::Policy => "policies",
        DocKind::EndpointGroup => "endpoint groups",
        DocKind::EndpointGroupProject => "endpoint group projects",
        DocKind::ProjectEndpoint => "project endpoints",
        DocKind::IdentityProvider => "identity providers",
        DocKind::FederationProtocol => "federation protocols",
        DocKind::Mapping => "mappings",
        DocKind::ServiceProvider => "service providers",
        DocKind::OAuthConsumer => "OAuth1 consumers",
        DocKind::DomainConfig => "domain configurations",
        DocKind::ApplicationCredential => "application credentials",
        DocKind::AccessRule => "access rules",
        DocKind::Trust => "trusts",
        DocKind::OAuthRequestToken => "OAuth1 request tokens",
        DocKind::OAuthAccessToken => "OAuth1 access tokens",
        DocKind::PolicyAssociation => "policy associations",
    }
}

/// What became of one record of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ImportOutcome {
    Imported,
    /// Already here, as the source has it: left alone.
    Present,
    /// Refused (the reason): nothing of it was written.
    Conflict(String),
}
