//! The one-member wrappers of Keystone's bodies (`{"user": {...}}`, `{"users": [...], "links":
//! {...}}`): each API declares many that differ only in the member's name and type, so they are
//! declared with these macros. The types and their OpenAPI schemas are the ones the same
//! structs written out would give.

/// Request bodies holding the object under one member, read as
/// [`Sent`](crate::http::body::Sent) so the handler answers a missing or mistyped member with
/// Keystone's message; the document shows the member as required:
/// `member_requests! { UserCreateRequest { user: UserCreate } }`. After `strict:` the body
/// refuses other properties and the member keeps its properties as sent
/// ([`Kept`](crate::http::body::Kept)), for Keystone's schema messages.
macro_rules! member_requests {
    (@one [$($attr:tt)*] $name:ident $key:ident $ty:ident [$($field:tt)*]) => {
        $($attr)*
        pub struct $name {
            #[serde(default)]
            #[schema(value_type = $ty, required = true)]
            pub $key: $($field)*,
        }
    };
    (strict: $($(#[doc = $doc:tt])* $name:ident { $key:ident: $ty:ident })*) => {$(
        $crate::http::wrappers::member_requests!(@one
            [$(#[doc = $doc])* #[derive(serde::Deserialize, utoipa::ToSchema)] #[serde(deny_unknown_fields)]]
            $name $key $ty [$crate::http::body::Sent<$crate::http::body::Kept<$ty>>]);
    )*};
    ($($(#[doc = $doc:tt])* $name:ident { $key:ident: $ty:ident })*) => {$(
        $crate::http::wrappers::member_requests!(@one [$(#[doc = $doc])* #[derive(serde::Deserialize, utoipa::ToSchema)]]
            $name $key $ty [$crate::http::body::Sent<$ty>]);
    )*};
}
pub(crate) use member_requests;

/// Response envelopes: `{key: T}`, or with `[T]` a list and its collection links. Plain
/// entries are built and serialized by the handlers (`envelopes! { RoleEnvelope { role: Role }
/// RoleList { roles: [Role] } }`); after `schema_only:` they only document a shape the handlers
/// render as JSON themselves (lists built by `pages::page`, objects with extras merged in).
macro_rules! envelopes {
    (@one [$($attr:tt)*] [$($vis:tt)*] $name:ident $key:ident [$ty:ident]) => {
        $($attr)*
        pub struct $name {
            $($vis)* $key: Vec<$ty>,
            $($vis)* links: $crate::http::openapi::CollectionLinks,
        }
    };
    (@one [$($attr:tt)*] [$($vis:tt)*] $name:ident $key:ident $ty:ident) => {
        $($attr)*
        pub struct $name {
            $($vis)* $key: $ty,
        }
    };
    (schema_only: $($(#[doc = $doc:tt])* $name:ident { $key:ident: $($ty:tt)+ })*) => {$(
        $crate::http::wrappers::envelopes!(@one [$(#[doc = $doc])* #[derive(utoipa::ToSchema)] #[allow(dead_code)]] []
            $name $key $($ty)+);
    )*};
    ($($(#[doc = $doc:tt])* $name:ident { $key:ident: $($ty:tt)+ })*) => {$(
        $crate::http::wrappers::envelopes!(@one [$(#[doc = $doc])* #[derive(serde::Serialize, utoipa::ToSchema)]] [pub]
            $name $key $($ty)+);
    )*};
}
pub(crate) use envelopes;
