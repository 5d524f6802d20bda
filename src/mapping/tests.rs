//! The mapping model's wire shapes, each validation key, the engine's tables and a property
//! test of the engine against a naive reference evaluator.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::engine::{evaluate, Claims, Evaluation, Matched, ResolvedGroup, ResolvedIdentity};
use super::model::*;
use super::regex_cache::{RegexCache, DEFAULT_DEADLINE};
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

// ---- engine tables ----------------------------------------------------------------------

fn claims(pairs: &[(&str, &[&str])]) -> Claims {
    Claims::from_map(pairs.iter().map(|(k, vs)| (k.to_string(), vs.iter().map(|v| v.to_string()).collect())).collect())
}

fn eq(claim: &str, v: &str) -> Element {
    Element::Condition(ClaimCondition::Equals { claim: claim.into(), value: ClaimValue(v.into()) })
}
fn one_of(claim: &str, vs: &[&str]) -> Element {
    Element::Condition(ClaimCondition::AnyOf {
        claim: claim.into(),
        values: vs.iter().map(|v| ClaimValue(v.to_string())).collect(),
    })
}
fn re(claim: &str, r: &str) -> Element {
    Element::Condition(ClaimCondition::MatchesRegex { claim: claim.into(), regex: r.into() })
}

fn rule(name: &str, m: Match, user_name: &str) -> MappingRule {
    MappingRule {
        name: name.into(),
        description: None,
        matcher: m,
        identity: Identity {
            identity_mode: None,
            is_system: false,
            user_name: user_name.into(),
            user_id: None,
            user_domain_id: None,
        },
        authorizations: vec![],
        groups: vec![],
        token_restriction_id: None,
    }
}

fn ruleset(rules: Vec<MappingRule>) -> MappingRuleSet {
    MappingRuleSet {
        mapping_id: None,
        domain_id: Some("dm".into()),
        provider_id: "p".into(),
        source: Source::K8s { cluster_id: "c".into() },
        domain_resolution_mode: DomainResolutionMode::Fixed,
        allowed_domains: vec![],
        enabled: true,
        rules,
        authorization_ttl: None,
        ruleset_version: None,
    }
}

fn run(rs: &MappingRuleSet, c: &Claims) -> Evaluation {
    evaluate(rs, c, "encl", &RegexCache::new(), DEFAULT_DEADLINE)
}

fn winner(rs: &MappingRuleSet, c: &Claims) -> Option<String> {
    run(rs, c).result.unwrap().map(|m| m.rule_name)
}

fn holds(m: Match, c: &Claims) -> bool {
    winner(&ruleset(vec![rule("r", m, "u")]), c).is_some()
}

#[test]
fn conditions() {
    let c = claims(&[("groups", &["a", "b"]), ("sub", &["alice"]), ("n", &["42"])]);
    let cases: Vec<(Element, bool)> = vec![
        (eq("groups", "b"), true),
        (eq("groups", "c"), false),
        (eq("missing", "a"), false),
        (eq("n", "42"), true),
        (one_of("groups", &["x", "a"]), true),
        (one_of("groups", &["x", "y"]), false),
        (one_of("groups", &[]), false),
        (re("sub", "^al"), true),
        (re("sub", "ic"), true), // unanchored search
        (re("sub", "^ic"), false),
        (re("groups", "^b$"), true), // any value
        (re("missing", ".*"), false),
    ];
    for (e, want) in cases {
        assert_eq!(holds(Match::AllOf(vec![e.clone()]), &c), want, "{e:?}");
    }
}

#[test]
fn numbers_and_booleans_compare_as_strings() {
    let c = Claims::from_json(
        json!({"n": 42, "f": 1.0, "b": true, "arr": [1, "x", null, {"o": 1}, [2]], "o": {"a": "b"}, "z": null})
            .as_object()
            .unwrap(),
    );
    assert_eq!(c.get("n").unwrap(), ["42"]);
    assert_eq!(c.get("f").unwrap(), ["1.0"]);
    assert_eq!(c.get("b").unwrap(), ["true"]);
    assert_eq!(c.get("arr").unwrap(), ["1", "x"]);
    assert!(c.get("o").is_none() && c.get("z").is_none());
    let cond: Element = serde_json::from_value(json!({"type": "any_of", "claim": "f", "values": [1.0, 2]})).unwrap();
    assert!(holds(Match::AllOf(vec![cond]), &c));
    let cond: Element = serde_json::from_value(json!({"type": "equals", "claim": "b", "value": true})).unwrap();
    assert!(holds(Match::AllOf(vec![cond]), &c));
}

#[test]
fn matches_combine_and_nest() {
    let c = claims(&[("a", &["1"]), ("b", &["2"])]);
    assert!(holds(Match::AllOf(vec![]), &c));
    assert!(!holds(Match::AnyOf(vec![]), &c));
    assert!(holds(Match::AllOf(vec![eq("a", "1"), eq("b", "2")]), &c));
    assert!(!holds(Match::AllOf(vec![eq("a", "1"), eq("b", "3")]), &c));
    assert!(holds(Match::AnyOf(vec![eq("a", "9"), eq("b", "2")]), &c));
    let nested = Match::AllOf(vec![eq("a", "1"), Element::Match(Match::AnyOf(vec![eq("b", "9"), eq("b", "2")]))]);
    assert!(holds(nested, &c));
    let deep = Match::AnyOf(vec![Element::Match(Match::AllOf(vec![Element::Match(Match::AnyOf(vec![eq("a", "2")]))]))]);
    assert!(!holds(deep, &c));
}

#[test]
fn all_of_strict_requires_every_named_claim_with_require_all_keys() {
    let c = claims(&[("a", &["1"])]);
    // The nested any_of holds through `a`, but also names `missing`.
    let inner = Element::Match(Match::AnyOf(vec![eq("a", "1"), eq("missing", "x")]));
    let strict =
        |require_all_keys| Match::AllOfStrict(StrictMatch { conditions: vec![inner.clone()], require_all_keys });
    assert!(holds(strict(false), &c));
    assert!(!holds(strict(true), &c));
    let c2 = claims(&[("a", &["1"]), ("missing", &["y"])]);
    assert!(holds(strict(true), &c2));
    assert!(holds(Match::AllOfStrict(StrictMatch { conditions: vec![], require_all_keys: true }), &c));
}

#[test]
fn first_matching_rule_wins() {
    let c = claims(&[("a", &["1"])]);
    let rs = ruleset(vec![
        rule("no", Match::AllOf(vec![eq("a", "2")]), "u"),
        rule("first", Match::AllOf(vec![eq("a", "1")]), "u"),
        rule("second", Match::AllOf(vec![]), "u"),
    ]);
    assert_eq!(winner(&rs, &c).as_deref(), Some("first"));
    assert_eq!(winner(&rs, &claims(&[])).as_deref(), Some("second"));
    let none = ruleset(vec![rule("no", Match::AnyOf(vec![]), "u")]);
    assert_eq!(winner(&none, &c), None);
}

#[test]
fn templates_resolve_identity_groups_and_authorizations() {
    let c = claims(&[("sub", &["s1", "s2"]), ("team", &["core"])]);
    let mut r = rule("r", Match::AllOf(vec![]), "${claims.sub}@${enclosing_domain_id}");
    r.identity.user_id = Some("id-${claims.sub}".into());
    r.identity.identity_mode = Some(IdentityMode::Local);
    r.groups = vec![
        GroupBinding {
            group_id: None,
            group_name: "t-${claims.team}".into(),
            group_domain_id: None,
            strategy: GroupStrategy::CreateOrGet,
        },
        GroupBinding {
            group_id: Some("g".into()),
            group_name: "x".into(),
            group_domain_id: Some("gd".into()),
            strategy: GroupStrategy::Get,
        },
    ];
    r.authorizations =
        vec![Authorization::Domain { domain_id: "dm".into(), roles: vec![RoleRef { id: "r1".into(), name: None }] }];
    let rs = ruleset(vec![r.clone()]);
    let m = run(&rs, &c).result.unwrap().unwrap();
    assert_eq!(
        m,
        Matched {
            rule_index: 0,
            rule_name: "r".into(),
            identity: ResolvedIdentity {
                identity_mode: Some(IdentityMode::Local),
                is_system: false,
                user_name: "s1@encl".into(),
                user_id: Some("id-s1".into()),
                user_domain_id: "dm".into(),
            },
            groups: vec![
                ResolvedGroup {
                    group_id: None,
                    group_name: "t-core".into(),
                    group_domain_id: "dm".into(),
                    strategy: GroupStrategy::CreateOrGet
                },
                ResolvedGroup {
                    group_id: Some("g".into()),
                    group_name: "x".into(),
                    group_domain_id: "gd".into(),
                    strategy: GroupStrategy::Get
                },
            ],
            authorizations: r.authorizations.clone(),
        }
    );
    // A template naming an absent claim makes its rule not match; the next one is tried.
    let mut needs_team = r.clone();
    needs_team.groups[0].group_name = "${claims.nope}".into();
    let rs = ruleset(vec![needs_team, rule("fallback", Match::AllOf(vec![]), "f")]);
    assert_eq!(winner(&rs, &c).as_deref(), Some("fallback"));
}

#[test]
fn display_fields_truncate_and_identifiers_error_past_256_characters() {
    let exactly = "é".repeat(256); // characters, not bytes
    let over = "é".repeat(300);
    let c = claims(&[("ok", &[&exactly]), ("long", &[&over])]);
    let mut r = rule("r", Match::AllOf(vec![]), "${claims.long}");
    r.groups = vec![GroupBinding {
        group_id: None,
        group_name: "${claims.long}".into(),
        group_domain_id: None,
        strategy: GroupStrategy::Get,
    }];
    r.identity.user_id = Some("${claims.ok}".into());
    let m = run(&ruleset(vec![r.clone()]), &c).result.unwrap().unwrap();
    let cut = format!("{}...", "é".repeat(253));
    assert_eq!(m.identity.user_name, cut);
    assert_eq!(m.identity.user_name.chars().count(), 256);
    assert_eq!(m.groups[0].group_name, cut);
    assert_eq!(m.identity.user_id.as_deref(), Some(exactly.as_str()));

    r.identity.user_id = Some("x${claims.ok}".into());
    let e = run(&ruleset(vec![r.clone()]), &c).result.unwrap_err();
    assert_eq!((e.status, e.key), (400, "interpolated_value_too_long"));
    let mut rs = ruleset(vec![rule("r", Match::AllOf(vec![]), "u")]);
    rs.domain_resolution_mode = DomainResolutionMode::ClaimsOnly;
    rs.allowed_domains = vec!["d1".into()];
    rs.rules[0].identity.user_domain_id = Some("${claims.long}".into());
    assert_eq!(run(&rs, &c).result.unwrap_err().key, "interpolated_value_too_long");
}

#[test]
fn claim_values_over_4096_bytes_are_dropped() {
    let big = "a".repeat(4097);
    let fits = "a".repeat(4096);
    let c = claims(&[("big", &[&big]), ("mixed", &[&big, "b"]), ("fits", &[&fits])]);
    assert!(c.get("big").is_none());
    assert_eq!(c.get("mixed").unwrap(), ["b"]);
    assert!(holds(Match::AllOf(vec![re("fits", "^a+$")]), &c));
    assert!(!holds(Match::AllOf(vec![re("big", "a")]), &c));
    let c = Claims::from_json(json!({"big": big, "arr": [big, "x"]}).as_object().unwrap());
    assert!(c.get("big").is_none());
    assert_eq!(c.get("arr").unwrap(), ["x"]);
}

fn mode_rs(mode: DomainResolutionMode, user_domain_id: Option<&str>) -> MappingRuleSet {
    let mut rs = ruleset(vec![rule("r", Match::AllOf(vec![]), "u")]);
    rs.domain_resolution_mode = mode;
    if mode != DomainResolutionMode::Fixed {
        rs.domain_id = None;
        rs.allowed_domains = vec!["d1".into(), "encl".into()];
    }
    rs.rules[0].identity.user_domain_id = user_domain_id.map(str::to_owned);
    rs
}

fn domain(rs: &MappingRuleSet, c: &Claims) -> Option<String> {
    run(rs, c).result.unwrap().map(|m| m.identity.user_domain_id)
}

#[test]
fn fixed_mode_locks_the_mapping_domain() {
    use DomainResolutionMode::Fixed;
    let c = claims(&[("dom", &["d1"])]);
    assert_eq!(domain(&mode_rs(Fixed, None), &c).as_deref(), Some("dm"));
    assert_eq!(domain(&mode_rs(Fixed, Some("dm")), &c).as_deref(), Some("dm"));
    // A user_domain_id resolving elsewhere is refused.
    assert_eq!(domain(&mode_rs(Fixed, Some("${enclosing_domain_id}")), &c), None);
    let mut global = mode_rs(Fixed, Some("${enclosing_domain_id}"));
    global.domain_id = None;
    assert_eq!(domain(&global, &c).as_deref(), Some("encl"));
}

#[test]
fn claims_or_mapping_falls_back_to_the_mapping_domain() {
    use DomainResolutionMode::ClaimsOrMapping as M;
    let rs = mode_rs(M, Some("${claims.dom}"));
    assert_eq!(domain(&rs, &claims(&[("dom", &["d1"])])).as_deref(), Some("d1"));
    assert_eq!(domain(&rs, &claims(&[])).as_deref(), Some("encl"));
    // Outside allowed_domains: no match.
    assert_eq!(domain(&rs, &claims(&[("dom", &["d9"])])), None);
    assert_eq!(domain(&mode_rs(M, None), &claims(&[])).as_deref(), Some("encl"));
    let mut narrow = mode_rs(M, None);
    narrow.allowed_domains = vec!["d1".into()];
    assert_eq!(domain(&narrow, &claims(&[])), None);
}

#[test]
fn claims_only_takes_the_domain_from_the_claims() {
    use DomainResolutionMode::ClaimsOnly as M;
    let rs = mode_rs(M, Some("${claims.dom}"));
    assert_eq!(domain(&rs, &claims(&[("dom", &["d1"])])).as_deref(), Some("d1"));
    assert_eq!(domain(&rs, &claims(&[])), None);
    assert_eq!(domain(&rs, &claims(&[("dom", &["d2"])])), None);
    // Not from the claims: refused even when allowed.
    assert_eq!(domain(&mode_rs(M, Some("${enclosing_domain_id}")), &claims(&[])), None);
}

#[test]
fn regex_timeouts_count_as_no_match_and_are_reported() {
    let c = claims(&[("sub", &[&"a".repeat(4096)])]);
    let rs = ruleset(vec![
        rule("slow", Match::AllOf(vec![re("sub", "^a+$")]), "u"),
        rule("other", Match::AllOf(vec![]), "u"),
    ]);
    let ev = evaluate(&rs, &c, "encl", &RegexCache::new(), Duration::ZERO);
    assert_eq!(ev.result.unwrap().unwrap().rule_name, "other");
    assert_eq!(ev.regex_timeouts.len(), 1);
    assert_eq!((ev.regex_timeouts[0].rule_name.as_str(), ev.regex_timeouts[0].claim.as_str()), ("slow", "sub"));
    assert_eq!(run(&rs, &c).result.unwrap().unwrap().rule_name, "slow");
    assert!(run(&rs, &c).regex_timeouts.is_empty());
}

// ---- property test: the engine against a naive reference evaluator ----------------------

mod reference {
    //! Written independently of the engine: recursive, no cache, no early exit (every rule
    //! and every element is evaluated, then the first hit is picked).
    use super::*;

    pub type Raw = BTreeMap<String, Vec<String>>;

    fn present(raw: &Raw) -> Raw {
        raw.iter()
            .map(|(k, vs)| (k.clone(), vs.iter().filter(|v| v.len() <= 4096).cloned().collect::<Vec<_>>()))
            .filter(|(_, vs)| !vs.is_empty())
            .collect()
    }

    fn names(e: &Element, out: &mut Vec<String>) {
        match e {
            Element::Condition(c) => out.push(c.claim().to_owned()),
            Element::Match(m) => {
                for e in elements(m) {
                    names(e, out);
                }
            }
        }
    }

    fn elements(m: &Match) -> &Vec<Element> {
        match m {
            Match::AllOf(e) | Match::AnyOf(e) => e,
            Match::AllOfStrict(s) => &s.conditions,
        }
    }

    fn cond(c: &ClaimCondition, claims: &Raw) -> bool {
        let vals = claims.get(c.claim()).cloned().unwrap_or_default();
        let hits: Vec<bool> = vals
            .iter()
            .map(|v| match c {
                ClaimCondition::Equals { value, .. } => *v == value.0,
                ClaimCondition::AnyOf { values, .. } => values.iter().filter(|w| w.0 == *v).count() > 0,
                ClaimCondition::MatchesRegex { regex, .. } => regex::Regex::new(regex).unwrap().find(v).is_some(),
            })
            .collect();
        hits.contains(&true)
    }

    fn eval(m: &Match, claims: &Raw) -> bool {
        let results: Vec<bool> = elements(m)
            .iter()
            .map(|e| match e {
                Element::Condition(c) => cond(c, claims),
                Element::Match(inner) => eval(inner, claims),
            })
            .collect();
        match m {
            Match::AllOf(_) => !results.contains(&false),
            Match::AnyOf(_) => results.contains(&true),
            Match::AllOfStrict(s) => {
                let mut keys = Vec::new();
                for e in &s.conditions {
                    names(e, &mut keys);
                }
                let keys_ok = keys.iter().filter(|k| !claims.contains_key(*k)).count() == 0;
                (keys_ok || !s.require_all_keys) && !results.contains(&false)
            }
        }
    }

    /// `Some(value)`, or `None` when a claim is missing.
    fn fill(t: &str, claims: &Raw, enclosing: &str) -> Option<String> {
        let placeholder = regex::Regex::new(r"\$\{([^}]*)\}").unwrap();
        let mut missing = false;
        let out = placeholder.replace_all(t, |cap: &regex::Captures| {
            let name = &cap[1];
            if name == "enclosing_domain_id" {
                enclosing.to_owned()
            } else {
                let key = name.strip_prefix("claims.").unwrap();
                match claims.get(key) {
                    Some(vs) => vs[0].clone(),
                    None => {
                        missing = true;
                        String::new()
                    }
                }
            }
        });
        (!missing).then(|| out.into_owned())
    }

    fn shorten(s: String) -> String {
        if s.chars().count() <= 256 {
            s
        } else {
            s.chars().take(253).chain("...".chars()).collect()
        }
    }

    enum Hit {
        Miss,
        Found(Box<Matched>),
        Error(&'static str),
    }

    fn resolve(rs: &MappingRuleSet, i: usize, rule: &MappingRule, claims: &Raw, enclosing: &str) -> Hit {
        let id = &rule.identity;
        let mode = rs.domain_resolution_mode;
        let user_name = fill(&id.user_name, claims, enclosing);
        let user_id = id.user_id.as_ref().map(|t| fill(t, claims, enclosing));
        let dom = id.user_domain_id.as_ref().map(|t| fill(t, claims, enclosing));
        let groups: Vec<Option<String>> = rule.groups.iter().map(|g| fill(&g.group_name, claims, enclosing)).collect();
        let dom_missing = matches!(dom, Some(None)) && mode != DomainResolutionMode::ClaimsOrMapping;
        if user_name.is_none() || matches!(user_id, Some(None)) || dom_missing || groups.contains(&None) {
            return Hit::Miss;
        }
        let user_id = user_id.flatten();
        let dom = dom.flatten();
        if user_id.iter().chain(dom.iter()).any(|v| v.chars().count() > 256) {
            return Hit::Error("interpolated_value_too_long");
        }
        let user_name = shorten(user_name.unwrap());
        let groups: Vec<String> = groups.into_iter().map(|g| shorten(g.unwrap())).collect();
        let mut all = vec![user_name.clone()];
        all.extend(user_id.clone());
        all.extend(dom.clone());
        all.extend(groups.clone());
        if all.iter().any(|v| v.is_empty()) {
            return Hit::Miss;
        }
        let domain = match mode {
            DomainResolutionMode::Fixed => {
                let locked = rs.domain_id.clone().unwrap_or(enclosing.to_owned());
                if dom.is_some() && dom != Some(locked.clone()) {
                    return Hit::Miss;
                }
                locked
            }
            DomainResolutionMode::ClaimsOrMapping => dom.unwrap_or(enclosing.to_owned()),
            DomainResolutionMode::ClaimsOnly => {
                let from_claims = id.user_domain_id.as_deref().unwrap_or("").contains("${claims.");
                match dom {
                    Some(d) if from_claims => d,
                    _ => return Hit::Miss,
                }
            }
        };
        if domain.is_empty() || (mode != DomainResolutionMode::Fixed && !rs.allowed_domains.contains(&domain)) {
            return Hit::Miss;
        }
        Hit::Found(Box::new(Matched {
            rule_index: i,
            rule_name: rule.name.clone(),
            identity: ResolvedIdentity {
                identity_mode: id.identity_mode,
                is_system: id.is_system,
                user_name,
                user_id,
                user_domain_id: domain.clone(),
            },
            groups: rule
                .groups
                .iter()
                .zip(groups)
                .map(|(g, name)| ResolvedGroup {
                    group_id: g.group_id.clone(),
                    group_name: name,
                    group_domain_id: g.group_domain_id.clone().unwrap_or(domain.clone()),
                    strategy: g.strategy,
                })
                .collect(),
            authorizations: rule.authorizations.clone(),
        }))
    }

    pub fn evaluate(rs: &MappingRuleSet, raw: &Raw, enclosing: &str) -> Result<Option<Matched>, &'static str> {
        let claims = present(raw);
        let hits: Vec<Hit> = rs
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| if eval(&r.matcher, &claims) { resolve(rs, i, r, &claims, enclosing) } else { Hit::Miss })
            .collect();
        for h in hits {
            match h {
                Hit::Miss => {}
                Hit::Found(m) => return Ok(Some(*m)),
                Hit::Error(k) => return Err(k),
            }
        }
        Ok(None)
    }
}

mod gen {
    use rand::rngs::StdRng;
    use rand::seq::SliceRandom;
    use rand::Rng;

    use super::*;

    const KEYS: [&str; 6] = ["sub", "team", "groups", "env", "dom", "long"];
    const VALUES: [&str; 6] = ["a", "b", "1", "true", "d1", "d4"];
    const REGEXES: [&str; 7] = ["^a$", "b", "^[0-9]+$", "d[12]", "^(a|c)$", "x+", "^$"];
    const NAME_TEMPLATES: [&str; 7] = [
        "u",
        "${claims.sub}",
        "${claims.team}-${claims.sub}",
        "${claims.env}@${enclosing_domain_id}",
        "${claims.long}",
        "n${claims.long}",
        "${claims.missing}",
    ];

    fn pick<'a>(rng: &mut StdRng, xs: &[&'a str]) -> &'a str {
        xs.choose(rng).copied().unwrap_or("")
    }

    pub fn claims(rng: &mut StdRng) -> reference::Raw {
        let mut raw = BTreeMap::new();
        for k in KEYS {
            if rng.gen_bool(0.15) {
                continue;
            }
            let n = if rng.gen_bool(0.1) { 0 } else { rng.gen_range(1..=3) };
            let values = (0..n)
                .map(|_| match rng.gen_range(0..20) {
                    0 => "x".repeat(rng.gen_range(250..=300)),
                    1 => "y".repeat(4097),
                    2 => String::new(),
                    _ => pick(rng, &VALUES).to_owned(),
                })
                .collect();
            raw.insert(k.to_owned(), values);
        }
        raw
    }

    fn claim_name(rng: &mut StdRng) -> String {
        if rng.gen_bool(0.05) {
            "missing".into()
        } else {
            pick(rng, &KEYS).into()
        }
    }

    fn element(rng: &mut StdRng, depth: u32) -> Element {
        if depth < 3 && rng.gen_bool(0.3) {
            return Element::Match(matcher(rng, depth + 1));
        }
        let claim = claim_name(rng);
        Element::Condition(match rng.gen_range(0..3) {
            0 => ClaimCondition::Equals { claim, value: ClaimValue(pick(rng, &VALUES).into()) },
            1 => ClaimCondition::AnyOf {
                claim,
                values: (0..rng.gen_range(0..=3)).map(|_| ClaimValue(pick(rng, &VALUES).into())).collect(),
            },
            _ => ClaimCondition::MatchesRegex { claim, regex: pick(rng, &REGEXES).into() },
        })
    }

    pub fn matcher(rng: &mut StdRng, depth: u32) -> Match {
        let elements: Vec<Element> = (0..rng.gen_range(0..=3)).map(|_| element(rng, depth)).collect();
        match rng.gen_range(0..3) {
            0 => Match::AllOf(elements),
            1 => Match::AnyOf(elements),
            _ => Match::AllOfStrict(StrictMatch { conditions: elements, require_all_keys: rng.gen_bool(0.5) }),
        }
    }

    pub fn ruleset(rng: &mut StdRng) -> MappingRuleSet {
        let mode =
            *[DomainResolutionMode::Fixed, DomainResolutionMode::ClaimsOrMapping, DomainResolutionMode::ClaimsOnly]
                .choose(rng)
                .unwrap_or(&DomainResolutionMode::Fixed);
        let domain_templates: &[&str] = match mode {
            DomainResolutionMode::Fixed => &["dm", "dm", "other", "${enclosing_domain_id}"],
            _ => &["${claims.dom}", "${claims.dom}", "d1", "${claims.long}", "${enclosing_domain_id}"],
        };
        let rules = (0..rng.gen_range(1..=6))
            .map(|i| {
                let mut r = rule(&format!("r{i}"), matcher(rng, 0), pick(rng, &NAME_TEMPLATES));
                r.identity.is_system = rng.gen_bool(0.2);
                if rng.gen_bool(0.4) {
                    r.identity.user_id = Some(pick(rng, &NAME_TEMPLATES).into());
                }
                if rng.gen_bool(0.5) {
                    r.identity.user_domain_id = Some(pick(rng, domain_templates).into());
                }
                r.groups = (0..rng.gen_range(0..=2))
                    .map(|_| GroupBinding {
                        group_id: rng.gen_bool(0.3).then(|| "g".to_owned()),
                        group_name: pick(rng, &NAME_TEMPLATES).into(),
                        group_domain_id: rng.gen_bool(0.3).then(|| "gd".to_owned()),
                        strategy: GroupStrategy::CreateOrGet,
                    })
                    .collect();
                r.authorizations = vec![Authorization::Project {
                    project_id: format!("p{i}"),
                    project_domain_id: "dm".into(),
                    roles: vec![RoleRef { id: "member".into(), name: None }],
                }];
                r
            })
            .collect();
        let mut rs = super::ruleset(rules);
        rs.domain_resolution_mode = mode;
        rs.domain_id = if rng.gen_bool(0.8) { Some("dm".into()) } else { None };
        if mode != DomainResolutionMode::Fixed {
            rs.domain_id = None;
            rs.allowed_domains =
                ["d1", "d2", "encl", "dm"].iter().filter(|_| rng.gen_bool(0.75)).map(|d| d.to_string()).collect();
        }
        rs
    }
}

#[test]
fn engine_agrees_with_the_reference_evaluator() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x1d0d_e009);
    let cache = RegexCache::new();
    let (mut matched, mut none, mut errors) = (0, 0, 0);
    for case in 0..5000 {
        let rs = gen::ruleset(&mut rng);
        let raw = gen::claims(&mut rng);
        let enclosing = if rng.gen_bool(0.5) { "encl" } else { "d1" };
        let ev = evaluate(&rs, &Claims::from_map(raw.clone()), enclosing, &cache, DEFAULT_DEADLINE);
        assert!(ev.regex_timeouts.is_empty());
        let got = ev.result.map_err(|e| e.key);
        let want = reference::evaluate(&rs, &raw, enclosing);
        assert_eq!(
            got,
            want,
            "case {case}\nruleset: {}\nclaims: {raw:?}\nenclosing: {enclosing}",
            serde_json::to_string_pretty(&rs).unwrap()
        );
        match got {
            Ok(Some(_)) => matched += 1,
            Ok(None) => none += 1,
            Err(_) => errors += 1,
        }
    }
    // The generator reaches every outcome often enough to mean something.
    assert!(matched > 600 && none > 1000 && errors > 25, "matched {matched}, none {none}, errors {errors}");
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
