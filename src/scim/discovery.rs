//! The discovery documents (RFC 7644 §4, RFC 7643 §5–7; api-shapes §11.8), served without
//! credentials and advertising exactly what this service does: PATCH and ETags yes; bulk,
//! sorting and password change no; filtering with at most 200 results a page, in the restricted
//! grammar the extension `FILTER_GRAMMAR_URN` spells out (on request). The schemas
//! list only the attributes a realm stores (`id`, `externalId` and `meta` are the common
//! attributes of RFC 7643 §3.1; `externalId` is declared anyway, as the realm requires it of
//! users). `/Bulk`, `/Me` and `POST /.search` answer 501.

use std::sync::Arc;

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use super::filter;
use super::resource::MAX_COUNT;
use super::schemas as S;
use super::wire::{not_implemented, reply, ScimError, ScimResult, GROUP_URN, LIST_URN, USER_URN};
use crate::context::Core;

pub const SPC_URN: &str = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig";
const RESOURCE_TYPE_URN: &str = "urn:ietf:params:scim:schemas:core:2.0:ResourceType";
const SCHEMA_URN: &str = "urn:ietf:params:scim:schemas:core:2.0:Schema";
/// Our extension of the ServiceProviderConfig (RFC 7643 §3.3: a resource names its extension
/// schemas in `schemas` and carries each under its URN): the restricted filter grammar, which
/// the core `filter` object has no words for. Its attributes are `returned: "request"`
/// (RFC 7643 §7): the document carries it when `attributes` names it, because strict clients
/// (scim2-client) refuse a configuration with any schema they do not know.
pub const FILTER_GRAMMAR_URN: &str = "urn:idnode:params:scim:schemas:extension:filter:1.0:ServiceProviderConfig";

fn root(node: &Core, domain_id: &str) -> String {
    format!("{}/SCIM/v2/{domain_id}", node.cfg.public_base())
}

/// A simple (non-complex) attribute definition.
fn attr(name: &str, kind: &str, description: &str, required: bool, unique: bool) -> Value {
    json!({"name": name, "type": kind, "multiValued": false, "description": description, "required": required,
           "caseExact": false, "mutability": "readWrite", "returned": "default",
           "uniqueness": if unique { "server" } else { "none" }})
}

/// `externalId` (a common attribute, RFC 7643 §3.1) declared with the realm's rules: the
/// directory's identifier, unique in the domain, required for users (their id derives from it).
fn external_id(required: bool) -> Value {
    let mut a =
        attr("externalId", "string", "The provisioning directory's identifier; unique in the domain.", required, true);
    a["caseExact"] = json!(true);
    a
}

fn user_schema(root: &str) -> Value {
    let mut name = attr("name", "complex", "The user's name; only its given and family parts are kept.", false, false);
    name["subAttributes"] = json!([
        attr("givenName", "string", "Given name.", false, false),
        attr("familyName", "string", "Family name.", false, false),
    ]);
    let mut emails =
        attr("emails", "complex", "Email addresses; only the primary one (else the first) is kept.", false, false);
    emails["multiValued"] = json!(true);
    emails["subAttributes"] = json!([
        attr("value", "string", "The address.", false, false),
        attr("primary", "boolean", "Whether this is the primary address.", false, false),
    ]);
    json!({"schemas": [SCHEMA_URN], "id": USER_URN, "name": "User", "description": "A user of the realm's domain.",
           "attributes": [
               external_id(true),
               attr("userName", "string", "Unique in the domain, case-insensitively.", true, true),
               name,
               attr("displayName", "string", "The name to display.", false, false),
               emails,
               attr("active", "boolean", "Whether the user may sign in; a user always has one (true when a write omits it).", true, false),
           ],
           "meta": {"resourceType": "Schema", "location": format!("{root}/Schemas/{USER_URN}")}})
}

fn group_schema(root: &str) -> Value {
    let mut members =
        attr("members", "complex", "Users of the same realm; at most 1,000 named per request.", false, false);
    members["multiValued"] = json!(true);
    let mut value = attr("value", "string", "The member's user id.", false, false);
    value["mutability"] = json!("immutable");
    value["caseExact"] = json!(true);
    let mut reference = attr("$ref", "reference", "The member's URI.", false, false);
    reference["referenceTypes"] = json!(["User"]);
    reference["mutability"] = json!("immutable");
    reference["caseExact"] = json!(true);
    let mut kind = attr("type", "string", "The member's resource type.", false, false);
    kind["canonicalValues"] = json!(["User"]);
    kind["mutability"] = json!("immutable");
    members["subAttributes"] = json!([value, reference, kind]);
    json!({"schemas": [SCHEMA_URN], "id": GROUP_URN, "name": "Group", "description": "A group of the realm's domain.",
           "attributes": [external_id(false), attr("displayName", "string", "Unique in the domain, case-insensitively.", true, true), members],
           "meta": {"resourceType": "Schema", "location": format!("{root}/Schemas/{GROUP_URN}")}})
}

/// The schema of [`FILTER_GRAMMAR_URN`], so a client that reads every advertised schema finds it.
fn filter_grammar_schema(root: &str) -> Value {
    let fixed = |name: &str, kind: &str, description: &str, multi: bool| {
        let mut a = attr(name, kind, description, true, false);
        a["mutability"] = json!("readOnly");
        a["multiValued"] = json!(multi);
        a["returned"] = json!("request");
        a
    };
    let mut attributes =
        fixed("attributes", "complex", "Each attribute a resource type can be filtered on, with its operators.", true);
    attributes["subAttributes"] = json!([
        fixed("resourceType", "string", "User or Group.", false),
        fixed("attribute", "string", "The attribute's name.", false),
        fixed("operators", "string", "The comparison operators it takes.", true),
    ]);
    let mut rules = fixed("rules", "complex", "The grammar's rules, by the name an invalidFilter detail gives.", true);
    rules["subAttributes"] = json!([
        fixed("name", "string", "The rule's name.", false),
        fixed("description", "string", "What it requires.", false),
    ]);
    json!({"schemas": [SCHEMA_URN], "id": FILTER_GRAMMAR_URN, "name": "FilterGrammar",
           "description": "The restricted filter grammar this service accepts (a subset of RFC 7644 §3.4.2.2).",
           "attributes": [
               fixed("maxLength", "integer", "Longest filter, in bytes.", false),
               fixed("maxTerms", "integer", "Most terms in one filter.", false),
               fixed("logicalOperators", "string", "The logical operators that join terms.", true),
               fixed("mixedLogicalOperators", "boolean", "Whether and and or may appear in one filter.", false),
               fixed("grouping", "boolean", "Whether parentheses are accepted.", false),
               fixed("not", "boolean", "Whether not is accepted.", false),
               fixed("complexAttributeFilters", "boolean", "Whether attr[filter] is accepted.", false),
               attributes,
               rules,
           ],
           "meta": {"resourceType": "Schema", "location": format!("{root}/Schemas/{FILTER_GRAMMAR_URN}")}})
}

fn resource_type_doc(root: &str, name: &str, schema: &str) -> Value {
    json!({"schemas": [RESOURCE_TYPE_URN], "id": name, "name": name, "endpoint": format!("/{name}s"),
           "description": format!("{name}s of the realm"), "schema": schema, "schemaExtensions": [],
           "meta": {"resourceType": "ResourceType", "location": format!("{root}/ResourceTypes/{name}")}})
}

fn list_of(items: Vec<Value>) -> Response {
    let n = items.len() as u64;
    let body = json!(S::ListResponse {
        schemas: vec![LIST_URN.into()],
        total_results: n,
        start_index: 1,
        items_per_page: n,
        resources: items,
    });
    reply(StatusCode::OK, &body, None, None)
}

#[utoipa::path(get, path = "/SCIM/v2/{domain_id}/ServiceProviderConfig", operation_id = "scim_service_provider_config", tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain."),
           ("attributes" = Option<String>, Query, description = "Naming `urn:idnode:params:scim:schemas:extension:filter:1.0:ServiceProviderConfig` answers the filter grammar extension instead of the core document.")),
    responses((status = 200, description = "What this service supports (RFC 7643 §5).", body = Object, content_type = "application/scim+json")),
    security(()))]
pub async fn service_provider_config(
    State(node): State<Arc<Core>>,
    Path(domain_id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let root = root(&node, &domain_id);
    let meta = json!({"resourceType": "ServiceProviderConfig", "location": format!("{root}/ServiceProviderConfig")});
    if asks_for_grammar(q.get("attributes")) {
        let body =
            json!({"schemas": [SPC_URN, FILTER_GRAMMAR_URN], FILTER_GRAMMAR_URN: filter::grammar(), "meta": meta});
        return reply(StatusCode::OK, &body, None, None);
    }
    let body = json!({
        "schemas": [SPC_URN],
        "patch": {"supported": true},
        "bulk": {"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": true, "maxResults": MAX_COUNT},
        "changePassword": {"supported": false},
        "sort": {"supported": false},
        "etag": {"supported": true},
        "authenticationSchemes": [{"type": "oauthbearertoken", "name": "API key",
            "description": "An API key (kscim_…) of the realm's provider, as Authorization: Bearer.", "primary": true}],
        "meta": meta,
    });
    reply(StatusCode::OK, &body, None, None)
}

/// Whether `attributes` (RFC 7644 §3.9, comma-separated) names the grammar extension or one
/// of its attributes; the URN is compared case-insensitively, as SCIM's attribute names are.
fn asks_for_grammar(attributes: Option<&String>) -> bool {
    let urn = FILTER_GRAMMAR_URN.to_ascii_lowercase();
    attributes.is_some_and(|list| {
        list.split(',').map(|a| a.trim().to_ascii_lowercase()).any(|a| a == urn || a.starts_with(&format!("{urn}:")))
    })
}

#[utoipa::path(get, path = "/SCIM/v2/{domain_id}/Schemas", operation_id = "scim_schemas", tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain.")),
    responses((status = 200, description = "The User and Group schemas (RFC 7643 §7), and the filter grammar's.", body = S::ListResponse, content_type = "application/scim+json")),
    security(()))]
pub async fn schemas(State(node): State<Arc<Core>>, Path(domain_id): Path<String>) -> Response {
    let root = root(&node, &domain_id);
    list_of(vec![user_schema(&root), group_schema(&root), filter_grammar_schema(&root)])
}

#[utoipa::path(get, path = "/SCIM/v2/{domain_id}/Schemas/{id}", operation_id = "scim_schema", tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain."), ("id" = String, Path, description = "A schema URN.")),
    responses((status = 200, description = "One schema.", body = Object, content_type = "application/scim+json"), S::NotFound),
    security(()))]
pub async fn schema(
    State(node): State<Arc<Core>>,
    Path((domain_id, id)): Path<(String, String)>,
) -> ScimResult<Response> {
    let root = root(&node, &domain_id);
    let doc = match id.as_str() {
        USER_URN => user_schema(&root),
        GROUP_URN => group_schema(&root),
        FILTER_GRAMMAR_URN => filter_grammar_schema(&root),
        _ => return Err(ScimError::not_found("schema", &id)),
    };
    Ok(reply(StatusCode::OK, &doc, None, None))
}

#[utoipa::path(get, path = "/SCIM/v2/{domain_id}/ResourceTypes", operation_id = "scim_resource_types", tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain.")),
    responses((status = 200, description = "User and Group (RFC 7643 §6).", body = S::ListResponse, content_type = "application/scim+json")),
    security(()))]
pub async fn resource_types(State(node): State<Arc<Core>>, Path(domain_id): Path<String>) -> Response {
    let root = root(&node, &domain_id);
    list_of(vec![resource_type_doc(&root, "User", USER_URN), resource_type_doc(&root, "Group", GROUP_URN)])
}

#[utoipa::path(get, path = "/SCIM/v2/{domain_id}/ResourceTypes/{id}", operation_id = "scim_resource_type", tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain."), ("id" = String, Path, description = "User or Group.")),
    responses((status = 200, description = "One resource type.", body = Object, content_type = "application/scim+json"), S::NotFound),
    security(()))]
pub async fn resource_type(
    State(node): State<Arc<Core>>,
    Path((domain_id, id)): Path<(String, String)>,
) -> ScimResult<Response> {
    let root = root(&node, &domain_id);
    let doc = match id.as_str() {
        "User" => resource_type_doc(&root, "User", USER_URN),
        "Group" => resource_type_doc(&root, "Group", GROUP_URN),
        _ => return Err(ScimError::not_found("resource type", &id)),
    };
    Ok(reply(StatusCode::OK, &doc, None, None))
}

#[utoipa::path(post, path = "/SCIM/v2/{domain_id}/Bulk", operation_id = "scim_bulk", tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain.")),
    responses(S::NotImplemented),
    security(()))]
pub async fn bulk(Path(_domain_id): Path<String>) -> ScimError {
    not_implemented("/Bulk")
}

#[utoipa::path(post, path = "/SCIM/v2/{domain_id}/.search", operation_id = "scim_search", tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain.")),
    responses(S::NotImplemented),
    security(()))]
pub async fn search(Path(_domain_id): Path<String>) -> ScimError {
    not_implemented("Searching with POST /.search")
}

/// `/Me` under each method RFC 7644 §3.11 gives it, each its own operation.
macro_rules! me {
    ($($name:ident = $method:ident;)*) => {$(
        #[utoipa::path($method, path = "/SCIM/v2/{domain_id}/Me", tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain.")),
    responses(S::NotImplemented),
    security(()))]
        pub async fn $name(Path(_domain_id): Path<String>) -> ScimError {
            not_implemented("/Me")
        }
    )*};
}

me! {
    scim_me_get = get;
    scim_me_post = post;
    scim_me_put = put;
    scim_me_patch = patch;
    scim_me_delete = delete;
}
