//! `idnode mapping test`'s evaluation (`cli::evaluate`) on the rulesets of docs/mapping.md.

use serde_json::{json, Value};

use super::cli::{evaluate, parse_ruleset};
use super::model::IdentityMode;

/// docs/mapping.md's worked example: a Kubernetes service account mapped to a project role.
fn k8s_example() -> Value {
    json!({"mapping": {"mapping_id": "prod-k8s-shop", "domain_id": "default", "provider_id": "prod-k8s",
        "source": {"type": "k8s", "cluster_id": "5f0c"},
        "rules": [{"name": "shop_web",
          "match": {"all_of": [{"type": "equals", "claim": "namespace", "value": "shop"},
                               {"type": "equals", "claim": "service_account", "value": "web"}]},
          "identity": {"identity_mode": "ephemeral", "user_name": "${claims.namespace}-${claims.service_account}"},
          "authorizations": [{"type": "project", "project_id": "p-shop", "project_domain_id": "default",
                              "roles": [{"id": "r-member"}]}]}]}})
}

/// A people's ruleset: OIDC users of the domains the `org` claim names, one group per team.
fn oidc_people() -> Value {
    json!({"provider_id": "corp-idp", "source": {"type": "federation", "idp_id": "corp-idp"},
        "domain_resolution_mode": "claims_or_mapping", "allowed_domains": ["d-eng", "d-ops"],
        "rules": [
          {"name": "admins", "match": {"any_of": [{"type": "matches_regex", "claim": "email", "regex": "^root@"}]},
           "identity": {"user_name": "${claims.email}"}},
          {"name": "staff", "match": {"all_of": [{"type": "any_of", "claim": "groups", "values": ["eng", "ops"]}]},
           "identity": {"user_name": "${claims.email}", "user_domain_id": "${claims.org}"},
           "groups": [{"group_name": "team-${claims.team}"}]}]})
}

fn eval(rs: &Value, claims: Value) -> anyhow::Result<super::cli::TestReport> {
    evaluate(&rs.to_string(), &claims.to_string(), None, None)
}

#[test]
fn the_worked_example_maps_the_service_account_to_a_virtual_user_with_the_project_role() {
    let r = eval(&k8s_example(), json!({"namespace": "shop", "service_account": "web", "uid": "u-1"})).unwrap();
    assert!(r.matched);
    assert_eq!(r.rule.as_ref().map(|r| (r.index, r.name.as_str())), Some((0, "shop_web")));
    let user = r.user.as_ref().unwrap();
    assert_eq!((user.name.as_str(), user.domain_id.as_str(), user.id.as_deref()), ("shop-web", "default", None));
    assert!(user.is_virtual && user.identity_mode == IdentityMode::Ephemeral && !user.is_system);
    let printed = serde_json::to_value(&r).unwrap();
    assert_eq!(printed["user"]["virtual"], json!(true));
    assert_eq!(
        printed["authorizations"],
        json!([{"type": "project", "project_id": "p-shop", "project_domain_id": "default", "roles": [{"id": "r-member"}]}])
    );

    let other = eval(&k8s_example(), json!({"namespace": "shop", "service_account": "batch"})).unwrap();
    assert!(!other.matched && other.user.is_none() && other.authorizations.is_empty());
}

#[test]
fn rules_are_tried_in_order_and_people_default_to_real_users_in_the_domain_their_claims_name() {
    let rs = oidc_people();
    let r = eval(&rs, json!({"email": "ann@x", "groups": ["ops", "x"], "org": "d-ops", "team": "db"})).unwrap();
    assert_eq!(r.rule.as_ref().unwrap().name, "staff");
    let user = r.user.as_ref().unwrap();
    assert_eq!((user.identity_mode, user.is_virtual, user.domain_id.as_str()), (IdentityMode::Local, false, "d-ops"));
    assert_eq!(r.groups.len(), 1);
    assert_eq!((r.groups[0].name.as_str(), r.groups[0].domain_id.as_str()), ("team-db", "d-ops"));
    // The first rule wins; no `user_domain_id`: the provider's domain, passed as --domain.
    let r = evaluate(&rs.to_string(), &json!({"email": "root@x", "groups": "eng"}).to_string(), Some("d-eng"), None)
        .unwrap();
    assert_eq!((r.rule.unwrap().name.as_str(), r.user.unwrap().domain_id.as_str()), ("admins", "d-eng"));
    // A domain outside allowed_domains matches nothing; --rule narrows to one rule.
    assert!(!eval(&rs, json!({"email": "a@x", "groups": "eng", "org": "d-hr", "team": "t"})).unwrap().matched);
    let claims = json!({"email": "root@x", "groups": "eng", "org": "d-eng", "team": "t"}).to_string();
    let r = evaluate(&rs.to_string(), &claims, None, Some("staff")).unwrap();
    assert_eq!(r.rule.unwrap().name, "staff");
    let err = evaluate(&rs.to_string(), &claims, None, Some("nobody")).unwrap_err().to_string();
    assert!(err.contains("no rule named \"nobody\""), "{err}");
}

#[test]
fn an_invalid_ruleset_or_claims_file_is_refused_with_where_and_why() {
    let mut rs = k8s_example();
    rs["mapping"]["rules"][0]["identity"]["user_name"] = json!(5);
    let err = format!("{:#}", parse_ruleset(&rs.to_string()).unwrap_err());
    assert!(err.contains("mapping.rules[0].identity.user_name") && err.contains("invalid type"), "{err}");

    let mut rs = k8s_example();
    rs["mapping"]["rules"][0]["name"] = json!("shop web");
    let err = format!("{:#}", parse_ruleset(&rs.to_string()).unwrap_err());
    assert!(err.contains("invalid_rule_name") && err.contains("shop web"), "{err}");

    let mut rs = oidc_people();
    rs["rules"][0]["match"]["any_of"][0]["regex"] = json!("(a+)+(");
    let err = format!("{:#}", parse_ruleset(&rs.to_string()).unwrap_err());
    assert!(err.contains("regex_safety_violation"), "{err}");

    let err = format!("{:#}", parse_ruleset("{\"mapping\": ").unwrap_err());
    assert!(err.contains("not JSON"), "{err}");
    let err = format!("{:#}", evaluate(&k8s_example().to_string(), "[1, 2]", None, None).unwrap_err());
    assert!(err.contains("one JSON object"), "{err}");
}
