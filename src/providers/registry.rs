//! One resource shape for the three provider registries: a small [`Registry`] trait (the
//! kind's path, envelope, body, merge and render) and the generic create / list / get /
//! update / delete every kind shares, so a kind's module holds only its fields and checks.
//! `registry_handlers!` writes a kind's five documented handlers over these.
//!
//! Policy `identity/<resource>/{create,list,show,update,delete}`: admin, or manager of the
//! provider's domain; a global provider (no `domain_id`) is for admins only.

use std::collections::HashMap;

use axum::http::StatusCode;
use serde_json::{json, Map, Value};

use crate::clock::now_secs;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::pages::page;
use crate::policy::{enforce, guard};
use crate::state::providers::{Provider, ProviderCommand, ProviderConfig, ProviderKind};
use crate::state::read::ProviderReads;
use crate::state::{Command, Reader};
use crate::token::ValidToken;

/// The fields every kind shares, as a body names them.
#[derive(Default)]
pub struct Head {
    /// Server-chosen: accepted only when absent (create) or equal to the path's (PATCH).
    pub id: Option<String>,
    /// `null` or absent on create: a global provider. Fixed once created.
    pub domain_id: Option<Option<String>>,
    pub provider_id: Option<String>,
}

/// One kind of provider registry.
pub trait Registry: 'static {
    const KIND: ProviderKind;
    /// The collection's path (`/v4/...`).
    const PATH: &'static str;
    const ENVELOPE: &'static str;
    const COLLECTION: &'static str;
    /// The kind's body (inside its envelope).
    type Body: Send;
    type Config;

    /// Takes the shared fields out of a body.
    fn head(b: &mut Self::Body) -> Head;
    /// Applies the kind's fields of `b` over `current` (`None`: create, where required
    /// fields must be present) and checks the whole; 400 naming the field otherwise.
    fn merge(current: Option<Self::Config>, b: Self::Body) -> ApiResult<Self::Config>;
    fn wrap(c: Self::Config) -> ProviderConfig;
    fn unwrap(c: ProviderConfig) -> Option<Self::Config>;
    /// The kind's fields as the API shows them: never a secret, at most whether one is set.
    fn render(c: &Self::Config, out: &mut Map<String, Value>);
    /// The URLs of `c` this node will request, by field (checked by [`outbound_urls`]).
    fn fetched_urls(_c: &Self::Config) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

/// Unless `[federation] allow_private_networks` is on, refuses (400 naming the field) a URL
/// the node would request whose host is a literal loopback, private, link-local, unspecified
/// or multicast address, or `localhost`. Only URLs new or changed against `before` are
/// judged, so a PATCH of another field keeps working on a record written when the setting was
/// on. Names are judged again at every request (`outbound`), when they are resolved.
fn outbound_urls<R: Registry>(node: &Core, before: Option<&R::Config>, after: &R::Config) -> ApiResult<()> {
    if node.cfg.federation.allow_private_networks {
        return Ok(());
    }
    let old = before.map(R::fetched_urls).unwrap_or_default();
    for (field, url) in R::fetched_urls(after) {
        if old.iter().any(|(f, u)| *f == field && *u == url) {
            continue;
        }
        if let Some(why) = super::outbound::url_refusal(&url) {
            return Err(bad(
                field,
                format!("{why}; this service calls only public addresses (see [federation] allow_private_networks)."),
            ));
        }
    }
    Ok(())
}

pub fn bad(field: &str, why: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("Invalid input for field/attribute {field}: {why}"))
}

pub fn required<T>(field: &str, v: Option<T>) -> ApiResult<T> {
    v.ok_or_else(|| bad(field, "required."))
}

/// A non-empty string of at most `max` characters.
pub fn text(field: &str, v: String, max: usize) -> ApiResult<String> {
    if v.trim().is_empty() {
        return Err(bad(field, "must not be empty."));
    }
    if v.chars().count() > max {
        return Err(bad(field, format!("at most {max} characters.")));
    }
    Ok(v)
}

/// An absolute `https` URL without fragment; plain `http` only to a loopback host (the rule
/// of OAuth2 redirect URIs).
pub fn https_url(field: &str, v: String) -> ApiResult<String> {
    if v.len() > 2048 || !crate::oauth2::clients::valid_redirect_uri(&v) {
        return Err(bad(
            field,
            format!("{v:?} is not an absolute https URL without fragment (plain http only for loopback hosts)."),
        ));
    }
    Ok(v)
}

/// One or more PEM `CERTIFICATE` blocks, each a well-formed X.509 certificate.
pub fn pem_certificates(field: &str, v: String) -> ApiResult<String> {
    if v.len() > 256 * 1024 {
        return Err(bad(field, "at most 256 KiB."));
    }
    match load_pem_chain(&v) {
        Ok(certs) if !certs.is_empty() => Ok(v),
        Ok(_) => Err(bad(field, "no PEM CERTIFICATE block.")),
        Err(e) => Err(bad(field, format!("not PEM-encoded X.509 certificates ({e})."))),
    }
}

/// The certificates of a PEM bundle. `x509_cert`'s `load_pem_chain` underflows on an input
/// of nothing but line breaks (a panic with overflow checks): such input holds no
/// certificate.
pub fn load_pem_chain(pem: &str) -> Result<Vec<x509_cert::Certificate>, x509_cert::der::Error> {
    if pem.trim_end_matches(['\r', '\n']).is_empty() {
        return Ok(Vec::new());
    }
    x509_cert::Certificate::load_pem_chain(pem.as_bytes())
}

/// `provider_id`: a handle of letters, digits, `.`, `-` and `_`.
pub fn handle(v: String) -> ApiResult<String> {
    let ok = !v.is_empty() && v.len() <= 255 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if !ok {
        return Err(bad("provider_id", "1 to 255 letters, digits, '.', '-' or '_'."));
    }
    Ok(v)
}

fn action<R: Registry>(op: &str) -> String {
    format!("identity/{}/{op}", R::KIND.resource())
}

fn authorize<R: Registry>(op: &str, ctx: &ValidToken, domain_id: Option<&str>) -> ApiResult<()> {
    enforce(&action::<R>(op), ctx, &json!({ R::KIND.resource(): {"domain_id": domain_id} }))
}

fn config<R: Registry>(p: &Provider) -> ApiResult<R::Config> {
    R::unwrap(p.config.clone()).ok_or_else(|| ApiError::internal("a provider record of another kind"))
}

/// The provider as the API shows it.
pub fn render<R: Registry>(node: &Core, p: &Provider) -> ApiResult<Value> {
    let mut out = Map::new();
    out.insert("id".into(), json!(p.id));
    out.insert("domain_id".into(), json!(p.domain_id));
    out.insert("provider_id".into(), json!(p.provider_id));
    R::render(&config::<R>(p)?, &mut out);
    out.insert("created_at".into(), json!(p.created_at));
    out.insert("updated_at".into(), json!(p.updated_at));
    out.insert("links".into(), json!({"self": format!("{}{}/{}", node.cfg.public_base(), R::PATH, p.id)}));
    Ok(Value::Object(out))
}

fn one<R: Registry>(node: &Core, p: &Provider) -> ApiResult<Value> {
    Ok(json!({ R::ENVELOPE: render::<R>(node, p)? }))
}

fn load<R: Registry>(node: &Core, id: &str) -> ApiResult<Provider> {
    find(node, R::KIND, id)
}

/// A registered provider of `kind` by id (404 naming the kind's resource).
pub fn find(node: &Core, kind: ProviderKind, id: &str) -> ApiResult<Provider> {
    node.engine.read().provider(kind, id)?.ok_or_else(|| ApiError::not_found(kind.resource(), id))
}

async fn save(node: &Core, provider: Provider, create: bool) -> ApiResult<Provider> {
    node.propose_as(ProviderCommand::Put { provider: Box::new(provider), create }).await
}

/// `GET` the collection: every provider of the kind, or those of `?domain_id=` (which a
/// domain's manager must name).
pub fn list<R: Registry>(node: &Core, ctx: &ValidToken, q: &HashMap<String, String>) -> ApiResult<Value> {
    let domain = q.get("domain_id").map(String::as_str);
    authorize::<R>("list", ctx, domain)?;
    let all: Vec<Provider> = node.engine.read().providers_of_kind(R::KIND)?;
    let items = all
        .iter()
        .filter(|p| domain.is_none_or(|d| p.domain_id.as_deref() == Some(d)))
        .map(|p| render::<R>(node, p))
        .collect::<ApiResult<Vec<_>>>()?;
    page(R::COLLECTION, items, &node.cfg.public_base(), R::PATH, q)
}

pub async fn create<R: Registry>(node: &Core, ctx: &ValidToken, mut b: R::Body) -> ApiResult<(StatusCode, Value)> {
    let head = R::head(&mut b);
    let domain_id = head.domain_id.flatten();
    authorize::<R>("create", ctx, domain_id.as_deref())?;
    guard::change_global(ctx, domain_id.as_deref(), "register a global provider")?;
    if head.id.is_some() {
        return Err(bad("id", "the server chooses ids; it cannot be set."));
    }
    if let Some(d) = &domain_id {
        if node.engine.read().domain(d)?.is_none() {
            return Err(ApiError::not_found("domain", d));
        }
    }
    let provider_id = handle(required("provider_id", head.provider_id)?)?;
    let config = R::merge(None, b)?;
    outbound_urls::<R>(node, None, &config)?;
    let at = now_secs();
    let provider = Provider {
        id: uuid::Uuid::new_v4().simple().to_string(),
        domain_id,
        provider_id,
        config: R::wrap(config),
        created_at: at,
        updated_at: at,
    };
    let saved = save(node, provider, true).await?;
    Ok((StatusCode::CREATED, one::<R>(node, &saved)?))
}

pub fn get<R: Registry>(node: &Core, ctx: &ValidToken, id: &str) -> ApiResult<Value> {
    let p = load::<R>(node, id);
    // The policy sees the record's domain; a caller it refuses learns nothing of existence.
    authorize::<R>("show", ctx, p.as_ref().ok().and_then(|p| p.domain_id.as_deref()))?;
    one::<R>(node, &p?)
}

pub async fn update<R: Registry>(node: &Core, ctx: &ValidToken, id: &str, mut b: R::Body) -> ApiResult<Value> {
    let p = load::<R>(node, id);
    authorize::<R>("update", ctx, p.as_ref().ok().and_then(|p| p.domain_id.as_deref()))?;
    let mut p = p?;
    guard::change_global(ctx, p.domain_id.as_deref(), "change a global provider")?;
    let head = R::head(&mut b);
    if head.id.is_some_and(|i| i != p.id) {
        return Err(bad("id", "the server chooses ids; it cannot be changed."));
    }
    if head.domain_id.is_some_and(|d| d != p.domain_id) {
        return Err(bad("domain_id", "cannot be changed; register the provider in the other domain."));
    }
    if let Some(h) = head.provider_id {
        p.provider_id = handle(h)?;
    }
    let before = config::<R>(&p)?;
    let after = R::merge(Some(config::<R>(&p)?), b)?;
    outbound_urls::<R>(node, Some(&before), &after)?;
    p.config = R::wrap(after);
    p.updated_at = now_secs();
    let saved = save(node, p, false).await?;
    one::<R>(node, &saved)
}

pub async fn delete<R: Registry>(node: &Core, ctx: &ValidToken, id: &str) -> ApiResult<StatusCode> {
    let p = load::<R>(node, id);
    authorize::<R>("delete", ctx, p.as_ref().ok().and_then(|p| p.domain_id.as_deref()))?;
    let p = p?;
    guard::change_global(ctx, p.domain_id.as_deref(), "delete a global provider")?;
    node.propose(Command::Providers(ProviderCommand::Delete { kind: R::KIND, id: p.id })).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The parts of a kind's [`Registry`] impl that only name it: its variant (of
/// `ProviderKind` and `ProviderConfig`), path, envelope names, body and configuration.
macro_rules! registry_kind {
    (
        variant = $variant:ident, path = $path:literal, envelope = $envelope:literal,
        collection = $collection:literal, body = $Body:ty, config = $Config:ty $(,)?
    ) => {
        const KIND: $crate::state::providers::ProviderKind = $crate::state::providers::ProviderKind::$variant;
        const PATH: &'static str = $path;
        const ENVELOPE: &'static str = $envelope;
        const COLLECTION: &'static str = $collection;
        type Body = $Body;
        type Config = $Config;

        fn head(b: &mut $Body) -> $crate::providers::registry::Head {
            $crate::providers::registry::Head {
                id: b.id.take(),
                domain_id: b.domain_id.take(),
                provider_id: b.provider_id.take(),
            }
        }

        fn wrap(c: $Config) -> $crate::state::providers::ProviderConfig {
            $crate::state::providers::ProviderConfig::$variant(c)
        }

        fn unwrap(c: $crate::state::providers::ProviderConfig) -> Option<$Config> {
            match c {
                $crate::state::providers::ProviderConfig::$variant(c) => Some(c),
                _ => None,
            }
        }
    };
}
pub(crate) use registry_kind;

/// A kind's five documented handlers over the generic ones above, and its `routes()`.
macro_rules! registry_handlers {
    (
        registry = $R:ty, tag = $tag:tt, path = $path:tt, item_path = $item_path:tt,
        ops = [$list_op:tt, $create_op:tt, $get_op:tt, $update_op:tt, $delete_op:tt],
        envelope = $Env:ty, one = $One:ty, list = $List:ty $(,)?
    ) => {
        #[utoipa::path(get, path = $path, operation_id = $list_op, tag = $tag,
    params(("domain_id" = Option<String>, Query, description = "Only the providers of this domain (a domain manager must name their domain)."),
           ("limit" = Option<u32>, Query, description = "At most this many."), ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The providers, in id order (never their secrets).", body = $List), $crate::http::openapi::errors::BadRequest,
              $crate::http::openapi::errors::Unauthorized, $crate::http::openapi::errors::Forbidden, $crate::http::openapi::errors::Internal))]
        pub async fn list(
            axum::extract::State(node): axum::extract::State<std::sync::Arc<$crate::context::Core>>,
            $crate::token::Caller(ctx): $crate::token::Caller,
            axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
        ) -> $crate::http::error::ApiResult<axum::Json<serde_json::Value>> {
            $crate::providers::registry::list::<$R>(&node, &ctx, &q).map(axum::Json)
        }

        #[utoipa::path(post, path = $path, operation_id = $create_op, tag = $tag,
    request_body(content = $Env, content_type = "application/json"),
    responses((status = 201, description = "The registered provider (never its secrets).", body = $One), $crate::http::openapi::errors::BadRequest,
              $crate::http::openapi::errors::Unauthorized, $crate::http::openapi::errors::Forbidden, $crate::http::openapi::errors::NotFound,
              $crate::http::openapi::errors::Conflict, $crate::http::openapi::errors::Internal, $crate::http::openapi::errors::Unavailable))]
        pub async fn create(
            axum::extract::State(node): axum::extract::State<std::sync::Arc<$crate::context::Core>>,
            $crate::token::Caller(ctx): $crate::token::Caller,
            $crate::http::JsonBody(b): $crate::http::JsonBody<$Env>,
        ) -> $crate::http::error::ApiResult<(axum::http::StatusCode, axum::Json<serde_json::Value>)> {
            let (status, body) = $crate::providers::registry::create::<$R>(&node, &ctx, b.into_body()).await?;
            Ok((status, axum::Json(body)))
        }

        #[utoipa::path(get, path = $item_path, operation_id = $get_op, tag = $tag,
    params(("id" = String, Path, description = "The provider's id.")),
    responses((status = 200, description = "The provider (never its secrets).", body = $One), $crate::http::openapi::errors::Unauthorized,
              $crate::http::openapi::errors::Forbidden, $crate::http::openapi::errors::NotFound, $crate::http::openapi::errors::Internal))]
        pub async fn get(
            axum::extract::State(node): axum::extract::State<std::sync::Arc<$crate::context::Core>>,
            $crate::token::Caller(ctx): $crate::token::Caller,
            axum::extract::Path(id): axum::extract::Path<String>,
        ) -> $crate::http::error::ApiResult<axum::Json<serde_json::Value>> {
            $crate::providers::registry::get::<$R>(&node, &ctx, &id).map(axum::Json)
        }

        #[utoipa::path(patch, path = $item_path, operation_id = $update_op, tag = $tag,
    params(("id" = String, Path, description = "The provider's id.")),
    request_body(content = $Env, content_type = "application/json"),
    responses((status = 200, description = "The updated provider: absent fields are kept, null clears an optional one.", body = $One),
              $crate::http::openapi::errors::BadRequest, $crate::http::openapi::errors::Unauthorized, $crate::http::openapi::errors::Forbidden,
              $crate::http::openapi::errors::NotFound, $crate::http::openapi::errors::Conflict, $crate::http::openapi::errors::Internal,
              $crate::http::openapi::errors::Unavailable))]
        pub async fn update(
            axum::extract::State(node): axum::extract::State<std::sync::Arc<$crate::context::Core>>,
            $crate::token::Caller(ctx): $crate::token::Caller,
            axum::extract::Path(id): axum::extract::Path<String>,
            $crate::http::JsonBody(b): $crate::http::JsonBody<$Env>,
        ) -> $crate::http::error::ApiResult<axum::Json<serde_json::Value>> {
            $crate::providers::registry::update::<$R>(&node, &ctx, &id, b.into_body()).await.map(axum::Json)
        }

        #[utoipa::path(delete, path = $item_path, operation_id = $delete_op, tag = $tag,
    params(("id" = String, Path, description = "The provider's id.")),
    responses((status = 204, description = "Deleted."), $crate::http::openapi::errors::Unauthorized, $crate::http::openapi::errors::Forbidden,
              $crate::http::openapi::errors::NotFound, $crate::http::openapi::errors::Internal, $crate::http::openapi::errors::Unavailable))]
        pub async fn delete(
            axum::extract::State(node): axum::extract::State<std::sync::Arc<$crate::context::Core>>,
            $crate::token::Caller(ctx): $crate::token::Caller,
            axum::extract::Path(id): axum::extract::Path<String>,
        ) -> $crate::http::error::ApiResult<axum::http::StatusCode> {
            $crate::providers::registry::delete::<$R>(&node, &ctx, &id).await
        }

        $crate::http::openapi::feature_routes! {
            /// The kind's operations.
            pub fn routes() over [$crate::context::Core, $crate::token::Tokens] {
                utoipa_axum::router::OpenApiRouter::new()
                    .routes(utoipa_axum::routes!(list, create))
                    .routes(utoipa_axum::routes!(get, update, delete))
            }
        }
    };
}
pub(crate) use registry_handlers;
