//! Keystone's password hashes judged by Keystone's own code: Keystone 30's `password_hashers`
//! (in the reference's venv, `/opt/anchors/keystone-venv`) hash passwords with each algorithm
//! it can be configured for, at its default work factors, and idnode's verifier
//! (`idnode_keys::keystone_hash`, what a login of a user moved from Keystone runs) must accept
//! each password and refuse a near miss.

use idnode_keys::keystone_hash;

const KEYSTONE_PYTHON: &str = "/opt/anchors/keystone-venv/bin/python";

const HASH_WITH_KEYSTONE: &str = r#"
import json, sys, warnings
warnings.simplefilter("ignore")
from keystone.common.password_hashers import bcrypt, pbkdf2, scrypt
out = []
for pw in json.load(sys.stdin):
    raw = pw.encode("utf-8")
    for h in (bcrypt.Bcrypt, bcrypt.Bcrypt_sha256, scrypt.Scrypt, pbkdf2.Sha512):
        out.append([h.name, pw, h.hash(raw)])
print(json.dumps(out))
"#;

#[test]
fn keystones_own_hashes_verify_with_their_password_only() {
    let probe = std::process::Command::new(KEYSTONE_PYTHON).args(["-c", "import keystone"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED keystone_hashes: no keystone in {KEYSTONE_PYTHON} (run scripts/install-test-deps)");
        return;
    }
    let passwords = ["correct horse battery", "pässwörd ✓ 🔑", "x"];
    let mut child = std::process::Command::new(KEYSTONE_PYTHON)
        .args(["-c", HASH_WITH_KEYSTONE])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("keystone's python");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(serde_json::to_string(&passwords).unwrap().as_bytes()).unwrap();
    }
    let out = child.wait_with_output().expect("keystone hashed");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let hashes: Vec<(String, String, String)> = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(hashes.len(), passwords.len() * 4);
    for (name, pw, hashed) in &hashes {
        assert!(keystone_hash::is_keystone_hash(hashed), "{name}: {hashed}");
        assert_eq!(keystone_hash::verify(pw.as_bytes(), hashed), Ok(true), "{name} of {pw:?}: {hashed}");
        let near = format!("{pw}!");
        assert_eq!(keystone_hash::verify(near.as_bytes(), hashed), Ok(false), "{name} of {pw:?}: {hashed}");
    }
    eprintln!("keystone_hashes: {} hashes by Keystone 30 verified", hashes.len());
}
