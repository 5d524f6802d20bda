//! The mapping model's wire shapes and each validation key.

use serde_json::{json, Value};

use super::model::*;
use super::validate::validate;

fn example() -> Value {
    json!({
        "mapping_id": "m1",
        "domain_id": "d-fixed",
        "provider_id": "corp-oidc",
        "source": {"type": "federation", "idp_id": "idp1"},
        "domain_resolution_mode": "fixed",
        "allowed_domains": [],
        "enabled": true,
        "rules": [{
            "name": "devs",
            "description": "developers get member on dev",
            "match": {"all_of": [
                {"type": "equals", "claim": "iss", "value": "https://idp.example"},
                {"type": "any_of", "claim": "groups", "values": ["dev", 42, true, 1.5]},
                {"any_of": [
                    {"type": "matches_regex", "claim": "email", "regex": "@example\\.com$"},
                    {"all_of_strict": {"conditions": [
                        {"type": "equals", "claim": "email_verified", "value": true}
                    ], "require_all_keys": true}}
                ]}
            ]},
            "identity": {
                "identity_mode": "ephemeral",
                "is_system": false,
                "user_name": "${claims.preferred_username}",
                "user_id": "oidc-${claims.sub}",
                "user_domain_id": "${enclosing_domain_id}"
            },
            "authorizations": [
                {"type": "project", "project_id": "p1", "project_domain_id": "d-fixed",
                 "roles": [{"id": "r-member", "name": "member"}, {"id": "r-reader"}]},
                {"type": "domain", "domain_id": "d-fixed", "roles": [{"id": "r-reader"}]}
            ],
            "groups": [
                {"group_name": "dev-${claims.team}", "group_domain_id": "d-fixed", "strategy": "get"},
                {"group_id": "g1", "group_name": "all", "strategy": "create_or_get"}
            ]
        }, {
            "name": "ops_1",
            "match": {"any_of": []},
            "identity": {"user_name": "ops", "is_system": true},
            "authorizations": [{"type": "system", "system_id": "all", "roles": [{"id": "r-admin"}]}],
            "groups": []
        }],
        "ruleset_version": "00112233445566778899aabbccddeeff"
    })
}

fn parse(v: Value) -> MappingRuleSet {
    serde_json::from_value(v).unwrap()
}

fn parse_err(v: Value) -> String {
    serde_json::from_value::<MappingRuleSet>(v).unwrap_err().to_string()
}

// ---- wire shapes ------------------------------------------------------------------------

#[test]
fn the_spec_example_round_trips() {
    let rs = parse(example());
    assert_eq!(rs.rules.len(), 2);
    assert_eq!(rs.source, Source::Federation { idp_id: "idp1".into() });
    assert_eq!(rs.ruleset_version.unwrap().to_string(), "00112233445566778899aabbccddeeff");
    assert_eq!(rs.rules[0].groups[0].strategy, GroupStrategy::Get);
    let Match::AllOf(elements) = &rs.rules[0].matcher else { panic!("all_of expected") };
    assert!(matches!(&elements[2], Element::Match(Match::AnyOf(_))));
    // Scalars are kept as the strings they compare as.
    let Element::Condition(ClaimCondition::AnyOf { values, .. }) = &elements[1] else { panic!() };
    assert_eq!(values.iter().map(ClaimValue::as_str).collect::<Vec<_>>(), ["dev", "42", "true", "1.5"]);

    let mut expected = example();
    expected["rules"][0]["match"]["all_of"][1]["values"] = json!(["dev", "42", "true", "1.5"]);
    expected["rules"][0]["match"]["all_of"][2]["any_of"][1]["all_of_strict"]["conditions"][0]["value"] = json!("true");
    // Omitted optional fields stay omitted; defaults are written out.
    expected["rules"][1]["authorizations"][0]["roles"][0] = json!({"id": "r-admin"});
    expected["rules"][1]["identity"] = json!({"user_name": "ops", "is_system": true});
    assert_eq!(serde_json::to_value(&rs).unwrap(), expected);
    assert_eq!(parse(serde_json::to_value(&rs).unwrap()), rs);
    assert_eq!(MappingRuleSet::from_stored(&rs.to_stored().unwrap()).unwrap(), rs);
}

#[test]
fn each_source_and_mode_parses() {
    for (src, want) in [
        (json!({"type": "k8s", "cluster_id": "c1"}), Source::K8s { cluster_id: "c1".into() }),
        (json!({"type": "spiffe", "trust_domain": "td"}), Source::Spiffe { trust_domain: "td".into() }),
    ] {
        assert_eq!(serde_json::from_value::<Source>(src).unwrap(), want);
    }
    for (m, want) in [
        ("fixed", DomainResolutionMode::Fixed),
        ("claims_or_mapping", DomainResolutionMode::ClaimsOrMapping),
        ("claims_only", DomainResolutionMode::ClaimsOnly),
    ] {
        assert_eq!(serde_json::from_value::<DomainResolutionMode>(json!(m)).unwrap(), want);
    }
    let minimal = parse(json!({"provider_id": "p", "source": {"type": "k8s", "cluster_id": "c"}, "rules": []}));
    assert_eq!(minimal.domain_resolution_mode, DomainResolutionMode::Fixed);
    assert!(minimal.enabled);
    assert_eq!(minimal.domain_id, None);
}

#[test]
fn claim_values_refuse_objects_arrays_and_null() {
    for bad in [json!({"a": 1}), json!([1]), Value::Null] {
        let err = serde_json::from_value::<ClaimValue>(bad).unwrap_err().to_string();
        assert!(err.contains("a string, number or boolean"), "{err}");
    }
    let mut v = example();
    v["rules"][0]["match"]["all_of"][0]["value"] = json!({"x": 1});
    assert!(parse_err(v).contains("a string, number or boolean"));
}

#[test]
fn unknown_fields_and_bad_elements_are_refused_with_a_reason() {
    let mut v = example();
    v["rules"][0]["identity"]["nickname"] = json!("x");
    assert!(parse_err(v).contains("nickname"));
    let mut v = example();
    v["rules"][0]["match"]["all_of"][0] = json!({"type": "contains", "claim": "a", "value": "b"});
    assert!(parse_err(v).contains("contains"));
    let mut v = example();
    v["rules"][0]["match"]["all_of"][0] = json!({"one_of": []});
    assert!(parse_err(v).contains("one_of"));
    let mut v = example();
    v["ruleset_version"] = json!("123");
    assert!(parse_err(v).contains("32 hexadecimal digits"));
    let mut v = example();
    v["domain_resolution_mode"] = json!({"type": "fixed"});
    assert!(serde_json::from_value::<MappingRuleSet>(v).is_err());
}

#[test]
fn fresh_ruleset_versions_differ() {
    assert_ne!(RulesetVersion::fresh(), RulesetVersion::fresh());
    assert_eq!(RulesetVersion::fresh().to_string().len(), 32);
}

// ---- validation: one test per key -----------------------------------------------------

fn valid() -> MappingRuleSet {
    let mut rs = parse(example());
    validate(&mut rs).unwrap();
    rs
}

fn key_of(rs: &mut MappingRuleSet) -> &'static str {
    let e = validate(rs).unwrap_err();
    assert_eq!(e.status, 422, "{e}");
    e.key
}

fn claims_mode(mode: DomainResolutionMode) -> MappingRuleSet {
    let mut rs = valid();
    rs.domain_resolution_mode = mode;
    rs.allowed_domains = vec!["d1".into()];
    for r in &mut rs.rules {
        r.identity.user_domain_id = Some("${claims.dom}".into());
    }
    rs
}

#[test]
fn the_example_is_valid() {
    valid();
}

#[test]
fn invalid_rule_name() {
    for bad in ["", "has space", "-lead", "naïve", &"a".repeat(65)] {
        let mut rs = valid();
        rs.rules[0].name = bad.into();
        assert_eq!(key_of(&mut rs), "invalid_rule_name", "{bad:?}");
    }
}

#[test]
fn duplicate_rule_name() {
    let mut rs = valid();
    rs.rules[1].name = rs.rules[0].name.clone();
    assert_eq!(key_of(&mut rs), "duplicate_rule_name");
}

#[test]
fn system_token_shadowing() {
    let mut rs = valid();
    rs.rules[0].identity.user_name = "${claims.enclosing_domain_id}".into();
    assert_eq!(key_of(&mut rs), "system_token_shadowing");
    let mut rs = valid();
    rs.rules[0].groups[0].group_name = "g-${claims.enclosing_domain_id}".into();
    assert_eq!(key_of(&mut rs), "system_token_shadowing");
    let mut rs = valid();
    rs.rules[0].matcher = Match::AnyOf(vec![Element::Condition(ClaimCondition::Equals {
        claim: "enclosing_domain_id".into(),
        value: ClaimValue("d".into()),
    })]);
    assert_eq!(key_of(&mut rs), "system_token_shadowing");
}

#[test]
fn domain_claim_required() {
    let mut rs = claims_mode(DomainResolutionMode::ClaimsOnly);
    validate(&mut rs).unwrap();
    rs.rules[1].identity.user_domain_id = Some("${enclosing_domain_id}".into());
    assert_eq!(key_of(&mut rs), "domain_claim_required");
    rs.rules[1].identity.user_domain_id = None;
    assert_eq!(key_of(&mut rs), "domain_claim_required");
}

#[test]
fn domain_override_fixed_mode() {
    let mut rs = valid();
    rs.rules[0].identity.user_domain_id = Some("d-${claims.tenant}".into());
    assert_eq!(key_of(&mut rs), "domain_override_fixed_mode");
}

#[test]
fn system_scope_requires_is_system() {
    let mut rs = valid();
    rs.rules[1].identity.is_system = false;
    assert_eq!(key_of(&mut rs), "system_scope_requires_is_system");
}

#[test]
fn allowed_domains_required() {
    for mode in [DomainResolutionMode::ClaimsOrMapping, DomainResolutionMode::ClaimsOnly] {
        let mut rs = claims_mode(mode);
        rs.allowed_domains.clear();
        assert_eq!(key_of(&mut rs), "allowed_domains_required");
        rs.allowed_domains = vec![String::new()];
        assert_eq!(key_of(&mut rs), "allowed_domains_required");
    }
    let mut rs = valid();
    rs.allowed_domains = vec!["d1".into()];
    assert_eq!(key_of(&mut rs), "allowed_domains_required");
}

#[test]
fn regex_safety_violation() {
    for bad in [r"(a)\1", r"(?=a)", r"(a{1000}){1000}", "(", &"a".repeat(2000)] {
        let mut rs = valid();
        rs.rules[0].matcher =
            Match::AllOf(vec![Element::Match(Match::AnyOf(vec![Element::Condition(ClaimCondition::MatchesRegex {
                claim: "sub".into(),
                regex: bad.into(),
            })]))]);
        assert_eq!(key_of(&mut rs), "regex_safety_violation", "{bad}");
    }
}

#[test]
fn invalid_template() {
    for bad in ["${claims.sub", "${user}", "${claims.}", ""] {
        let mut rs = valid();
        rs.rules[0].identity.user_name = bad.into();
        assert_eq!(key_of(&mut rs), "invalid_template", "{bad:?}");
    }
}

#[test]
fn claims_modes_force_domain_id_null() {
    let mut rs = claims_mode(DomainResolutionMode::ClaimsOrMapping);
    assert!(rs.domain_id.is_some());
    validate(&mut rs).unwrap();
    assert_eq!(rs.domain_id, None);
}

#[test]
fn the_openapi_schemas_build() {
    use utoipa::{PartialSchema, ToSchema};
    let mut nested = Vec::new();
    MappingRuleSet::schemas(&mut nested);
    let names: Vec<String> = nested.iter().map(|(n, _)| n.clone()).collect();
    for want in ["Match", "Element", "ClaimCondition", "ClaimValue", "Authorization", "Source"] {
        assert!(names.iter().any(|n| n == want), "{want} missing from {names:?}");
    }
    let all = serde_json::to_string(&nested).unwrap() + &serde_json::to_string(&MappingRuleSet::schema()).unwrap();
    for field in ["all_of_strict", "require_all_keys", "domain_resolution_mode", "matches_regex", "ruleset_version"] {
        assert!(all.contains(field), "{field} missing from the schema");
    }
}
