//! Project tags (`/v3/projects/{id}/tags`, Keystone's project-tag API). Tags are a field of the
//! project: each call reads the project, changes its tag list and proposes the updated project.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::Json;
use serde_json::Value;

use super::projects::target;
use super::schemas as s;
use crate::context::Core;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::openapi::{errors as E, to_json};
use crate::http::JsonBody;
use crate::policy::enforce;
use crate::state::model::Project;
use crate::state::{Command, Reader};
use crate::token::Call;

/// Keystone's limits: at most 80 tags, each 1 to 255 characters without `/` or `,`.
pub const MAX_TAGS: usize = 80;

/// Checks a tag list as Keystone does and drops repeats (first occurrence kept).
pub fn checked_tags(tags: Vec<String>) -> ApiResult<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for t in tags {
        if t.is_empty() || t.chars().count() > 255 || t.contains('/') || t.contains(',') {
            return Err(ApiError::bad_request(format!(
                "Invalid input for field 'tags': {t:?} must be 1 to 255 characters without '/' or ','."
            )));
        }
        if !out.contains(&t) {
            out.push(t);
        }
    }
    if out.len() > MAX_TAGS {
        return Err(ApiError::bad_request(format!("Invalid input for field 'tags': at most {MAX_TAGS} tags.")));
    }
    Ok(out)
}

fn load(node: &Core, id: &str) -> ApiResult<Project> {
    node.engine.read().project(id)?.filter(|p| !p.is_domain).ok_or_else(|| ApiError::not_found("project", id))
}

async fn store(node: &Core, mut p: Project, tags: Vec<String>) -> ApiResult<Vec<String>> {
    p.tags = checked_tags(tags)?;
    Ok(node.propose_as::<Project>(Command::UpdateProject(p)).await?.tags)
}

#[utoipa::path(get, path = "/v3/projects/{id}/tags", operation_id = "project_tags_list", tag = "projects",
    params(("id" = String, Path, description = "The project's id.")),
    responses((status = 200, description = "The project's tags: `{\"tags\": [...]}`.", body = s::TagList), E::Read))]
pub async fn list(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let p = load(&node, &id)?;
    enforce("identity:list_project_tags", &ctx, &target(&p))?;
    Ok(Json(to_json(&s::TagList { tags: p.tags })))
}

#[utoipa::path(put, path = "/v3/projects/{id}/tags", operation_id = "project_tags_replace", tag = "projects",
    params(("id" = String, Path, description = "The project's id.")),
    request_body(content = s::ProjectTags, description = "The new tag list.", content_type = "application/json"),
    responses((status = 200, description = "The project's new tags: `{\"tags\": [...]}`.", body = s::TagList), E::BadRequest, E::Unauthorized, E::Forbidden,
              E::NotFound, E::Internal))]
pub async fn replace(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::ProjectTags>>,
) -> ApiResult<Json<Value>> {
    let p = load(&node, &id)?;
    enforce("identity:update_project_tags", &ctx, &target(&p))?;
    let b = body.object()?;
    let tags = b.tags.strings("tags")?.ok_or_else(|| ApiError::bad_request("'tags' is a required property."))?;
    Ok(Json(to_json(&s::TagList { tags: store(&node, p, tags).await? })))
}

#[utoipa::path(delete, path = "/v3/projects/{id}/tags", operation_id = "project_tags_clear", tag = "projects",
    params(("id" = String, Path, description = "The project's id.")),
    responses((status = 204, description = "Every tag removed."), E::Read))]
pub async fn clear(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let p = load(&node, &id)?;
    enforce("identity:delete_project_tags", &ctx, &target(&p))?;
    store(&node, p, Vec::new()).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/v3/projects/{id}/tags/{tag}", operation_id = "project_tag_check", tag = "projects",
    params(("id" = String, Path, description = "The project's id."), ("tag" = String, Path, description = "The tag.")),
    responses((status = 204, description = "The project carries the tag."), E::Read))]
pub async fn check(Call(node, ctx): Call, Path((id, tag)): Path<(String, String)>) -> ApiResult<StatusCode> {
    let p = load(&node, &id)?;
    enforce("identity:get_project_tag", &ctx, &target(&p))?;
    match p.tags.contains(&tag) {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(ApiError::not_found("tag", &tag)),
    }
}

#[utoipa::path(put, path = "/v3/projects/{id}/tags/{tag}", operation_id = "project_tag_add", tag = "projects",
    params(("id" = String, Path, description = "The project's id."), ("tag" = String, Path, description = "The tag.")),
    responses((status = 201, description = "The tag is on the project (adding a present tag changes nothing); no body, as the OpenStack tags guideline says."),
              E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound, E::Internal))]
pub async fn add(Call(node, ctx): Call, Path((id, tag)): Path<(String, String)>) -> ApiResult<StatusCode> {
    let p = load(&node, &id)?;
    enforce("identity:create_project_tag", &ctx, &target(&p))?;
    let mut tags = p.tags.clone();
    tags.push(tag);
    store(&node, p, tags).await?;
    Ok(StatusCode::CREATED)
}

#[utoipa::path(delete, path = "/v3/projects/{id}/tags/{tag}", operation_id = "project_tag_delete", tag = "projects",
    params(("id" = String, Path, description = "The project's id."), ("tag" = String, Path, description = "The tag.")),
    responses((status = 204, description = "Removed."), E::Read))]
pub async fn delete(Call(node, ctx): Call, Path((id, tag)): Path<(String, String)>) -> ApiResult<StatusCode> {
    let p = load(&node, &id)?;
    enforce("identity:delete_project_tag", &ctx, &target(&p))?;
    if !p.tags.contains(&tag) {
        return Err(ApiError::not_found("tag", &tag));
    }
    let tags = p.tags.iter().filter(|t| **t != tag).cloned().collect();
    store(&node, p, tags).await?;
    Ok(StatusCode::NO_CONTENT)
}
