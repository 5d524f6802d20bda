//! The toolkit of the browser pages (the OAuth2 provider's sign-in pages, the account page):
//! templates that HTML-escape every value unless it is marked safe here (minijinja), texts in
//! English and German chosen by `Accept-Language` (Fluent), a domain's branding, and one page
//! response carrying the protective headers and a CSP that names the inline style and scripts
//! by their hashes. It imports no feature: each feature keeps its own templates and handlers.

pub mod api;
pub mod brand;
pub mod cookie;
pub mod error;
pub mod form;
pub mod i18n;
pub mod page;
pub mod templates;

pub use brand::Brand;
pub use error::{PageError, PageResult};
pub use i18n::Lang;
pub use page::{see_other, Chrome, Page};
