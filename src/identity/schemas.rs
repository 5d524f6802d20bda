//! OpenAPI schemas of the user, group and password-change bodies. Schema only: the handlers
//! build and read JSON directly. Extra properties are accepted and echoed back.
#![allow(dead_code)]

use std::collections::BTreeMap;

use serde_json::Value;
use utoipa::ToSchema;

use crate::http::openapi::{CollectionLinks, SelfLink};

/// A user. The password is never returned.
#[derive(ToSchema)]
pub struct User {
    id: String,
    name: String,
    domain_id: String,
    enabled: bool,
    /// Present when set.
    default_project_id: Option<String>,
    /// When the password expires (`2015-11-07T02:58:43.578887Z`), or null.
    password_expires_at: Option<String>,
    /// User options, e.g. `{"ignore_password_expiry": true}`.
    options: BTreeMap<String, Value>,
    /// Present for users linked to external identity providers.
    federated: Option<Vec<FederatedIdentity>>,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct FederatedIdentity {
    idp_id: String,
    protocols: Vec<FederatedProtocol>,
}

#[derive(ToSchema)]
pub struct FederatedProtocol {
    protocol_id: String,
    unique_id: String,
}

#[derive(ToSchema)]
pub struct UserEnvelope {
    user: User,
}

#[derive(ToSchema)]
pub struct UserList {
    users: Vec<User>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
pub struct UserCreate {
    name: String,
    /// Default: the caller's domain scope, else `default`.
    domain_id: Option<String>,
    /// Default true.
    enabled: Option<bool>,
    /// Hashed with argon2id; never returned.
    password: Option<String>,
    default_project_id: Option<String>,
    federated: Option<Vec<FederatedIdentity>>,
    options: Option<BTreeMap<String, Value>>,
}

#[derive(ToSchema)]
pub struct UserCreateRequest {
    user: UserCreate,
}

#[derive(ToSchema)]
pub struct UserUpdate {
    name: Option<String>,
    enabled: Option<bool>,
    password: Option<String>,
    default_project_id: Option<String>,
    federated: Option<Vec<FederatedIdentity>>,
    options: Option<BTreeMap<String, Value>>,
}

#[derive(ToSchema)]
pub struct UserUpdateRequest {
    user: UserUpdate,
}

#[derive(ToSchema)]
pub struct PasswordChange {
    original_password: String,
    password: String,
}

#[derive(ToSchema)]
pub struct PasswordChangeRequest {
    user: PasswordChange,
}

/// A group.
#[derive(ToSchema)]
pub struct Group {
    id: String,
    name: String,
    domain_id: String,
    description: Option<String>,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct GroupEnvelope {
    group: Group,
}

#[derive(ToSchema)]
pub struct GroupList {
    groups: Vec<Group>,
    links: CollectionLinks,
}

/// A group in a user's group list; memberships do not expire, so the expiry is always null.
#[derive(ToSchema)]
pub struct MemberGroup {
    id: String,
    name: String,
    domain_id: String,
    description: Option<String>,
    membership_expires_at: Option<String>,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct MemberGroupList {
    groups: Vec<MemberGroup>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
pub struct GroupCreate {
    name: String,
    /// Default: the caller's domain scope, else `default`.
    domain_id: Option<String>,
    description: Option<String>,
}

#[derive(ToSchema)]
pub struct GroupCreateRequest {
    group: GroupCreate,
}

#[derive(ToSchema)]
pub struct GroupUpdate {
    name: Option<String>,
    description: Option<String>,
}

#[derive(ToSchema)]
pub struct GroupUpdateRequest {
    group: GroupUpdate,
}
