//! The audit event of every account-page action: the user, the operation, its target, and
//! the API's verdict (success or failure).

use super::session::Session;
use crate::audit::event::{account_action, Action, Outcome, Resource, TYPE_USER};
use crate::context::Core;

/// CADF target types of the account page's actions.
pub const PASSKEY: &str = "data/security/credential/passkey";
pub const PASSWORD: &str = "data/security/credential/password";
pub const CONSENT: &str = "data/security/consent";
pub const SESSION: &str = "data/security/session";
pub const APP_CREDENTIAL: &str = "data/security/credential/application";

/// One action, described before it is sent.
pub struct Note<'a> {
    pub action: Action,
    pub target_type: &'static str,
    pub target_id: &'a str,
    /// The operation, e.g. `passkey.rename`.
    pub operation: &'static str,
}

impl Note<'_> {
    pub fn new<'a>(action: Action, target_type: &'static str, target_id: &'a str, operation: &'static str) -> Note<'a> {
        Note { action, target_type, target_id, operation }
    }

    pub fn emit(&self, node: &Core, s: &Session, ok: bool) {
        self.emit_for(node, &s.user_id, ok);
    }

    pub fn emit_for(&self, node: &Core, user_id: &str, ok: bool) {
        let outcome = if ok { Outcome::Success } else { Outcome::Failure };
        let target = Resource::new(self.target_type, self.target_id);
        node.audit.emit(account_action(user_id, self.action, target, self.operation, outcome));
    }
}

/// A sign-in (password, passkey, or after changing an expired password) of `user_id` (the
/// name typed when no user was found).
pub fn sign_in(node: &Core, user_id: &str, method: &'static str, ok: bool) {
    Note::new(Action::Authenticate, TYPE_USER, user_id, method).emit_for(node, user_id, ok);
}
