//! argon2id password hashing. Defaults are OWASP's recommendation (19 MiB, 2 passes, 1 lane).

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::KeyError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PasswordParams {
    pub memory_kib: u32,
    pub iterations: u32,
    pub parallelism: u32,
}

impl Default for PasswordParams {
    fn default() -> Self {
        PasswordParams { memory_kib: 19 * 1024, iterations: 2, parallelism: 1 }
    }
}

#[derive(Clone)]
pub struct PasswordHasher {
    argon: Argon2<'static>,
}

impl PasswordHasher {
    pub fn new(p: PasswordParams) -> Result<Self, KeyError> {
        let params = Params::new(p.memory_kib, p.iterations, p.parallelism, None)
            .map_err(|e| KeyError::Password(e.to_string()))?;
        Ok(PasswordHasher { argon: Argon2::new(Algorithm::Argon2id, Version::V0x13, params) })
    }

    /// A PHC string (`$argon2id$v=19$m=…`) carrying its own salt and parameters.
    pub fn hash(&self, password: &str) -> Result<String, KeyError> {
        let salt = SaltString::generate(&mut OsRng);
        self.argon
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| KeyError::Password(e.to_string()))
    }

    /// Whether a stored hash is this hasher's kind (argon2id), not one kept from Keystone
    /// that the next login proving it should replace.
    pub fn is_current(phc: &str) -> bool {
        phc.starts_with("$argon2id$")
    }

    /// Verifies with the parameters recorded in the hash, so old hashes keep working after a
    /// parameter change, and hashes kept from Keystone too (`keystone_hash`). Comparisons are
    /// constant-time.
    pub fn verify(&self, password: &str, phc: &str) -> bool {
        if crate::keystone_hash::is_keystone_hash(phc) {
            return crate::keystone_hash::verify(password.as_bytes(), phc).unwrap_or(false);
        }
        match PasswordHash::new(phc) {
            Ok(parsed) => Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok(),
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_and_verify() {
        let h = PasswordHasher::new(PasswordParams { memory_kib: 1024, iterations: 1, parallelism: 1 }).unwrap();
        let phc = h.hash("correct horse").unwrap();
        assert!(phc.starts_with("$argon2id$"));
        assert!(h.verify("correct horse", &phc));
        assert!(!h.verify("wrong", &phc));
        assert!(!h.verify("x", "not a hash"));
        assert_ne!(phc, h.hash("correct horse").unwrap(), "salted");
    }
}
