//! OS-EP-FILTER: endpoint groups (endpoints chosen by filters), and endpoints tied to
//! projects directly or through groups. A project with any such endpoint sees only those in
//! its token catalog (see `catalog::build`).

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::render;
use super::schemas as s;
use crate::context::Core;
use crate::http::body::{Body, Sent};
use crate::http::docs::{body, DocApi};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::Below;
use crate::http::fields::{new_id, Obj};
use crate::http::openapi::{errors as E, to_json};
use crate::http::pages::page;
use crate::http::JsonBody;
use crate::policy::enforce;
use crate::resource::render::project;
use crate::state::model::{Doc, DocKind, Endpoint, Ref};
use crate::state::read::CatalogReads;
use crate::state::Reader;
use crate::token::Call;

pub const GROUPS: DocApi = DocApi {
    kind: DocKind::EndpointGroup,
    member: "endpoint_group",
    collection: "endpoint_groups",
    path: |id| format!("/v3/OS-EP-FILTER/endpoint_groups/{id}"),
};
const GROUP_PROJECTS: DocApi = DocApi {
    kind: DocKind::EndpointGroupProject,
    member: "project_endpoint_group",
    collection: "project_endpoint_groups",
    path: |id| format!("/v3/OS-EP-FILTER/endpoint_groups/{}", id.replacen('/', "/projects/", 1)),
};
const PROJECT_ENDPOINTS: DocApi = DocApi {
    kind: DocKind::ProjectEndpoint,
    member: "project_endpoint",
    collection: "project_endpoints",
    path: |id| format!("/v3/OS-EP-FILTER/projects/{}", id.replacen('/', "/endpoints/", 1)),
};
const FILTER_KEYS: [&str; 3] = ["service_id", "region_id", "interface"];

/// Keystone's endpoint group schema: `name` (create), `description`, `filters` (create; a
/// non-empty object over service_id, region_id, interface); nothing else.
fn check(b: &s::EndpointGroupBody, create: bool) -> ApiResult<()> {
    if let Some(k) = b.extra.keys().next() {
        return Err(ApiError::bad_request(format!(
            "Invalid input for field 'endpoint_group': Additional properties are not allowed ('{k}' was unexpected)."
        )));
    }
    if create {
        b.name.name("name", 255)?;
    } else {
        b.name.opt_name("name", 255)?;
        let fields = [&b.id, &b.description, &b.filters, &b._links];
        if !b.name.is_present() && !fields.iter().any(|f| f.is_present()) {
            return Err(ApiError::bad_request(
                "Invalid input for field 'endpoint_group': must have at least 1 property.",
            ));
        }
    }
    if let Sent::Is(d) | Sent::Wrong(d) = &b.description {
        if !d.is_string() {
            return Err(ApiError::bad_request("Invalid input for field 'description': must be a string or null."));
        }
    }
    match &b.filters {
        Sent::Absent if !create => Ok(()),
        Sent::Is(Value::Object(f)) if !f.is_empty() => {
            if f.keys().any(|k| !FILTER_KEYS.contains(&k.as_str())) {
                return Err(ApiError::bad_request(
                    "Expecting to find service_id or region_id or interface in endpoint_group. The server could not \
                     comply with the request since it is either malformed or otherwise incorrect. The client is \
                     assumed to be in error.",
                ));
            }
            if let Some(i) = f.get("interface") {
                if !i.as_str().is_some_and(|i| ["admin", "internal", "public"].contains(&i)) {
                    return Err(ApiError::bad_request(
                        "Invalid input for field 'filters/interface': must be one of admin, internal, public.",
                    ));
                }
            }
            if f.get("service_id").is_some_and(|v| !v.is_string()) {
                return Err(ApiError::bad_request("Invalid input for field 'filters/service_id': must be a string."));
            }
            Ok(())
        }
        _ => Err(ApiError::bad_request("filters field is required and cannot be empty")),
    }
}

/// The record's body: the group's fields as sent (the record's own id and links replace
/// any sent).
fn into_obj(b: s::EndpointGroupBody) -> Obj {
    let mut o = Obj::new();
    b.name.put(&mut o, "name");
    b.description.put(&mut o, "description");
    b.filters.put(&mut o, "filters");
    o
}

/// The group as the API shows it.
fn show(node: &Core, doc: &Doc) -> s::EndpointGroup {
    let mut rest = body(doc);
    let (id, name) = (rest.remove("id"), rest.remove("name"));
    let (description, filters) = (rest.remove("description"), rest.remove("filters"));
    s::EndpointGroup { rest, id, name, description, filters, links: GROUPS.links(node, &doc.id) }
}

fn respond(node: &Core, doc: &Doc) -> Json<Value> {
    Json(to_json(&s::EndpointGroupEnvelope { endpoint_group: show(node, doc) }))
}

/// Whether an endpoint passes a group's filters.
fn passes(e: &Endpoint, filters: &Value) -> bool {
    let Some(f) = filters.as_object() else { return false };
    f.iter().all(|(k, want)| match k.as_str() {
        "service_id" => want.as_str() == Some(e.service_id.as_str()),
        "region_id" => want.as_str() == e.region_id.as_deref(),
        "interface" => want.as_str() == Some(e.interface.as_str()),
        _ => false,
    })
}

/// The endpoints a group's filters select.
fn group_endpoints(r: &impl Reader, group: &crate::state::model::Doc) -> ApiResult<Vec<Endpoint>> {
    let filters = body(group).remove("filters").unwrap_or(Value::Null);
    let all: Vec<Endpoint> = r.endpoints()?;
    Ok(all.into_iter().filter(|e| passes(e, &filters)).collect())
}

/// The ids of the endpoints tied to a project, directly or through its endpoint groups;
/// `None` when nothing is (the project then sees every endpoint).
pub fn project_endpoint_ids(r: &impl Reader, project_id: &str) -> idnode_storage::Result<Option<Vec<String>>> {
    let direct = r.child_docs(DocKind::ProjectEndpoint, project_id)?;
    let mut ids: Vec<String> = direct.iter().filter_map(|d| d.id.split_once('/').map(|(_, e)| e.to_string())).collect();
    let mut any = !direct.is_empty();
    for g in r.docs(DocKind::EndpointGroup)? {
        if r.doc(DocKind::EndpointGroupProject, &format!("{}/{project_id}", g.id))?.is_some() {
            any = true;
            let filters = body(&g).remove("filters").unwrap_or(Value::Null);
            let all: Vec<Endpoint> = r.endpoints()?;
            ids.extend(all.into_iter().filter(|e| passes(e, &filters)).map(|e| e.id));
        }
    }
    ids.sort();
    ids.dedup();
    Ok(any.then_some(ids))
}

fn endpoints_body(node: &Core, eps: Vec<Endpoint>, path: &str, q: &HashMap<String, String>) -> ApiResult<Value> {
    let base = node.cfg.public_base();
    page("endpoints", eps.iter().map(|e| to_json(&render::endpoint(e, &base))).collect(), &base, path, q)
}

/// Stores the association `id` (of `body`'s ids) unless it exists: 204 either way.
async fn tie(
    node: &Core,
    api: &DocApi,
    id: &str,
    body: [(&str, &String); 2],
    requires: Vec<Ref>,
) -> ApiResult<StatusCode> {
    if node.engine.read().doc(api.kind, id)?.is_none() {
        let body: Obj = body.into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        // A concurrent identical PUT may win the race: that is the outcome asked for.
        match api.save(node, api.record(id, body), true, requires).await {
            Err(e) if e.status == StatusCode::CONFLICT => {}
            other => {
                other?;
            }
        }
    }
    Ok(StatusCode::NO_CONTENT)
}

fn load_project(node: &Core, id: &str) -> ApiResult<crate::state::model::Project> {
    node.engine.read().project(id)?.filter(|p| !p.is_domain).ok_or_else(|| ApiError::not_found("project", id))
}

fn load_endpoint(node: &Core, id: &str) -> ApiResult<Endpoint> {
    node.engine.read().endpoint(id)?.ok_or_else(|| ApiError::not_found("endpoint", id))
}

#[utoipa::path(get, path = "/v3/OS-EP-FILTER/endpoint_groups", operation_id = "endpoint_groups_list", tag = "catalog",
    params(("name" = Option<String>, Query, description = "Only groups of this name."), ("limit" = Option<u32>, Query, description = "At most this many."),
           ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The endpoint groups.", body = s::EndpointGroupList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    enforce("identity:list_endpoint_groups", &ctx, &json!({}))?;
    let docs = node.engine.read().docs(GROUPS.kind)?;
    Ok(Json(GROUPS.list_as(&node, docs, |d| show(&node, d), &q, &["name"], "/v3/OS-EP-FILTER/endpoint_groups")?))
}

#[utoipa::path(post, path = "/v3/OS-EP-FILTER/endpoint_groups", operation_id = "endpoint_groups_create", tag = "catalog",
    request_body(content = s::EndpointGroupRequest, content_type = "application/json"),
    responses((status = 201, description = "The created group.", body = s::EndpointGroupEnvelope), E::BadRequest, E::Unauthorized, E::Forbidden, E::Internal,
              E::Unavailable))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(b): JsonBody<Body<s::EndpointGroupRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = b.object()?.endpoint_group.envelope("endpoint_group")?;
    enforce("identity:create_endpoint_group", &ctx, &json!({}))?;
    check(&b, true)?;
    let mut o = into_obj(b);
    o.entry("description").or_insert(Value::Null);
    let doc = GROUPS.save(&node, GROUPS.doc(&new_id(), o), true, vec![]).await?;
    Ok((StatusCode::CREATED, respond(&node, &doc)))
}

#[utoipa::path(get, path = "/v3/OS-EP-FILTER/endpoint_groups/{endpoint_group_id}", operation_id = "endpoint_groups_get", tag = "catalog",
    params(("endpoint_group_id" = String, Path, description = "The group's id.")),
    responses((status = 200, description = "The group (HEAD: whether it exists).", body = s::EndpointGroupEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    enforce("identity:get_endpoint_group", &ctx, &json!({}))?;
    Ok(respond(&node, &GROUPS.load(&node, &id)?))
}

#[utoipa::path(patch, path = "/v3/OS-EP-FILTER/endpoint_groups/{endpoint_group_id}", operation_id = "endpoint_groups_update", tag = "catalog",
    params(("endpoint_group_id" = String, Path, description = "The group's id.")),
    request_body(content = s::EndpointGroupRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated group.", body = s::EndpointGroupEnvelope), E::Edit))]
pub async fn update(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(b): JsonBody<Body<s::EndpointGroupRequest>>,
) -> ApiResult<Json<Value>> {
    let b = b.object()?.endpoint_group.envelope("endpoint_group")?;
    enforce("identity:update_endpoint_group", &ctx, &json!({}))?;
    check(&b, false)?;
    if b.id.value().is_some_and(|v| v.as_str() != Some(id.as_str())) {
        return Err(ApiError::bad_request("Cannot change ID."));
    }
    let doc = GROUPS.update(&node, GROUPS.load(&node, &id)?, into_obj(b)).await?;
    Ok(respond(&node, &doc))
}

#[utoipa::path(delete, path = "/v3/OS-EP-FILTER/endpoint_groups/{endpoint_group_id}", operation_id = "endpoint_groups_delete", tag = "catalog",
    params(("endpoint_group_id" = String, Path, description = "The group's id.")),
    responses((status = 204, description = "Deleted with its project associations."), E::Remove))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    enforce("identity:delete_endpoint_group", &ctx, &json!({}))?;
    GROUPS.delete(&node, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/v3/OS-EP-FILTER/endpoint_groups/{endpoint_group_id}/endpoints", operation_id = "endpoint_groups_endpoints", tag = "catalog",
    params(("endpoint_group_id" = String, Path, description = "The group's id.")),
    responses((status = 200, description = "The endpoints the group's filters select.", body = s::EndpointList), E::Read))]
pub async fn group_endpoints_list(Call(node, ctx): Call, Below(id, q): Below) -> ApiResult<Json<Value>> {
    enforce("identity:list_endpoints_associated_with_endpoint_group", &ctx, &json!({}))?;
    let group = GROUPS.load(&node, &id)?;
    let eps = group_endpoints(&node.engine.read(), &group)?;
    Ok(Json(endpoints_body(&node, eps, &format!("/v3/OS-EP-FILTER/endpoint_groups/{id}/endpoints"), &q)?))
}

#[utoipa::path(get, path = "/v3/OS-EP-FILTER/endpoint_groups/{endpoint_group_id}/projects", operation_id = "endpoint_groups_projects", tag = "catalog",
    params(("endpoint_group_id" = String, Path, description = "The group's id.")),
    responses((status = 200, description = "The projects the group is tied to.", body = crate::resource::schemas::ProjectList), E::Read))]
pub async fn group_projects_list(Call(node, ctx): Call, Below(id, q): Below) -> ApiResult<Json<Value>> {
    enforce("identity:list_projects_associated_with_endpoint_group", &ctx, &json!({}))?;
    GROUPS.load(&node, &id)?;
    let read = node.engine.read();
    let base = node.cfg.public_base();
    let mut out = Vec::new();
    for d in read.child_docs(DocKind::EndpointGroupProject, &id)? {
        if let Some(p) = d.id.split_once('/').map(|(_, p)| p).and_then(|p| read.project(p).ok().flatten()) {
            out.push(to_json(&project(&p, &base)));
        }
    }
    Ok(Json(page("projects", out, &base, &format!("/v3/OS-EP-FILTER/endpoint_groups/{id}/projects"), &q)?))
}

#[utoipa::path(get, path = "/v3/OS-EP-FILTER/endpoint_groups/{endpoint_group_id}/projects/{project_id}", operation_id = "endpoint_group_project_get", tag = "catalog",
    params(("endpoint_group_id" = String, Path, description = "The group's id."), ("project_id" = String, Path, description = "The project's id.")),
    responses((status = 200, description = "The association.", body = s::ProjectEndpointGroupEnvelope), E::Read))]
pub async fn group_project_get(
    Call(node, ctx): Call,
    Path((group_id, project_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    enforce("identity:get_endpoint_group_in_project", &ctx, &json!({}))?;
    load_project(&node, &project_id)?;
    GROUPS.load(&node, &group_id)?;
    let doc = GROUP_PROJECTS.load(&node, &format!("{group_id}/{project_id}"))?;
    let links = GROUP_PROJECTS.links(&node, &doc.id);
    let project_endpoint_group = s::ProjectEndpointGroup { endpoint_group_id: group_id, project_id, links };
    Ok(Json(to_json(&s::ProjectEndpointGroupEnvelope { project_endpoint_group })))
}

#[utoipa::path(put, path = "/v3/OS-EP-FILTER/endpoint_groups/{endpoint_group_id}/projects/{project_id}", operation_id = "endpoint_group_project_add", tag = "catalog",
    params(("endpoint_group_id" = String, Path, description = "The group's id."), ("project_id" = String, Path, description = "The project's id.")),
    responses((status = 204, description = "Tied."), E::Remove))]
pub async fn group_project_add(
    Call(node, ctx): Call,
    Path((group_id, project_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:add_endpoint_group_to_project", &ctx, &json!({}))?;
    load_project(&node, &project_id)?;
    GROUPS.load(&node, &group_id)?;
    let body = [("endpoint_group_id", &group_id), ("project_id", &project_id)];
    let requires = vec![Ref::Doc(GROUPS.kind, group_id.clone()), Ref::Project(project_id.clone())];
    tie(&node, &GROUP_PROJECTS, &format!("{group_id}/{project_id}"), body, requires).await
}

#[utoipa::path(delete, path = "/v3/OS-EP-FILTER/endpoint_groups/{endpoint_group_id}/projects/{project_id}", operation_id = "endpoint_group_project_remove", tag = "catalog",
    params(("endpoint_group_id" = String, Path, description = "The group's id."), ("project_id" = String, Path, description = "The project's id.")),
    responses((status = 204, description = "Untied."), E::Remove))]
pub async fn group_project_remove(
    Call(node, ctx): Call,
    Path((group_id, project_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:remove_endpoint_group_from_project", &ctx, &json!({}))?;
    GROUPS.load(&node, &group_id)?;
    GROUP_PROJECTS.delete(&node, &format!("{group_id}/{project_id}")).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/v3/OS-EP-FILTER/projects/{project_id}/endpoint_groups", operation_id = "project_endpoint_groups_list", tag = "catalog",
    params(("project_id" = String, Path, description = "The project's id.")),
    responses((status = 200, description = "The groups tied to the project.", body = s::EndpointGroupList), E::Read))]
pub async fn project_groups_list(Call(node, ctx): Call, Below(project_id, q): Below) -> ApiResult<Json<Value>> {
    enforce("identity:list_endpoint_groups_for_project", &ctx, &json!({}))?;
    load_project(&node, &project_id)?;
    let read = node.engine.read();
    let mut groups = Vec::new();
    for g in read.docs(GROUPS.kind)? {
        if read.doc(GROUP_PROJECTS.kind, &format!("{}/{project_id}", g.id))?.is_some() {
            groups.push(g);
        }
    }
    let path = format!("/v3/OS-EP-FILTER/projects/{project_id}/endpoint_groups");
    Ok(Json(GROUPS.list_as(&node, groups, |d| show(&node, d), &q, &[], &path)?))
}

#[utoipa::path(get, path = "/v3/OS-EP-FILTER/projects/{project_id}/endpoints", operation_id = "project_endpoints_list", tag = "catalog",
    params(("project_id" = String, Path, description = "The project's id.")),
    responses((status = 200, description = "The endpoints tied to the project, directly or through groups.", body = s::EndpointList), E::Read))]
pub async fn project_endpoints_list(Call(node, ctx): Call, Below(project_id, q): Below) -> ApiResult<Json<Value>> {
    enforce("identity:list_endpoints_for_project", &ctx, &json!({}))?;
    load_project(&node, &project_id)?;
    let read = node.engine.read();
    let ids = project_endpoint_ids(&read, &project_id)?.unwrap_or_default();
    let eps: Vec<Endpoint> = ids.iter().filter_map(|id| read.endpoint(id).ok().flatten()).collect();
    Ok(Json(endpoints_body(&node, eps, &format!("/v3/OS-EP-FILTER/projects/{project_id}/endpoints"), &q)?))
}

#[utoipa::path(get, path = "/v3/OS-EP-FILTER/endpoints/{endpoint_id}/projects", operation_id = "endpoint_projects_list", tag = "catalog",
    params(("endpoint_id" = String, Path, description = "The endpoint's id.")),
    responses((status = 200, description = "The projects the endpoint is tied to directly.", body = crate::resource::schemas::ProjectList), E::Read))]
pub async fn endpoint_projects_list(Call(node, ctx): Call, Below(endpoint_id, q): Below) -> ApiResult<Json<Value>> {
    enforce("identity:list_projects_for_endpoint", &ctx, &json!({}))?;
    load_endpoint(&node, &endpoint_id)?;
    let read = node.engine.read();
    let base = node.cfg.public_base();
    let suffix = format!("/{endpoint_id}");
    let mut out = Vec::new();
    for d in read.docs(PROJECT_ENDPOINTS.kind)? {
        if let Some(p) = d.id.strip_suffix(&suffix).and_then(|p| read.project(p).ok().flatten()) {
            out.push(to_json(&project(&p, &base)));
        }
    }
    Ok(Json(page("projects", out, &base, &format!("/v3/OS-EP-FILTER/endpoints/{endpoint_id}/projects"), &q)?))
}

#[utoipa::path(get, path = "/v3/OS-EP-FILTER/projects/{project_id}/endpoints/{endpoint_id}", operation_id = "project_endpoint_check", tag = "catalog",
    params(("project_id" = String, Path, description = "The project's id."), ("endpoint_id" = String, Path, description = "The endpoint's id.")),
    responses((status = 204, description = "The endpoint is tied to the project."), E::Read))]
pub async fn project_endpoint_check(
    Call(node, ctx): Call,
    Path((project_id, endpoint_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:check_endpoint_in_project", &ctx, &json!({}))?;
    load_endpoint(&node, &endpoint_id)?;
    load_project(&node, &project_id)?;
    PROJECT_ENDPOINTS.load(&node, &format!("{project_id}/{endpoint_id}"))?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(put, path = "/v3/OS-EP-FILTER/projects/{project_id}/endpoints/{endpoint_id}", operation_id = "project_endpoint_add", tag = "catalog",
    params(("project_id" = String, Path, description = "The project's id."), ("endpoint_id" = String, Path, description = "The endpoint's id.")),
    responses((status = 204, description = "Tied."), E::Remove))]
pub async fn project_endpoint_add(
    Call(node, ctx): Call,
    Path((project_id, endpoint_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:add_endpoint_to_project", &ctx, &json!({}))?;
    load_endpoint(&node, &endpoint_id)?;
    load_project(&node, &project_id)?;
    let body = [("project_id", &project_id), ("endpoint_id", &endpoint_id)];
    let requires = vec![Ref::Endpoint(endpoint_id.clone()), Ref::Project(project_id.clone())];
    tie(&node, &PROJECT_ENDPOINTS, &format!("{project_id}/{endpoint_id}"), body, requires).await
}

#[utoipa::path(delete, path = "/v3/OS-EP-FILTER/projects/{project_id}/endpoints/{endpoint_id}", operation_id = "project_endpoint_remove", tag = "catalog",
    params(("project_id" = String, Path, description = "The project's id."), ("endpoint_id" = String, Path, description = "The endpoint's id.")),
    responses((status = 204, description = "Untied."), E::Remove))]
pub async fn project_endpoint_remove(
    Call(node, ctx): Call,
    Path((project_id, endpoint_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:remove_endpoint_from_project", &ctx, &json!({}))?;
    PROJECT_ENDPOINTS.delete(&node, &format!("{project_id}/{endpoint_id}")).await?;
    Ok(StatusCode::NO_CONTENT)
}
