//! User options (`options` of the user API) as Keystone's option registry holds them: only the
//! options it knows, each of its type or null, and null removes an option. An update sets the
//! options it names and keeps the others, as Keystone's does.

use serde_json::{Map, Value};

use crate::http::error::{ApiError, ApiResult};

/// Keystone's boolean user options.
const FLAGS: &[&str] = &[
    "ignore_change_password_upon_first_use",
    "ignore_password_expiry",
    "ignore_lockout_failure_attempts",
    "lock_password",
    "ignore_user_inactivity",
    "multi_factor_auth_enabled",
];

/// Sets of authentication methods, any one of which a token needs (`auth::mfa`).
const MFA_RULES: &str = "multi_factor_auth_rules";

fn invalid(field: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("Invalid input for field '{field}': {why}."))
}

/// `given` (the request's options, a JSON object's text) checked and written over `stored`
/// (the options as they are, `{}` for a new user); null options are removed.
pub fn merged(stored: &str, given: &str) -> ApiResult<String> {
    let given: Map<String, Value> = serde_json::from_str(given).map_err(|_| invalid("options", "must be an object"))?;
    let mut out: Map<String, Value> = serde_json::from_str(stored).unwrap_or_default();
    for (name, value) in given {
        check(&name, &value)?;
        if value.is_null() {
            out.remove(&name);
        } else {
            out.insert(name, value);
        }
    }
    Ok(Value::Object(out).to_string())
}

fn check(name: &str, value: &Value) -> ApiResult<()> {
    let field = format!("options/{name}");
    match value {
        Value::Null => Ok(()),
        Value::Bool(_) if FLAGS.contains(&name) => Ok(()),
        _ if FLAGS.contains(&name) => Err(invalid(&field, "must be a boolean or null")),
        _ if name == MFA_RULES => mfa_rules(&field, value),
        _ => Err(invalid("options", &format!("Additional properties are not allowed ('{name}' was unexpected)"))),
    }
}

/// Keystone's rule shape: a list of distinct, non-empty lists of distinct strings.
fn mfa_rules(field: &str, value: &Value) -> ApiResult<()> {
    let why = "must be a list of distinct, non-empty lists of distinct method names";
    let rules = value.as_array().ok_or_else(|| invalid(field, why))?;
    for (i, rule) in rules.iter().enumerate() {
        let methods = rule.as_array().filter(|r| !r.is_empty()).ok_or_else(|| invalid(field, why))?;
        let all_strings = methods.iter().all(Value::is_string);
        let distinct = methods.iter().enumerate().all(|(j, m)| !methods[..j].contains(m));
        if !all_strings || !distinct || rules[..i].contains(rule) {
            return Err(invalid(field, why));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_options_of_their_type_are_kept_and_null_removes() {
        let set =
            r#"{"multi_factor_auth_rules": [["password", "totp"], ["token"]], "multi_factor_auth_enabled": true}"#;
        let merged1 = merged("{}", set).unwrap_or_default();
        let v: Value = serde_json::from_str(&merged1).unwrap_or_default();
        assert_eq!(v["multi_factor_auth_enabled"], true);
        assert_eq!(v["multi_factor_auth_rules"][0][1], "totp");
        let merged2 =
            merged(&merged1, r#"{"multi_factor_auth_enabled": null, "lock_password": true}"#).unwrap_or_default();
        let v: Value = serde_json::from_str(&merged2).unwrap_or_default();
        assert!(v.get("multi_factor_auth_enabled").is_none(), "null removes: {v}");
        assert_eq!(v["lock_password"], true);
        assert_eq!(v["multi_factor_auth_rules"][1][0], "token", "untouched options stay");
    }

    #[test]
    fn malformed_options_are_refused() {
        for bad in [
            r#"{"unknown_option": true}"#,
            r#"{"lock_password": "yes"}"#,
            r#"{"multi_factor_auth_enabled": 1}"#,
            r#"{"multi_factor_auth_rules": "password"}"#,
            r#"{"multi_factor_auth_rules": [[]]}"#,
            r#"{"multi_factor_auth_rules": ["password"]}"#,
            r#"{"multi_factor_auth_rules": [["password", 1]]}"#,
            r#"{"multi_factor_auth_rules": [["password", "password"]]}"#,
            r#"{"multi_factor_auth_rules": [["password"], ["password"]]}"#,
        ] {
            let e = merged("{}", bad).expect_err(bad);
            assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST, "{bad}");
        }
        assert!(merged("{}", r#"{"multi_factor_auth_rules": []}"#).is_ok(), "no rules at all is allowed");
    }
}
