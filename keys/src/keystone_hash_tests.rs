//! Hashes written by Keystone 30's own `password_hashers` (keystone==30.0.0, bcrypt 5.0.0)
//! and by passlib 1.7.4 (what Keystone wrote before), all of the password
//! `correct horse battery`, at low work factors. Made with, in Keystone's venv:
//! `Bcrypt.hash(pw, rounds=4)`, `Bcrypt_sha256.hash(pw, rounds=4)`, `Scrypt.hash(pw, n=10)`,
//! `Sha512.hash(pw, rounds=1000)`; and `passlib.hash.<name>.using(rounds=…).hash(pw)`.
//! tests/it/keystone_hashes.rs checks fresh ones from Keystone's code on every CI run.

use super::*;

const PW: &[u8] = b"correct horse battery";

const KEYSTONE: &[&str] = &[
    "$2b$04$IAhPfKYtQSLKh9R40yZvx.PmgDEOb17XuFvwJOZWcQtFWSgzg0.LS",
    "$bcrypt-sha256$v=2,t=2b,r=4$LTWm8eqPZw4yQWDO9AO7XO$sjNOMxG7O9LwpLgy56Fexzvsa7AUu2S",
    "$scrypt$ln=10,r=8,p=1$skpUAO+3aReYzQWP1qF41Q$+vl2itLLTMjZmD8cqunWBgmz8f4N+FrrPsLv1tKz+50",
    "$pbkdf2-sha512$1000$31IbaYyvCItf0s2/iXovjQ$AYaQkGRsi+2hMhjt6D/GKO/snbB+ySFgfSsPFYc0gEt4ztj7PLvMFbR7qgjWLGvz/KO7jXq8j4UOt+GLilENcw",
];

const PASSLIB: &[&str] = &[
    "$2b$04$a.LbuPyIYG/RLGKl.YNWmOkVT9He3UTT44qgZdofBBqN4i2/P0GKi",
    "$bcrypt-sha256$v=2,t=2b,r=4$1x1BrBItXjYCPQ.zov0UqO$YGoXVJNaAaB3zOp9X.R.kgzOCwQqUlS",
    "$bcrypt-sha256$2b,4$XKpttsg6Y/gcp1G0ndQFye$/91h2X1UjA/I2fXQApgzGC4kGx9w50S",
    "$scrypt$ln=10,r=8,p=1$yblX6l3rfS+FEML4f09pjQ$8IFr+yGbVdhOqj46dBu5ylzZgWslnX+wLPSOkxv4j+4",
    "$pbkdf2-sha512$1000$ibH2nlOqlTImhLB2TmlNCQ$BP1mJfuG1jxA649Wz1L3tF./9su//JbU3OYnF.Bt9to.0w6akKM6oYNRvZMsCmBhQoqSU9PwrTGDYvIooLYrgA",
];

#[test]
fn keystones_and_passlibs_hashes_verify_the_password_and_no_other() {
    for h in KEYSTONE.iter().chain(PASSLIB) {
        assert!(is_keystone_hash(h), "{h}");
        assert_eq!(verify(PW, h), Ok(true), "{h}");
        assert_eq!(verify(b"correct horse batterY", h), Ok(false), "{h}");
        assert_eq!(verify(b"", h), Ok(false), "{h}");
    }
}

#[test]
fn a_non_ascii_password_verifies_as_its_utf8_bytes() {
    let h = "$2b$04$cm9IMY0E5FGMn6sfJ3U3OO3KRRQchXn1/mSDA6nerj4kQaTFVF47G";
    assert_eq!(verify("pässwörd ✓".as_bytes(), h), Ok(true));
    assert_eq!(verify("passwort ✓".as_bytes(), h), Ok(false));
}

#[test]
fn a_changed_salt_or_digest_fails() {
    for h in KEYSTONE.iter().chain(PASSLIB) {
        // Flip one character of the digest (the last), then one of the salt.
        let mut bytes = h.as_bytes().to_vec();
        let last = bytes.len() - 2;
        bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
        let digest_changed = String::from_utf8(bytes).unwrap();
        assert_ne!(verify(PW, &digest_changed), Ok(true), "{digest_changed}");
        let salt_at = h.rfind('$').map(|i| if h.starts_with("$2") { i + 3 } else { i - 3 }).unwrap();
        let mut bytes = h.as_bytes().to_vec();
        bytes[salt_at] = if bytes[salt_at] == b'C' { b'D' } else { b'C' };
        let salt_changed = String::from_utf8(bytes).unwrap();
        assert_ne!(verify(PW, &salt_changed), Ok(true), "{salt_changed}");
    }
}

#[test]
fn unknown_malformed_and_costly_hashes_are_refused_not_computed() {
    assert!(matches!(verify(PW, "$argon2id$v=19$m=1,t=1,p=1$c2FsdA$aGFzaA"), Err(HashError::Unsupported(_))));
    assert!(matches!(verify(PW, "$1$abc$def"), Err(HashError::Unsupported(i)) if i == "$1$"));
    assert!(matches!(verify(PW, "plaintext"), Err(HashError::Unsupported(_))));
    assert!(!is_keystone_hash("$argon2id$v=19$m=1,t=1,p=1$c2FsdA$aGFzaA"));
    for bad in [
        "$2b$xx$IAhPfKYtQSLKh9R40yZvx.PmgDEOb17XuFvwJOZWcQtFWSgzg0.LS",
        "$2b$04$short",
        "$bcrypt-sha256$v=2,t=2b,r=4$LTWm8eqPZw4yQWDO9AO7XO",
        "$bcrypt-sha256$v=2,t=2q,r=4$LTWm8eqPZw4yQWDO9AO7XO$sjNOMxG7O9LwpLgy56Fexzvsa7AUu2S",
        "$scrypt$ln=10,r=8$skpUAO+3aReYzQWP1qF41Q$+vl2itLLTMjZmD8cqunWBgmz8f4N+FrrPsLv1tKz+50",
        "$scrypt$ln=10,r=8,p=1$!!!$+vl2itLLTMjZmD8cqunWBgmz8f4N+FrrPsLv1tKz+50",
        "$pbkdf2-sha512$0$31IbaYyvCItf0s2/iXovjQ$AYaQ",
        "$pbkdf2-sha512$1000$31IbaYyvCItf0s2/iXovjQ$",
    ] {
        assert!(matches!(verify(PW, bad), Err(HashError::Malformed(_))), "{bad}: {:?}", verify(PW, bad));
    }
    for costly in [
        "$2b$31$IAhPfKYtQSLKh9R40yZvx.PmgDEOb17XuFvwJOZWcQtFWSgzg0.LS",
        "$scrypt$ln=30,r=8,p=1$skpUAO+3aReYzQWP1qF41Q$+vl2itLLTMjZmD8cqunWBgmz8f4N+FrrPsLv1tKz+50",
        "$scrypt$ln=16,r=64,p=1$skpUAO+3aReYzQWP1qF41Q$+vl2itLLTMjZmD8cqunWBgmz8f4N+FrrPsLv1tKz+50",
        "$pbkdf2-sha512$4000000000$31IbaYyvCItf0s2/iXovjQ$AYaQkGRsi+2hMhjt6D/GKO/snbB+ySFgfSsPFYc0gEt4ztj7PLvMFbR7qgjWLGvz/KO7jXq8j4UOt+GLilENcw",
    ] {
        assert!(matches!(verify(PW, costly), Err(HashError::TooCostly(_))), "{costly}");
    }
}
