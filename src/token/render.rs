use serde_json::{json, Value};

use super::payload::TokenScope;
use super::validate::ValidToken;

/// Keystone's timestamp format: UTC, microseconds, `Z`.
pub fn iso_micros(micros: i64) -> String {
    chrono::DateTime::from_timestamp_micros(micros)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
        .unwrap_or_default()
}

/// RFC 3339 in whole seconds, UTC (`2026-11-23T18:00:00Z`): the v4 resources' timestamps.
pub fn iso_seconds(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0)
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| t.to_string())
}

/// Keystone's format for `password_expires_at`: like [`iso_micros`] without the `Z`.
pub fn iso_micros_naive(micros: i64) -> String {
    chrono::DateTime::from_timestamp_micros(micros)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string())
        .unwrap_or_default()
}

/// The token object of validation and issue responses.
pub fn render_token(vt: &ValidToken, catalog: Option<&Value>) -> Value {
    let p = &vt.payload;
    let federated = p.federated();
    // A Keystone federated login's method is named after its protocol.
    let methods: Vec<&str> = p
        .method_names()
        .into_iter()
        .map(|m| match federated {
            Some(f) if m == "mapped" => f.protocol_id.as_str(),
            _ => m,
        })
        .collect();
    let mut t = json!({
        "audit_ids": p.audit_id_strings(),
        "methods": methods,
        "expires_at": iso_micros(p.expires_at),
        "issued_at": iso_micros(p.issued_at),
        "user": {
            "id": vt.user.id,
            "name": vt.user.name,
            "domain": {"id": vt.user_domain.id, "name": vt.user_domain.name},
            "password_expires_at": vt.user.password_expires_at.map(iso_micros_naive),
        },
    });
    let obj = t.as_object_mut();
    let Some(obj) = obj else { return t };
    if let Some(f) = federated {
        // As Keystone: the login's provider, protocol and groups, and no password expiry.
        let groups: Vec<Value> = f.group_ids.iter().map(|g| json!({"id": g})).collect();
        if let Some(user) = obj.get_mut("user").and_then(Value::as_object_mut) {
            user.remove("password_expires_at");
            user.insert(
                "OS-FEDERATION".into(),
                json!({"groups": groups, "identity_provider": {"id": f.identity_provider_id},
                       "protocol": {"id": f.protocol_id}}),
            );
        }
    }
    match &p.scope {
        TokenScope::Unscoped => return t,
        TokenScope::System => {
            obj.insert("system".into(), json!({"all": true}));
        }
        TokenScope::Domain(_) => {
            if let Some(d) = &vt.scope_domain {
                obj.insert("domain".into(), json!({"id": d.id, "name": d.name}));
            }
        }
        TokenScope::Project(_) => {
            if let (Some(pr), Some(d)) = (&vt.project, &vt.scope_domain) {
                obj.insert(
                    "project".into(),
                    json!({"id": pr.id, "name": pr.name, "domain": {"id": d.id, "name": d.name}}),
                );
                obj.insert("is_domain".into(), json!(false));
            }
        }
    }
    // As Keystone: a trust's or a federated login's token lists each role as the role itself
    // (its description, domain and options too), other tokens by id and name.
    let whole = vt.trust.is_some() || federated.is_some();
    let role = |r: &crate::state::model::Role| match whole {
        true => json!({"id": r.id, "name": r.name, "domain_id": r.domain_id, "description": r.description,
                          "options": crate::http::fields::json_obj(&r.options)}),
        false => json!({"id": r.id, "name": r.name}),
    };
    obj.insert("roles".into(), vt.roles.iter().map(role).collect());
    if let Some(a) = &vt.app_cred {
        let mut ac = json!({"id": a.id, "name": a.name, "restricted": !a.unrestricted});
        if let (false, Some(o)) = (a.access_rules.is_empty(), ac.as_object_mut()) {
            o.insert("access_rules".into(), Value::Array(a.access_rules.clone()));
        }
        obj.insert("application_credential".into(), ac);
    }
    if let Some(t) = &vt.trust {
        obj.remove("is_domain");
        obj.insert(
            "OS-TRUST:trust".into(),
            json!({"id": t.id, "trustor_user": {"id": t.trustor_user_id}, "trustee_user": {"id": t.trustee_user_id},
                   "impersonation": t.impersonation}),
        );
    }
    if let Some(o) = &vt.oauth1 {
        obj.insert("OS-OAUTH1".into(), json!({"access_token_id": o.access_token_id, "consumer_id": o.consumer_id}));
    }
    if let Some(c) = catalog {
        obj.insert("catalog".into(), c.clone());
    }
    t
}
