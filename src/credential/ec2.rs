//! `/v3/users/{user_id}/credentials/OS-EC2` (the spec's `<sigext>`): Keystone's legacy view of
//! signature credentials. Each is a `/v3/credentials` record of type `ec2` whose id is the
//! SHA-256 of its access key; the path's `{credential_id}` is the plaintext access key.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::schemas as s;
use super::{blob_field, ec2_id, EC2};
use crate::context::Core;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{Below, JsonBody};
use crate::http::fields::new_id;
use crate::http::openapi::errors as E;
use crate::policy::{enforce, guard};
use crate::state::keys::ns;
use crate::state::model::Credential;
use crate::state::{Command, Reader};
use crate::token::Call;

fn ec2_json(c: &Credential, base: &str) -> Value {
    let access = blob_field(c, "access").unwrap_or_default();
    json!({
        "user_id": c.user_id,
        "tenant_id": c.project_id,
        "access": access,
        "secret": blob_field(c, "secret"),
        "trust_id": blob_field(c, "trust_id"),
        "links": {"self": format!("{base}/v3/users/{}/credentials/OS-EC2/{access}", c.user_id)},
    })
}

fn owner_target(user_id: &str) -> Value {
    json!({"credential": {"user_id": user_id}})
}

fn require_user(node: &Core, user_id: &str) -> ApiResult<()> {
    match node.engine.read().user(user_id)? {
        Some(_) => Ok(()),
        None => Err(ApiError::not_found("user", user_id)),
    }
}

/// The signature credential for `access`, after authorizing `action` on it. Keystone's order:
/// the credential is looked up first (404 to anyone when there is none), the policy is asked
/// about its real owner (never the user the path names), then the path's user must exist.
fn load_authorized(
    node: &Core,
    ctx: &crate::token::ValidToken,
    action: &str,
    user_id: &str,
    access: &str,
) -> ApiResult<Credential> {
    let found = node.engine.read().credential(&ec2_id(access))?.filter(|c| c.cred_type == EC2);
    let c = found.ok_or_else(|| ApiError::not_found("credential", access))?;
    enforce(action, ctx, &owner_target(&c.user_id))?;
    require_user(node, user_id)?;
    Ok(c)
}

#[utoipa::path(get, path = "/v3/users/{id}/credentials/OS-EC2", operation_id = "ec2_list", tag = "credentials",
    params(("id" = String, Path, description = "The user's id.")),
    responses((status = 200, description = "The user's signature credentials.", body = s::Ec2CredentialList), E::Read))]
pub async fn list(Call(node, ctx): Call, Below(user_id, q): Below) -> ApiResult<Json<Value>> {
    enforce("identity:ec2_list_credentials", &ctx, &json!({"user_id": user_id}))?;
    ctx.refuse_secret_read()?;
    require_user(&node, &user_id)?;
    let view = node.engine.snapshot();
    let base = node.cfg.public_base();
    let mut out = Vec::new();
    for id in view.member_ids(ns::CREDENTIALS_OF_USER, &user_id)? {
        if let Some(c) = view.credential(&id)?.filter(|c| c.cred_type == EC2) {
            out.push(ec2_json(&c, &base));
        }
    }
    let path = format!("/v3/users/{user_id}/credentials/OS-EC2");
    Ok(Json(crate::http::pages::page("credentials", out, &base, &path, &q)?))
}

/// Body (not wrapped): `tenant_id` (or `project_id`), optional `access` and `secret`;
/// omitted keys are generated (UUID hex, like Keystone).
#[utoipa::path(post, path = "/v3/users/{id}/credentials/OS-EC2", operation_id = "ec2_create", tag = "credentials",
    params(("id" = String, Path, description = "The user's id.")),
    request_body(content = s::Ec2CredentialCreate, content_type = "application/json"),
    responses((status = 201, description = "The created signature credential, with its secret.", body = s::Ec2CredentialEnvelope), E::Write))]
pub async fn create(
    Call(node, ctx): Call,
    Path(user_id): Path<String>,
    JsonBody(body): JsonBody<Body<s::Ec2CredentialCreate>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    ctx.refuse_credential_creation()?;
    enforce("identity:ec2_create_credential", &ctx, &owner_target(&user_id))?;
    require_user(&node, &user_id)?;
    guard::add_authenticator(&node.engine.read(), node.fga.as_deref(), &ctx, &user_id)?;
    let b = body.object()?;
    let (tenant_id, project_id) = (s::ec2_key(&b.tenant_id, "tenant_id")?, s::ec2_key(&b.project_id, "project_id")?);
    let Some(project_id) = tenant_id.or(project_id) else {
        return Err(ApiError::bad_request("'tenant_id' is a required property."));
    };
    let access = s::ec2_key(&b.access, "access")?.unwrap_or_else(new_id);
    let secret = s::ec2_key(&b.secret, "secret")?.unwrap_or_else(new_id);
    let c = Credential {
        id: ec2_id(&access),
        user_id,
        project_id: Some(project_id),
        cred_type: EC2.into(),
        blob: json!({"access": access, "secret": secret, "trust_id": null}).to_string(),
        extra: "{}".into(),
    };
    let c: Credential = node.propose_as(Command::CreateCredential(c)).await?;
    Ok((StatusCode::CREATED, Json(json!({"credential": ec2_json(&c, &node.cfg.public_base())}))))
}

#[utoipa::path(get, path = "/v3/users/{id}/credentials/OS-EC2/{access}", operation_id = "ec2_get", tag = "credentials",
    params(("id" = String, Path, description = "The user's id."), ("access" = String, Path, description = "The plaintext access key.")),
    responses((status = 200, description = "The signature credential.", body = s::Ec2CredentialEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path((user_id, access)): Path<(String, String)>) -> ApiResult<Json<Value>> {
    ctx.refuse_secret_read()?;
    let c = load_authorized(&node, &ctx, "identity:ec2_get_credential", &user_id, &access)?;
    Ok(Json(json!({"credential": ec2_json(&c, &node.cfg.public_base())})))
}

#[utoipa::path(delete, path = "/v3/users/{id}/credentials/OS-EC2/{access}", operation_id = "ec2_delete", tag = "credentials",
    params(("id" = String, Path, description = "The user's id."), ("access" = String, Path, description = "The plaintext access key.")),
    responses((status = 204, description = "Deleted."), E::Change))]
pub async fn delete(Call(node, ctx): Call, Path((user_id, access)): Path<(String, String)>) -> ApiResult<StatusCode> {
    let c = load_authorized(&node, &ctx, "identity:ec2_delete_credential", &user_id, &access)?;
    node.propose(Command::DeleteCredential { id: c.id }).await?;
    Ok(StatusCode::NO_CONTENT)
}
