//! The ops listener's import routes, behind the cluster credential (like backups and keys):
//! - `POST /import/bootstrap`: bootstraps a cluster started with `bootstrap = import` from the
//!   source's administrator, domain and roles (JSON `Bootstrap`, keys left out);
//! - `POST /import/batch`: one batch of records (postcard `ImportBatch`), replicated as one
//!   `Command::Import`, or with `dry_run` judged against this node's state plus the batches
//!   of the same dry run before it, writing nothing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use idnode_keys::{IndexHasher, IndexKey};
use idnode_storage::Batch;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::context::Core;
use crate::state::apply::{apply_command, IMPORT_RECORDS_PER_COMMAND};
use crate::state::command::{Applied, Bootstrap};
use crate::state::import::{ImportOutcome, ImportRecord};
use crate::state::index_key;
use crate::state::read::tx::Tx;
use crate::state::{Command, Reader};

pub const PATH_BOOTSTRAP: &str = "/import/bootstrap";
pub const PATH_BATCH: &str = "/import/batch";

/// A batch's body (postcard): at most [`IMPORT_RECORDS_PER_COMMAND`] records.
#[derive(Debug, Serialize, Deserialize)]
pub struct ImportBatch {
    /// Set for a dry run: names the run, so its later batches see what its earlier ones would
    /// have written.
    pub dry_run: Option<String>,
    /// A dry run's bootstrap, for a cluster started with `bootstrap = import` that is not
    /// bootstrapped yet: applied to the dry run's own writes first.
    pub bootstrap: Option<Bootstrap>,
    pub records: Vec<ImportRecord>,
}

/// [`ImportBatch`] as the command line sends it (the same bytes, without copying records).
#[derive(Debug, Serialize)]
pub struct ImportBatchRef<'a> {
    pub dry_run: Option<&'a str>,
    pub bootstrap: Option<&'a Bootstrap>,
    pub records: &'a [ImportRecord],
}

/// A batch's answer: what became of each record, in order.
#[derive(Debug, Serialize, Deserialize)]
pub struct BatchAnswer {
    pub outcomes: Vec<ImportOutcome>,
}

/// The writes a dry run would have made so far; one dry run at a time per node, forgotten
/// after [`DRY_RUN_IDLE`] without a batch.
struct DryRun {
    id: String,
    batch: Batch,
    /// The index key of a bootstrap the dry run made (the cluster has none yet).
    index: Option<Arc<IndexHasher>>,
    last: Instant,
}

const DRY_RUN_IDLE: Duration = Duration::from_secs(600);
/// A batch of 10,000 records with large extra attributes stays well inside this.
const MAX_BATCH_BYTES: usize = 64 * 1024 * 1024;

#[derive(Clone)]
struct Ctx {
    core: Arc<Core>,
    dry: Arc<Mutex<Option<DryRun>>>,
}

pub fn router(core: Arc<Core>) -> Router {
    let raft = core.raft.clone();
    let routes = Router::new()
        .route(PATH_BOOTSTRAP, post(bootstrap))
        .route(PATH_BATCH, post(batch))
        .layer(DefaultBodyLimit::max(MAX_BATCH_BYTES))
        .with_state(Ctx { core, dry: Arc::new(Mutex::new(None)) });
    raft.operator_only(routes)
}

fn failure(status: StatusCode, message: impl std::fmt::Display) -> Response {
    (status, Json(json!({"error": message.to_string()}))).into_response()
}

async fn bootstrap(
    State(ctx): State<Ctx>,
    body: Result<Json<Bootstrap>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Ok(Json(b)) = body else {
        return failure(StatusCode::BAD_REQUEST, "expected the bootstrap records as JSON");
    };
    match ctx.core.engine.read().bootstrap_info() {
        Ok(Some(_)) => return Json(json!({"bootstrapped": false})).into_response(),
        Ok(None) if !ctx.core.cfg.bootstrap_by_import => {
            return failure(
                StatusCode::CONFLICT,
                "this cluster bootstraps itself (bootstrap = auto); start it with bootstrap = import to bootstrap it \
                 from the import",
            )
        }
        Ok(None) => {}
        Err(e) => return failure(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
    match crate::identity::bootstrap::adopt(&ctx.core, b).await {
        Ok(fresh) => Json(json!({"bootstrapped": fresh})).into_response(),
        Err(e) => failure(e.status, e.message),
    }
}

async fn batch(State(ctx): State<Ctx>, body: Bytes) -> Response {
    let Ok(b) = postcard::from_bytes::<ImportBatch>(&body) else {
        return failure(StatusCode::BAD_REQUEST, "expected an import batch (postcard) from this idnode version");
    };
    if b.records.len() > IMPORT_RECORDS_PER_COMMAND {
        let max = IMPORT_RECORDS_PER_COMMAND;
        return failure(StatusCode::PAYLOAD_TOO_LARGE, format!("at most {max} records per batch"));
    }
    let applied = match b.dry_run {
        Some(run) => dry_run(&ctx, run, b.bootstrap, b.records).await,
        None => {
            match ctx.core.engine.read().bootstrap_info() {
                Ok(Some(_)) => {}
                Ok(None) => return failure(StatusCode::CONFLICT, "the cluster is not bootstrapped yet"),
                Err(e) => return failure(StatusCode::INTERNAL_SERVER_ERROR, e),
            }
            let cmd = Command::Import { records: b.records };
            ctx.core.propose(cmd).await.map_err(|e| (e.status, e.message))
        }
    };
    match applied {
        Ok(Applied::Imported(outcomes)) => Json(BatchAnswer { outcomes }).into_response(),
        Ok(other) => failure(StatusCode::INTERNAL_SERVER_ERROR, format!("unexpected answer {}", other.shape())),
        Err((status, message)) => failure(status, message),
    }
}

type Refusal = (StatusCode, String);

fn internal(e: impl std::fmt::Debug) -> Refusal {
    (StatusCode::INTERNAL_SERVER_ERROR, format!("{e:?}"))
}

/// Applies the batch to the dry run's own writes over this node's state; nothing reaches the
/// store or the log.
async fn dry_run(
    ctx: &Ctx,
    run: String,
    bootstrap: Option<Bootstrap>,
    records: Vec<ImportRecord>,
) -> Result<Applied, Refusal> {
    let ctx = ctx.clone();
    let work = move || {
        let mut guard = ctx.dry.lock().map_err(|_| internal("dry run state"))?;
        if guard.as_ref().is_some_and(|d| d.id != run && d.last.elapsed() < DRY_RUN_IDLE) {
            return Err((StatusCode::CONFLICT, "another dry run is in progress on this node".to_string()));
        }
        if guard.as_ref().is_none_or(|d| d.id != run) {
            *guard = Some(DryRun { id: run, batch: ctx.core.engine.batch(), index: None, last: Instant::now() });
        }
        let dry = guard.as_mut().ok_or_else(|| internal("dry run state"))?;
        dry.last = Instant::now();
        let engine = &ctx.core.engine;
        let index = match (index_key::hasher(engine).map_err(internal)?, dry.index.clone(), bootstrap) {
            (Some(index), _, _) | (None, Some(index), _) => index,
            (None, None, Some(b)) => {
                let key = IndexKey::generate();
                let index = Arc::new(key.hasher());
                let cmd = Command::BootstrapCluster { index_key: key, bootstrap: Box::new(b) };
                let tx = &mut Tx { engine, batch: &mut dry.batch, index: index.clone() };
                if let Err(e) = apply_command(tx, cmd).map_err(internal)? {
                    return Err((StatusCode::BAD_REQUEST, format!("the bootstrap would be refused: {e}")));
                }
                dry.index = Some(index.clone());
                index
            }
            (None, None, None) => {
                return Err((StatusCode::CONFLICT, "the cluster is not bootstrapped yet".to_string()));
            }
        };
        let tx = &mut Tx { engine, batch: &mut dry.batch, index };
        match apply_command(tx, Command::Import { records }).map_err(internal)? {
            Ok(applied) => Ok(applied),
            Err(e) => Err((StatusCode::BAD_REQUEST, e.to_string())),
        }
    };
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| Err(internal(e)))
}
