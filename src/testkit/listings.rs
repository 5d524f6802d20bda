//! The listings whose ids every replica must agree on, as `(path, envelope key)`. Plain data,
//! so the black-box tests in `tests/it` use this same file (`#[path]`).

pub const REPLICATED: &[(&str, &str)] = &[
    ("/v3/users", "users"),
    ("/v3/groups", "groups"),
    ("/v3/roles", "roles"),
    ("/v3/projects", "projects"),
    ("/v3/credentials", "credentials"),
];
