//! The bundled rules decided for Keystone's personas, overrides and reloads, and the cost of a
//! decision.

use serde_json::{json, Value};

use super::actions::ACTIONS;
use super::admin_scope::AdminScope;
use super::{input, PolicyStore};
use crate::state::model::{Project, User};
use crate::testkit::fixtures::{project, role, user};
use crate::token::{Delegation, TokenPayload, TokenScope, ValidToken};

fn domain(id: &str) -> Project {
    Project { created_at: 0, ..project(id, id, id, true) }
}

fn token(scope: TokenScope, roles: &[&str], admin_project: bool) -> ValidToken {
    let scope_domain = match &scope {
        TokenScope::Domain(d) => Some(domain(d)),
        TokenScope::Project(_) => Some(domain("d1")),
        _ => None,
    };
    ValidToken {
        payload: TokenPayload {
            version: 1,
            user_id: "u1".into(),
            methods: 1,
            scope,
            issued_at: 0,
            expires_at: i64::MAX,
            audit_ids: vec![],
            delegation: Delegation::None,
            restriction: None,
            user_cutoff: None,
        },
        user: User { created_at: 0, ..user("u1", "u", "d1") },
        user_domain: domain("d1"),
        project: None,
        scope_domain,
        roles: roles.iter().map(|r| role(r, r)).collect(),
        is_admin_project: admin_project,
        // The unit tests are written for the strict mode; `keystone_mode` switches a token.
        admin_scope: AdminScope::System,
        app_cred: None,
        trust: None,
        oauth1: None,
        decisions: Default::default(),
    }
}

fn keystone_mode(mut t: ValidToken) -> ValidToken {
    t.admin_scope = AdminScope::Any;
    t
}

fn allowed(name: &str, t: &ValidToken, target: Value) -> bool {
    crate::policy::enforce(name, t, &target).is_ok()
}

fn store_allows(store: &PolicyStore, name: &str, t: &ValidToken, target: Value) -> bool {
    store.allowed(name, &input::document(name, t, &target))
}

#[test]
fn personas() {
    let sys_admin = token(TokenScope::System, &["admin", "manager", "member", "reader"], false);
    let admin_project = token(TokenScope::Project("p0".into()), &["admin", "reader"], true);
    let other_admin = token(TokenScope::Project("p9".into()), &["admin", "reader"], false);
    let d1_manager = token(TokenScope::Domain("d1".into()), &["manager", "member", "reader"], false);
    let d1_reader = token(TokenScope::Domain("d1".into()), &["reader"], false);
    let p_member = token(TokenScope::Project("p1".into()), &["member", "reader"], false);
    let in_d1 = json!({"project": {"id": "p1", "domain_id": "d1"}});
    let in_d2 = json!({"project": {"id": "p2", "domain_id": "d2"}});

    for (who, t) in [("system admin", &sys_admin), ("admin project", &admin_project)] {
        assert!(allowed("identity:create_project", t, in_d2.clone()), "{who}");
        assert!(allowed("identity:create_domain", t, json!({})), "{who}");
    }
    assert!(!allowed("identity:create_project", &other_admin, in_d1.clone()), "admin elsewhere is not cloud admin");
    assert!(allowed("identity:create_project", &d1_manager, in_d1.clone()));
    assert!(!allowed("identity:create_project", &d1_manager, in_d2.clone()));
    assert!(!allowed("identity:create_project", &d1_reader, in_d1.clone()));
    assert!(allowed("identity:get_project", &d1_reader, in_d1.clone()));
    assert!(allowed("identity:get_project", &p_member, in_d1.clone()));
    assert!(!allowed("identity:get_project", &p_member, in_d2.clone()));
    assert!(!allowed("identity:list_domains", &d1_manager, json!({})));
    assert!(allowed("identity:get_user", &p_member, json!({"user": {"id": "u1", "domain_id": "d1"}})));
    assert!(!allowed("identity:get_user", &p_member, json!({"user": {"id": "u2", "domain_id": "d1"}})));
    assert!(!allowed("identity:no_such_rule", &sys_admin, json!({})), "unknown rules deny");
}

#[test]
fn keystone_mode_makes_any_admin_a_cloud_admin() {
    let in_d2 = json!({"project": {"id": "p2", "domain_id": "d2"}});
    let project_admin = keystone_mode(token(TokenScope::Project("p9".into()), &["admin", "reader"], false));
    let domain_admin = keystone_mode(token(TokenScope::Domain("d1".into()), &["admin", "reader"], false));
    assert!(allowed("identity:create_project", &project_admin, in_d2.clone()));
    assert!(allowed("identity:create_domain", &project_admin, json!({})));
    assert!(allowed("identity:list_services", &project_admin, json!({})));
    // A domain admin is one for the operations whose scope types take a domain token; the
    // catalog and the domains themselves are for system or project tokens (Keystone's
    // scope_types), so it is refused those.
    assert!(allowed("identity:create_project", &domain_admin, in_d2.clone()));
    assert!(!allowed("identity:create_domain", &domain_admin, json!({})));
    assert!(!allowed("identity:list_services", &domain_admin, json!({})));
    // Only admin is promoted: a reader on the admin project is no system reader in this mode.
    let admin_project_reader = keystone_mode(token(TokenScope::Project("p0".into()), &["reader"], true));
    assert!(!allowed("identity:list_domains", &admin_project_reader, json!({})));
    assert!(!allowed("identity:list_domains", &token(TokenScope::Project("p0".into()), &["member"], true), json!({})));
    assert!(allowed("identity:list_domains", &token(TokenScope::Project("p0".into()), &["reader"], true), json!({})));
    let p_member = keystone_mode(token(TokenScope::Project("p1".into()), &["member", "reader"], false));
    assert!(!allowed("identity:create_project", &p_member, in_d2));
}

#[test]
fn unknown_and_malformed_names_deny() {
    let sys_admin = token(TokenScope::System, &["admin", "reader"], false);
    for name in ["identity:no_such_rule", "identity:get_domain.x", "identity:", "", "lib:admin_required ", "x:Y"] {
        assert!(!allowed(name, &sys_admin, json!({})), "{name:?}");
    }
}

#[test]
fn every_bundled_action_is_defined_and_admin_may_do_it() {
    let store = PolicyStore::bundled();
    assert_eq!(store.status(), Ok(()));
    let sys_admin = token(TokenScope::System, &["admin", "manager", "member", "reader"], false);
    let nobody = token(TokenScope::Unscoped, &[], false);
    let open = [
        "get_region",
        "list_regions",
        "get_auth_catalog",
        "get_auth_projects",
        "get_auth_domains",
        "get_security_compliance_domain_config",
        // Unified limits: Keystone's empty check strings.
        "get_registered_limit",
        "list_registered_limits",
        "get_limit_model",
        "list_limits",
    ];
    // Only the owner creates its application credentials (Keystone: user_id:%(user_id)s).
    let owner_only = ["identity:create_application_credential", "identity:create_trust"];
    for action in ACTIONS {
        let target = json!({"token": {"user_id": "other"}, "credential": {"user_id": "other"}});
        // SCIM's are decided for API keys with roles on a domain; no token reaches them.
        let admin_may = !owner_only.contains(action) && !action.starts_with("identity/scim/");
        assert_eq!(store_allows(&store, action, &sys_admin, target.clone()), admin_may, "system admin and {action}");
        let anyone = open.iter().any(|o| action.ends_with(o)) || action.ends_with("get_auth_system");
        assert_eq!(store_allows(&store, action, &nobody, target), anyone, "unscoped caller and {action}");
    }
}

#[test]
fn null_and_absent_targets_never_match() {
    // A domain-scoped manager whose scope is absent from the target, and a caller without
    // domain scope facing a null target domain: `null == null` must not authorize.
    let unscoped_manager = token(TokenScope::Unscoped, &["manager", "reader"], false);
    let d1_manager = token(TokenScope::Domain("d1".into()), &["manager", "reader"], false);
    assert!(!allowed("identity:create_project", &unscoped_manager, json!({"project": {"domain_id": null}})));
    assert!(!allowed("identity:create_project", &d1_manager, json!({"project": {}})));
    assert!(!allowed("identity:list_projects", &unscoped_manager, json!({"domain_id": null})));
    assert!(!allowed("identity:get_project", &unscoped_manager, json!({"project": {"id": null}})));
}

#[test]
fn grants_follow_keystone_domain_rules() {
    let d1_manager = token(TokenScope::Domain("d1".into()), &["manager", "member", "reader"], false);
    let d1_admin = token(TokenScope::Domain("d1".into()), &["admin", "manager", "member", "reader"], false);
    let grant = |role: &str, role_domain: Option<&str>, project_domain: &str| {
        json!({"user": {"id": "u2", "domain_id": "d1"}, "project": {"id": "p", "domain_id": project_domain},
               "role": {"id": "r", "name": role, "domain_id": role_domain}})
    };
    assert!(allowed("identity:create_grant", &d1_manager, grant("member", None, "d1")));
    assert!(
        !allowed("identity:create_grant", &d1_manager, grant("admin", None, "d1")),
        "manager cannot hand out admin"
    );
    assert!(!allowed("identity:create_grant", &d1_manager, grant("member", None, "d2")), "other domain's project");
    assert!(allowed("identity:create_grant", &d1_admin, grant("admin", None, "d1")), "domain admin, global role");
    assert!(allowed("identity:create_grant", &d1_admin, grant("custom", Some("d1"), "d1")), "role of the domain");
    assert!(!allowed("identity:create_grant", &d1_admin, grant("custom", Some("d2"), "d1")), "role of another domain");
    assert!(allowed("identity:list_grants", &d1_manager, grant("member", None, "d1")));
    let d1_group_on_domain = json!({"group": {"id": "g", "domain_id": "d1"}, "domain": {"id": "d1"},
                                    "role": {"id": "r", "name": "reader", "domain_id": null}});
    assert!(allowed("identity:check_grant", &d1_manager, d1_group_on_domain.clone()));
    assert!(allowed("identity:revoke_grant", &d1_manager, d1_group_on_domain));
}

#[test]
fn tokens_and_credentials_belong_to_their_user() {
    let p_member = token(TokenScope::Project("p1".into()), &["member", "reader"], false);
    let service = token(TokenScope::Project("svc".into()), &["service"], false);
    let own = json!({"token": {"user_id": "u1"}});
    let other = json!({"token": {"user_id": "u2"}});
    assert!(allowed("identity:validate_token", &p_member, own.clone()));
    assert!(!allowed("identity:validate_token", &p_member, other.clone()));
    assert!(allowed("identity:validate_token", &service, other.clone()), "services validate any token");
    assert!(!allowed("identity:check_token", &service, other.clone()));
    assert!(allowed("identity:revoke_token", &p_member, own));
    assert!(!allowed("identity:revoke_token", &p_member, other));
    let mine = json!({"credential": {"user_id": "u1"}});
    assert!(allowed("identity:ec2_create_credential", &p_member, mine.clone()));
    assert!(allowed("identity:get_credential", &p_member, mine));
    assert!(!allowed("identity:ec2_create_credential", &p_member, json!({"credential": {"user_id": "u2"}})));
}

#[test]
fn overrides_replace_or_add_and_bad_ones_keep_the_previous_set() {
    let dir = tempfile::tempdir().unwrap();
    let store = PolicyStore::bundled();
    let d1_reader = token(TokenScope::Domain("d1".into()), &["reader"], false);
    let target = json!({"domain": {"id": "d9"}});
    assert!(!store_allows(&store, "identity:list_domains", &d1_reader, target.clone()));

    // Same name as a bundled file: replaces it (here: any reader may list domains).
    let resource = include_str!("default/resource.rego")
        .replace("list_domains if data.lib.admin_required", "list_domains if data.lib.role(\"reader\")");
    std::fs::write(dir.path().join("resource.rego"), resource).unwrap();
    // A new file adds rules to the set.
    std::fs::write(dir.path().join("extra.rego"), "package identity\n\nlist_widgets := true\n").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a policy").unwrap();
    store.configure(Some(dir.path().to_path_buf())).unwrap();
    assert!(store_allows(&store, "identity:list_domains", &d1_reader, target.clone()));
    assert!(store_allows(&store, "identity:list_widgets", &d1_reader, json!({})));
    let files = store.files();
    assert!(files.contains(&dir.path().join("extra.rego").display().to_string()), "{files:?}");
    assert!(files.contains(&"bundled:common.rego".to_string()), "{files:?}");
    assert!(!files.contains(&"bundled:resource.rego".to_string()), "{files:?}");

    // A syntax error: refused, reported, previous set still in force.
    std::fs::write(dir.path().join("extra.rego"), "package identity\n\nlist_widgets := if {\n").unwrap();
    let err = store.reload().unwrap_err();
    assert!(err.contains("extra.rego"), "{err}");
    assert_eq!(store.status(), Err(err));
    assert!(store_allows(&store, "identity:list_domains", &d1_reader, target.clone()));

    // A set missing a known rule is refused too.
    std::fs::write(dir.path().join("extra.rego"), "package identity\n").unwrap();
    std::fs::write(dir.path().join("token.rego"), "package identity\n").unwrap();
    let err = store.reload().unwrap_err();
    assert!(err.contains("identity:validate_token"), "{err}");
    assert!(store_allows(&store, "identity:list_widgets", &d1_reader, json!({})), "previous set kept");

    // Fixed: loads again and clears the error.
    std::fs::remove_file(dir.path().join("token.rego")).unwrap();
    store.reload().unwrap();
    assert_eq!(store.status(), Ok(()));
    assert!(!store_allows(&store, "identity:list_widgets", &d1_reader, json!({})), "undefined rule denies");

    // A directory that cannot be read is an error, not an empty override.
    let missing = store.configure(Some(dir.path().join("nope")));
    assert!(missing.is_err());
    // Every refused load counted as a dynamic-plugin load failure (the spec's family).
    let failures =
        store.metrics.plugin_load_failures.get_or_create(&vec![("plugin", "policy_directory".to_string())]).get();
    assert_eq!(failures, 3, "a syntax error, a missing rule, an unreadable directory");
}

/// `cargo test -p idnode --bins policy::tests::decision_cost -- --ignored --nocapture`
#[test]
#[ignore]
fn decision_cost() {
    let store = PolicyStore::bundled();
    let p_member = token(TokenScope::Project("p1".into()), &["member", "reader"], false);
    let target = json!({"token": {"user_id": "u1"}});
    let n = 100_000;
    let per_call = |f: &mut dyn FnMut()| {
        for _ in 0..1000 {
            f();
        }
        let start = std::time::Instant::now();
        for _ in 0..n {
            f();
        }
        start.elapsed() / n
    };
    let full = per_call(&mut || assert!(store_allows(&store, "identity:validate_token", &p_member, target.clone())));
    let build = per_call(&mut || drop(input::document("identity:validate_token", &p_member, &target)));
    let doc = input::document("identity:validate_token", &p_member, &target);
    let decide = per_call(&mut || assert!(store.allowed("identity:validate_token", &doc)));
    let deny_doc =
        input::document("identity:get_project", &p_member, &json!({"project": {"id": "p2", "domain_id": "d2"}}));
    let deny = per_call(&mut || assert!(!store.allowed("identity:get_project", &deny_doc)));
    println!(
        "policy decision per call: {full:?} in all (identity:validate_token, allowed by its 4th rule) = \
         {build:?} building the input + {decide:?} deciding (with metrics); identity:get_project denied: {deny:?}"
    );
}

/// The VM decides exactly like the interpreter for every action, persona and target shape,
/// evaluated back to back on one VM (no state may leak between decisions).
#[test]
fn vm_agrees_with_interpreter() {
    let sources = super::store::bundled_sources();
    let program = super::store::compile(&sources).unwrap();
    let mut vm = program.vm().unwrap();
    let mut engine = regorus::Engine::new();
    for (n, t) in sources {
        engine.add_policy(n, t).unwrap();
    }
    let tokens = [
        token(TokenScope::System, &["admin", "manager", "member", "reader"], false),
        token(TokenScope::System, &["reader"], false),
        token(TokenScope::Project("p0".into()), &["admin", "reader"], true),
        token(TokenScope::Project("p1".into()), &["admin", "member", "reader"], false),
        token(TokenScope::Project("p1".into()), &["member", "reader"], false),
        token(TokenScope::Project("svc".into()), &["service"], false),
        token(TokenScope::Domain("d1".into()), &["admin", "manager", "member", "reader"], false),
        token(TokenScope::Domain("d1".into()), &["manager", "member", "reader"], false),
        token(TokenScope::Domain("d1".into()), &["reader"], false),
        token(TokenScope::Unscoped, &[], false),
    ];
    let targets = [
        json!({}),
        json!({"domain_id": "d1", "domain": {"id": "d1"}}),
        json!({"domain_id": null, "domain": {"id": "d2"}}),
        json!({"project": {"id": "p1", "domain_id": "d1"}, "user": {"id": "u1", "domain_id": "d1"},
               "role": {"id": "r", "name": "member", "domain_id": null}}),
        json!({"project": {"id": "p2", "domain_id": "d2"}, "group": {"id": "g", "domain_id": "d1"},
               "role": {"id": "r", "name": "admin", "domain_id": "d1"}}),
        json!({"domain": {"id": "d1"}, "group": {"id": "g", "domain_id": "d1"}, "user": {"id": "u2", "domain_id": "d1"},
               "role": {"id": "r", "name": "custom", "domain_id": "d2"}}),
        json!({"token": {"user_id": "u1"}, "credential": {"user_id": "u1"}, "user": {"id": "u1"}}),
        json!({"token": {"user_id": "u2"}, "credential": {"user_id": "u2"}, "user": {"id": "u2", "domain_id": null}}),
    ];
    let mut allowed = 0;
    for t in &tokens {
        for target in &targets {
            for action in ACTIONS {
                let doc = input::document(action, t, target);
                let path = super::actions::rule_path(action).unwrap();
                engine.set_input(doc.clone());
                let interpreted = engine.eval_rule(path.clone()).unwrap() == regorus::Value::Bool(true);
                let executed = vm.execute(&path, doc).unwrap() == regorus::Value::Bool(true);
                assert_eq!(executed, interpreted, "{action} for {:?} on {target}", t.payload.scope);
                allowed += usize::from(executed);
            }
        }
    }
    let total = tokens.len() * targets.len() * ACTIONS.len();
    assert!(allowed > total / 10 && allowed < total * 9 / 10, "a grid that exercises both outcomes: {allowed}/{total}");
}

#[test]
fn scim_policies_take_an_api_keys_provisioning_roles_on_its_own_domain() {
    let store = PolicyStore::bundled();
    let allowed = |roles: &[&str], domain: &str, action: &str| {
        let roles: Vec<String> = roles.iter().map(|r| r.to_string()).collect();
        let p = input::Principal { id: "api-key:k1", domain_id: domain, roles: &roles };
        let doc = input::principal_document(action, &p, &json!({"scim": {"domain_id": "d1", "provider_id": "okta"}}));
        store.allowed(action, &doc)
    };
    for kind in ["user", "group"] {
        for verb in ["create", "list", "show", "update", "delete"] {
            let action = format!("identity/scim/{kind}/{verb}");
            for role in ["manager", "admin", "scim_provisioner"] {
                assert!(allowed(&[role], "d1", &action), "{role} may {action}");
            }
            assert!(!allowed(&["reader", "member"], "d1", &action), "a reader may not {action}");
            assert!(!allowed(&["admin"], "d2", &action), "an admin of another domain may not {action}");
        }
    }
    // An API key's admin role is never a cloud administrator's.
    let roles = vec!["admin".to_string()];
    let p = input::Principal { id: "api-key:k1", domain_id: "d1", roles: &roles };
    let doc = input::principal_document("identity:list_domains", &p, &json!({}));
    assert!(!store.allowed("identity:list_domains", &doc));
}

/// `guard::add_authenticator` and the API-key guards on real state: the bootstrap admin is
/// privileged, a fresh user is not; who counts as "the user itself" follows the token's
/// delegation, in both admin modes.
#[tokio::test]
async fn authenticators_of_privileged_users_are_the_cloud_admins_or_their_own() {
    use axum::http::Method;

    use crate::policy::guard;
    use crate::state::Reader;
    use crate::token::MappedGrant;

    let t = crate::testkit::TestNode::start().await;
    let admin_id = t.node.engine.read().bootstrap_info().unwrap().unwrap().admin_user_id;
    let plain = t.create("/v3/users", "user", json!({"name": "plain", "domain_id": "default"})).await;
    let view = t.node.engine.read();
    for keystone in [false, true] {
        let mode = |tk: ValidToken| if keystone { keystone_mode(tk) } else { tk };
        let d2_admin =
            || mode(token(TokenScope::Domain("d2".into()), &["admin", "manager", "member", "reader"], false));
        let own = || {
            let mut tk = mode(token(TokenScope::Project("p1".into()), &["member"], false));
            tk.user.id = admin_id.clone();
            tk.payload.user_id = admin_id.clone();
            tk
        };
        // Another domain's admin: never for the privileged user, policy's call for the rest.
        assert!(guard::add_authenticator(&view, None, &d2_admin(), &admin_id).is_err(), "keystone={keystone}");
        assert!(guard::add_authenticator(&view, None, &d2_admin(), &plain).is_ok(), "keystone={keystone}");
        // A cloud administrator, and the user itself with its own token.
        let sys_admin = mode(token(TokenScope::System, &["admin", "reader"], false));
        assert!(guard::add_authenticator(&view, None, &sys_admin, &admin_id).is_ok(), "keystone={keystone}");
        assert!(guard::add_authenticator(&view, None, &own(), &admin_id).is_ok(), "keystone={keystone}");
        // The user's id on a delegated token is not the user acting (an impersonating trust's
        // token names the trustor as its user).
        let mut trust = own();
        trust.payload.delegation = Delegation::Trust("t1".into());
        let mut mapped = own();
        mapped.payload.delegation = Delegation::Mapped(MappedGrant {
            mapping_id: "m".into(),
            rule_name: "r".into(),
            ruleset_version: "0".repeat(32),
            ephemeral: false,
        });
        let mut signed = own();
        signed.payload.methods = crate::token::Method::Ec2Credential as u8;
        // A restricted application credential's token (`app_cred` unset: not unrestricted).
        let mut app_cred = own();
        app_cred.payload.delegation = Delegation::AppCred("ac".into());
        for (tk, what) in [(trust, "trust"), (mapped, "mapped"), (signed, "signed request"), (app_cred, "restricted")] {
            assert!(guard::add_authenticator(&view, None, &tk, &admin_id).is_err(), "{what}, keystone={keystone}");
            assert!(guard::add_authenticator(&view, None, &tk, &plain).is_ok(), "{what}, keystone={keystone}");
        }
    }
    // An API key is never a cloud administrator.
    assert!(guard::change_user_by_key(&view, None, &admin_id).is_err());
    assert!(guard::change_user_by_key(&view, None, &plain).is_ok());
    drop(view);
    let g = t.create("/v3/groups", "group", json!({"name": "g", "domain_id": "default"})).await;
    assert!(guard::change_group_by_key(&t.node.engine.read(), None, &g).is_ok());
    let admin_role = t.node.engine.read().id_by_name(crate::state::keys::ns::ROLE_NAME, "", "admin").unwrap().unwrap();
    let r = t.admin(Method::PUT, &format!("/v3/domains/default/groups/{g}/roles/{admin_role}"), None).await;
    assert!(r.status.is_success(), "{}", r.body);
    assert!(guard::change_group_by_key(&t.node.engine.read(), None, &g).is_err());
}

/// A policy set with more rules than one VM program can hold entry points for (255) still
/// compiles, and every rule, the last one included, answers from its chunk.
#[test]
fn a_set_with_hundreds_of_rules_compiles_and_decides() {
    let mut sources = super::store::bundled_sources();
    let extra: String = (0..300).map(|i| format!("r{i} if input.n == {i}\n")).collect();
    sources.push(("extra.rego".into(), format!("package identity.extra\n\n{extra}")));
    let program = super::store::compile(&sources).unwrap();
    let mut vm = program.vm().unwrap();
    for i in [0, 150, 299] {
        let path = format!("data.identity.extra.r{i}");
        assert_eq!(vm.execute(&path, regorus::Value::from(json!({"n": i}))).unwrap(), regorus::Value::Bool(true));
        let other = regorus::Value::from(json!({"n": i + 1}));
        assert_ne!(vm.execute(&path, other).unwrap(), regorus::Value::Bool(true));
    }
    assert!(vm.execute("data.identity.extra.missing", regorus::Value::from(json!({}))).is_err());
}
