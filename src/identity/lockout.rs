//! Lockout after failed password checks (`[security_compliance] lockout_*`), on the core
//! context every login path holds.

use crate::clock::now_micros;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::state::model::User;
use crate::state::{Command, Reader};

impl Core {
    /// Refuses a password check on a locked account; the answer does not say why.
    pub fn refuse_if_locked(&self, u: &User) -> ApiResult<()> {
        if self.locked(&u.id, Some(u))? {
            tracing::info!(user_id = %u.id, "authentication refused: the account is locked");
            return Err(ApiError::unauthenticated());
        }
        Ok(())
    }

    /// Whether lockout holds the account. The state is read even for an unknown user
    /// (`user` None), so both cost the same.
    pub fn locked(&self, user_id: &str, user: Option<&User>) -> ApiResult<bool> {
        let sc = &self.cfg.security;
        if sc.lockout_failure_attempts == 0 {
            return Ok(false);
        }
        let st = self.engine.read().password_state(user_id)?;
        Ok(user.is_some_and(|u| sc.locked(u, st.as_ref(), now_micros())))
    }

    /// Counts a failed password check when lockout is on.
    pub async fn note_auth_failure(&self, user_id: &str) {
        let sc = &self.cfg.security;
        if sc.lockout_failure_attempts == 0 {
            return;
        }
        let cmd = Command::RecordAuthFailure {
            user_id: user_id.to_string(),
            at: now_micros(),
            limit: sc.lockout_failure_attempts,
            lockout_micros: sc.lockout_micros(),
        };
        if let Err(e) = self.propose(cmd).await {
            if e.status != axum::http::StatusCode::NOT_FOUND {
                tracing::warn!(user_id, error = %e.message, "could not record a failed authentication");
            }
        }
    }

    /// Ends a failure streak after a successful password check.
    pub async fn note_auth_success(&self, u: &User) -> ApiResult<()> {
        let streak = self.engine.read().password_state(&u.id)?.is_some_and(|s| s.failures > 0);
        if streak {
            self.propose(Command::ClearAuthFailures { user_id: u.id.clone() }).await?;
        }
        Ok(())
    }
}
