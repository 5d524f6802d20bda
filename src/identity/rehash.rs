//! Hashes kept from Keystone (issue 52) are replaced at the first login that proves them: the
//! password is in hand then, and at no other time. The login never waits on or fails with the
//! write: a refusal (a cluster not yet at version 10, a leader away) leaves the old hash,
//! which keeps working, for the next login to replace.

use idnode_keys::PasswordHasher;

use crate::context::Core;
use crate::state::model::User;
use crate::state::Command;

impl Core {
    /// After `password` proved `u`'s stored hash: replaces a hash kept from Keystone with an
    /// argon2id one.
    pub async fn rehash_kept_password(&self, u: &User, password: String) {
        let Some(old_hash) = u.password_hash.clone().filter(|h| !PasswordHasher::is_current(h)) else {
            return;
        };
        let new_hash = match self.hash_password(password).await {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(user_id = %u.id, error = %e.message, "could not rehash a password kept from Keystone");
                return;
            }
        };
        let cmd = Command::RehashPassword { user_id: u.id.clone(), old_hash, new_hash };
        match self.propose(cmd).await {
            Ok(_) => tracing::info!(user_id = %u.id, "password hash kept from Keystone replaced with argon2id"),
            Err(e) => {
                tracing::warn!(user_id = %u.id, error = %e.message, "could not rehash a password kept from Keystone")
            }
        }
    }
}
