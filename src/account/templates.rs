//! The account page's templates and its one script, compiled into the binary.

use std::sync::LazyLock;

use minijinja::Environment;

use crate::web::templates;

/// The account page's only script: passkey sign-in and registration, and the copy button.
pub const SCRIPT: &str = include_str!("pages/account.js");

/// The account page's templates.
pub static PAGES: LazyLock<Environment<'static>> = LazyLock::new(|| {
    templates::environment(&[
        ("signin.html", include_str!("pages/signin.html")),
        ("expired.html", include_str!("pages/expired.html")),
        ("account.html", include_str!("pages/account.html")),
        ("passkeys.html", include_str!("pages/passkeys.html")),
        ("password.html", include_str!("pages/password.html")),
        ("password_fields.html", include_str!("pages/password_fields.html")),
        ("consents.html", include_str!("pages/consents.html")),
        ("sessions.html", include_str!("pages/sessions.html")),
        ("credentials.html", include_str!("pages/credentials.html")),
    ])
});
