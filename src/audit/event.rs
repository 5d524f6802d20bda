//! CADF-shaped audit events (DMTF Cloud Auditing Data Federation, the shape Keystone's
//! notifications use) and builders for the events the spec names (Events items 1–3).
//!
//! The wire keys are CADF's (`typeURI`, `eventType`, `eventTime`); the spec's `target.type_uri`
//! is the `typeURI` of the target. Only builders make events, and none of them takes a secret:
//! the fields are identifiers, names and outcomes, so no password, API key, client secret or
//! token can reach the audit trail by accident.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The CADF event schema every event names.
pub const CADF_EVENT: &str = "http://schemas.dmtf.org/cloud/audit/1.0/event";
/// `target.typeURI` of a SCIM user (spec, Events item 1).
pub const TYPE_ACCOUNT: &str = "data/security/account";
/// `target.typeURI` of a SCIM group (spec, Events item 1).
pub const TYPE_GROUP: &str = "data/security/group";
/// The identity service itself: observer, and initiator of background jobs.
pub const TYPE_SERVICE: &str = "service/security";
/// An initiating user (CADF `data/security/account/user`).
pub const TYPE_USER: &str = "data/security/account/user";
/// An API key's client (the initiator of a SCIM write).
pub const TYPE_API_CLIENT: &str = "service/security/account/apikey";
/// A mapping ruleset (the target of a mapping evaluation).
pub const TYPE_MAPPING: &str = "data/security/mapping";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventType {
    /// Something a client or job did to a resource.
    Activity,
    /// An observation about the service itself.
    Monitor,
}

/// CADF action taxonomy, the subset idnode emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Create,
    Update,
    /// SCIM deprovisioning (spec: `disable`).
    Disable,
    /// SCIM purge, archive deletion.
    Delete,
    /// Evaluating a credential or a mapping for an authentication.
    Authenticate,
}

impl Action {
    pub const ALL: [Action; 5] =
        [Action::Create, Action::Update, Action::Disable, Action::Delete, Action::Authenticate];

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Disable => "disable",
            Action::Delete => "delete",
            Action::Authenticate => "authenticate",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    #[serde(rename = "success")]
    Success,
    #[serde(rename = "failure")]
    Failure,
    #[serde(rename = "pending")]
    Pending,
    /// A mapping regex outlived its deadline and counted as no match (spec, Events item 2).
    RegexMatchTimeout,
}

impl Outcome {
    pub const ALL: [Outcome; 4] = [Outcome::Success, Outcome::Failure, Outcome::Pending, Outcome::RegexMatchTimeout];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Pending => "pending",
            Outcome::RegexMatchTimeout => "RegexMatchTimeout",
        }
    }
}

/// A CADF resource (initiator, target, observer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resource {
    #[serde(rename = "typeURI")]
    pub type_uri: String,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Resource {
    pub fn new(type_uri: &str, id: &str) -> Self {
        Resource { type_uri: type_uri.to_string(), id: id.to_string(), name: None }
    }

    /// The node that saw the event (`observer.id` = `idnode-node-{id}`).
    pub fn node(node_id: u64) -> Self {
        Resource::new(TYPE_SERVICE, &format!("idnode-node-{node_id}"))
    }
}

/// A CADF attachment: typed content about the event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    pub name: String,
    #[serde(rename = "typeURI")]
    pub type_uri: String,
    pub content: Value,
}

/// One audit record, one line of the sink.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    #[serde(rename = "typeURI")]
    pub type_uri: String,
    /// A fresh UUID: consumers de-duplicate by it (a line may repeat after a sink error).
    pub id: String,
    pub event_type: EventType,
    /// RFC 3339, UTC, microseconds.
    pub event_time: String,
    pub action: Action,
    pub outcome: Outcome,
    pub initiator: Resource,
    pub target: Resource,
    /// Stamped by the audit writer with the node, so builders need no node at hand.
    pub observer: Resource,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// The API request that caused it (`X-OpenStack-Request-Id`), under Keystone's key for it
    /// in its CADF notifications; background jobs' events have none.
    #[serde(rename = "request_id", default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl Event {
    fn new(event_type: EventType, action: Action, outcome: Outcome, initiator: Resource, target: Resource) -> Self {
        Event {
            type_uri: CADF_EVENT.to_string(),
            id: uuid::Uuid::new_v4().to_string(),
            event_type,
            event_time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            action,
            outcome,
            initiator,
            target,
            observer: Resource::new(TYPE_SERVICE, ""),
            attachments: Vec::new(),
            request_id: crate::http::request_id::current().map(|id| id.to_string()),
        }
    }

    fn attach(mut self, name: &str, content: Value) -> Self {
        self.attachments.push(Attachment { name: name.to_string(), type_uri: "application/json".into(), content });
        self
    }
}

/// SCIM resource kinds decide `target.typeURI`.
pub use crate::state::scim::Kind as ScimKind;

/// Who made a SCIM write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScimInitiator<'a> {
    /// A SCIM request: the API key's `client_id` (never the key itself).
    ApiKey(&'a str),
    /// An administrator's purge: the user id.
    User(&'a str),
    /// The retention janitor.
    Janitor,
}

/// What a SCIM write did (spec, Events item 1). Identifiers only: the API key itself never
/// appears, only its `client_id`.
#[derive(Debug, Clone)]
pub struct ScimWrite<'a> {
    /// `create`, `update`, `disable` (deprovisioning) or `delete` (purge).
    pub action: Action,
    pub kind: ScimKind,
    /// The idnode id of the user or group.
    pub resource_id: &'a str,
    pub realm_provider_id: &'a str,
    pub external_id: Option<&'a str>,
    /// Who wrote: the API key (`client_id`), an administrator purging, or the janitor.
    pub initiator: ScimInitiator<'a>,
    pub outcome: Outcome,
}

/// Spec, Events item 1: every SCIM write.
pub fn scim_write(w: &ScimWrite<'_>) -> Event {
    let target_type = match w.kind {
        ScimKind::User => TYPE_ACCOUNT,
        ScimKind::Group => TYPE_GROUP,
    };
    let initiator = match w.initiator {
        ScimInitiator::ApiKey(client) => Resource::new(TYPE_API_CLIENT, client),
        ScimInitiator::User(user) => Resource::new(TYPE_USER, user),
        ScimInitiator::Janitor => Resource::new(TYPE_SERVICE, "idnode-janitor"),
    };
    Event::new(EventType::Activity, w.action, w.outcome, initiator, Resource::new(target_type, w.resource_id))
        .attach("scim", json!({"realm_provider_id": w.realm_provider_id, "external_id": w.external_id}))
}

/// A user's own action on the account page: who did it, what it touched, and whether the
/// API allowed it (the page acts only through the API, which decides).
pub fn account_action(user_id: &str, action: Action, target: Resource, operation: &str, outcome: Outcome) -> Event {
    Event::new(EventType::Activity, action, outcome, Resource::new(TYPE_USER, user_id), target)
        .attach("account", json!({"operation": operation}))
}

/// Spec, Events item 2: a mapping regex outlived its deadline during an authentication. The
/// claim's value is left out (it is the caller's data and may be anything); its name and the
/// rule say where to look.
pub fn regex_match_timeout(mapping_id: &str, provider_id: &str, rule_name: &str, claim: &str) -> Event {
    Event::new(
        EventType::Activity,
        Action::Authenticate,
        Outcome::RegexMatchTimeout,
        Resource::new(TYPE_SERVICE, "idnode-mapping-engine"),
        Resource::new(TYPE_MAPPING, mapping_id),
    )
    .attach("mapping", json!({"provider_id": provider_id, "rule_name": rule_name, "claim": claim}))
}

/// The identity of an archived virtual user, as the archive deletion reports it.
#[derive(Debug, Clone, Serialize)]
pub struct ArchivedIdentity<'a> {
    pub user_id: &'a str,
    pub user_name: &'a str,
    /// `None` for a virtual user of a global (claims-driven) mapping.
    pub domain_id: Option<&'a str>,
    pub provider_id: &'a str,
    pub mapping_id: &'a str,
    pub unique_workload_id: &'a str,
    /// RFC 3339 times, when known.
    pub disabled_at: Option<&'a str>,
    pub last_authenticated_at: Option<&'a str>,
}

/// The nightly job disabled a virtual user that had not authenticated for `inactivity_days`
/// (the spec names the transition, not its event; it is recorded like the deletion it starts
/// the clock for).
pub fn virtual_user_deactivated(user_id: &str, inactivity_days: i64) -> Event {
    Event::new(
        EventType::Activity,
        Action::Disable,
        Outcome::Success,
        Resource::new(TYPE_SERVICE, "idnode-janitor"),
        Resource::new(TYPE_ACCOUNT, user_id),
    )
    .attach("lifecycle", json!({"reason": "inactivity", "inactivity_days": inactivity_days}))
}

/// Spec, Events item 3: the background job deleted an archived virtual user.
pub fn virtual_user_archive_deleted(who: &ArchivedIdentity<'_>) -> Event {
    let content = serde_json::to_value(who).unwrap_or(Value::Null);
    Event::new(
        EventType::Activity,
        Action::Delete,
        Outcome::Success,
        Resource::new(TYPE_SERVICE, "idnode-janitor"),
        Resource::new(TYPE_ACCOUNT, who.user_id),
    )
    .attach("identity", content)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_of(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, v)| {
                out.push(k.to_lowercase());
                keys_of(v, out)
            }),
            Value::Array(a) => a.iter().for_each(|v| keys_of(v, out)),
            _ => {}
        }
    }

    /// No key of any event names a secret (defence against a later builder adding one).
    fn assert_no_secret_fields(v: &Value) {
        let mut keys = Vec::new();
        keys_of(v, &mut keys);
        for k in keys {
            for bad in ["password", "secret", "token", "api_key", "credential"] {
                assert!(!k.contains(bad), "audit event carries a field named {k:?}");
            }
        }
    }

    #[test]
    fn scim_user_create_is_cadf() {
        let e = scim_write(&ScimWrite {
            action: Action::Create,
            kind: ScimKind::User,
            resource_id: "u1",
            realm_provider_id: "okta-prod",
            external_id: Some("00u1"),
            initiator: ScimInitiator::ApiKey("key-client-7"),
            outcome: Outcome::Success,
        });
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["typeURI"], CADF_EVENT);
        assert_eq!(v["eventType"], "activity");
        assert_eq!(v["action"], "create");
        assert_eq!(v["outcome"], "success");
        assert_eq!(v["target"], json!({"typeURI": "data/security/account", "id": "u1"}));
        assert_eq!(v["initiator"]["id"], "key-client-7");
        assert_eq!(v["attachments"][0]["content"], json!({"realm_provider_id": "okta-prod", "external_id": "00u1"}));
        assert_eq!(v["attachments"][0]["typeURI"], "application/json");
        assert!(uuid::Uuid::parse_str(v["id"].as_str().unwrap()).is_ok());
        let t = chrono::DateTime::parse_from_rfc3339(v["eventTime"].as_str().unwrap()).unwrap();
        assert_eq!(t.offset().local_minus_utc(), 0);
        assert!(v["eventTime"].as_str().unwrap().ends_with('Z'));
        assert_no_secret_fields(&v);
        let back: Event = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
    }

    #[tokio::test]
    async fn an_event_names_the_request_that_caused_it() {
        let write = || {
            scim_write(&ScimWrite {
                action: Action::Create,
                kind: ScimKind::User,
                resource_id: "u1",
                realm_provider_id: "p",
                external_id: None,
                initiator: ScimInitiator::ApiKey("k"),
                outcome: Outcome::Success,
            })
        };
        let id = "req-3fa2b6c4-1d2e-4f50-9a8b-0c1d2e3f4a5b";
        let e = idnode_raft::request_tag::scope(id.into(), async { write() }).await;
        assert_eq!(serde_json::to_value(&e).unwrap()["request_id"], id);
        // A background job's event names no request.
        assert!(serde_json::to_value(write()).unwrap().get("request_id").is_none());
    }

    #[test]
    fn scim_group_actions_and_janitor_purge() {
        for (action, word) in [(Action::Update, "update"), (Action::Disable, "disable"), (Action::Delete, "delete")] {
            let e = scim_write(&ScimWrite {
                action,
                kind: ScimKind::Group,
                resource_id: "g1",
                realm_provider_id: "p",
                external_id: None,
                initiator: ScimInitiator::Janitor,
                outcome: Outcome::Success,
            });
            let v = serde_json::to_value(&e).unwrap();
            assert_eq!(v["action"], word);
            assert_eq!(v["target"]["typeURI"], "data/security/group");
            assert_eq!(v["initiator"], json!({"typeURI": "service/security", "id": "idnode-janitor"}));
            assert_eq!(v["attachments"][0]["content"]["external_id"], Value::Null);
            assert_no_secret_fields(&v);
        }
    }

    #[test]
    fn regex_timeout_is_an_access_event() {
        let v = serde_json::to_value(regex_match_timeout("m1", "k8s-prod", "workloads", "sub")).unwrap();
        assert_eq!(v["outcome"], "RegexMatchTimeout");
        assert_eq!(v["action"], "authenticate");
        assert_eq!(v["target"], json!({"typeURI": TYPE_MAPPING, "id": "m1"}));
        assert_eq!(
            v["attachments"][0]["content"],
            json!({"provider_id": "k8s-prod", "rule_name": "workloads", "claim": "sub"})
        );
        assert_no_secret_fields(&v);
    }

    #[test]
    fn archive_deletion_carries_the_identity() {
        let who = ArchivedIdentity {
            user_id: "vu1",
            user_name: "system:serviceaccount:ns:sa",
            domain_id: Some("d1"),
            provider_id: "k8s-prod",
            mapping_id: "m1",
            unique_workload_id: "ns/sa",
            disabled_at: Some("2024-01-01T00:00:00Z"),
            last_authenticated_at: None,
        };
        let v = serde_json::to_value(virtual_user_archive_deleted(&who)).unwrap();
        assert_eq!((v["action"].as_str(), v["outcome"].as_str()), (Some("delete"), Some("success")));
        assert_eq!(v["target"]["id"], "vu1");
        let content = &v["attachments"][0]["content"];
        assert_eq!(content["user_name"], "system:serviceaccount:ns:sa");
        assert_eq!(content["domain_id"], "d1");
        assert_eq!(content["provider_id"], "k8s-prod");
        assert_no_secret_fields(&v);
    }
}
