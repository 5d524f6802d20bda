//! What `/Users` and `/Groups` share (api-shapes §11.4, §11.5): the endpoints' bodies,
//! generic over a [`Resource`] (`users::UserResource`, `groups::GroupResource`), so both
//! resources fence, authorize, page and write the same way. Fencing comes first (a resource
//! another realm owns, or a deprovisioned one, is 404 whoever asks), then policy.

use std::collections::{BTreeSet, HashMap};

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};

use super::caller::ScimCaller;
use super::filter::{self, Attr, Filter, Op, Term};
use super::schemas::{ListResponse, Meta};
use super::state::Scim;
use super::wire::{if_match, reply, ScimError, ScimResult, LIST_URN};
use super::{patch, write};
use crate::audit::event::Action;
use crate::clock::now_micros;
use crate::context::Core;
use crate::openfga::forget::{forget_in, Gone};
use crate::openfga::OpenFga;
use crate::policy::guard;
use crate::state::read::ScimReads;
use crate::state::scim::{Expect, Kind, RealmRef, ScimCommand, ScimResourceIndex};
use crate::state::Reader;

/// `count` when the request names none, and the most one page holds (spec "Limits").
pub const DEFAULT_COUNT: usize = 20;
pub const MAX_COUNT: usize = 200;

/// A live resource as read: its ownership record and the user or group.
pub struct Record<T> {
    pub idx: ScimResourceIndex,
    pub item: T,
}

pub trait Resource: Sized {
    const KIND: Kind;
    /// `Users` or `Groups`.
    const ENDPOINT: &'static str;
    /// The core schema URN.
    const SCHEMA: &'static str;
    const FILTER: filter::Resource;
    /// The names index its `userName` / `displayName` is unique in (per domain).
    const NAME_NS: &'static str;
    type Item;

    fn load(view: &impl Reader, id: &str) -> idnode_storage::Result<Option<Self::Item>>;
    fn name(item: &Self::Item) -> &str;
    /// `active` (users only).
    fn enabled(item: &Self::Item) -> Option<bool>;
    fn render(view: &impl Reader, realm: &RealmRef, base: &str, rec: &Record<Self::Item>) -> ScimResult<Value>;
    /// A create's id and fields, validated.
    fn create(realm: &RealmRef, body: &Value, at: i64) -> ScimResult<(String, ScimCommand)>;
    /// A full replace.
    fn replace(realm: &RealmRef, id: &str, body: &Value, expect: Expect, at: i64) -> ScimResult<ScimCommand>;
    fn patch(realm: &RealmRef, id: &str, ops: &[patch::Op], expect: Expect, at: i64) -> ScimResult<ScimCommand>;
}

/// Where a resource lives: `{base}/SCIM/v2/{domain_id}/{Users|Groups}/{id}`.
pub fn location<R: Resource>(base: &str, realm: &RealmRef, id: &str) -> String {
    format!("{base}/SCIM/v2/{}/{}/{id}", realm.domain_id, R::ENDPOINT)
}

/// `meta` of a resource (times: RFC 3339, UTC).
pub fn meta<R: Resource>(base: &str, realm: &RealmRef, idx: &ScimResourceIndex, resource_type: &str) -> Meta {
    Meta {
        resource_type: resource_type.into(),
        location: location::<R>(base, realm, &idx.keystone_id),
        created: rfc3339(idx.created_at),
        last_modified: rfc3339(idx.updated_at),
        version: super::wire::etag(idx.version),
    }
}

fn rfc3339(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

/// The resource `id` as `realm` may see it: live and its own; anything else is 404.
pub fn fenced<R: Resource>(view: &impl Reader, realm: &RealmRef, id: &str) -> ScimResult<Record<R::Item>> {
    found::<R>(view, realm, id)?.ok_or_else(|| ScimError::not_found(R::KIND.tag(), id))
}

fn found<R: Resource>(view: &impl Reader, realm: &RealmRef, id: &str) -> ScimResult<Option<Record<R::Item>>> {
    let idx: Option<ScimResourceIndex> = view.scim_index(R::KIND, id)?;
    let Some(idx) = idx.filter(|i| i.live_in(realm)) else { return Ok(None) };
    Ok(R::load(view, id)?.map(|item| Record { idx, item }))
}

/// The guard rails on a change to an existing resource: an API key is never a cloud
/// administrator, so it may not change a user or group that holds the admin or service role,
/// a system role or a role on the admin project (403, nothing written). Checked on the state
/// the request reads, before anything is proposed.
fn guarded<R: Resource>(view: &impl Reader, store: Option<&OpenFga>, id: &str) -> ScimResult<()> {
    match R::KIND {
        Kind::User => guard::change_user_by_key(view, store, id)?,
        Kind::Group => guard::change_group_by_key(view, store, id)?,
    }
    Ok(())
}

fn base(node: &Core) -> String {
    node.cfg.public_base()
}

/// `attributes` / `excludedAttributes` (RFC 7644 §3.4.2.5, §3.9): comma-separated names, any
/// case, optionally with the schema URN; a sub-attribute names its top-level attribute.
/// `id` and `schemas` are returned always.
pub struct Projection {
    only: Option<Vec<String>>,
    except: Vec<String>,
}

impl Projection {
    pub fn of<R: Resource>(q: &HashMap<String, String>) -> Projection {
        let names = |key: &str| -> Option<Vec<String>> {
            let list = q.get(key)?;
            Some(
                list.split(',')
                    .map(|n| {
                        let n = n.trim();
                        let n = match n.get(..R::SCHEMA.len()) {
                            Some(head) if head.eq_ignore_ascii_case(R::SCHEMA) => {
                                n[R::SCHEMA.len()..].trim_start_matches(':')
                            }
                            _ => n,
                        };
                        n.split('.').next().unwrap_or_default().to_ascii_lowercase()
                    })
                    .filter(|n| !n.is_empty())
                    .collect(),
            )
        };
        Projection { only: names("attributes"), except: names("excludedAttributes").unwrap_or_default() }
    }

    pub fn apply(&self, v: &mut Value) {
        let Some(obj) = v.as_object_mut() else { return };
        obj.retain(|k, _| {
            let k = k.to_ascii_lowercase();
            k == "id"
                || k == "schemas"
                || (self.only.as_ref().is_none_or(|only| only.contains(&k)) && !self.except.contains(&k))
        });
    }
}

/// The resource as it stands after a write.
fn answer<R: Resource>(node: &Core, caller: &ScimCaller, status: StatusCode, id: &str) -> ScimResult<Response> {
    let realm = caller.realm_ref();
    let view = node.engine.read();
    let rec = fenced::<R>(&view, &realm, id)?;
    let body = R::render(&view, &realm, &base(node), &rec)?;
    let loc = (status == StatusCode::CREATED).then(|| location::<R>(&base(node), &realm, id));
    Ok(reply(status, &body, Some(rec.idx.version), loc.as_deref()))
}

pub async fn create<R: Resource>(node: &Core, scim: &Scim, caller: &ScimCaller, body: &Value) -> ScimResult<Response> {
    caller.authorize(R::KIND, "create")?;
    let (id, cmd) = R::create(&caller.realm_ref(), body, now_micros())?;
    write::submit(node, scim, caller, R::KIND, Action::Create, cmd).await?;
    answer::<R>(node, caller, StatusCode::CREATED, &id)
}

pub fn show<R: Resource>(
    node: &Core,
    caller: &ScimCaller,
    id: &str,
    q: &HashMap<String, String>,
) -> ScimResult<Response> {
    let realm = caller.realm_ref();
    let view = node.engine.read();
    let rec = fenced::<R>(&view, &realm, id)?;
    caller.authorize(R::KIND, "show")?;
    let mut body = R::render(&view, &realm, &base(node), &rec)?;
    Projection::of::<R>(q).apply(&mut body);
    Ok(reply(StatusCode::OK, &body, Some(rec.idx.version), None))
}

/// What a change with a body does with it: PUT replaces the resource, PATCH applies
/// operations to it.
pub enum Change {
    Replace,
    Modify,
}

/// A PUT or PATCH: the version the request names, the checks of a change, then the command
/// the body makes.
pub async fn update<R: Resource>(
    node: &Core,
    scim: &Scim,
    caller: &ScimCaller,
    (id, headers, body): (&str, &HeaderMap, &Value),
    change: Change,
) -> ScimResult<Response> {
    let expect = Expect::Change { if_match: if_match(headers)? };
    may_change::<R>(node, caller, id, "update")?;
    let realm = caller.realm_ref();
    let cmd = match change {
        Change::Replace => R::replace(&realm, id, body, expect, now_micros())?,
        Change::Modify => R::patch(&realm, id, &patch::parse(body, R::SCHEMA)?, expect, now_micros())?,
    };
    write::submit(node, scim, caller, R::KIND, Action::Update, cmd).await?;
    answer::<R>(node, caller, StatusCode::OK, id)
}

/// Fencing, then policy (`action`), then the guard rails, for a change to `id`.
fn may_change<R: Resource>(node: &Core, caller: &ScimCaller, id: &str, action: &str) -> ScimResult<()> {
    fenced::<R>(&node.engine.read(), &caller.realm_ref(), id)?;
    caller.authorize(R::KIND, action)?;
    guarded::<R>(&node.engine.read(), node.fga.as_deref(), id)
}

pub async fn deprovision<R: Resource>(node: &Core, scim: &Scim, caller: &ScimCaller, id: &str) -> ScimResult<Response> {
    may_change::<R>(node, caller, id, "delete")?;
    // A deprovisioned group's grants go at once; a user's stay until the purge.
    let grants = (R::KIND == Kind::Group).then(|| Gone::group_grants(id));
    forget_in(node.fga.as_deref(), grants).await?;
    let cmd =
        ScimCommand::Deprovision { realm: caller.realm_ref(), kind: R::KIND, id: id.to_string(), at: now_micros() };
    write::submit(node, scim, caller, R::KIND, Action::Disable, cmd).await?;
    Ok(axum::response::IntoResponse::into_response(StatusCode::NO_CONTENT))
}

/// The page a list asks for (RFC 7644 §3.4.2.4): `startIndex` below 1 counts as 1, `count`
/// above [`MAX_COUNT`] as the maximum, and a negative `count` as 0.
struct Page {
    start: usize,
    count: usize,
}

fn page(q: &HashMap<String, String>) -> ScimResult<Page> {
    let num = |name: &str, default: i64| -> ScimResult<i64> {
        match q.get(name) {
            None => Ok(default),
            Some(v) => {
                v.trim().parse::<i64>().map_err(|_| ScimError::bad("invalidValue", format!("{name} takes an integer.")))
            }
        }
    };
    let start = num("startIndex", 1)?.max(1) as usize;
    let count = num("count", DEFAULT_COUNT as i64)?.clamp(0, MAX_COUNT as i64) as usize;
    Ok(Page { start, count })
}

/// The ids a filter can be answered from by index (an `eq` on a unique attribute), when it
/// can: one such term of an `and` chain, or every term of an `or` chain.
fn indexed<R: Resource>(
    view: &impl Reader,
    realm: &RealmRef,
    f: &Filter,
) -> idnode_storage::Result<Option<BTreeSet<String>>> {
    let lookup = |t: &Term| -> idnode_storage::Result<Option<Option<String>>> {
        let (Op::Eq, Some(filter::Value::Str(v))) = (t.op, &t.value) else { return Ok(None) };
        Ok(Some(match t.attr {
            Attr::Id => Some(v.clone()),
            Attr::UserName | Attr::DisplayName => view.id_by_name(R::NAME_NS, &realm.domain_id, v)?,
            Attr::ExternalId => view.id_by_name(R::KIND.external_ns(), &realm.domain_id, v)?,
            Attr::Active => return Ok(None),
        }))
    };
    if f.any {
        let mut ids = BTreeSet::new();
        for t in &f.terms {
            match lookup(t)? {
                Some(hit) => ids.extend(hit),
                None => return Ok(None),
            }
        }
        return Ok(Some(ids));
    }
    for t in &f.terms {
        if let Some(hit) = lookup(t)? {
            return Ok(Some(hit.into_iter().collect()));
        }
    }
    Ok(None)
}

fn term_holds<R: Resource>(t: &Term, rec: &Record<R::Item>) -> bool {
    match t.attr {
        Attr::Active => match (t.op, &t.value) {
            (Op::Pr, _) => R::enabled(&rec.item).is_some(),
            (Op::Eq, Some(filter::Value::Bool(b))) => R::enabled(&rec.item) == Some(*b),
            _ => false,
        },
        Attr::Id => filter::text_matches(t, Some(&rec.idx.keystone_id), false),
        Attr::ExternalId => filter::text_matches(t, rec.idx.external_id.as_deref(), false),
        Attr::UserName | Attr::DisplayName => filter::text_matches(t, Some(R::name(&rec.item)), true),
    }
}

fn holds<R: Resource>(f: &Filter, rec: &Record<R::Item>) -> bool {
    if f.any {
        f.terms.iter().any(|t| term_holds::<R>(t, rec))
    } else {
        f.terms.iter().all(|t| term_holds::<R>(t, rec))
    }
}

pub fn list<R: Resource>(node: &Core, caller: &ScimCaller, q: &HashMap<String, String>) -> ScimResult<Response> {
    caller.authorize(R::KIND, "list")?;
    let p = page(q)?;
    let filter = match q.get("filter").filter(|f| !f.trim().is_empty()) {
        Some(f) => Some(filter::parse(R::FILTER, f).map_err(|e| ScimError::bad("invalidFilter", e.to_string()))?),
        None => None,
    };
    let projection = Projection::of::<R>(q);
    let realm = caller.realm_ref();
    let view = node.engine.read();
    let base = base(node);
    let render = |rec: &Record<R::Item>| -> ScimResult<Value> {
        let mut v = R::render(&view, &realm, &base, rec)?;
        projection.apply(&mut v);
        Ok(v)
    };
    let candidates: Vec<String> = match filter.as_ref().map(|f| indexed::<R>(&view, &realm, f)).transpose()? {
        Some(Some(ids)) => ids.into_iter().collect(),
        _ => view.scim_owned_ids(&realm.domain_id, &realm.provider_id, R::KIND)?,
    };
    let mut resources = Vec::new();
    let mut total = 0usize;
    let wanted = p.start - 1..(p.start - 1).saturating_add(p.count);
    for id in &candidates {
        // Unfiltered, every owned id is a match: only the page's records are read.
        if filter.is_none() {
            if wanted.contains(&total) {
                if let Some(rec) = found::<R>(&view, &realm, id)? {
                    resources.push(render(&rec)?);
                }
            }
            total += 1;
            continue;
        }
        let Some(rec) = found::<R>(&view, &realm, id)? else { continue };
        if filter.as_ref().is_some_and(|f| holds::<R>(f, &rec)) {
            if wanted.contains(&total) {
                resources.push(render(&rec)?);
            }
            total += 1;
        }
    }
    let body = json!(ListResponse {
        schemas: vec![LIST_URN.into()],
        total_results: total as u64,
        start_index: p.start as u64,
        items_per_page: resources.len() as u64,
        resources,
    });
    Ok(reply(StatusCode::OK, &body, None, None))
}

/// A resource's six documented handlers over the generic bodies above (`#[utoipa::path]`
/// takes literal paths and texts, so each resource names its own).
macro_rules! resource_handlers {
    (
        resource = $R:ty, body = $Body:ty, paths = [$path:tt, $item_path:tt], id = $id_desc:tt,
        ops = [$list_op:tt, $create_op:tt, $get_op:tt, $put_op:tt, $patch_op:tt, $delete_op:tt],
        said = [$list_said:tt, $create_said:tt, $get_said:tt, $put_said:tt, $patch_said:tt, $delete_said:tt $(,)?] $(,)?
    ) => {
        #[utoipa::path(get, path = $path, operation_id = $list_op, tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain."), $crate::scim::schemas::ListParams),
    responses((status = 200, description = $list_said, body = $crate::scim::schemas::ListResponse, content_type = "application/scim+json"),
              $crate::scim::schemas::Invalid, $crate::scim::schemas::Unauthorized, $crate::scim::schemas::Forbidden, $crate::scim::schemas::Internal),
    security(("api_key" = [])))]
        pub async fn list(
            req: $crate::scim::caller::ScimRequest,
            axum::extract::Path(domain_id): axum::extract::Path<String>,
            axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
        ) -> $crate::scim::wire::ScimResult<axum::response::Response> {
            let caller = req.caller(&domain_id)?;
            $crate::scim::resource::list::<$R>(&req.node, &caller, &q)
        }

        #[utoipa::path(post, path = $path, operation_id = $create_op, tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain.")),
    request_body(content = $Body, content_type = "application/scim+json"),
    responses((status = 201, description = $create_said, body = $Body, content_type = "application/scim+json"), $crate::scim::schemas::Invalid,
              $crate::scim::schemas::Unauthorized, $crate::scim::schemas::Forbidden, $crate::scim::schemas::Conflict,
              $crate::scim::schemas::UnsupportedMedia, $crate::scim::schemas::TooMany, $crate::scim::schemas::Internal),
    security(("api_key" = [])))]
        pub async fn create(
            req: $crate::scim::caller::ScimRequest,
            axum::extract::Path(domain_id): axum::extract::Path<String>,
            $crate::scim::wire::ScimBody(body): $crate::scim::wire::ScimBody,
        ) -> $crate::scim::wire::ScimResult<axum::response::Response> {
            let caller = req.caller(&domain_id)?;
            $crate::scim::resource::create::<$R>(&req.node, &req.scim, &caller, &body).await
        }

        #[utoipa::path(get, path = $item_path, operation_id = $get_op, tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain."), ("id" = String, Path, description = $id_desc),
           $crate::scim::schemas::Projection),
    responses((status = 200, description = $get_said, body = $Body, content_type = "application/scim+json"),
              $crate::scim::schemas::Unauthorized, $crate::scim::schemas::Forbidden, $crate::scim::schemas::NotFound,
              $crate::scim::schemas::Internal),
    security(("api_key" = [])))]
        pub async fn get(
            req: $crate::scim::caller::ScimRequest,
            axum::extract::Path((domain_id, id)): axum::extract::Path<(String, String)>,
            axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
        ) -> $crate::scim::wire::ScimResult<axum::response::Response> {
            let caller = req.caller(&domain_id)?;
            $crate::scim::resource::show::<$R>(&req.node, &caller, &id, &q)
        }

        $crate::scim::resource::resource_handlers!(@change put = $put_op, Replace, $R, $item_path, $id_desc,
            request = $Body, answer = $Body, said = $put_said);
        $crate::scim::resource::resource_handlers!(@change patch = $patch_op, Modify, $R, $item_path, $id_desc,
            request = $crate::scim::schemas::PatchOp, answer = $Body, said = $patch_said);

        #[utoipa::path(delete, path = $item_path, operation_id = $delete_op, tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain."), ("id" = String, Path, description = $id_desc)),
    responses((status = 204, description = $delete_said), $crate::scim::schemas::Unauthorized, $crate::scim::schemas::Forbidden,
              $crate::scim::schemas::NotFound, $crate::scim::schemas::TooMany, $crate::scim::schemas::Internal),
    security(("api_key" = [])))]
        pub async fn delete(
            req: $crate::scim::caller::ScimRequest,
            axum::extract::Path((domain_id, id)): axum::extract::Path<(String, String)>,
        ) -> $crate::scim::wire::ScimResult<axum::response::Response> {
            let caller = req.caller(&domain_id)?;
            $crate::scim::resource::deprovision::<$R>(&req.node, &req.scim, &caller, &id).await
        }
    };
    // A change with a body and an If-Match version: PUT (`Replace`) or PATCH (`Modify`).
    (@change $method:ident = $op:tt, $change:ident, $R:ty, $item_path:tt, $id_desc:tt,
     request = $Request:ty, answer = $Body:ty, said = $said:tt) => {
        #[utoipa::path($method, path = $item_path, operation_id = $op, tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain."), ("id" = String, Path, description = $id_desc),
           ("If-Match" = Option<String>, Header, description = "Only at this version (W/\"n\").")),
    request_body(content = $Request, content_type = "application/scim+json"),
    responses((status = 200, description = $said, body = $Body, content_type = "application/scim+json"), $crate::scim::schemas::Invalid,
              $crate::scim::schemas::Unauthorized, $crate::scim::schemas::Forbidden, $crate::scim::schemas::NotFound,
              $crate::scim::schemas::Conflict, $crate::scim::schemas::Precondition, $crate::scim::schemas::UnsupportedMedia,
              $crate::scim::schemas::TooMany, $crate::scim::schemas::Internal),
    security(("api_key" = [])))]
        pub async fn $method(
            req: $crate::scim::caller::ScimRequest,
            axum::extract::Path((domain_id, id)): axum::extract::Path<(String, String)>,
            $crate::scim::wire::ScimBody(body): $crate::scim::wire::ScimBody,
        ) -> $crate::scim::wire::ScimResult<axum::response::Response> {
            let caller = req.caller(&domain_id)?;
            let change = $crate::scim::resource::Change::$change;
            $crate::scim::resource::update::<$R>(&req.node, &req.scim, &caller, (&id, &req.headers, &body), change).await
        }
    };
}
pub(crate) use resource_handlers;
