//! The client registry of a domain's authorization server,
//! `/v4/oauth2/{domain_id}/clients`: bodies in an `oauth2_client` envelope; the secret of a
//! confidential client is drawn by the server, returned by create and rotate-secret only,
//! and stored as a keyed hash. Policy `identity/oauth2_client/*`: admin, or manager of the
//! domain.

use std::collections::{BTreeMap, HashMap};

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use super::client_auth;
use super::schemas as s;
use super::scopes::{self, GRANT_TYPES};
use super::secrets::{keyed_hash, new_secret, CLIENT_SECRET};
use crate::clock::now_secs;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::openapi::errors as E;
use crate::http::pages::page;
use crate::http::JsonBody;
use crate::policy::enforce;
use crate::state::oauth2::{Client, OAuth2Command};
use crate::state::read::OAuth2Reads;
use crate::state::{Command, Reader};
use crate::token::Call;
use crate::token::ValidToken;

/// Template variables a claims template may use.
pub const TEMPLATE_VARS: &[&str] = &["user.id", "user.name", "user.email", "user.domain_id"];
/// Claims a template may not set: the token's own.
const RESERVED_CLAIMS: &[&str] = &[
    "iss",
    "sub",
    "aud",
    "exp",
    "iat",
    "nbf",
    "jti",
    "auth_time",
    "nonce",
    "amr",
    "at_hash",
    "azp",
    "sid",
    "scope",
    "client_id",
    "token_use",
    "platform_context",
    "delegation_context",
    "email",
    "email_verified",
    "name",
    "preferred_username",
    "updated_at",
];

/// A client as written by create (absent fields take defaults) and PATCH (absent fields are
/// kept; `null` clears `description` and `provider_id`).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientBody {
    pub name: Option<String>,
    #[serde(default, deserialize_with = "crate::http::fields::present")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::http::fields::present")]
    #[schema(value_type = Option<String>)]
    pub provider_id: Option<Option<String>>,
    /// False for a public client (no secret: a browser or device application).
    pub confidential: Option<bool>,
    /// `client_secret_basic` or `client_secret_post` (confidential), `none` (public).
    pub token_endpoint_auth_method: Option<String>,
    pub grant_types: Option<Vec<String>>,
    /// Absolute `https` URIs; plain `http` only for loopback hosts.
    pub redirect_uris: Option<Vec<String>>,
    pub require_pkce: Option<bool>,
    pub allowed_scopes: Option<Vec<String>>,
    /// Output claim -> template such as `${user.email}`.
    pub claims_template: Option<BTreeMap<String, String>>,
    /// Skips the consent page.
    pub pre_authorized: Option<bool>,
    pub enabled: Option<bool>,
    /// Server-chosen; accepted only when equal to the path's (PATCH) or absent.
    pub client_id: Option<String>,
    pub domain_id: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientEnvelope {
    pub oauth2_client: ClientBody,
}

fn bad(field: &str, why: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("Invalid input for field/attribute {field}: {why}"))
}

fn text(field: &str, v: &str, max: usize) -> ApiResult<String> {
    if v.chars().count() > max {
        return Err(bad(field, format!("at most {max} characters.")));
    }
    Ok(v.to_string())
}

/// `https://…`, or `http://` to a loopback host (native apps, RFC 8252 §7.3); no fragment.
pub fn valid_redirect_uri(uri: &str) -> bool {
    let Ok(u) = url::Url::parse(uri) else { return false };
    if u.fragment().is_some() || u.cannot_be_a_base() {
        return false;
    }
    match u.scheme() {
        "https" => u.host().is_some(),
        "http" => match u.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            None => false,
        },
        _ => false,
    }
}

fn grant_types(v: Vec<String>) -> ApiResult<Vec<String>> {
    if v.is_empty() {
        return Err(bad("grant_types", "at least one grant type is required."));
    }
    let mut out: Vec<String> = Vec::new();
    for g in v {
        let g = if g == "device_code" { scopes::DEVICE_CODE.to_string() } else { g };
        if !GRANT_TYPES.contains(&g.as_str()) {
            return Err(bad("grant_types", format!("unknown grant type {g:?}; known: {}.", GRANT_TYPES.join(", "))));
        }
        if !out.contains(&g) {
            out.push(g);
        }
    }
    Ok(out)
}

fn claims_template(t: BTreeMap<String, String>) -> ApiResult<BTreeMap<String, String>> {
    if t.len() > 32 {
        return Err(bad("claims_template", "at most 32 claims."));
    }
    for (claim, template) in &t {
        if claim.is_empty() || claim.len() > 64 || RESERVED_CLAIMS.contains(&claim.as_str()) {
            return Err(bad("claims_template", format!("{claim:?} cannot be set by a template.")));
        }
        if template.len() > 512 {
            return Err(bad("claims_template", format!("the template of {claim} is longer than 512 bytes.")));
        }
        let mut rest = template.as_str();
        while let Some(start) = rest.find("${") {
            let Some(end) = rest[start..].find('}') else {
                return Err(bad("claims_template", format!("unclosed ${{ in the template of {claim}.")));
            };
            let var = &rest[start + 2..start + end];
            if !TEMPLATE_VARS.contains(&var) {
                return Err(bad(
                    "claims_template",
                    format!(
                        "unknown variable ${{{var}}} in the template of {claim}; known: {}.",
                        TEMPLATE_VARS.join(", ")
                    ),
                ));
            }
            rest = &rest[start + end + 1..];
        }
    }
    Ok(t)
}

/// Applies `b` over `c` (a fresh client with defaults on create) and checks the whole.
fn merge(mut c: Client, b: ClientBody, create: bool) -> ApiResult<Client> {
    if b.client_id.as_ref().is_some_and(|id| create || *id != c.client_id) {
        return Err(bad("client_id", "the server chooses client ids; it cannot be set or changed."));
    }
    if b.domain_id.as_ref().is_some_and(|d| *d != c.domain_id) {
        return Err(bad("domain_id", "a client belongs to the domain of its path."));
    }
    if let Some(conf) = b.confidential {
        if !create && conf != c.confidential {
            return Err(bad("confidential", "cannot be changed; register a new client."));
        }
        c.confidential = conf;
    }
    if let Some(n) = b.name {
        c.name = text("name", &n, 255)?;
    }
    if let Some(d) = b.description {
        c.description = d.map(|d| text("description", &d, 1024)).transpose()?;
    }
    if let Some(p) = b.provider_id {
        c.provider_id = p.map(|p| text("provider_id", &p, 255)).transpose()?;
    }
    if let Some(g) = b.grant_types {
        c.grant_types = grant_types(g)?;
    }
    if let Some(uris) = b.redirect_uris {
        if uris.len() > 32 {
            return Err(bad("redirect_uris", "at most 32 URIs."));
        }
        if let Some(u) = uris.iter().find(|u| u.len() > 2048 || !valid_redirect_uri(u)) {
            return Err(bad(
                "redirect_uris",
                format!("{u:?} is not an absolute https URI without fragment (plain http only for loopback hosts)."),
            ));
        }
        c.redirect_uris = uris;
    }
    if let Some(p) = b.require_pkce {
        c.require_pkce = p;
    }
    if let Some(s) = b.allowed_scopes {
        if let Some(unknown) = s.iter().find(|s| !scopes::KNOWN.contains(&s.as_str())) {
            return Err(bad(
                "allowed_scopes",
                format!("unknown scope {unknown:?}; known: {}.", scopes::KNOWN.join(", ")),
            ));
        }
        let mut out: Vec<String> = Vec::new();
        for x in s {
            if !out.contains(&x) {
                out.push(x);
            }
        }
        c.allowed_scopes = out;
    }
    if let Some(t) = b.claims_template {
        c.claims_template = claims_template(t)?;
    }
    if let Some(p) = b.pre_authorized {
        c.pre_authorized = p;
    }
    if let Some(e) = b.enabled {
        c.enabled = e;
    }
    match b.token_endpoint_auth_method {
        Some(m) => c.token_endpoint_auth_method = m,
        None if create => {
            c.token_endpoint_auth_method = if c.confidential { "client_secret_basic" } else { "none" }.to_string()
        }
        None => {}
    }
    let method_ok = match c.token_endpoint_auth_method.as_str() {
        "client_secret_basic" | "client_secret_post" => c.confidential,
        "none" => !c.confidential,
        _ => false,
    };
    if !method_ok {
        return Err(bad(
            "token_endpoint_auth_method",
            "client_secret_basic or client_secret_post for a confidential client, none for a public one.",
        ));
    }
    if !c.confidential {
        if let Some(g) = c.grant_types.iter().find(|g| *g == scopes::CLIENT_CREDENTIALS || *g == scopes::TOKEN_EXCHANGE)
        {
            return Err(bad("grant_types", format!("a public client cannot use {g}: it has no secret to prove.")));
        }
    }
    if c.allows_grant(scopes::AUTHORIZATION_CODE) && c.redirect_uris.is_empty() {
        return Err(bad("redirect_uris", "the authorization_code grant needs at least one redirect URI."));
    }
    Ok(c)
}

/// The client as the API shows it (never its secret or hash).
pub fn render(node: &Core, c: &Client) -> s::Client {
    s::Client {
        id: c.client_id.clone(),
        client_id: c.client_id.clone(),
        domain_id: c.domain_id.clone(),
        name: c.name.clone(),
        description: c.description.clone(),
        provider_id: c.provider_id.clone(),
        confidential: c.confidential,
        token_endpoint_auth_method: c.token_endpoint_auth_method.clone(),
        grant_types: c.grant_types.clone(),
        redirect_uris: c.redirect_uris.clone(),
        require_pkce: c.require_pkce,
        allowed_scopes: c.allowed_scopes.clone(),
        claims_template: c.claims_template.clone(),
        pre_authorized: c.pre_authorized,
        enabled: c.enabled,
        created_at: c.created_at,
        updated_at: c.updated_at,
        links: s::Link {
            self_: format!("{}/v4/oauth2/{}/clients/{}", node.cfg.public_base(), c.domain_id, c.client_id),
        },
    }
}

/// What a confined token may not do here (`token::confined`): a client's secret is a credential.
const CLIENT_SECRETS: &str = "create OAuth2 clients or their secrets";

fn authorize(action: &str, ctx: &ValidToken, domain_id: &str) -> ApiResult<()> {
    enforce(action, ctx, &json!({"oauth2_client": {"domain_id": domain_id}}))
}

fn domain_exists(node: &Core, domain_id: &str) -> ApiResult<()> {
    match node.engine.read().domain(domain_id)? {
        Some(_) => Ok(()),
        None => Err(ApiError::not_found("domain", domain_id)),
    }
}

fn load(node: &Core, domain_id: &str, client_id: &str) -> ApiResult<Client> {
    client_auth::load(node, domain_id, client_id)
        .map_err(|e| ApiError::internal(e.description))?
        .ok_or_else(|| ApiError::not_found("oauth2_client", client_id))
}

async fn save(node: &Core, client: Client, create: bool) -> ApiResult<Client> {
    // Every node knows the client (and its new secret) before its creator does.
    super::propose::propose_everywhere(node, OAuth2Command::PutClient { client, create }).await
}

/// Stores `client`, computed from `expected`, only if the client is still `expected`: a 409
/// when another update or rotation came first (retrying reads the newer record).
pub(super) async fn replace(node: &Core, expected: Client, client: Client) -> ApiResult<Client> {
    let cmd = OAuth2Command::ReplaceClient { expected: Box::new(expected), client: Box::new(client) };
    super::propose::propose_everywhere(node, cmd).await
}

#[utoipa::path(get, path = "/v4/oauth2/{domain_id}/clients", operation_id = "oauth2_clients_list", tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain whose authorization server it is."),
           ("limit" = Option<u32>, Query, description = "At most this many."), ("marker" = Option<String>, Query, description = "Start after this client id.")),
    responses((status = 200, description = "The domain's clients (never their secrets).", body = s::ClientList), E::BadRequest, E::Unauthorized, E::Forbidden,
              E::NotFound, E::Internal))]
pub async fn list(
    Call(node, ctx): Call,
    Path(domain_id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<Value>> {
    authorize("identity/oauth2_client/list", &ctx, &domain_id)?;
    domain_exists(&node, &domain_id)?;
    let clients: Vec<Client> = node.engine.read().oauth2_clients(&domain_id)?;
    let items = clients
        .iter()
        .map(|c| serde_json::to_value(render(&node, c)).map_err(ApiError::internal))
        .collect::<ApiResult<Vec<Value>>>()?;
    let base = node.cfg.public_base();
    Ok(Json(page("oauth2_clients", items, &base, &format!("/v4/oauth2/{domain_id}/clients"), &q)?))
}

#[utoipa::path(post, path = "/v4/oauth2/{domain_id}/clients", operation_id = "oauth2_clients_create", tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain whose authorization server it is.")),
    request_body(content = ClientEnvelope, content_type = "application/json"),
    responses((status = 201, description = "The client, with its secret when confidential (shown only here and by rotate-secret).", body = s::ClientCreated),
              E::Edit))]
pub async fn create(
    Call(node, ctx): Call,
    Path(domain_id): Path<String>,
    JsonBody(b): JsonBody<ClientEnvelope>,
) -> ApiResult<(StatusCode, Json<s::ClientCreated>)> {
    authorize("identity/oauth2_client/create", &ctx, &domain_id)?;
    ctx.refuse_confined(CLIENT_SECRETS)?;
    domain_exists(&node, &domain_id)?;
    let at = now_secs();
    let fresh = Client {
        client_id: uuid::Uuid::new_v4().simple().to_string(),
        domain_id: domain_id.clone(),
        name: String::new(),
        description: None,
        provider_id: None,
        confidential: true,
        token_endpoint_auth_method: String::new(),
        grant_types: Vec::new(),
        redirect_uris: Vec::new(),
        require_pkce: true,
        allowed_scopes: vec![scopes::OPENID.to_string(), "profile".to_string(), "email".to_string()],
        claims_template: BTreeMap::new(),
        pre_authorized: false,
        enabled: true,
        secret_hash: None,
        created_at: at,
        updated_at: at,
    };
    if b.oauth2_client.grant_types.is_none() {
        return Err(bad("grant_types", "required."));
    }
    let mut client = merge(fresh, b.oauth2_client, true)?;
    let secret = client.confidential.then(new_secret);
    if let Some(s) = &secret {
        client.secret_hash = Some(keyed_hash(&node, CLIENT_SECRET, s).map_err(|e| ApiError::internal(e.description))?);
    }
    let saved = save(&node, client, true).await?;
    Ok((StatusCode::CREATED, Json(s::ClientCreated { oauth2_client: render(&node, &saved), client_secret: secret })))
}

#[utoipa::path(get, path = "/v4/oauth2/{domain_id}/clients/{client_id}", operation_id = "oauth2_clients_get", tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain."), ("client_id" = String, Path, description = "The client.")),
    responses((status = 200, description = "The client.", body = s::ClientOne), E::Read))]
pub async fn get(
    Call(node, ctx): Call,
    Path((domain_id, client_id)): Path<(String, String)>,
) -> ApiResult<Json<s::ClientOne>> {
    authorize("identity/oauth2_client/show", &ctx, &domain_id)?;
    Ok(Json(s::ClientOne { oauth2_client: render(&node, &load(&node, &domain_id, &client_id)?) }))
}

#[utoipa::path(patch, path = "/v4/oauth2/{domain_id}/clients/{client_id}", operation_id = "oauth2_clients_update", tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain."), ("client_id" = String, Path, description = "The client.")),
    request_body(content = ClientEnvelope, content_type = "application/json"),
    responses((status = 200, description = "The updated client.", body = s::ClientOne), E::Change))]
pub async fn update(
    Call(node, ctx): Call,
    Path((domain_id, client_id)): Path<(String, String)>,
    JsonBody(b): JsonBody<ClientEnvelope>,
) -> ApiResult<Json<s::ClientOne>> {
    authorize("identity/oauth2_client/update", &ctx, &domain_id)?;
    let before = load(&node, &domain_id, &client_id)?;
    let mut client = merge(before.clone(), b.oauth2_client, false)?;
    client.updated_at = now_secs();
    let saved = replace(&node, before, client).await?;
    Ok(Json(s::ClientOne { oauth2_client: render(&node, &saved) }))
}

#[utoipa::path(delete, path = "/v4/oauth2/{domain_id}/clients/{client_id}", operation_id = "oauth2_clients_delete", tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain."), ("client_id" = String, Path, description = "The client.")),
    responses((status = 204, description = "Deleted; its refresh tokens stop working."), E::Remove))]
pub async fn delete(
    Call(node, ctx): Call,
    Path((domain_id, client_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    authorize("identity/oauth2_client/delete", &ctx, &domain_id)?;
    node.propose(Command::OAuth2(OAuth2Command::DeleteClient { domain_id, client_id })).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/v4/oauth2/{domain_id}/clients/{client_id}/rotate-secret", operation_id = "oauth2_clients_rotate_secret", tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain."), ("client_id" = String, Path, description = "The client.")),
    responses((status = 200, description = "The new secret; the old one stops working at once.", body = s::ClientSecret), E::Change))]
pub async fn rotate_secret(
    Call(node, ctx): Call,
    Path((domain_id, client_id)): Path<(String, String)>,
) -> ApiResult<Json<s::ClientSecret>> {
    authorize("identity/oauth2_client/update", &ctx, &domain_id)?;
    ctx.refuse_confined(CLIENT_SECRETS)?;
    let before = load(&node, &domain_id, &client_id)?;
    if !before.confidential {
        return Err(bad("confidential", "a public client has no secret."));
    }
    let secret = new_secret();
    let mut client = before.clone();
    client.secret_hash =
        Some(keyed_hash(&node, CLIENT_SECRET, &secret).map_err(|e| ApiError::internal(e.description))?);
    client.updated_at = now_secs();
    replace(&node, before, client).await?;
    Ok(Json(s::ClientSecret { client_secret: secret }))
}
