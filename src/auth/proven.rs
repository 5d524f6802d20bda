//! What an authentication method proved: the type the methods (here, `appcred::auth`) and
//! the trust grant (`trust::auth`) hand to token issue, apart from the methods so those
//! features do not import the module that calls them.

use crate::state::model::User;
use crate::token::{Delegation, TokenPayload, TokenScope};

/// What the identity part of a request proved.
pub struct Proven {
    pub user: User,
    pub methods: u8,
    /// Set for the token method: the token being re-scoped.
    pub parent: Option<TokenPayload>,
    /// The credential the token will stand on (application credential).
    pub delegation: Delegation,
    /// A scope the credential fixes (the request may not name one).
    pub fixed_scope: Option<TokenScope>,
    /// A limit the credential puts on the token's life (unix microseconds).
    pub expires_at: Option<i64>,
    /// The token restriction the re-scoped token stood under (the new one stands under it too).
    pub restriction: Option<String>,
}

impl Proven {
    pub fn of(user: User, methods: u8, parent: Option<TokenPayload>) -> Proven {
        Proven {
            user,
            methods,
            parent,
            delegation: Delegation::None,
            fixed_scope: None,
            expires_at: None,
            restriction: None,
        }
    }
}
