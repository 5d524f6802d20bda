//! Multi-factor rules, as Keystone's `UserMFARulesValidator` applies them at token issue: the
//! user option `multi_factor_auth_rules` lists sets of methods, and a token is issued only
//! when the methods proven (with those of an auth receipt) include one whole set. Rules are
//! enforced unless `multi_factor_auth_enabled` is false. The options are validated when a user
//! is written (`identity::options`); here stored data is read leniently, as Keystone does: a
//! rule that is not a non-empty list of strings is ignored.

use serde_json::Value;

/// The methods a rule may name that token issue proves; a rule naming none of them is
/// ignored, as Keystone ignores methods it has not loaded, so no rule can lock a user out.
const ACTIVE: &[&str] = &["password", "token", "totp", "application_credential"];

/// The user's rules reduced to the methods token issue knows, duplicates dropped, in the
/// order given; empty when none apply or the rules are switched off.
pub fn rules(options: &str) -> Vec<Vec<String>> {
    let Ok(options) = serde_json::from_str::<Value>(options) else { return Vec::new() };
    if options.get("multi_factor_auth_enabled").and_then(Value::as_bool) == Some(false) {
        return Vec::new();
    }
    let Some(rules) = options.get("multi_factor_auth_rules").and_then(Value::as_array) else { return Vec::new() };
    let mut out = Vec::new();
    for rule in rules {
        let Some(items) = rule.as_array().filter(|r| !r.is_empty()) else { continue };
        let names: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
        let Some(names) = names else { continue };
        let mut kept: Vec<String> = Vec::new();
        for n in names.into_iter().filter(|n| ACTIVE.contains(n)) {
            if !kept.iter().any(|k| k == n) {
                kept.push(n.to_string());
            }
        }
        if !kept.is_empty() {
            out.push(kept);
        }
    }
    out
}

/// `None` when `proven` meets the rules (or there are none); else the rules to show the
/// client: those sharing a method with what it proved (Keystone's `required_auth_methods`).
pub fn unmet(rules: &[Vec<String>], proven: &[&str]) -> Option<Vec<Vec<String>>> {
    let met = |r: &Vec<String>| r.iter().all(|m| proven.contains(&m.as_str()));
    if rules.is_empty() || rules.iter().any(met) {
        return None;
    }
    Some(rules.iter().filter(|r| r.iter().any(|m| proven.contains(&m.as_str()))).cloned().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_apply_unless_switched_off() {
        let set = r#"{"multi_factor_auth_rules": [["password", "totp"]]}"#;
        assert_eq!(rules(set), vec![vec!["password".to_string(), "totp".to_string()]], "enabled by default");
        let on = r#"{"multi_factor_auth_rules": [["password", "totp"]], "multi_factor_auth_enabled": true}"#;
        assert_eq!(rules(on).len(), 1);
        let off = r#"{"multi_factor_auth_rules": [["password", "totp"]], "multi_factor_auth_enabled": false}"#;
        assert!(rules(off).is_empty());
        assert!(rules("{}").is_empty());
        assert!(rules("not json").is_empty());
    }

    #[test]
    fn malformed_and_unknown_rules_are_ignored() {
        let o =
            r#"{"multi_factor_auth_rules": [[], "password", [1, "totp"], ["saml2"], ["password", "password", "x"]]}"#;
        assert_eq!(rules(o), vec![vec!["password".to_string()]]);
        assert!(rules(r#"{"multi_factor_auth_rules": "password"}"#).is_empty());
    }

    #[test]
    fn a_token_needs_one_whole_rule() {
        let r = rules(
            r#"{"multi_factor_auth_rules": [["password", "totp"], ["password", "application_credential"], ["token"]]}"#,
        );
        assert_eq!(unmet(&r, &["password", "totp"]), None);
        assert_eq!(unmet(&r, &["token"]), None);
        let shown = unmet(&r, &["password"]).unwrap_or_default();
        assert_eq!(shown.len(), 2, "the rules that name password: {shown:?}");
        assert_eq!(unmet(&r, &["totp"]), Some(vec![vec!["password".to_string(), "totp".to_string()]]));
        assert_eq!(unmet(&[], &["password"]), None, "no rules");
    }
}
