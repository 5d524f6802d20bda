//! Tokens issued by the reference Keystone 30 (password method, the bootstrap admin; one per
//! kind it scopes to), with the key repository it issued them under (`0` staged, `1` primary),
//! and what Keystone's own `GET /v3/auth/tokens` answered for each.

use super::*;

const STAGED: &str = "qbvr1DLfvUGJHGMKN-FZ0AaL7_FahX3dyiQPKAu-FUM=";
const PRIMARY: &str = "CcUHjDeya3QFeWsY9Ympmr46NfMSzWgnANsylTAa10Y=";
const USER: &str = "24d534f613cc48e38098a351a96adc34";
/// 2026-11-29T19:32:49Z and 19:32:50Z (expiry), 18:32:49Z and 18:32:50Z (issue).
const EXPIRES: [i64; 2] = [1_795_980_769, 1_795_980_770];
const ISSUED: [i64; 2] = [1_795_977_169, 1_795_977_170];

const UNSCOPED: &str = "gAAAAABrDG_RbsZgZoK6UHbYGIfQXSmgNd9ztpRAUp0DFZ8WZNKtz6aZzjsrKmmAoBap4tYoyOpC4cx8Wjvz66K2Uq6yWg03k_D0izsyh6coHQ2QuiqRvLjfc82iOV28MbV_zqSO3g-h0zB_la790FQIAji5OSbOKA";
const PROJECT: &str = "gAAAAABrDG_SbwuxaB3TXOytRmZ80Dg1nLDPo7yonYplZQe1RjIh7BBsM5YOAVkJa_eG_ViMFWJfPLd7bftYPg-00qyhBV8OLT0Do9vGzL6t9RPG2Hn1DAftMcbo3wR0HEtotYmuRMvwZ7Dr09T_AgkUYHjrEnRtK3psx3BEn0u7xww_vTgplLg";
const DOMAIN: &str = "gAAAAABrDG_S6HwIROmT4hIvIpprL514NUDRw66lRNAb-q3HdFoVkPlLmY5ynHHOP7GijGv7qWIG2SpYrA97S53yVrBHBPLbhPb7DI-sW2z7QUWwlJxdRf-PSR-Z0UiUi9Dy7rsXFxt_oIwi415dyAZfaI58KzQEHg";
const SYSTEM: &str = "gAAAAABrDG_ShIoQ4wmwDod6WL9mJUdUTS5qdTRo2OXFoQXCEv4JRlOguCVh69Jlnms96rlMMlFgq4Whsjy0raBW8JTGGWr4HJcJc9SnblNDhSHsLuD765-5DXUu_xuJK7gAV5syBKikYSqsBKlGW03tgmw-ZU5YOw";

fn keys() -> KeystoneFernetKeys {
    KeystoneFernetKeys::new(&[PRIMARY.into(), STAGED.into()]).unwrap()
}

#[test]
fn each_kind_reads_as_keystone_answered_it() {
    let k = keys();
    let cases = [
        (UNSCOPED, 0, KeystoneScope::Unscoped, 0, "szAORvojTq-0QXL52YGMwA"),
        (PROJECT, 2, KeystoneScope::Project("9083400d4fb140568b861d7016c80221".into()), 1, "p-BlYIL7TVWvLh7xwcN-vg"),
        (DOMAIN, 1, KeystoneScope::Domain("default".into()), 1, "6BKdxkpMQICKHwG77KFujQ"),
        (SYSTEM, 8, KeystoneScope::System("all".into()), 1, "BLHlGGwUQse2B8-qyXWWpA"),
    ];
    for (token, version, scope, at, audit) in cases {
        let t = k.decode(token).unwrap();
        assert_eq!(t.version, version);
        assert_eq!(t.user_id, USER);
        assert_eq!(method_names(t.methods, DEFAULT_METHODS), vec!["password"]);
        assert_eq!(t.scope, scope);
        assert_eq!(t.expires_at, EXPIRES[at] * 1_000_000);
        assert_eq!(t.issued_at, ISSUED[at]);
        assert_eq!(t.audit_ids, vec![audit.to_string()]);
    }
}

#[test]
fn any_key_of_the_repository_opens_and_others_do_not() {
    assert!(KeystoneFernetKeys::new(&[STAGED.into(), PRIMARY.into()]).unwrap().decode(PROJECT).is_ok());
    let wrong = KeystoneFernetKeys::new(&[STAGED.into()]).unwrap();
    assert_eq!(wrong.decode(PROJECT), Err(FernetError::Undecryptable));
    let k = keys();
    assert_eq!(k.decode(&PROJECT[..PROJECT.len() - 4]), Err(FernetError::Undecryptable));
    assert_eq!(k.decode("not a token"), Err(FernetError::Undecryptable));
    let mut flipped = PROJECT.as_bytes().to_vec();
    flipped[40] = if flipped[40] == b'A' { b'B' } else { b'A' };
    assert_eq!(k.decode(std::str::from_utf8(&flipped).unwrap()), Err(FernetError::Undecryptable));
    assert!(KeystoneFernetKeys::new(&["short".into()]).is_err());
    assert!(KeystoneFernetKeys::new(&[]).is_err());
}

#[test]
fn a_repository_is_read_by_its_numbered_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("0"), format!("{STAGED}\n")).unwrap();
    std::fs::write(dir.path().join("1"), PRIMARY).unwrap();
    std::fs::write(dir.path().join("README"), "ignored").unwrap();
    let keys = KeystoneFernetKeys::read_repository(dir.path()).unwrap();
    assert_eq!(keys, vec![PRIMARY.to_string(), STAGED.to_string()], "primary first");
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(KeystoneFernetKeys::read_repository(empty.path()), Err(FernetError::Repository(..))));
    assert!(KeystoneFernetKeys::read_repository(&empty.path().join("missing")).is_err());
}

#[test]
fn payloads_of_unknown_kinds_or_of_the_wrong_shape_are_refused() {
    let seal = |v: Value| {
        let mut buf = Vec::new();
        rmpv::encode::write_value(&mut buf, &v).unwrap();
        let f = fernet::Fernet::new(PRIMARY).unwrap();
        f.encrypt(&buf).trim_end_matches('=').to_string()
    };
    let user = Value::Array(vec![Value::Boolean(true), Value::Binary(vec![7; 16])]);
    // A kind Keystone does not write.
    let unknown = Value::Array(vec![12.into(), user.clone(), 2.into()]);
    assert_eq!(keys().decode(&seal(unknown)), Err(FernetError::Unsupported(12)));
    let oauth1 = Value::Array(vec![7.into(), user.clone(), 2.into()]);
    assert_eq!(keys().decode(&seal(oauth1)), Err(FernetError::Malformed("field count")));
    let trust = Value::Array(vec![3.into(), user.clone(), 2.into()]);
    assert_eq!(keys().decode(&seal(trust)), Err(FernetError::Malformed("field count")));
    let short = Value::Array(vec![2.into(), user.clone(), 2.into()]);
    assert_eq!(keys().decode(&seal(short)), Err(FernetError::Malformed("field count")));
    let bad_id = Value::Array(vec![
        0.into(),
        Value::Array(vec![Value::Boolean(true), Value::Binary(vec![1; 5])]),
        2.into(),
        Value::F64(1.0),
        Value::Array(vec![]),
    ]);
    assert_eq!(keys().decode(&seal(bad_id)), Err(FernetError::Malformed("user id")));
    let ok =
        Value::Array(vec![0.into(), user, 6.into(), Value::F64(1.5), Value::Array(vec![Value::Binary(vec![0; 16])])]);
    let t = keys().decode(&seal(ok)).unwrap();
    assert_eq!((t.user_id.as_str(), t.expires_at), ("07070707070707070707070707070707", 1_500_000));
    assert_eq!(method_names(t.methods, DEFAULT_METHODS), vec!["password", "token"]);
}

/// Made with Keystone 30's own payload classes (`TrustScopedPayload`,
/// `ApplicationCredentialScopedPayload`) and the repository's primary key.
const TRUST: &str = "gAAAAABrDISdlrKjfbB5MZxWWk40cU7Q8XSziyQUbu0hffePgeYec7RD3kQP3Z1ZTd5DY8A2QelXazJwWSsgg3ibsKqFfO5S_490gSTKF8b81K1EghizEQY-VzjHHN3esNYhfnHm_kVTN0VCVxXpr5DPYen0eFxV5Bq1qbboODkF4sPka351C2M6hR0-0OkYPIJ0ldECR1AG";
const APP_CRED: &str = "gAAAAABrDISdn6YuJAkczY7uW07U23LC9taTVWzn2u4II1j5n6DvBMxJ3ODC7ttOF0mT-TXKwp8y7y9bPld72GGB588XY0GQg-SOqp4Xzenrfrod0AcrLNG3w3qHwDb-MbcogsJzMvHqSOUiO4QeWOvtWNw8PvpDE2cUGYOHs03uFmbzrssq2rptJeAyQN5yRUStxl_oQGdD";

#[test]
fn trust_and_application_credential_tokens_carry_their_delegation() {
    let k = keys();
    let project = KeystoneScope::Project("9083400d4fb140568b861d7016c80221".into());
    let t = k.decode(TRUST).unwrap();
    assert_eq!((t.version, &t.scope, &t.user_id), (3, &project, &USER.to_string()));
    assert_eq!(t.delegation, KeystoneDelegation::Trust("b1a2c3d4e5f60718293a4b5c6d7e8f90".into()));
    assert_eq!(method_names(t.methods, DEFAULT_METHODS), vec!["password"]);
    assert_eq!(t.expires_at, EXPIRES[1] * 1_000_000);
    assert_eq!(t.audit_ids, vec!["p-BlYIL7TVWvLh7xwcN-vg".to_string()]);
    let a = k.decode(APP_CRED).unwrap();
    assert_eq!((a.version, &a.scope), (9, &project));
    assert_eq!(a.delegation, KeystoneDelegation::AppCred("0fe1d2c3b4a5968778695a4b3c2d1e0f".into()));
    assert_eq!(method_names(a.methods, DEFAULT_METHODS), vec!["application_credential"]);
    assert_eq!(k.decode(UNSCOPED).unwrap().delegation, KeystoneDelegation::None);
}

/// Made with Keystone 30's payload classes (`FederatedUnscopedPayload`,
/// `FederatedProjectScopedPayload`, `FederatedDomainScopedPayload`, `OauthScopedPayload`), the
/// repository's primary key, and checked with their own `disassemble`: a login of `acme-idp`'s
/// `saml2` protocol in a uuid group and a group named by text; an OAuth1 access token.
const FED_UNSCOPED: &str = "gAAAAABrDK0pZAlcFBlOqQ6teKps395eS4LNFamUuTatHfp98C6T0dxGYCaEmyKBn1b7MnLJMV__kko1UudEU-E4oKNP7tI28eTyAMtVnYs1Dli_g_as_-v15TriF4n9WhefcMN9Vt6coxMhLngpa3KJy7Ha7NGcPReNvFmdX_AghlSu9gH56fjFefkCiNNBgWYJbnUWwlnr9DXxD98Wt67E787_iEy1jQ";
const FED_PROJECT: &str = "gAAAAABrDK0pQPYXCQwPG5Laq_vv6pfpzrAJQI78JqSzm0JnhWKeq5gfLyq5e4YyCJBvZr9a5sklN_rL_bsKXyLN-xzghAvQzdX5NbZc6NQ93nFei_Calbp5dGUbMLDRqN02n-esW118gh9edp-dlQOrzRuSWlMl2tvZOSw8OCremIWiuSAH3jrlkU5MrfeTlr0Uqd4lpuyzpBaweleQ2fJ7hYtwopzoDtUMiFF6kS8CvOOKSNFO-ag";
const FED_DOMAIN: &str = "gAAAAABrDK0pjXAhl6i06NtIFo7fDtqV4j5iM11BOLKfA8i5H0tJTKz_UFx0IMzqC9oDsna1xJI8COvaMfMpKIp3GnDitHNvb9sEv7fiRrclmuJnkO2nVEHEFndXIBrrBlKbCKzku2YOSCXNm1guo696S8d2EEZMwfarZU9HuRKAXv8GMZq-X_B_DPQ9k3GgMhmibAnJuUJkxOsVUHA4nwFCWkJdsM1OxBaFhw20uJat-FRJLIV3iE8";
const OAUTH1: &str = "gAAAAABrDK0pXGgTjr1jjl1XUd_a1GYC5wLsaEobmcKnoUS_ZIVIdwKAMPrwGT1ZhTZRuWjtUMv_h85WVNpf04fAO1kbL_JCNbxh4ggu0ir8wBFJUqZBPSdLFNmkayRArRERaK6YiAYXXv35wYWxat1AskkYloEhCBZOBdH0HSExjjs_wa06-BDmo56YzX7tbu1-zeNw9zC9";

#[test]
fn federated_and_oauth1_tokens_carry_their_login_or_access_token() {
    let k = keys();
    let login = KeystoneDelegation::Federated(KeystoneFederation {
        identity_provider_id: "acme-idp".into(),
        protocol_id: "saml2".into(),
        group_ids: vec!["5c6e2b7d1f0a4e3b9a8c7d6e5f4a3b2c".into(), "devs-by-name".into()],
    });
    let project = KeystoneScope::Project("9083400d4fb140568b861d7016c80221".into());
    let cases = [
        (FED_UNSCOPED, 4, KeystoneScope::Unscoped, "mapped"),
        (FED_PROJECT, 5, project.clone(), "mapped"),
        (FED_DOMAIN, 6, KeystoneScope::Domain("d2c1b0a9f8e7d6c5b4a39281706f5e4d".into()), "mapped"),
        (OAUTH1, 7, project, "oauth1"),
    ];
    for (token, version, scope, method) in cases {
        let t = k.decode(token).unwrap();
        assert_eq!((t.version, &t.scope, t.user_id.as_str()), (version, &scope, USER), "kind {version}");
        assert_eq!(method_names(t.methods, DEFAULT_METHODS), vec![method], "kind {version}");
        assert_eq!(t.expires_at, EXPIRES[1] * 1_000_000, "kind {version}");
        assert_eq!(t.audit_ids, vec!["p-BlYIL7TVWvLh7xwcN-vg".to_string()], "kind {version}");
        let want = match version {
            7 => KeystoneDelegation::OAuth1("1f2e3d4c5b6a79880a1b2c3d4e5f6071".into()),
            _ => login.clone(),
        };
        assert_eq!(t.delegation, want, "kind {version}");
    }
}
